"""lathe synth, input trials: candidate problem files tried in lathe's sandbox (docs/synth.md).

    python3 -I -B lathe_synth_trial.py plan.json --timeout S

Run by `lathe synth` (src/cli/synth_trials.cpp) inside the one sandbox (src/gate/cpu/bubblewrap.h: no
network, nothing of the host writable but this folder, the environment PATH, LANG and TMPDIR
only), with this folder as its working directory. The mined code is untrusted: it runs only in
the children this script forks, never in this process.

This process imports torch once and lathe's problem worker (lathe_problem.py, what `lathe task
show` loads a problem with), then for each module of the plan writes its candidates into a fresh
folder from the plan it read at the start (a module tried earlier may have rewritten anything
here) and forks a child (up to 4 at a time, one per CPU) that tries them in order and stops at
the first whose Model builds and whose forward runs, as `task show` describes it (describe: fp64
reference, the model's own dtypes, its ops), and that passes the filters (issue 47 item 3):
finite outputs; deterministic (two runs on the same inputs, and two from the same seed, give
the same bits); not constant in its inputs (another draw of the inputs, the same parameters,
changes the outputs). A candidate that ran but failed a filter says which (`filter`). The one
kept also gives what it ran (the aten ops, the classes of the modules it ran: its family) and a fingerprint
of its outputs on two shared draws (for the dedup by behaviour). Each candidate has --timeout
seconds (SIGALRM in the child; the child killed when its module's whole time is spent). Replies
go through a pipe of the child's own: the child's stdout and stderr are /dev/null, so what it
prints never reaches lathe.

Prints one line `LATHE_SYNTH_TRIAL {json}` once torch is imported (or one with "no_torch"),
then one per module: {"id", "tried", "kept": index or null, "errors": [first error], "filter":
{"kind", "error"} of the first candidate that ran but failed a filter, or null, "record": {"ops",
"layers", "fingerprint", "cost": {"flops", "bytes"}} of the kept one, or null}.
"""
import json
import math
import os
import select
import shutil
import signal
import sys
import time

MARK = "LATHE_SYNTH_TRIAL "
ERROR_CHARS = 300
SAMPLES = 32  # output values per output in a fingerprint
FILTERS = ("nondeterministic", "not finite", "constant", "too many tensors", "returns its input")
SCALE = 8.0
# The gate's limit on a problem's tensors, inputs and parameters and outputs together (lathe passes
# --max-tensors: src/gate/cpu/wire.h); 0 for none. A module past it is kept nowhere lathe can
# evaluate it (`lathe eval`: resource_limit, "more than 16 tensors").
MAX_TENSORS = 0  # the second shared draw: the inputs times this
HELPERS = ("lathe_ops.py", "lathe_plumbing.txt")
# Sizes for a target run time (--target-ms; 0: off): a kept candidate whose inputs all share the
# guessed shape has its leading dimension (`batch_size`) scaled by powers of two toward the target
# forward time, at most SCALE_STEPS more tries (next_batch), the batch at most MAX_BATCH and the
# inputs and outputs at most MAX_BYTES; a size that fails to run or a filter ends the scaling.
TARGET_MS = 0.0
SCALE_STEPS = 4
MAX_BATCH = 65536
MAX_BYTES = 32 << 20
TIMING_S = 0.25  # timing one size: repeats of forward within this time (3 at least, 50 at most)


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


class Rejected(Exception):
    """A candidate that ran but failed a filter; `kind` is nondeterministic, not finite or constant."""

    def __init__(self, kind, detail):
        super().__init__(detail)
        self.kind = kind


def outputs_of(worker_mod, torch, p, named):
    """The model's own outputs (its dtypes, not the fp64 reference's) on `named`."""
    return [t for _, t in worker_mod.as_outputs(p.call(named, False), torch, p.output_names)]


def same(torch, a, b):
    """Bit for bit: one thread, the same ops on the same inputs give the same bits (main sets
    torch's threads to 1), so any difference is the module's own (a random draw, a counter)."""
    return len(a) == len(b) and all(
        x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, b))


def summary_of(torch, outputs):
    """A small, comparable record of outputs: shape, dtype, SAMPLES values at evenly spaced
    positions, their sum and sum of magnitudes (lathe_synth_dedup.py compares two of them)."""
    rec = []
    for t in outputs:
        flat = (torch.view_as_real(t) if t.is_complex() else t).detach().reshape(-1).double()
        n = flat.numel()
        idx = torch.linspace(0, max(n - 1, 0), min(n, SAMPLES)).long() if n else None
        rec.append({"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                    "values": flat[idx].tolist() if n else [], "sum": float(flat.sum()),
                    "abs": float(flat.abs().sum())})
    return rec


