"""lathe.eval, lathe.bench, lathe.optimize, lathe.doctor: one lathe command each, its JSON back."""

import json
import os
import signal
from typing import Any, Dict, List, Optional, Tuple

from . import _cli, _process
from ._errors import LatheError

Document = Dict[str, Any]

_COMMON_KEYWORDS = ("workspace", "lathe_bin", "progress")


def _first_lines(text: str, limit: int = 20) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[-limit:])


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _run(verb: Tuple[str, ...], api_name: str, schema: str, positionals: List[Any],
         options: Dict[str, Any], api_keywords: Tuple[str, ...] = _COMMON_KEYWORDS) -> Tuple[_process.Finished, Optional[Document], List[str]]:
    """Runs `lathe [--workspace W] VERB FLAGS --json -- POSITIONALS`; returns what it printed.

    Raises LatheError for what no verb returns a document for: no binary, bad usage (exit 2),
    a signal, stdout that is not one JSON object, or a document of another schema."""
    workspace = options.pop("workspace", None)
    progress = options.pop("progress", None)
    binary = _cli.find_binary(options.pop("lathe_bin", None))
    flags = _cli.verb_flags(binary, verb) if options else {}
    argv = [binary]
    if workspace is not None:
        argv += ["--workspace", os.fspath(workspace)]
    argv += [*verb, *_cli.options_to_argv(api_name, " ".join(verb), flags, options, api_keywords), "--json"]
    # `--` ends the flags: a task or kernel path that starts with '-' stays a positional.
    given = [os.fspath(p) for p in positionals if p is not None]
    if given:
        argv += ["--", *given]
    done = _process.run(argv, progress)

    document: Optional[Document] = None
    parse_error = ""
    if done.stdout.strip():
        try:
            document = json.loads(done.stdout)
        except ValueError as e:
            parse_error = f"stdout is not JSON ({e})"
    err = dict(exit_code=done.exit_code, stderr=done.stderr, argv=argv)
    if done.exit_code == 2:
        message = _first_lines(done.stderr) or "bad usage (exit code 2)"
        raise LatheError("usage", message, document=document if isinstance(document, dict) else None, **err)
    if done.exit_code < 0:
        raise LatheError("failed", f"lathe was killed by {_signal_name(done.exit_code)}"
                         + (": " + _first_lines(done.stderr, 5) if done.stderr.strip() else ""), **err)
    if not isinstance(document, dict):
        if done.exit_code == 1:  # the verb failed and said why on stderr
            raise LatheError("failed", _first_lines(done.stderr) or "exit code 1 without a message", **err)
        why = parse_error or ("printed no JSON" if document is None else "printed JSON that is not an object")
        raise LatheError("bad_output", f"`{' '.join(verb)} --json` {why}"
                         + (": " + _first_lines(done.stderr, 5) if done.stderr.strip() else ""), **err)
    if document.get("schema") != schema:
        raise LatheError("bad_output", f"expected a {schema} document, got schema {document.get('schema')!r}: "
                         f"this API and the binary {binary} disagree on versions", document=document, **err)
    return done, document, argv


