#!/usr/bin/env python3
"""lathe against the KernelBench harness on KernelBench level1/19 (ReLU), like for like (issue 3).
Not a test: it prints numbers for the closing note and writes them as JSON.

  1. `lathe eval tasks/relu_cuda trivial --mode kernelbench --json` with an empty workspace (cold
     build cache), then again with the same workspace (cached build): wall time of each lathe
     process, the per-stage breakdown (`stage_seconds`) and the kernel's times under KernelBench's
     protocol as lathe reproduces it (`comparability`: mean/std/min/max over the trials).
  2. If `import torch` works and sees a GPU: torch.relu on the same input (torch.rand(4096, 393216),
     fp32) timed with KernelBench's cuda_event protocol: 3 warm-up calls, then 100 trials, each
     between two CUDA events recorded around the call and followed by a device synchronize;
     mean/std/min/max in ms (std as numpy's, ddof = 0). The working set (6 GiB in, 6 GiB out) is
     ~200x the L2, so flushing L2 between trials (newer KernelBench timing) changes nothing here;
     --flush-l2 does it anyway (a 256 MiB write before each trial, outside the events).
  3. The same protocol on lathe's own built kernel objects (the evaluated kernel, and those of
     --also), loaded with ctypes and called on torch's tensors and stream through lathe's ABI:
     the same machine code timed outside lathe's worker, a check that the worker's environment
     (sandbox, the oracle's context beside it) does not change a kernel's time.

PROTOCOL.md measured the KernelBench harness itself on this problem: 132-137 s cold, 69 s with a
warm build cache for one trivial candidate (compile + 5 checks + 100 timings).

Usage: bench/kernelbench_relu.py --lathe build/lathe [--task tasks/relu_cuda] [--kernel trivial]
                                 [--also expert,naive] [--no-torch] [--flush-l2] [--out FILE.json]
"""
import argparse, json, os, re, shutil, statistics, subprocess, sys, tempfile, time

B, D = 4096, 393216  # KernelBench level1/19_ReLU.py: batch_size, dim


def lathe_eval(binary, ws, task, kernel, extra, timeout):
    # KernelBench's work: 5 correctness trials, 3 warm-up calls, 100 timed trials.
    cmd = [binary, "--workspace", ws, "eval", task, kernel, "--mode", "kernelbench", "--seeds", "5",
           "--warmup", "3", "--trials", "100", "--json", *extra]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - t0
    if not p.stdout.strip():
        sys.exit(f"lathe printed nothing (exit {p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return json.loads(p.stdout), wall


def summarize(e, wall):
    c = e.get("comparability") or {}
    ms = lambda k: c[k] * 1e3 if c.get(k) is not None else None
    return {"outcome": e.get("outcome"), "message": e.get("message"), "wall_s": round(wall, 2),
            "lathe_wall_s": e.get("wall_seconds"),
            "stage_seconds": e.get("stage_seconds", []),
            "kernelbench": {"protocol": c.get("protocol"), "warmup": c.get("warmup"),
                            "trials": c.get("trials"), "mean_ms": ms("mean_seconds"),
                            "std_ms": ms("std_seconds"), "min_ms": ms("min_seconds"),
                            "max_ms": ms("max_seconds"), "median_ms": ms("median_seconds"),
                            "host_s": c.get("host_seconds")} if c else None,
            "trials_on": e.get("trials_on")}


def show(label, r):
    stages = ", ".join(f"{s['stage']} {s['seconds']:.2f} s" for s in r["stage_seconds"])
    print(f"lathe {label}: {r['outcome']} in {r['wall_s']:.1f} s wall ({stages})")
    kb = r["kernelbench"]
    if kb and kb["mean_ms"] is not None:
        print(f"  trivial under KernelBench's protocol ({kb['warmup']} warm-up, {kb['trials']} trials): "
              f"mean {kb['mean_ms']:.3f} ms, std {kb['std_ms']:.3f}, min {kb['min_ms']:.3f}, max {kb['max_ms']:.3f}")
    if r["outcome"] != "ok":
        print(f"  {r['message']}")


def kb_protocol(torch, call, flush):
    """KernelBench's cuda_event protocol around `call`: 3 warm-up calls, then 100 trials, each
    between two events and followed by a device synchronize; statistics in ms."""
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(100):
        if flush is not None:
            flush.zero_()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))  # ms
    r = {"warmup": 3, "trials": len(times), "flush_l2": flush is not None,
         "mean_ms": statistics.mean(times), "std_ms": statistics.pstdev(times),
         "min_ms": min(times), "max_ms": max(times), "median_ms": statistics.median(times)}
    r["bytes_per_s_at_mean"] = 8.0 * B * D / (r["mean_ms"] * 1e-3)
    return r


