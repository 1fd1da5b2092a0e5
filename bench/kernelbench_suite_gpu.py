#!/usr/bin/env python3
"""A KernelBench-format suite on the H200 through lathe (issue 48, "Runs"): what one candidate costs,
what a whole suite of samples costs and finds, and the solver's machinery on ten problems. Not a
test: it writes the numbers for the closing note, as JSON and Markdown into --out after every
step (a kill loses one step), each part under its own time limit.

The suite is bench/kernelbench_gpu: 19 level-1 and 5 level-2 problems written for lathe in
KernelBench's format (sizes of 32-64 MiB, smaller than KernelBench's own), two samples per
problem in KernelBench's layout (sample 0 torch ops; sample 1 inline CUDA through load_inline, or
Triton for three problems, or torch ops for the GEMMs and the convolution), and three Triton
samples beside them (samples_triton, sample 2) for the per-candidate part.

  cost    per candidate, cold and cached: for ReLU (elementwise), Softmax (a row reduction) and
          Linear + bias + ReLU (level 2), the inline-CUDA sample and the Triton one through
          `lathe --workspace WS eval PROBLEM SAMPLE --json` (a fresh workspace: cold, the
          extension's compile included; the same workspace again: cached), wall time and the
          gate's stage_seconds; beside them the same samples through KernelBench's protocol
          reproduced in one Python process (KernelBench's harness is not installed on the GPU
          machine): the problem and the sample imported (load_inline compiles there: cold with
          a fresh TORCH_EXTENSIONS_DIR and TRITON_CACHE_DIR, cached with the same), 5 seeded
          correctness trials with torch.allclose(atol=1e-2, rtol=1e-2) against the eager Model,
          3 warm-up calls and 100 trials each between two CUDA events, speedup = mean eager /
          mean ModelNew; wall time of the whole process.
  suite   `lathe --workspace WS bench bench/kernelbench_gpu/levelL --candidates .../samples
          --platform cuda --quick --max-time 0.5 --json --kernelbench-json FILE` for levels 1
          and 2: wall time, evaluations per hour (problems x samples / wall), per sample the
          correct, failed, fast_p and geomean lathe reports, and every failure with its outcome
          and message (a refused honest sample is a finding, not noise).
  solve   the solver's machinery with the MOCK model (not what a model would find):
          `lathe solve` on the first ten level-1 problems copied into a folder named level1, --proposer
          llm --strategy none --budget steps=1 --quick --max-time 0.3, the workspace's lathe.toml
          naming lathe-mock-model as a command provider; wall time, solved and failed problems,
          the geomean, the failures' messages.

Usage: bench/kernelbench_suite_gpu.py --lathe build-gpu/lathe --out DIR [--parts cost,suite,solve]
       [--platform cuda|cpu|none] [--samples 0,1] [--cost-kinds inline_cuda,triton]
On the CPU VM (no GPU): --platform none --samples 0 --cost-kinds torch --kb-device cpu runs the
same flow on the torch-op samples, CPU numbers only.
"""
import argparse, glob, importlib.util, json, os, shutil, signal, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SUITE = os.path.join(HERE, "kernelbench_gpu")
SAMPLES = os.path.join(SUITE, "samples")
# The per-candidate part: (problem, {kind: sample}); torch is sample 0, for a run without a GPU.
COST_CASES = [
    ("level1/1_ReLU.py", {"torch": "samples/level_1_problem_1_sample_0_kernel.py",
                          "inline_cuda": "samples/level_1_problem_1_sample_1_kernel.py",
                          "triton": "samples_triton/level_1_problem_1_sample_2_kernel.py"}),
    ("level1/12_Softmax.py", {"torch": "samples/level_1_problem_12_sample_0_kernel.py",
                              "inline_cuda": "samples/level_1_problem_12_sample_1_kernel.py",
                              "triton": "samples_triton/level_1_problem_12_sample_2_kernel.py"}),
    ("level2/1_Linear_Bias_ReLU.py", {"torch": "samples/level_2_problem_1_sample_0_kernel.py",
                                      "inline_cuda": "samples/level_2_problem_1_sample_1_kernel.py",
                                      "triton": "samples_triton/level_2_problem_1_sample_2_kernel.py"}),
]