def eval(task: Any, kernel: Any, /, *, raise_on_failure: bool = True, **options: Any) -> Document:
    """Gate one kernel on a task (`lathe eval TASK KERNEL --json`); returns the lathe.eval/1 document.

    task:   a shipped task's name ("softmax"), a task directory or task.toml, or a PyTorch problem
            file (KernelBench/KLineage .py, KLineage .json; docs/problems.md).
    kernel: a bundle directory, a bare .cpp/.cu file, a Python kernel or KernelBench ModelNew .py
            (docs/python-kernels.md), or the name of one of the task's kernels ("naive").
    Paths are relative to the current directory. The document's fields: docs/schemas.md
    ("lathe.eval/1"); the ones read most are ``outcome``, ``message``, ``checks`` and, when
    timed, ``paired["ratio"]`` (the speedup over the baseline) and ``decision``.

    Options are `lathe eval`'s flags, dashes as underscores: ``no_time=True`` (checks only, no
    timing), ``baseline="expert"``, ``seeds=5``, ``max_time=2``, ``mode="kernelbench"`` with
    ``warmup``/``trials``, ``seed``, ``quick``, ``no_aa``, ``host_trials``,
    ``refuse_torch_fallback`` (the full list: `lathe eval --help`). True passes a switch; False
    or None leaves a flag out. A keyword eval does not take raises TypeError, naming those it does.

    API keywords:
      workspace: the directory whose .lathe/ store to use (lathe's --workspace); default: the
                 .lathe/ found upward from the current directory.
      lathe_bin: the lathe executable; default $LATHE_BIN, else `lathe` on PATH.
      progress:  True prints lathe's stderr lines to sys.stderr as they come; a callable gets each
                 line (str); default: collected, and shown only in a LatheError's message.
      raise_on_failure: True (default): a kernel that fails the gate (exit code 1: wrong_result,
                 compile_error, input_mutated, ...) raises LatheError with that outcome, the
                 evaluation's message and the whole document in ``.document``. False: the
                 document is returned whatever the outcome; check ``doc["outcome"]``.
    An ``unstable`` evaluation (exit code 3: the kernel passed its checks, the machine was too
    noisy to decide its speed) is returned, not raised, either way: it is not a failing kernel.
    Bad usage or input (an unknown task, exit code 2) always raises LatheError(outcome="usage").

    Example:
        >>> import lathe
        >>> doc = lathe.eval("softmax", "my_softmax.cpp", no_time=True)
        >>> doc["outcome"], all(c["passed"] for c in doc["checks"])
        ('ok', True)
    """
    done, doc, argv = _run(("eval",), "lathe.eval", "lathe.eval/1", [task, kernel], options,
                           _COMMON_KEYWORDS + ("raise_on_failure",))
    if done.exit_code in (0, 3):
        return doc
    if done.exit_code == 1:
        if not raise_on_failure:
            return doc
        raise LatheError(str(doc.get("outcome", "failed")), str(doc.get("message", "")),
                         exit_code=1, document=doc, stderr=done.stderr, argv=argv)
    raise LatheError("failed", f"lathe eval exited {done.exit_code}", exit_code=done.exit_code,
                     document=doc, stderr=done.stderr, argv=argv)


def _verb_succeeded(verb: str, done: _process.Finished, doc: Document, argv: List[str]) -> Document:
    if done.exit_code == 0:
        return doc
    raise LatheError("failed", _first_lines(done.stderr) or f"lathe {verb} exited {done.exit_code}",
                     exit_code=done.exit_code, document=doc, stderr=done.stderr, argv=argv)


def bench(suite: Any, /, **options: Any) -> Document:
    """Gate a suite's candidates (`lathe bench SUITE --json`); returns the lathe.bench/1 document.

    suite: "all", "source", "heldout" (the shipped tasks) or a directory of task directories and
    PyTorch problem files. Options are `lathe bench`'s flags (`lathe bench --help`):
    ``candidates="dir"`` (one candidate per task), ``kernel="expert"`` (each task's own kernel),
    ``strategy="skills"`` with ``budget={"steps": 3}``, ``check_only=True`` (nothing timed),
    ``max_time=1``, ``protocol="klineage"`` with ``runs=3``, ``markdown="table.md"``; the API's
    keywords ``workspace``, ``lathe_bin`` and ``progress`` as in lathe.eval.

    The document is returned whatever each task's result (per task: ``doc["tasks"]``; the
    suite's figures: ``doc["aggregates"]``); LatheError is raised only when the bench itself
    fails (exit code 1, outcome "failed") or the call is bad (exit code 2, outcome "usage").
    """
    done, doc, argv = _run(("bench",), "lathe.bench", "lathe.bench/1", [suite], options)
    return _verb_succeeded("bench", done, doc, argv)