def abi_call(torch, so_path, x, y):
    """A callable that runs lathe's built kernel object (include/lathe/abi.h, ABI v1) on torch
    tensors x -> y on torch's current stream: the same machine code lathe timed, outside lathe's
    worker, so that the two measurements can be compared."""
    import ctypes as C

    from lathe_abi_ctypes import Args, DLDataType, DLDevice, DLTensor, load
    lib = load(so_path)
    shape = (C.c_int64 * 2)(B, D)
    f32 = DLDataType(2, 32, 1)  # kDLFloat
    dev = DLDevice(2, torch.cuda.current_device())  # kDLCUDA
    ins = (DLTensor * 1)(DLTensor(x.data_ptr(), dev, 2, f32, shape, None, 0))
    outs = (DLTensor * 1)(DLTensor(y.data_ptr(), dev, 2, f32, shape, None, 0))
    err = C.create_string_buffer(256)
    args = Args(1, ins, 1, outs, 1, None, 0, None, 0, torch.cuda.current_stream().cuda_stream,
                C.cast(err, C.c_char_p), 256)
    keep = (lib, shape, ins, outs, err)  # alive as long as the callable

    def call():
        if lib.lathe_launch(C.byref(args)) != 0:
            raise RuntimeError(f"lathe_launch failed: {err.value.decode(errors='replace')}")
        return keep

    return call


def torch_reference(flush_l2, kernel_objects):
    """torch.relu under KernelBench's protocol, and each of lathe's built kernel objects
    (name -> path) called on the same tensors the same way."""
    try:
        import torch
    except Exception as ex:  # not installed, or broken
        return {"skipped": f"import torch failed: {ex}"}
    if not torch.cuda.is_available():
        return {"skipped": "torch sees no CUDA device"}
    dev = torch.device("cuda")
    x = torch.rand(B, D, device=dev) - 0.5  # KernelBench: torch.rand(batch_size, dim); shifted so ReLU is not the identity
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev) if flush_l2 else None
    r = {"torch": torch.__version__, "device": torch.cuda.get_device_name(dev), "shape": [B, D]}
    r.update(kb_protocol(torch, lambda: torch.relu(x), flush))
    objects = {}
    want = torch.relu(x)
    for name, path in kernel_objects.items():
        y = torch.full_like(x, float("nan"))
        try:
            call = abi_call(torch, path, x, y)
            o = kb_protocol(torch, call, flush)
            o["correct"] = bool(torch.equal(y, want))
        except Exception as ex:
            o = {"skipped": str(ex)}
        o["object"] = path
        objects[name] = o
        del y
    r["lathe_objects"] = objects
    del x, flush, want
    torch.cuda.empty_cache()
    return r