# ---------------------------------------------------------------------------------------------
# KernelBench's protocol in one process (run as a child of this script: --kb-protocol).

def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def kb_protocol(problem, sample, device, trials):
    t0 = time.monotonic()
    import torch
    r = {"torch": torch.__version__, "device": device, "verdict": "correct", "message": ""}
    if device == "cuda":
        r["device"] = torch.cuda.get_device_name(0)
    r["import_s"] = time.monotonic() - t0
    dev = torch.device(device)

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    p = load_module(problem, "kb_problem")
    t1 = time.monotonic()
    try:
        s = load_module(sample, "kb_sample")  # load_inline compiles here (Triton at the first call)
    except Exception as ex:
        r.update(verdict="compile_error", message=f"{type(ex).__name__}: {str(ex)[-300:]}")
        return r
    r["build_s"] = time.monotonic() - t1
    init = p.get_init_inputs()
    t2 = time.monotonic()
    torch.manual_seed(42)
    model = p.Model(*init).to(dev)
    torch.manual_seed(42)  # KernelBench seeds both constructions alike: equal parameters
    new = s.ModelNew(*init).to(dev)
    torch.manual_seed(42)
    seeds = [int(torch.randint(0, 2 ** 31 - 1, (1,)).item()) for _ in range(5)]
    with torch.no_grad():
        for seed in seeds:
            torch.manual_seed(seed)
            inputs = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in p.get_inputs()]
            ref = model(*inputs)
            try:
                out = new(*inputs)
                sync()
            except Exception as ex:
                r.update(verdict="runtime_error", message=f"{type(ex).__name__}: {str(ex)[-300:]}")
                break
            if out.shape != ref.shape:
                r.update(verdict="wrong", message=f"shape {list(out.shape)}, the Model's {list(ref.shape)}")
                break
            same = (torch.allclose(out, ref, atol=1e-2, rtol=1e-2) if ref.is_floating_point()
                    else torch.equal(out, ref))
            if not same:
                diff = (out.double() - ref.double()).abs().max().item()
                r.update(verdict="wrong", message=f"max abs diff {diff:.3g} (atol=rtol=1e-2)")
                break
        r["check_s"] = time.monotonic() - t2
        if r["verdict"] == "correct":
            t3 = time.monotonic()
            r["mean_s"] = timed_mean(torch, device, lambda: new(*inputs), trials)
            r["eager_mean_s"] = timed_mean(torch, device, lambda: model(*inputs), trials)
            r["speedup"] = r["eager_mean_s"] / r["mean_s"]
            r["time_s"] = time.monotonic() - t3
    r["correct"] = r["verdict"] == "correct"
    return r


def timed_mean(torch, device, call, trials):
    """3 warm-up calls, then `trials` calls each between two CUDA events and a synchronize (on the
    CPU, for a run without a GPU: time.perf_counter around each call)."""
    for _ in range(3):
        call()
    times = []
    for _ in range(trials):
        if device == "cuda":
            torch.cuda.synchronize()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            call()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) * 1e-3)
        else:
            t = time.perf_counter()
            call()
            times.append(time.perf_counter() - t)
    return statistics.mean(times)


# ---------------------------------------------------------------------------------------------
# Running children under a deadline.

_RUNNING = []  # the child now running (its process group), for the SIGTERM handler below


def _end_on_sigterm(signum, frame):
    """gpu-run's `timeout` sends SIGTERM to this script only: end the running child's whole group
    (lathe, its workers and compilers, which lead their own session) before exiting, so that none
    keeps the GPU and the temporary folder is removed by the `with` that holds it."""
    for pid in _RUNNING:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    raise SystemExit(128 + signum)