def optimize(task: Any = None, kernel: Any = None, /, **options: Any) -> Document:
    """Search for a faster verified kernel (`lathe optimize TASK [KERNEL] --json`); returns the
    lathe.optimize/1 document (``doc["best"]["dir"]``: the best kernel's bundle;
    ``doc["best_vs_start"]``: its paired speedup; ``doc["run"]``: the run, for ``resume=``).

    task: as in lathe.eval (None with ``resume="RUN"``); kernel: the start kernel (default: the
    proposer seeds one, or the task's naive kernel). Options are `lathe optimize`'s flags
    (`lathe optimize --help`): ``budget={"steps": 4, "time": "5m"}`` (or "steps=4,time=5m"),
    ``strategy="none"``, ``proposer="rules"``, ``resume="RUN"``, ``max_time=1``, ``quick=True``,
    ``out="best_dir"``, ``quiet=True`` (no progress lines). Long runs: ``progress=True`` shows
    lathe's progress lines as they come; KeyboardInterrupt stops lathe (its run can be resumed).

    The document is returned however the search went; LatheError is raised only when the run
    fails (exit code 1, outcome "failed") or the call is bad (exit code 2, outcome "usage").
    """
    if task is None and kernel is not None:
        raise TypeError("lathe.optimize(): a start kernel needs its task")
    done, doc, argv = _run(("optimize",), "lathe.optimize", "lathe.optimize/1", [task, kernel], options)
    return _verb_succeeded("optimize", done, doc, argv)


def solve(suite: Any, /, **options: Any) -> Document:
    """Solve a folder of KernelBench problems (`lathe solve SUITE --out DIR --json`); returns the
    lathe.solve/1 document (``doc["problems"]``: per problem its record; ``doc["aggregates"]``:
    correct, fast_p, geomean over eager, model calls and cost).

    suite: a folder of KernelBench problem files (``<P>_<Name>.py``) named ``level<L>``. Options
    are `lathe solve`'s flags (`lathe solve --help`): ``out="dir"`` (required: the ModelNew files
    in KernelBench's layout, ``eval_results.json`` and the state; the same folder again resumes),
    ``budget={"steps": 2}`` per problem, ``strategy="none"``, ``proposer="llm"``, ``jobs=2``,
    ``sample=0``, ``max_time=1``, ``quick=True``; the API's keywords as in lathe.eval.

    The document is returned whatever each problem's result (a problem that fails is its row);
    LatheError is raised only when the loop fails (exit code 1, outcome "failed") or the call is
    bad (exit code 2, outcome "usage": not a folder, no problem, an out folder of another solve).
    """
    done, doc, argv = _run(("solve",), "lathe.solve", "lathe.solve/1", [suite], options)
    return _verb_succeeded("solve", done, doc, argv)


def doctor(**options: Any) -> Document:
    """What lathe can use on this machine (`lathe doctor --json`); returns the lathe.doctor/1
    document: ``compiler``, ``target`` (ISA, cores, measured ceilings), ``openmp``, ``gpu``,
    ``gpu_target``, ``cuda_tools``, ``workspace``, ``model`` (docs/schemas.md).

    Options: ``no_measure=True`` (do not measure bandwidth and FLOP ceilings when they are not
    cached: the call then takes well under a second), ``remeasure=True``, ``llm_ping=True``;
    the API's keywords ``workspace``, ``lathe_bin`` and ``progress`` as in lathe.eval.

    The document is returned also when doctor exits 1 for a problem it found (OpenMP does not
    link, a GPU target unreadable, a lathe.toml error, a failed ping): the problem is in the
    document (``openmp``, ``gpu_error``, ``model["error"]``, ``ping``).
    """
    done, doc, argv = _run(("doctor",), "lathe.doctor", "lathe.doctor/1", [], options)
    if done.exit_code in (0, 1):
        return doc
    return _verb_succeeded("doctor", done, doc, argv)