def launch_objects(ws):
    """The kernel objects (exporting lathe_launch, not lathe_reference) in a workspace's build
    cache."""
    found = []
    for root, _, files in os.walk(ws):
        if "kernel.so" in files:
            path = os.path.join(root, "kernel.so")
            syms = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True).stdout
            if re.search(r"\blathe_launch\b", syms):
                found.append(path)
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lathe", default="build/lathe")
    ap.add_argument("--task", default="relu_cuda", help="task name or directory (default relu_cuda)")
    ap.add_argument("--kernel", default="trivial")
    ap.add_argument("--lathe-arg", action="append", default=[], help="extra argument for lathe eval")
    ap.add_argument("--also", default="", help="more kernels to evaluate the same way, comma-separated")
    ap.add_argument("--no-torch", action="store_true", help="skip the torch.relu reference point")
    ap.add_argument("--flush-l2", action="store_true", help="torch: write 256 MiB before each trial")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--out", default=os.path.join("bench", "results",
                                                  time.strftime("kernelbench-relu-%Y%m%d-%H%M.json")))
    a = ap.parse_args()

    ws = tempfile.mkdtemp(prefix="lathe-kb-relu-")
    keep = tempfile.mkdtemp(prefix="lathe-kb-objects-")  # the built objects, past the workspace
    results = {"schema": "lathe.bench.kernelbench_relu/1", "date": time.strftime("%Y-%m-%d %H:%M"),
               "task": a.task, "kernel": a.kernel, "shape": [B, D]}
    objects = {}

    def keep_new_object(name, seen):
        new = [p for p in launch_objects(ws) if p not in seen]
        if len(new) == 1:
            objects[name] = shutil.copy(new[0], os.path.join(keep, f"{name}.so"))
        return seen | set(new)

    try:
        e, wall = lathe_eval(a.lathe, ws, a.task, a.kernel, a.lathe_arg, a.timeout)
        results["cold"] = summarize(e, wall)
        show("cold (empty workspace)", results["cold"])
        seen = keep_new_object(a.kernel, set())
        e, wall = lathe_eval(a.lathe, ws, a.task, a.kernel, a.lathe_arg, a.timeout)
        results["cached"] = summarize(e, wall)
        show("cached (same workspace)", results["cached"])
        results["target"] = e.get("target")
        for k in [k for k in a.also.split(",") if k]:
            e, wall = lathe_eval(a.lathe, ws, a.task, k, a.lathe_arg, a.timeout)
            results.setdefault("also", {})[k] = summarize(e, wall)
            show(f"{k} (same workspace)", results["also"][k])
            seen = keep_new_object(k, seen)
    finally:
        shutil.rmtree(ws, ignore_errors=True)

    if not a.no_torch:
        t = torch_reference(a.flush_l2, objects)
        results["torch_relu"] = t
        if "skipped" in t:
            print(f"torch.relu: skipped ({t['skipped']})")
        else:
            print(f"torch.relu {t['shape'][0]}x{t['shape'][1]} fp32 on {t['device']} (torch {t['torch']}), "
                  f"KernelBench cuda_event protocol: mean {t['mean_ms']:.3f} ms, std {t['std_ms']:.3f}, "
                  f"min {t['min_ms']:.3f}, max {t['max_ms']:.3f} ({t['bytes_per_s_at_mean'] / 1e12:.2f} TB/s)")
            kb = (results.get("cached") or {}).get("kernelbench")
            if kb and kb.get("mean_ms"):
                print(f"  trivial / torch.relu (means): {kb['mean_ms'] / t['mean_ms']:.3f}")
            for name, o in t["lathe_objects"].items():
                if "skipped" in o:
                    print(f"lathe's {name} object under torch: skipped ({o['skipped']})")
                    continue
                inside = (results.get("cached") if name == a.kernel else results.get("also", {}).get(name)) or {}
                kb = inside.get("kernelbench") or {}
                print(f"lathe's {name} object called from torch, same protocol: mean {o['mean_ms']:.3f} ms "
                      f"(correct: {o['correct']}); inside lathe's worker: "
                      f"{kb.get('mean_ms') or float('nan'):.3f} ms")
    shutil.rmtree(keep, ignore_errors=True)

    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=2)
    print(f"written: {a.out}")


if __name__ == "__main__":
    main()