def run(cmd, timeout, env=None, cwd=None):
    """(returncode or None on timeout, stdout, stderr, wall seconds). The child leads its own
    process group, so that a timeout ends lathe's workers and compilers with it."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                         start_new_session=True)
    _RUNNING.append(p.pid)
    try:
        out, err = p.communicate(timeout=max(1.0, timeout))
        return p.returncode, out, err, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, out, err, time.monotonic() - t0
    finally:
        _RUNNING.remove(p.pid)


def settled(row, rc, out, err, wall, keep):
    """The JSON document a lathe command printed, kept at `keep`; None with the row's outcome set
    when it was killed at its time limit or printed none."""
    j = last_json(out)
    if rc is None:
        row.update(outcome="timeout", message=f"killed after {wall:.0f} s (the part's time limit)")
    elif not isinstance(j, dict):
        row.update(outcome="no_output", message=(err or "")[-600:])
    else:
        with open(keep, "w") as f:
            json.dump(j, f, indent=1)
        return j
    return None


def last_json(text):
    """The JSON document a command printed (lathe prints one; the protocol's child its last line)."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        pass
    for line in reversed((text or "").strip().splitlines()):
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            continue
    return None


class Part:
    """One part's deadline: each step gets what is left, never more than the part's limit."""

    def __init__(self, limit):
        self.end = time.monotonic() + limit

    def left(self):
        return self.end - time.monotonic()


# ---------------------------------------------------------------------------------------------
# Part a: per-candidate cost.

def stage_map(e):
    st = e.get("stage_seconds")
    if isinstance(st, list):
        return {s["stage"]: round(s["seconds"], 3) for s in st}
    return st or {}


def lathe_eval(a, ws, problem, sample, timeout):
    cmd = [a.lathe, "--workspace", ws, "eval", problem, sample, "--json", *a.eval_arg]
    rc, out, err, wall = run(cmd, timeout)
    row = {"wall_s": round(wall, 2)}
    if rc is None:
        return {**row, "outcome": "timeout", "message": f"killed after {wall:.0f} s (the part's time limit)"}
    e = last_json(out)
    if not isinstance(e, dict):
        return {**row, "outcome": "no_output", "message": (err or "")[-400:]}
    p = e.get("paired") or {}
    row["progress"] = (err or "")[-1500:]  # lathe's stage lines: where an evaluation's time went
    return {**row, "outcome": e.get("outcome"), "message": (e.get("message") or "")[:300],
            "stages": stage_map(e), "speedup": p.get("ratio"), "ci": [p.get("ci_low"), p.get("ci_high")],
            "median_s": e.get("median_seconds"), "eager_median_s": e.get("baseline_median_seconds"),
            "reference_runtime": e.get("reference_runtime")}


def kb_child(a, problem, sample, ext_dir, timeout):
    env = dict(os.environ, TORCH_EXTENSIONS_DIR=ext_dir, TRITON_CACHE_DIR=os.path.join(ext_dir, "triton"))
    cmd = [sys.executable, os.path.abspath(__file__), "--kb-protocol", problem, sample,
           "--kb-device", a.kb_device, "--kb-trials", str(a.kb_trials)]
    rc, out, err, wall = run(cmd, timeout, env=env)
    if rc is None:
        return {"wall_s": round(wall, 2), "verdict": "timeout", "message": f"killed after {wall:.0f} s"}
    r = last_json(out)
    if not isinstance(r, dict):
        return {"wall_s": round(wall, 2), "verdict": "no_output", "message": (err or "")[-400:]}
    r["wall_s"] = round(wall, 2)
    return r


def part_cost(a, res, tmp, save):
    part = Part(a.cost_limit)
    rows = res.setdefault("cost", [])
    for prob, kinds in COST_CASES:
        for kind in a.cost_kinds:
            problem, sample = os.path.join(SUITE, prob), os.path.join(SUITE, kinds[kind])
            row = {"problem": prob, "kind": kind, "sample": kinds[kind]}
            rows.append(row)
            ws = os.path.join(tmp, f"cost-{len(rows)}-ws")
            ext = os.path.join(tmp, f"cost-{len(rows)}-ext")
            # Cold ones first, each side's, then cached: a part cut short still has both cold
            # numbers (2026-12-07 on the H100: lathe's cold and cached runs took the part's 250 s
            # and KernelBench's protocol got 16 s). Each step at most --cost-step-limit.
            for key, step in (("lathe_cold", lambda t: lathe_eval(a, ws, problem, sample, t)),
                              ("kb_cold", lambda t: kb_child(a, problem, sample, ext, t)),
                              ("lathe_cached", lambda t: lathe_eval(a, ws, problem, sample, t)),
                              ("kb_cached", lambda t: kb_child(a, problem, sample, ext, t))):
                if part.left() < 5:
                    row[key] = {"outcome": "not_run", "verdict": "not_run", "message": "the part's time limit"}
                    continue
                row[key] = step(min(part.left(), a.cost_step_limit or part.left()))
                l, k = row[key].get("outcome"), row[key].get("verdict")
                print(f"cost {prob} {kind} {key}: {l or k} {row[key]['wall_s'] if 'wall_s' in row[key] else ''} s",
                      flush=True)
                save()


# ---------------------------------------------------------------------------------------------
# Part b: the suite.

def samples_dir(a, tmp):
    """The samples folder, or a copy holding only --samples of --problems (copies: bench refuses
    links)."""
    if not a.samples and not a.problems:
        return SAMPLES
    d = os.path.join(tmp, "samples")
    os.makedirs(d, exist_ok=True)
    for f in glob.glob(os.path.join(SAMPLES, "level_*_kernel.py")):
        words = os.path.basename(f).split("_")  # level L problem P sample S kernel.py
        if (not a.samples or words[5] in a.samples) and (not a.problems or words[3] in a.problems):
            shutil.copy(f, d)
    return d


def level_dir(a, tmp, lv):
    """The level's folder, or a copy named levelL holding only --problems (the level is read from
    the folder's name)."""
    if not a.problems:
        return os.path.join(SUITE, lv)
    d = os.path.join(tmp, "suite", lv)
    os.makedirs(d, exist_ok=True)
    for f in glob.glob(os.path.join(SUITE, lv, "*.py")):
        if os.path.basename(f).split("_")[0] in a.problems:
            shutil.copy(f, d)
    return d


def platform_args(a):
    return [] if a.platform == "none" else ["--platform", a.platform]


def summarize_bench(j, problems):
    out = {"samples": [], "failures": [], "speedups": {}, "prebuild": j.get("prebuild")}
    for s in j.get("samples", []):
        body = s.get("summary") or {}
        agg = body.get("aggregates") or {}
        fast = {f"fast_{f['p']:g}": f.get("count") for f in agg.get("fast_p", [])}
        out["samples"].append({"sample": s.get("sample"), "run": s.get("run"), "tasks": agg.get("tasks"),
                               "correct": agg.get("correct"), "failed": agg.get("failed"),
                               "no_candidate": agg.get("no_candidate"), "geomean": agg.get("geomean"),
                               **fast})
        for t in body.get("tasks", []):
            out["speedups"].setdefault(t.get("task"), {})[str(s.get("sample"))] = \
                f"{t['speedup']:.3g}x" if t.get("speedup") else (t.get("outcome") or t.get("status"))
            if t.get("status") == "failed":
                out["failures"].append({"sample": s.get("sample"), "task": t.get("task"),
                                        "outcome": t.get("outcome"), "message": (t.get("message") or "")[:400]})
            elif t.get("status") == "correct" and t.get("speedup") is None:
                out["failures"].append({"sample": s.get("sample"), "task": t.get("task"),
                                        "outcome": t.get("outcome"), "message": "correct, no speedup: "
                                        + (t.get("message") or "")[:300]})
    b = j.get("best_of_samples") or {}
    bagg = b.get("aggregates") or b
    out["best_of_samples"] = {"correct": bagg.get("correct"), "geomean": bagg.get("geomean"),
                              **{f"fast_{f['p']:g}": f.get("count") for f in bagg.get("fast_p", [])}}
    out["evaluations"] = problems * len(j.get("samples", []))
    return out


class GpuSampler:
    """nvidia-smi's utilization.gpu every 250 ms while a command runs (the GPU-idle fraction of a
    suite, issue 48): the mean and the fraction of samples at 0%. Nothing where nvidia-smi is not."""

    def __init__(self, path):
        self.path, self.proc = path, None
        if shutil.which("nvidia-smi"):
            self.f = open(path, "w")
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                                          "-lms", "250"], stdout=self.f, stderr=subprocess.DEVNULL)

    def stop(self):
        if not self.proc:
            return {}
        self.proc.terminate()
        self.proc.wait()
        self.f.close()
        vals = []
        for line in open(self.path):
            try:
                vals.append(float(line.strip()))
            except ValueError:
                pass
        if not vals:
            return {}
        return {"gpu_samples": len(vals), "gpu_util_mean_pct": round(statistics.mean(vals), 1),
                "gpu_idle_fraction": round(sum(1 for v in vals if v == 0) / len(vals), 3)}


