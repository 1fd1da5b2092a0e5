#!/usr/bin/env python3
"""PyTorch problem files on the H200: lathe's verdicts, speedups and evaluation cost per candidate
beside a KernelBench-protocol harness, on the same hand-written candidates (issue 8). Not a test:
it prints the numbers for the closing note and writes them as JSON.

For every problem in bench/problems (KernelBench format) and every candidate in
bench/problems/candidates/<problem>_*.cu (lathe's C ABI; first line `// expect: correct|wrong`):

  lathe      `lathe eval PROBLEM CANDIDATE --mode kernelbench --seeds 5 --warmup 3 --trials 100
             --json` in its own process: the problem imported by lathe's Python worker on CUDA
             PyTorch, every check against the float64 reference at lathe's fp32 tolerances, the
             candidate timed in lathe's sandboxed worker with KernelBench's cuda_event protocol and
             the eager problem timed live by the same protocol. Wall time of the whole process.
  kb         KernelBench's evaluation protocol, reproduced here in one Python process (KernelBench's
             own harness is not installed on the GPU machine and cannot be fetched there: it is
             not available to this run): nvcc builds the candidate, ctypes calls it on torch's
             tensors and stream through the ABI with the output allocated by torch.empty (as a
             ModelNew would), 5 correctness trials each seeded and compared with
             torch.allclose(atol=1e-2, rtol=1e-2) against the fp32 eager model, then 3 warm-up
             calls and 100 trials each between two CUDA events with a device synchronize, for the
             candidate and for the eager model; speedup = mean eager / mean candidate.

Then: how many verdicts agree, and for the candidates both call correct, lathe's speedup over the
protocol's (the ratio and its median |log|).

Usage: bench/problems_h200.py --lathe build-gpu/lathe [--out FILE.json] [--only relu,softmax]
"""
import argparse, glob, importlib.util, json, math, os, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def expect_of(path):
    with open(path) as f:
        first = f.readline()
    return first.split("expect:", 1)[1].strip() if "expect:" in first else "?"


