"""lathe synth, input trials: candidate problem files tried in lathe's sandbox (docs/synth.md).

    python3 -I -B lathe_synth_trial.py plan.json --timeout S

Run by `lathe synth` (src/cli/synth_trials.cpp) inside the one sandbox (src/gate/bubblewrap.h: no
network, nothing of the host writable but this folder, the environment PATH, LANG and TMPDIR
only), with this folder as its working directory. The mined code is untrusted: it runs only in
the children this script forks, never in this process.

This process imports torch once and lathe's problem worker (lathe_problem.py, what `lathe task
show` loads a problem with), then for each module of the plan writes its candidates into a fresh
folder from the plan it read at the start (a module tried earlier may have rewritten anything
here) and forks a child (up to 4 at a time, one per CPU) that tries them in order and stops at
the first whose Model builds and whose forward runs to finite outputs, as `task show` describes
it (describe: fp64 reference, the model's own dtypes, its ops). Each candidate has --timeout
seconds (SIGALRM in the child; the child killed when its module's whole time is spent). Replies
go through a pipe of the child's own: the child's stdout and stderr are /dev/null, so what it
prints never reaches lathe.

Prints one line `LATHE_SYNTH_TRIAL {json}` once torch is imported (or one with "no_torch"),
then one per module: {"id", "tried", "kept": index or null, "errors": [first error]}.
"""
import json
import os
import select
import shutil
import signal
import sys
import time

MARK = "LATHE_SYNTH_TRIAL "
ERROR_CHARS = 300
HELPERS = ("lathe_ops.py", "lathe_plumbing.txt")


def say(obj):
    sys.stdout.write(MARK + json.dumps(obj) + "\n")
    sys.stdout.flush()


def not_dumpable():
    """A child (same user) may not read this process's memory or descriptors (/proc/PID/fd)."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except (OSError, AttributeError):
        pass


def short(e):
    text = f"{type(e).__name__}: {e}".replace("\n", " ")
    return text[:ERROR_CHARS]


def write_fresh(path, text):
    """`path` written anew: whatever a child left there (a link included) is removed first."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


class TrialTimeout(Exception):
    pass


def on_alarm(signum, frame):
    raise TrialTimeout("the trial passed its time limit")


def try_one(worker_mod, torch, path):
    """None when the candidate loads and runs forward to finite outputs, else the error."""
    import math
    worker = worker_mod.Worker(path, "cpu", torch, None)
    d = worker.describe({"seed": 0})
    if not d.get("outputs"):
        return "no outputs"
    if not math.isfinite(float(d.get("output_rms", 0.0))):
        return "outputs not finite (NaN or inf)"
    return None


def child(worker_mod, torch, files, timeout_s, reply_fd):
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    out = os.fdopen(reply_fd, "w", buffering=1)
    signal.signal(signal.SIGALRM, on_alarm)
    for k, path in enumerate(files):
        signal.alarm(max(1, int(timeout_s)))
        try:
            err = try_one(worker_mod, torch, path)
        except BaseException as e:  # the module's own exceptions, SystemExit included
            err = short(e)
        signal.alarm(0)
        out.write(json.dumps({"k": k, "error": err}) + "\n")
        if err is None:
            break
    out.flush()
    os._exit(0)


class Job:
    """One module's child: its pid, reply pipe, deadline and what it has replied."""

    def __init__(self, m, pid, fd, n, timeout_s):
        self.m, self.pid, self.fd, self.n, self.buf = m, pid, fd, n, b""
        self.limit = timeout_s * n + 2
        self.deadline = time.monotonic() + self.limit


def start_module(worker_mod, torch, m, here, timeout_s):
    folder = os.path.join(here, f"m{int(m['id'])}")
    if os.path.islink(folder):  # planted by a module tried earlier
        os.unlink(folder)
    shutil.rmtree(folder, ignore_errors=True)
    os.mkdir(folder)
    files = []
    for k, c in enumerate(m["candidates"]):
        path = os.path.join(folder, f"candidate_{k + 1}.py")
        write_fresh(path, c["text"])
        files.append(path)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.chdir(folder)
        child(worker_mod, torch, files, timeout_s, w)
    os.close(w)
    return Job(m, pid, r, len(files), timeout_s)


def finish(job, timed_out):
    if timed_out:
        os.kill(job.pid, signal.SIGKILL)
    os.waitpid(job.pid, 0)
    os.close(job.fd)
    replies, errors, kept = 0, [], None
    for line in job.buf.decode("utf-8", "replace").splitlines():
        try:
            rep = json.loads(line)
            k, err = int(rep["k"]), rep["error"]
        except (ValueError, KeyError, TypeError):
            continue
        replies = max(replies, k + 1)
        if err is None and kept is None and 0 <= k < job.n:
            kept = k
        elif err is not None:
            errors.append(str(err)[:ERROR_CHARS])
    if timed_out and kept is None:
        errors.append(f"timed out: the module's {job.n} trials passed {job.limit:g} s")
    return {"id": job.m["id"], "tried": replies, "kept": kept, "errors": errors[:1]}


def run_all(worker_mod, torch, modules, here, timeout_s, jobs, helpers):
    """Every module's child, `jobs` at a time; one line per module as each ends."""
    pending, running = list(modules), {}
    while pending or running:
        while pending and len(running) < jobs:
            for path, text in helpers.items():
                try:
                    write_fresh(path, text)
                except PermissionError:  # lathe ran as root: the folder is not this user's
                    pass
            job = start_module(worker_mod, torch, pending.pop(0), here, timeout_s)
            running[job.fd] = job
        ready, _, _ = select.select(list(running), [], [], 0.05)
        for fd in ready:
            job = running[fd]
            chunk = os.read(fd, 65536)
            if chunk:
                job.buf += chunk[:max(0, (1 << 20) - len(job.buf))]
                continue
            say(finish(running.pop(fd), False))
        now = time.monotonic()
        for fd in [fd for fd, job in running.items() if now > job.deadline]:
            say(finish(running.pop(fd), True))


def main():
    not_dumpable()
    plan_path = sys.argv[1]
    timeout_s = 10.0
    if "--timeout" in sys.argv:
        timeout_s = float(sys.argv[sys.argv.index("--timeout") + 1])
    # Children at a time: the machine's CPUs, at most 4 (each is one torch thread).
    jobs = max(1, min(4, os.cpu_count() or 1))
    here = os.getcwd()
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)  # read before any child runs: nothing later rewrites what is tried
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import torch
    except Exception as e:
        say({"no_torch": short(e), "python": sys.executable})
        return 3
    torch.set_num_threads(1)
    import lathe_problem
    # What describe reads while a module runs (lathe_ops.py and its list), read now and written
    # anew before each module: a module tried earlier may have rewritten them.
    helpers = {}
    for name in HELPERS:
        path = os.path.join(os.path.dirname(os.path.abspath(lathe_problem.__file__)), name)
        with open(path, encoding="utf-8") as f:
            helpers[path] = f.read()
    say({"ready": True, "torch": torch.__version__})
    run_all(lathe_problem, torch, plan["modules"], here, timeout_s, jobs, helpers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