def finished_before_stop(kbj, wall):
    """What a suite stopped at its limit had finished: lathe writes KernelBench's results JSON after
    every evaluation, so the evaluations in it and their rate stand even when the part was cut."""
    try:
        with open(kbj) as f:
            kb = json.load(f)
    except (OSError, ValueError):
        return {}
    done = [(p, s, v) for p, by in kb.items() for s, v in by.items()]
    meta = lambda v: v.get("metadata") or {}
    return {"finished": len(done),
            "finished_per_hour": round(3600 * len(done) / wall) if wall > 0 else None,
            "finished_rows": [{"problem": p, "sample": s, "outcome": meta(v).get("outcome"),
                               "speedup": v.get("speedup"), "speedup_ci": meta(v).get("speedup_ci")}
                              for p, s, v in sorted(done, key=lambda x: (int(x[0]), int(x[1])))]}


def part_suite(a, res, tmp, save):
    part = Part(a.suite_limit)
    cands = samples_dir(a, tmp)
    levels = [lv for lv in ("level1", "level2") if lv in a.levels]
    dirs = {lv: level_dir(a, tmp, lv) for lv in levels}
    counts = {lv: len(glob.glob(os.path.join(dirs[lv], "*.py"))) for lv in levels}
    rows = res.setdefault("suite", [])
    for i, lv in enumerate(levels):
        # Each level's share of what is left, by its number of problems.
        share = part.left() * counts[lv] / sum(counts[x] for x in levels[i:])
        if share < 10 or not counts[lv]:
            rows.append({"level": lv, "outcome": "not_run",
                         "message": "no problem selected" if not counts[lv] else "the part's time limit"})
            continue
        ws = os.path.join(tmp, f"suite-{lv}-ws")
        kbj = os.path.join(a.out, f"eval-results-{lv}.json")
        cmd = [a.lathe, "--workspace", ws, "bench", dirs[lv], "--candidates", cands,
               *platform_args(a), "--quick", "--max-time", str(a.max_time), "--json", "--kernelbench-json", kbj,
               "--in-flight", str(a.in_flight)]
        sampler = GpuSampler(os.path.join(tmp, f"gpu-util-{lv}.csv"))
        rc, out, err, wall = run(cmd, share)
        row = {"level": lv, "problems": counts[lv], "wall_s": round(wall, 1), "exit": rc, "in_flight": a.in_flight,
               **sampler.stop(),
               "files": sorted(os.path.basename(f) for f in glob.glob(os.path.join(dirs[lv], "*.py"))),
               "command": " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd)}
        j = settled(row, rc, out, err, wall, os.path.join(a.out, f"bench-{lv}.json"))
        if j is not None:
            row.update(outcome="done", **summarize_bench(j, counts[lv]))
            row["evaluations_per_hour"] = round(3600 * row["evaluations"] / wall) if wall > 0 else None
        else:
            row.update(finished_before_stop(kbj, wall))
        row["stderr_tail"] = (err or "")[-1500:]
        rows.append(row)
        print(f"suite {lv}: {row.get('outcome')} {row['wall_s']} s, "
              f"{row.get('evaluations', row.get('finished'))} evaluations", flush=True)
        save()


# ---------------------------------------------------------------------------------------------
# Part c: the solver with the mock model (machinery only).

def part_solve(a, res, tmp, save):
    part = Part(a.solve_limit)
    mock = a.mock or os.path.join(os.path.dirname(os.path.abspath(a.lathe)), "lathe-mock-model")
    row = {"model": "MOCK (lathe-mock-model): machinery only, not what a model would find"}
    res["solve"] = row
    if not os.access(mock, os.X_OK):
        row.update(outcome="not_run", message=f"no mock model at {mock} (build target lathe-mock-model)")
        return save()
    suite = os.path.join(tmp, "solve", "level1")
    os.makedirs(suite)
    files = sorted(glob.glob(os.path.join(SUITE, "level1", "*.py")),
                   key=lambda f: int(os.path.basename(f).split("_")[0]))[:a.solve_problems]
    for f in files:
        shutil.copy(f, suite)
    ws = os.path.join(tmp, "solve-ws")
    os.makedirs(os.path.join(ws, ".lathe"))
    with open(os.path.join(ws, ".lathe", "lathe.toml"), "w") as f:
        f.write(f'provider = "command"\nmodel = "lathe-mock-model"\n[command]\n'
                f'argv = ["{os.path.abspath(mock)}", "--seed", "5"]\ntimeout_seconds = 60\n')
    out_dir = os.path.join(tmp, "solve", "out")
    cmd = [a.lathe, "--workspace", ws, "solve", suite, "--out", out_dir, *platform_args(a), "--proposer", "llm",
           "--strategy", "none", "--budget", "steps=1", "--quick", "--max-time", "0.3", "--json", "--quiet"]
    rc, out, err, wall = run(cmd, part.left())
    row.update(problems=[os.path.basename(f) for f in files], wall_s=round(wall, 1), exit=rc,
               stderr_tail=(err or "")[-2000:])
    j = settled(row, rc, out, err, wall, os.path.join(a.out, "solve.json"))
    if j is not None:
        agg = j.get("aggregates") or {}
        row.update(outcome="done", solved=agg.get("correct"), failed=agg.get("failed"), geomean=agg.get("geomean"),
                   fast_p={f"fast_{f['p']:g}": f.get("count") for f in agg.get("fast_p", [])},
                   model_calls=agg.get("calls"),
                   rows=[{"file": p.get("file"), "status": p.get("status"), "steps": p.get("steps"),
                          "outcome": p.get("outcome"), "speedup": p.get("speedup"),
                          "message": (p.get("message") or "")[:300]} for p in j.get("problems", [])])
    print(f"solve: {row.get('outcome')} {row['wall_s']} s", flush=True)
    save()


# ---------------------------------------------------------------------------------------------
# The Markdown summary.

def fmt(v, unit=""):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3g}{unit}"
    return f"{v}{unit}"