def scaled_summary(worker_mod, torch, p, named):
    """The outputs on the same draw with its inputs times SCALE (a clamp at 6 and a ReLU agree on
    randn, not on 8 randn), or None when the module fails or overflows there."""
    n = p.n_inputs
    big = [(k, t * SCALE if t.is_floating_point() else t) for k, t in named[:n]] + named[n:]
    try:
        out = outputs_of(worker_mod, torch, p, big)
    except Exception:
        return None
    if not all(bool(torch.isfinite(t).all()) for t in out if t.is_floating_point()):
        return None
    return summary_of(torch, out)


def op_flops(name, args, out):
    """FLOPs (2 per multiply-add) of one matmul or convolution; 0 for any other op."""
    try:
        if name == "mm":
            (m, k), n = args[0].shape, args[1].shape[1]
            return 2 * m * n * k
        if name == "addmm":
            (m, k), n = args[1].shape, args[2].shape[1]
            return 2 * m * n * k
        if name in ("bmm", "baddbmm"):
            a, b = (args[0], args[1]) if name == "bmm" else (args[1], args[2])
            return 2 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
        if name == "convolution":
            x, w, transposed = args[0], args[1], bool(args[6])
            per = w.shape[1] * math.prod(w.shape[2:])  # (Cin/groups or Cout/groups) x kernel
            return 2 * (x.numel() if transposed else out.numel()) * per
    except (AttributeError, IndexError, TypeError, ValueError):
        pass
    return 0


def measured_flops(torch, run):
    """The matmul and convolution FLOPs `run()` executes, counted at torch's dispatcher."""
    from torch.utils._python_dispatch import TorchDispatchMode
    total = [0]

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            total[0] += op_flops(func.__name__.split(".")[0], args, out)
            return out
    with Count():
        run()
    return int(total[0])


def tensor_bytes(tensors):
    return int(sum(t.numel() * t.element_size() for t in tensors))


def examine(worker_mod, torch, path):
    """The record of a candidate that loads, runs forward as `task show` describes it, and passes
    the filters: {"ops", "layers", "fingerprint"}. Raises Rejected for a filter, anything else
    for a candidate that does not run."""
    worker = worker_mod.Worker(path, "cpu", torch, None)
    layers = set()

    def seen(module, args):
        # The classes of the modules it runs, with their bases, by name (a family's evidence
        # where the ops are not: torch.nn's LSTM runs addmm, sigmoid and tanh on the CPU, and an
        # extracted copy of it derives from its own inlined RNNBase, not torch.nn's).
        for c in type(module).__mro__:
            if c.__name__ not in ("Module", "object"):
                layers.add(c.__name__)
    hook = torch.nn.modules.module.register_module_forward_pre_hook(seen)
    try:
        d = worker.describe({"seed": 0})
    finally:
        hook.remove()
    if not d.get("outputs"):
        raise ValueError("no outputs")
    p = worker.problem
    named = p.inputs(0)
    first = outputs_of(worker_mod, torch, p, named)
    if MAX_TENSORS and len(named) + len(first) > MAX_TENSORS:
        raise Rejected("too many tensors", f"{len(named)} inputs and parameters and {len(first)} "
                       f"outputs: lathe's gate passes {MAX_TENSORS} tensors at most")
    # An output that is an input's storage (the input itself, or a view: an identity, Dropout in
    # eval, Flatten) does no work, and lathe's worker refuses a candidate that returns it
    # (`forbidden`: a view of lathe's own buffers).
    inputs = {t.storage().data_ptr() for _, t in named[:p.n_inputs] if t.numel()}
    for i, t in enumerate(first):
        if t.numel() and t.storage().data_ptr() in inputs:
            raise Rejected("returns its input", f"output {i} is an input or a view of one")
    for i, t in enumerate(first):
        if (t.is_floating_point() or t.is_complex()) and not bool(torch.isfinite(t).all()):
            raise Rejected("not finite", f"output {i} holds NaN or inf")
    if not math.isfinite(float(d.get("output_rms", 0.0))):
        raise Rejected("not finite", "the float64 reference's outputs hold NaN or inf")
    if not same(torch, first, outputs_of(worker_mod, torch, p, named)):
        raise Rejected("nondeterministic", "two runs on the same inputs gave different outputs")
    if not same(torch, first, outputs_of(worker_mod, torch, p, p.inputs(0))):
        raise Rejected("nondeterministic", "two runs from the same seed gave different outputs")
    n = p.n_inputs
    if n == 0:
        raise Rejected("constant", "forward takes no tensor input")
    other = p.inputs(1)  # another draw of the inputs; the parameters kept from seed 0
    if same(torch, first, outputs_of(worker_mod, torch, p, other[:n] + named[n:])):
        raise Rejected("constant", "two different input draws gave the same outputs")
    signature = [[str(t.dtype).replace("torch.", ""), list(t.shape)] for _, t in named[:n]]
    cost = {"flops": measured_flops(torch, lambda: outputs_of(worker_mod, torch, p, named)),
            "bytes": {"inputs": tensor_bytes(t for _, t in named[:n]),
                      "parameters": tensor_bytes(t for _, t in named[n:]),
                      "outputs": tensor_bytes(first)}}
    return {"cost": cost, "ops": [str(o)[:80] for o in d["model"].get("ops", [])][:200],
            "layers": sorted(layers)[:50],
            "fingerprint": {"inputs": signature, "outputs": summary_of(torch, first),
                            "scaled": scaled_summary(worker_mod, torch, p, named)}}


