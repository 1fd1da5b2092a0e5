"""Running lathe as a child process: stdout kept whole, stderr streamed line by line.

lathe prints its JSON document on stdout and its progress lines on stderr. Both pipes are read
at once (stdout on a thread, stderr here, so a progress callback runs on the caller's thread, as
a notebook's output capture expects); a chatty stderr can never block the child while its
document waits in a full stdout pipe.

The child runs in a process group of its own with stdin from /dev/null: it never reads a TTY,
and an interrupt of the caller (Ctrl-C, a notebook's "interrupt kernel") reaches it only through
us. On KeyboardInterrupt (or any exception, e.g. from the progress callback) the group gets
SIGINT, as a terminal's Ctrl-C would send, then SIGTERM after 3 s, then SIGKILL for whatever is
left of the group (workers lathe started), and the exception goes on to the caller.
"""

import collections
import os
import signal
import subprocess
import sys
import threading
from typing import Callable, List, NamedTuple, Optional, Union

from ._errors import LatheError
from ._cli import HOW_TO_POINT

Progress = Union[None, bool, Callable[[str], None]]

# Lines of stderr kept for error messages (an optimize run prints a few per evaluation).
STDERR_TAIL_LINES = 400
GRACE_SECONDS = 3.0


class Finished(NamedTuple):
    exit_code: int   # negative: killed by that signal (subprocess's convention)
    stdout: str
    stderr: str      # the last STDERR_TAIL_LINES lines


def _sink(progress: Progress) -> Optional[Callable[[str], None]]:
    if progress is None or progress is False:
        return None
    if progress is True:
        # sys.stderr looked up per line: a notebook replaces it per cell.
        return lambda line: print(line, file=sys.stderr, flush=True)
    if callable(progress):
        return progress
    raise TypeError(f"progress={progress!r}: expected True, False or a callable taking one line (str)")


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False  # nothing of the group is left
    except PermissionError:
        return False  # the group id was taken over by processes not ours: leave them


def stop_group(proc: subprocess.Popen) -> None:
    """Ends the child and everything in its process group; waits for the child."""
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            if proc.poll() is not None:
                break
            _signal_group(proc.pid, sig)
            try:
                proc.wait(timeout=GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                continue
    except KeyboardInterrupt:
        pass  # interrupted again while waiting: no more grace
    # Whatever is left: lathe itself if it ignored both, or workers it left behind. The group id
    # cannot be reused while any member lives, so this reaches only the child's group.
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def run(argv: List[str], progress: Progress = None) -> Finished:
    """Runs argv to its end; `progress` gets each stderr line (True: printed to sys.stderr)."""
    sink = _sink(progress)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        raise LatheError("no_binary", f"could not start {argv[0]}: {e.strerror or e}; " + HOW_TO_POINT,
                         argv=argv) from e
    out: List[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True,
                              name="lathe-stdout")
    reader.start()
    tail: collections.deque = collections.deque(maxlen=STDERR_TAIL_LINES)
    try:
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            tail.append(line)
            if sink is not None:
                sink(line)
        exit_code = proc.wait()
        reader.join()
    except BaseException:
        stop_group(proc)
        reader.join(timeout=GRACE_SECONDS)
        raise
    finally:
        proc.stderr.close()
        if not reader.is_alive():  # else a process outside the group still holds the pipe
            proc.stdout.close()
    return Finished(exit_code, b"".join(out).decode("utf-8", "replace"), "\n".join(tail))
