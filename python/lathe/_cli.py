"""Finding the lathe binary, and turning keyword options into a verb's command-line flags.

The flags a verb accepts are read from `lathe <verb> --help` (CLI11's listing), not written down
here a second time: a flag added to the C++ CLI is a keyword option of the API at once, and a
mistyped keyword is caught before lathe runs, with the list of what the verb takes.
"""

import functools
import os
import re
import shutil
import subprocess
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from ._errors import LatheError

HOW_TO_POINT = ("pass lathe_bin='/path/to/lathe', set the LATHE_BIN environment variable, or put "
                "the directory holding lathe on PATH (a CMake build writes it to build/lathe)")


def find_binary(lathe_bin: Optional[Any] = None) -> str:
    """The lathe executable to run: `lathe_bin`, else $LATHE_BIN, else `lathe` on PATH.

    A value with a `/` in it is a path (relative ones are taken from the current directory);
    a bare name is looked up on PATH. Raises LatheError(outcome='no_binary') saying how to point
    the API at a binary when none is found.
    """
    if lathe_bin is not None:
        given, source = os.fspath(lathe_bin), "lathe_bin=" + repr(os.fspath(lathe_bin))
    elif os.environ.get("LATHE_BIN"):
        given, source = os.environ["LATHE_BIN"], "LATHE_BIN=" + repr(os.environ["LATHE_BIN"])
    else:
        found = shutil.which("lathe")
        if found is None:
            raise LatheError("no_binary", "no lathe binary: 'lathe' is not on PATH and LATHE_BIN "
                             "is not set; " + HOW_TO_POINT)
        return os.path.abspath(found)
    given = os.path.expanduser(given)
    if os.sep in given:
        if os.path.isfile(given) and os.access(given, os.X_OK):
            return os.path.abspath(given)
        why = "does not exist" if not os.path.exists(given) else "is not an executable file"
        raise LatheError("no_binary", f"no lathe binary: {source} {why}; " + HOW_TO_POINT)
    found = shutil.which(given)
    if found is None:
        raise LatheError("no_binary", f"no lathe binary: {source} is not found on PATH; " + HOW_TO_POINT)
    return os.path.abspath(found)


class Flag(NamedTuple):
    name: str          # without the dashes: "max-time"
    takes_value: bool  # "--max-time FLOAT=3" (False for "--no-time")
    repeats: bool      # "--prior TEXT ..." (CLI11's vector options): a list repeats the flag


# An option line of CLI11's help: two spaces, an optional short form, the long name, an optional
# "{false}" default of a flag, an optional value type (TEXT, UINT=3, TEXT:{a,b}=a), "..." for
# a vector option and "REQUIRED" for a required one (`lathe solve --out DIR`), then the
# description after two or more spaces (or on the next line).
_OPTION_LINE = re.compile(
    r"^  (?:-\w,)?--([A-Za-z0-9][\w-]*)(?:\{[^}]*\})?( [A-Z]+\S*)?( \.\.\.)?(?: REQUIRED)?(?:\s{2,}|\s*$)")

# Flags the API always passes itself (or that would only print help instead of the document).
_NOT_OPTIONS = {"help", "json"}


def parse_help(text: str) -> Dict[str, Flag]:
    """The long flags of one verb's `--help` listing, keyed by the keyword name (`max_time`)."""
    flags: Dict[str, Flag] = {}
    in_options = False
    for line in text.splitlines():
        if not line.startswith(" "):
            in_options = line.rstrip() == "Options:"
            continue
        m = _OPTION_LINE.match(line) if in_options else None
        if m and m.group(1) not in _NOT_OPTIONS:
            flags[m.group(1).replace("-", "_")] = Flag(m.group(1), m.group(2) is not None, m.group(3) is not None)
    return flags


@functools.lru_cache(maxsize=64)
def _verb_flags_cached(binary: str, mtime_ns: int, verb: Tuple[str, ...]) -> Dict[str, Flag]:
    del mtime_ns  # in the key only: a rebuilt binary is asked again
    argv = [binary, *verb, "--help"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LatheError("no_binary", f"could not run {' '.join(argv)}: {e}", argv=argv) from e
    text = done.stdout.decode("utf-8", "replace")
    if done.returncode != 0 or "Options:" not in text:
        raise LatheError("bad_output", f"{' '.join(argv)} exited {done.returncode} without listing "
                         "its options; is this a lathe binary?", exit_code=done.returncode,
                         stderr=done.stderr.decode("utf-8", "replace"), argv=argv)
    return parse_help(text)


def verb_flags(binary: str, verb: Tuple[str, ...]) -> Dict[str, Flag]:
    """The flags `lathe VERB --help` lists (asked once per binary and verb)."""
    try:
        mtime = os.stat(binary).st_mtime_ns
    except OSError:
        mtime = 0
    return dict(_verb_flags_cached(binary, mtime, tuple(verb)))


def _text(value: Any, keyword: str) -> str:
    if isinstance(value, bool):
        raise TypeError(f"{keyword}={value!r}: this option takes a value, not True/False")
    if isinstance(value, (str, int, float)):
        return str(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"{keyword}={value!r}: expected a str, number or path, got {type(value).__name__}")


def _joined(value: Any, keyword: str) -> str:
    # budget={"steps": 3, "time": "10m"} -> "steps=3,time=10m"; ["a", "b"] -> "a,b"
    if isinstance(value, dict):
        return ",".join(f"{k}={_text(v, keyword)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ",".join(_text(v, keyword) for v in value)
    return _text(value, keyword)


def options_to_argv(api_name: str, verb_words: str, flags: Dict[str, Flag], options: Dict[str, Any],
                    api_keywords: Tuple[str, ...]) -> List[str]:
    """Keyword options as flags: True -> `--flag`; False or None -> left out; a value -> `--flag
    VALUE`; a list -> the flag repeated (vector options) or its items joined by commas; a dict ->
    `k=v,k=v` (e.g. optimize's budget). Raises TypeError for a keyword the verb does not take."""
    argv: List[str] = []
    for keyword, value in options.items():
        flag = flags.get(keyword)
        if flag is None:
            accepted = ", ".join(sorted(flags)) or "(none)"
            raise TypeError(f"{api_name}() got an unexpected keyword argument {keyword!r}; "
                            f"`lathe {verb_words}` accepts {accepted}; the API's own keywords are "
                            f"{', '.join(api_keywords)} (see `lathe {verb_words} --help`)")
        if value is None or value is False:
            continue
        dashed = "--" + flag.name
        if not flag.takes_value:
            if value is not True:
                raise TypeError(f"{keyword}={value!r}: {dashed} is a switch; pass True (or False to leave it out)")
            argv.append(dashed)
        elif flag.repeats and isinstance(value, (list, tuple)):
            for item in value:
                argv += [dashed, _text(item, keyword)]
        else:
            argv += [dashed, _joined(value, keyword)]
    return argv