def batch_line(name, value):
    """The problem file's line that sets its leading dimension (lathe_synth.py writes it)."""
    return f"{name} = {int(value)}  # the leading dimension; scaled toward --target-ms (docs/synth.md)"


def with_batch(text, name, old, new):
    """`text` with its batch line set to `new`, or None where the line is not there once."""
    line = batch_line(name, old)
    if text.count("\n" + line + "\n") != 1:
        return None
    return text.replace("\n" + line + "\n", "\n" + batch_line(name, new) + "\n", 1)


def forward_ms(worker_mod, torch, path):
    """The median forward time in ms of a candidate at its own sizes (torch on one thread)."""
    p = worker_mod.Worker(path, "cpu", torch, None).problem
    named = p.inputs(0)
    outputs_of(worker_mod, torch, p, named)  # warm
    times, start = [], time.perf_counter()
    while len(times) < 3 or (len(times) < 50 and time.perf_counter() - start < TIMING_S):
        t0 = time.perf_counter()
        outputs_of(worker_mod, torch, p, named)
        times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def next_batch(ran, per_batch_bytes):
    """The next power of two to try from the sizes that ran ([(batch, ms, cost)], the last one
    tried last), within the limits; the last batch when its time is within a factor of 2 of
    TARGET_MS or no other size is worth a try. Once one size ran under the target and another
    over it, the one between them (time often grows faster than the batch: caches, page faults);
    else the one the last time scales linearly to."""
    b, ms, _ = ran[-1]
    if ms <= 0 or TARGET_MS / 2 <= ms <= TARGET_MS * 2:
        return b
    under = [r[0] for r in ran if r[1] < TARGET_MS]
    over = [r[0] for r in ran if r[1] > TARGET_MS]
    if under and over and max(under) < min(over):
        lo, hi = max(under), min(over)
        want = 2 ** round((math.log2(lo) + math.log2(hi)) / 2)
        return want if lo < want < hi else b
    want = max(1, min(MAX_BATCH, 2 ** round(math.log2(max(b * TARGET_MS / ms, 1)))))
    while want > b and want * per_batch_bytes > MAX_BYTES:
        want //= 2
    return b if any(r[0] == want for r in ran) else want