def markdown(res):
    L = [f"# KernelBench-format suite through lathe ({res['date']})", "",
         f"machine: {res['machine']}; lathe: `{res['lathe']}`; platform: {res['platform']}; "
         f"parts: {', '.join(res['parts'])}", ""]
    if res.get("cost"):
        L += ["## Per candidate, cold and cached", "",
              "| problem | kind | lathe cold | lathe cached | outcome (cached) | speedup (cached) | cold stages | "
              "kb cold | kb cached | kb verdict (cached) | kb speedup (cached) |", "|" + "---|" * 11]
        for r in res["cost"]:
            lc, lw, kc, kw = (r.get(k, {}) for k in ("lathe_cold", "lathe_cached", "kb_cold", "kb_cached"))
            st = ", ".join(f"{k} {v:.2f}" for k, v in (lc.get("stages") or {}).items())
            L.append(f"| {r['problem']} | {r['kind']} | {fmt(lc.get('wall_s'), ' s')} | {fmt(lw.get('wall_s'), ' s')} | "
                     f"{lw.get('outcome') or lc.get('outcome')} | {fmt(lw.get('speedup'), 'x')} | {st or '-'} | "
                     f"{fmt(kc.get('wall_s'), ' s')} | {fmt(kw.get('wall_s'), ' s')} | "
                     f"{kw.get('verdict') or kc.get('verdict')} | {fmt(kw.get('speedup'), 'x')} |")
        msgs = [(r["problem"], r["kind"], k, r[k].get("message")) for r in res["cost"]
                for k in ("lathe_cold", "lathe_cached", "kb_cold", "kb_cached")
                if isinstance(r.get(k), dict) and r[k].get("message") and
                (r[k].get("outcome") not in (None, "ok") or r[k].get("verdict") not in (None, "correct"))]
        L += [""] + [f"- {p} {kd} {k}: {m}" for p, kd, k, m in msgs] + [""]
    for r in res.get("suite", []):
        L += [f"## Suite {r['level']}", ""]
        if r.get("outcome") != "done":
            L += [f"{r.get('outcome')}: {r.get('message')}", ""]
            if r.get("finished") is not None:
                L += [f"Finished before the stop: {r['finished']} evaluations in {r['wall_s']} s, "
                      f"{r['finished_per_hour']} per hour, {r.get('in_flight', 1)} in flight"
                      + (f"; GPU utilization {r['gpu_util_mean_pct']}% on average, idle (0%) in "
                         f"{100 * r['gpu_idle_fraction']:.0f}% of {r['gpu_samples']} samples of 250 ms"
                         if r.get("gpu_samples") else ""), "",
                      "| problem | sample | outcome | speedup | interval |", "|---|---|---|---|---|"]
                L += [f"| {f['problem']} | {f['sample']} | {f['outcome']} | {fmt(f['speedup'], 'x')} | "
                      f"{('[%.3f, %.3f]' % tuple(f['speedup_ci'])) if f['speedup_ci'] else '-'} |" for f in r["finished_rows"]]
                L.append("")
            continue
        L += [f"{r['problems']} problems x {len(r['samples'])} samples = {r['evaluations']} evaluations in "
              f"{r['wall_s']} s: {r['evaluations_per_hour']} evaluations per hour, {r.get('in_flight', 1)} in flight"
              + (f"; GPU utilization {r['gpu_util_mean_pct']}% on average, idle (0%) in "
                 f"{100 * r['gpu_idle_fraction']:.0f}% of {r['gpu_samples']} samples of 250 ms"
                 if r.get("gpu_samples") else ""), "",
              "| sample | correct | failed | no candidate | fast_1 | fast_1.5 | fast_2 | geomean |", "|" + "---|" * 8]
        for s in r["samples"]:
            L.append(f"| {s['sample']} | {s['correct']}/{s['tasks']} | {s['failed']} | {s['no_candidate']} | "
                     f"{fmt(s.get('fast_1'))} | {fmt(s.get('fast_1.5'))} | {fmt(s.get('fast_2'))} | "
                     f"{fmt(s['geomean'], 'x')} |")
        b, pb = r["best_of_samples"], r.get("prebuild") or {}
        L += ["", f"best of samples: {b.get('correct')} correct, fast_1 {fmt(b.get('fast_1'))}, "
                  f"geomean {fmt(b.get('geomean'), 'x')}; built ahead: {pb.get('built')} built, {pb.get('cached')} "
                  f"cached, {pb.get('failed')} failed, {pb.get('skipped')} skipped in {fmt(pb.get('seconds'), ' s')}", ""]
        names = sorted({k for v in r["speedups"].values() for k in v})
        L += ["| problem | " + " | ".join(f"sample {n}" for n in names) + " |", "|" + "---|" * (len(names) + 1)]
        L += [f"| {t} | " + " | ".join(v.get(n, "-") for n in names) + " |" for t, v in r["speedups"].items()]
        L.append("")
        if r["failures"]:
            L += ["Failures (and correct samples without a speedup):", ""]
            L += [f"- sample {f['sample']} {f['task']}: {f['outcome']}: {f['message']}" for f in r["failures"]]
            L.append("")
    s = res.get("solve")
    if s:
        L += ["## Solve with the MOCK model (machinery only)", "", f"{s.get('model')}", ""]
        if s.get("outcome") != "done":
            L += [f"{s.get('outcome')}: {s.get('message')}", ""]
        else:
            L += [f"{len(s['problems'])} problems in {s['wall_s']} s: {s['solved']} solved, {s['failed']} failed, "
                  f"geomean {fmt(s['geomean'], 'x')}, " + ", ".join(f"{k} {v}" for k, v in s["fast_p"].items())
                  + f", {s.get('model_calls')} model calls", "",
                  "| problem | status | steps | outcome | speedup | message |", "|" + "---|" * 6]
            L += [f"| {p['file']} | {p['status']} | {fmt(p['steps'])} | {p['outcome'] or '-'} | "
                  f"{fmt(p['speedup'], 'x')} | {p['message'][:160]} |" for p in s["rows"]]
            L.append("")
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lathe", default=os.path.join(ROOT, "build-gpu/lathe"))
    ap.add_argument("--out", default="")
    ap.add_argument("--parts", default="cost,suite,solve")
    ap.add_argument("--platform", default="cuda", choices=["cuda", "cpu", "none"],
                    help="passed to bench and solve as --platform (none: not passed)")
    ap.add_argument("--samples", default="", help="the suite with these samples only, e.g. 0 (default: all)")
    ap.add_argument("--levels", default="level1,level2")
    ap.add_argument("--problems", default="", help="the suite with these problem numbers only (in each level)")
    ap.add_argument("--solve-problems", type=int, default=10, help="level-1 problems solved (the first N)")
    ap.add_argument("--max-time", type=float, default=0.5, help="bench's --max-time")
    ap.add_argument("--in-flight", type=int, default=1, help="bench's --in-flight (evaluations at once)")
    ap.add_argument("--cost-kinds", default="inline_cuda,triton", help="of torch, inline_cuda, triton")
    ap.add_argument("--eval-arg", action="append", default=[], help="one more argument for lathe eval (repeat)")
    ap.add_argument("--kb-device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--kb-trials", type=int, default=100)
    ap.add_argument("--mock", default="", help="the mock model (default: lathe-mock-model beside --lathe)")
    ap.add_argument("--cost-limit", type=float, default=170, help="seconds for the per-candidate part")
    ap.add_argument("--cost-step-limit", type=float, default=0,
                    help="seconds for one step of the per-candidate part (0: what is left of the part)")
    ap.add_argument("--suite-limit", type=float, default=220, help="seconds for the suite (both levels)")
    ap.add_argument("--solve-limit", type=float, default=80, help="seconds for the solver part")
    ap.add_argument("--kb-protocol", nargs=2, metavar=("PROBLEM", "SAMPLE"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.kb_protocol:  # the child: one candidate through KernelBench's protocol, one JSON line
        print(json.dumps(kb_protocol(*a.kb_protocol, a.kb_device, a.kb_trials)), flush=True)
        return 0
    if not a.out:
        ap.error("--out DIR is required")
    a.samples = [s for s in a.samples.split(",") if s]
    a.levels = [s for s in a.levels.split(",") if s]
    a.problems = [s for s in a.problems.split(",") if s]
    a.cost_kinds = [k for k in a.cost_kinds.split(",") if k]
    a.lathe = os.path.abspath(a.lathe)
    os.makedirs(a.out, exist_ok=True)
    a.out = os.path.abspath(a.out)
    if "torch" in a.cost_kinds and a.kb_device == "cuda" and "cost" in a.parts:
        # A torch-only sample names nothing of CUDA: lathe eval would import its problem on the CPU
        # while the protocol's child ran it on the GPU, two devices in one comparison.
        ap.error("--cost-kinds torch compares on the CPU only: with it, say --kb-device cpu")
    signal.signal(signal.SIGTERM, _end_on_sigterm)
    parts = [p for p in a.parts.split(",") if p]
    res = {"schema": "lathe.bench.kernelbench_suite_gpu/1", "date": time.strftime("%Y-%m-%d %H:%M"),
           "machine": f"{os.uname().nodename}, {os.cpu_count()} cores", "lathe": a.lathe, "platform": a.platform,
           "parts": parts, "samples": a.samples or "all", "problems": a.problems or "all", "max_time": a.max_time}

    def save():
        with open(os.path.join(a.out, "kernelbench-suite.json"), "w") as f:
            json.dump(res, f, indent=1)
        with open(os.path.join(a.out, "kernelbench-suite.md"), "w") as f:
            f.write(markdown(res))

    with tempfile.TemporaryDirectory(prefix="lathe-kbsuite-") as tmp:
        for p in parts:
            t0 = time.monotonic()
            {"cost": part_cost, "suite": part_suite, "solve": part_solve}[p](a, res, tmp, save)
            res.setdefault("part_seconds", {})[p] = round(time.monotonic() - t0, 1)
            save()
    print(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