def run_lathe(binary, ws, problem, cand):
    cmd = [binary, "--workspace", ws, "eval", problem, cand, "--mode", "kernelbench", "--seeds", "5",
           "--warmup", "3", "--trials", "100", "--json"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - t0
    try:
        e = json.loads(p.stdout)
    except Exception:
        return {"wall_s": wall, "outcome": "no_output", "message": (p.stderr or "")[-400:]}
    c = e.get("comparability") or {}
    return {"wall_s": wall, "outcome": e.get("outcome"), "message": e.get("message", "")[:300],
            "correct": e.get("outcome") == "ok", "mean_s": c.get("mean_seconds"),
            "eager_mean_s": c.get("eager_mean_seconds"), "speedup": c.get("speedup_vs_eager"),
            "stages": dict(e.get("stage_seconds", {})) if isinstance(e.get("stage_seconds"), dict)
            else e.get("stage_seconds"), "reference_runtime": e.get("reference_runtime")}


def abi_launcher(torch, so_path):
    """f(inputs, outputs, scalars) calling lathe_launch on torch's current stream."""
    import ctypes as C
    from lathe_abi_ctypes import Args, DLDataType, DLDevice, DLTensor, load
    lib = load(so_path)
    codes = {torch.float32: (2, 32), torch.float16: (2, 16), torch.bfloat16: (4, 16),
             torch.float64: (2, 64), torch.int32: (0, 32), torch.int64: (0, 64)}

    def tensors(ts, keep):
        arr = (DLTensor * max(1, len(ts)))()
        for i, t in enumerate(ts):
            shape = (C.c_int64 * t.dim())(*t.shape)
            keep.append(shape)
            code, bits = codes[t.dtype]
            arr[i] = DLTensor(t.data_ptr(), DLDevice(2, t.device.index or 0), t.dim(),
                              DLDataType(code, bits, 1), shape, None, 0)
        return arr

    def make(inputs, outputs, scalars):
        keep = []
        ins, outs = tensors(inputs, keep), tensors(outputs, keep)
        sc = (C.c_double * max(1, len(scalars)))(*scalars)
        err = C.create_string_buffer(256)
        args = Args(1, ins, len(inputs), outs, len(outputs), sc, len(scalars), None, 0,
                    torch.cuda.current_stream().cuda_stream, C.cast(err, C.c_char_p), 256)
        keep += [ins, outs, sc, err, lib]

        def call():
            if lib.lathe_launch(C.byref(args)) != 0:
                raise RuntimeError("lathe_launch failed: " + err.value.decode(errors="replace"))
            return keep
        return call
    return make


def load_problem(path):
    spec = importlib.util.spec_from_file_location("kb_problem_" + os.path.basename(path)[:-3], path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def numbers(values):
    out = []
    for v in values:
        if isinstance(v, (int, float)):
            out.append(float(v))
        elif isinstance(v, (tuple, list)):
            out += [float(x) for x in v]
    return out


def cuda_event_protocol(torch, call):
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(100):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        call()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    return statistics.mean(times)


def run_kb_protocol(torch, problem_path, cand, build_dir):
    t0 = time.monotonic()
    so = os.path.join(build_dir, os.path.basename(cand) + ".so")
    nvcc = "/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else "nvcc"
    incs = ["-I", os.path.join(ROOT, "include")]
    if os.path.isdir(os.path.join(ROOT, "deps/usr/include/dlpack")):  # the GPU machine: unpacked deps
        incs += ["-I", os.path.join(ROOT, "deps/usr/include")]
    b = subprocess.run([nvcc, "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", *incs, cand, "-o", so],
                       capture_output=True, text=True)
    if b.returncode != 0:
        return {"wall_s": time.monotonic() - t0, "correct": False, "verdict": "compile_error", "message": b.stderr[-300:]}
    launcher = abi_launcher(torch, so)
    m = load_problem(problem_path)
    init = list(m.get_init_inputs())
    dev = torch.device("cuda")
    torch.manual_seed(42)
    trial_seeds = [int(torch.randint(0, 2 ** 31 - 1, (1,)).item()) for _ in range(5)]
    verdict, message = "correct", ""
    with torch.no_grad():
        for s in trial_seeds:
            torch.manual_seed(s)
            inputs = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in m.get_inputs()]
            torch.manual_seed(s)
            model = m.Model(*init).to(dev).eval()
            ref = model(*inputs)
            tensors = [x.contiguous() for x in inputs if isinstance(x, torch.Tensor)]
            tensors += [p.detach().contiguous() for p in model.state_dict().values()]
            out = torch.empty(ref.shape, dtype=ref.dtype, device=dev)  # as a ModelNew allocates
            try:
                launcher(tensors, [out], numbers(init) + numbers([x for x in inputs if not isinstance(x, torch.Tensor)]))()
                torch.cuda.synchronize()
            except Exception as ex:
                verdict, message = "runtime_error", str(ex)
                break
            if not torch.allclose(out, ref, atol=1e-2, rtol=1e-2):
                diff = (out - ref).abs().max().item()
                verdict, message = "wrong", f"max abs diff {diff:.3g} (atol=rtol=1e-2)"
                break
        r = {"verdict": verdict, "correct": verdict == "correct", "message": message}
        if verdict == "correct":
            out = torch.empty(ref.shape, dtype=ref.dtype, device=dev)
            r["mean_s"] = cuda_event_protocol(torch, launcher(tensors, [out], numbers(init)))
            r["eager_mean_s"] = cuda_event_protocol(torch, lambda: model(*inputs))
            r["speedup"] = r["eager_mean_s"] / r["mean_s"]
    r["wall_s"] = time.monotonic() - t0
    torch.cuda.empty_cache()
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lathe", required=True)
    ap.add_argument("--out")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    import torch
    only = [x for x in args.only.split(",") if x]
    problems = sorted(p for p in glob.glob(os.path.join(HERE, "problems", "*.py"))
                      if not only or os.path.basename(p)[:-3] in only)
    ws = tempfile.mkdtemp(prefix="lathe-problems-")
    build = tempfile.mkdtemp(prefix="kb-protocol-")
    rows = []
    for prob in problems:
        name = os.path.basename(prob)[:-3]
        for cand in sorted(glob.glob(os.path.join(HERE, "problems", "candidates", name + "_*.cu"))):
            # Names are problem_variant: relu_ok must not pick up another problem's prefix.
            if not os.path.basename(cand)[len(name) + 1:].split(".")[0] in ("ok", "wrong"):
                continue
            row = {"problem": name, "candidate": os.path.basename(cand), "expect": expect_of(cand)}
            row["lathe"] = run_lathe(args.lathe, ws, prob, cand)
            row["kb"] = run_kb_protocol(torch, prob, cand, build)
            rows.append(row)
            l, k = row["lathe"], row["kb"]
            print(f"{name:16s} {row['candidate']:24s} expect {row['expect']:8s} | lathe {str(l.get('outcome')):18s} "
                  f"{(l.get('speedup') or 0):7.3f}x {l['wall_s']:6.1f}s | kb-protocol {k.get('verdict'):13s} "
                  f"{(k.get('speedup') or 0):7.3f}x {k['wall_s']:6.1f}s", flush=True)
    agree = sum(1 for r in rows if bool(r["lathe"].get("correct")) == bool(r["kb"].get("correct")))
    both = [r for r in rows if r["lathe"].get("correct") and r["kb"].get("correct")
            and r["lathe"].get("speedup") and r["kb"].get("speedup")]
    ratios = [r["lathe"]["speedup"] / r["kb"]["speedup"] for r in both]
    summary = {
        "candidates": len(rows), "verdicts_agree": agree,
        "expected_verdicts_lathe": sum(1 for r in rows if bool(r["lathe"].get("correct")) == (r["expect"] == "correct")),
        "expected_verdicts_kb": sum(1 for r in rows if bool(r["kb"].get("correct")) == (r["expect"] == "correct")),
        "speedup_ratio_lathe_over_kb": ratios,
        "median_abs_log_ratio": statistics.median([abs(math.log(x)) for x in ratios]) if ratios else None,
        "lathe_wall_s_first": rows[0]["lathe"]["wall_s"] if rows else None,
        "lathe_wall_s_median_after_first": statistics.median([r["lathe"]["wall_s"] for r in rows[1:]]) if len(rows) > 1 else None,
        "kb_wall_s_median": statistics.median([r["kb"]["wall_s"] for r in rows]) if rows else None,
        "torch": torch.__version__, "device": torch.cuda.get_device_name(0),
    }
    print(json.dumps(summary, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rows": rows, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