def scale(worker_mod, torch, path, cand, record, timeout_s):
    """The kept candidate's batch scaled toward TARGET_MS: record["sizes"] (the batch chosen, its
    forward time, each size tried) and the cost at that batch. The fingerprint stays the planned
    size's: the dedup compares modules on the same shared draws."""
    info = cand.get("batch") or {}
    name, b = info.get("name"), info.get("value")
    signal.alarm(max(1, int(timeout_s)))
    ms = forward_ms(worker_mod, torch, path)
    signal.alarm(0)
    tried = [[b, round(ms, 4)]]
    ran = [(b, ms, record["cost"])]  # the sizes that ran and passed the filters
    io = record["cost"]["bytes"]["inputs"] + record["cost"]["bytes"]["outputs"]
    text = cand["text"]
    for step in range(SCALE_STEPS):
        nb = next_batch(ran, io / max(b, 1))
        if nb == b:
            break
        new = with_batch(text, name, info["value"], nb)
        if new is None:
            break
        trial_path = os.path.join(os.path.dirname(path), f"scaled_{step + 1}.py")
        write_fresh(trial_path, new)
        signal.alarm(max(1, int(timeout_s)))
        try:
            rec = examine(worker_mod, torch, trial_path)
            nms = forward_ms(worker_mod, torch, trial_path)
        except BaseException as e:  # a size that does not run or fails a filter ends the scaling
            tried.append([nb, short(e)])
            break
        finally:
            signal.alarm(0)
        b, ms = nb, nms
        io = rec["cost"]["bytes"]["inputs"] + rec["cost"]["bytes"]["outputs"]
        ran.append((b, ms, rec["cost"]))
        tried.append([b, round(ms, 4)])
    # The size whose time is nearest the target (by ratio): a step may overshoot, and on a loaded
    # machine one timing may be off.
    b, ms, record["cost"] = min(ran, key=lambda r: abs(math.log(max(r[1], 1e-6) / TARGET_MS)))
    record["sizes"] = {"batch": b, "forward_ms": round(ms, 4), "target_ms": TARGET_MS,
                       "tried": tried}


def child(worker_mod, torch, files, timeout_s, reply_fd, cands=()):
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    out = os.fdopen(reply_fd, "w", buffering=1)
    signal.signal(signal.SIGALRM, on_alarm)
    for k, path in enumerate(files):
        signal.alarm(max(1, int(timeout_s)))
        reply = {"k": k, "error": None}
        try:
            reply.update(examine(worker_mod, torch, path))
        except Rejected as e:
            reply.update(error=str(e)[:ERROR_CHARS], filter=e.kind)
        except BaseException as e:  # the module's own exceptions, SystemExit included
            reply["error"] = short(e)
        signal.alarm(0)
        err = reply["error"]
        if err is None and TARGET_MS > 0 and (cands[k].get("batch") or {}).get("value"):
            try:  # kept at the planned size whatever the scaling meets
                scale(worker_mod, torch, path, cands[k], reply, timeout_s)
            except BaseException as e:
                reply["sizes"] = {"error": short(e)}
            signal.alarm(0)
        out.write(json.dumps(reply) + "\n")
        if err is None:
            break
    out.flush()
    os._exit(0)


class Job:
    """One module's child: its pid, reply pipe, deadline and what it has replied."""

    def __init__(self, m, pid, fd, n, timeout_s):
        self.m, self.pid, self.fd, self.n, self.buf = m, pid, fd, n, b""
        self.limit = timeout_s * (n + (SCALE_STEPS if TARGET_MS > 0 else 0)) + 2
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
        child(worker_mod, torch, files, timeout_s, w, m["candidates"])
    os.close(w)
    return Job(m, pid, r, len(files), timeout_s)


def finish(job, timed_out):
    if timed_out:
        os.kill(job.pid, signal.SIGKILL)
    os.waitpid(job.pid, 0)
    os.close(job.fd)
    replies, errors, kept, record, rejected = 0, [], None, None, None
    for line in job.buf.decode("utf-8", "replace").splitlines():
        try:
            rep = json.loads(line)
            k, err = int(rep["k"]), rep["error"]
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        replies = max(replies, k + 1)
        if err is None and kept is None and 0 <= k < job.n:
            kept = k
            record = {key: rep.get(key) for key in ("ops", "layers", "fingerprint", "cost", "sizes")}
        elif err is not None:
            errors.append(str(err)[:ERROR_CHARS])
            if rejected is None and rep.get("filter") in FILTERS:
                rejected = {"kind": rep["filter"], "error": str(err)[:ERROR_CHARS]}
    if timed_out and kept is None:
        errors.append(f"timed out: the module's {job.n} trials passed {job.limit:g} s")
    return {"id": job.m["id"], "tried": replies, "kept": kept, "errors": errors[:1],
            "filter": rejected, "record": record}


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
    global MAX_TENSORS, TARGET_MS
    not_dumpable()
    plan_path = sys.argv[1]
    timeout_s = 10.0
    if "--timeout" in sys.argv:
        timeout_s = float(sys.argv[sys.argv.index("--timeout") + 1])
    if "--max-tensors" in sys.argv:
        MAX_TENSORS = int(sys.argv[sys.argv.index("--max-tensors") + 1])
    if "--target-ms" in sys.argv:
        TARGET_MS = max(0.0, float(sys.argv[sys.argv.index("--target-ms") + 1]))
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
