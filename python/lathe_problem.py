"""lathe's problem worker: a PyTorch problem file as a task's oracle (docs/problems.md).

Runs in its own process, started by the gate in its sandbox (src/spec/problem_launch.cpp). It
imports one problem file and answers JSON requests, one per line on stdin, one reply per line on
the descriptor the gate reads (with --fds: requests on 4, replies on 5, stderr on 6). Tensors never travel through the pipe or the filesystem: the gate passes a shared-memory
file (a memfd) as descriptor 3; inputs are written there in their own dtype and the reference's
outputs as float64, at the offsets the gate asks for.

Formats:
  kernelbench        Model(nn.Module), get_inputs(), get_init_inputs()
  klineage           make_inputs(*, device, seed) -> {name: tensor}, torch_ref(**inputs)
  klineage-definition  a JSON definition: axes, inputs and outputs with shapes over the axes and
                     dtypes, and `reference` (Python source defining torch_ref or run)

Requests:
  {"op": "describe"}                              names, dtypes, shapes, scalars, torch version
  {"op": "trial", "seed", "scale", "shift", "bytes", "inputs": [offsets], "outputs": [offsets]}
  {"op": "reference", "seed", "bytes", "inputs": [offsets], "outputs": [offsets]}
                                                  float64 outputs of the inputs already in the region
                                                  (a timed call's; their tensors as `seed` draws them)
  {"op": "time", "seed", "protocol": "kernelbench" | "do_bench", "warmup", "trials",
   "warmup_ms", "rep_ms"}                          the eager problem timed live (comparability)
  {"op": "attach", "handle": hex, "bytes"}        open a candidate's CUDA IPC handle -> "peer"
  {"op": "device_trial", "peer", "base", "seed", "scale", "shift", "inputs": [offsets],
   "num_outputs", "mirror"?: {"bytes", "outputs"}}  inputs into the peer's slot (lathe_ipc.py)
  {"op": "compare", "peer", "base", "outputs": [{"offset", "dtype", "elements", "rtol", "atol"}]}
  {"op": "detach", "peer"}
  {"op": "quit"}
"""

import copy
import importlib.util
import inspect
import json
import math
import mmap
import os
import platform
import sys
import time
import traceback

SHARED_FD = 3

DTYPE_NAMES = {}


def dtype_names(torch):
    if not DTYPE_NAMES:
        for name, attr in [("float16", "float16"), ("bfloat16", "bfloat16"), ("float32", "float32"),
                           ("float64", "float64"), ("int8", "int8"), ("int16", "int16"),
                           ("int32", "int32"), ("int64", "int64"), ("uint8", "uint8"),
                           ("bool", "bool")]:
            DTYPE_NAMES[getattr(torch, attr)] = name
    return DTYPE_NAMES


class ProblemError(Exception):
    pass


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ProblemError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def is_number(x):
    return isinstance(x, (int, float, bool)) and not isinstance(x, complex)


def flatten_numbers(name, value, out):
    """get_init_inputs entries become ABI scalars: numbers as they are, tuples and lists of
    numbers element by element (name_0, name_1, ...)."""
    if is_number(value):
        out.append((name, float(value)))
    elif isinstance(value, (tuple, list)) and all(is_number(v) for v in value):
        for i, v in enumerate(value):
            out.append((f"{name}_{i}", float(v)))
    else:
        raise ProblemError(f"{name}: {type(value).__name__} is neither a number nor a tuple of "
                           "numbers; an ABI scalar cannot carry it")


def safe_name(name):
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


class Problem:
    """The common surface of the three formats: inputs(seed) -> ordered named tensors (problem
    inputs first, then parameters in state_dict order) and scalars; reference(tensors) ->
    outputs."""

    def __init__(self, path, device, torch):
        self.torch = torch
        self.device = device
        self.path = path
        self.perturbations = {"scale": [], "shift": []}
        self.fp64 = True
        self.output_names = None
        self.tolerance = {}
        self.comparison = None

    def declared_comparison(self, module):
        # How outputs compare when element-wise is wrong for the operator (docs/problems.md):
        # "sorted_set" (rows as sorted multisets) or "topk" (values as sorted_set, indices
        # checked against the input).
        kind = getattr(module, "LATHE_COMPARISON", None)
        if kind is None:
            return
        if kind not in ("elementwise", "sorted_set", "topk"):
            raise ProblemError("LATHE_COMPARISON must be 'elementwise', 'sorted_set' or 'topk'")
        self.comparison = kind

    def declared_tolerance(self, module):
        tol = getattr(module, "LATHE_TOLERANCE", None)
        if tol is None:
            return
        if not isinstance(tol, dict) or set(tol) - {"rtol", "atol", "nerr"}:
            raise ProblemError("LATHE_TOLERANCE must be a dict with rtol, atol and/or nerr")
        self.tolerance = {k: float(v) for k, v in tol.items()}

    def declared_perturbations(self, module):
        p = getattr(module, "LATHE_PERTURBATIONS", None)
        if p is None:
            return
        if not isinstance(p, dict) or set(p) - {"scale", "shift"}:
            raise ProblemError("LATHE_PERTURBATIONS must be {'scale': [...], 'shift': [...]}")
        self.perturbations = {k: [float(v) for v in p.get(k, [])] for k in ("scale", "shift")}

    def perturb(self, named, n_inputs, scale, shift):
        if scale == 1.0 and shift == 0.0:
            return named
        out = []
        for i, (name, t) in enumerate(named):
            if i < n_inputs and t.is_floating_point():
                t = (t.double() * scale + shift).to(t.dtype)
            out.append((name, t))
        return out


class KernelBench(Problem):
    format = "kernelbench"

    def __init__(self, path, device, torch, module):
        super().__init__(path, device, torch)
        self.module = module
        self.declared_perturbations(module)
        self.declared_tolerance(module)
        self.declared_comparison(module)
        self.fp64 = bool(getattr(module, "LATHE_REFERENCE_FP64", True))
        init = list(module.get_init_inputs())
        try:
            names = [p for p in inspect.signature(module.Model.__init__).parameters if p != "self"]
        except (TypeError, ValueError):
            names = []
        self.scalars = []
        for i, v in enumerate(init):
            flatten_numbers(names[i] if i < len(names) and not names[i].startswith("*") else f"init{i}",
                            v, self.scalars)
        self.init = init
        try:
            self.forward_names = [p for p in inspect.signature(module.Model.forward).parameters
                                  if p != "self"]
        except (TypeError, ValueError):
            self.forward_names = []

    def build(self, seed):
        torch = self.torch
        torch.manual_seed(seed)
        raw = list(self.module.get_inputs())
        torch.manual_seed(seed)
        model = self.module.Model(*self.init)
        model.eval()
        return raw, model

    def inputs(self, seed):
        raw, model = self.build(seed)
        named, forward_scalars = [], []
        for i, v in enumerate(raw):
            name = self.forward_names[i] if i < len(self.forward_names) else f"x{i}"
            if isinstance(v, self.torch.Tensor):
                named.append((safe_name(name), v))
            else:
                flatten_numbers(safe_name(name), v, forward_scalars)
        self.n_inputs = len(named)
        for key, t in model.state_dict().items():
            named.append((safe_name(key), t.detach().clone()))
        self.forward_scalars = forward_scalars
        self._raw, self._model = raw, model
        return named

    def call(self, named, fp64):
        """Runs the model on tensors (named, in order) moved to the device."""
        torch = self.torch
        model = copy.deepcopy(self._model)
        state = {}
        keys = list(model.state_dict().keys())
        for key, (_, t) in zip(keys, named[self.n_inputs:]):
            state[key] = t
        model.load_state_dict(state)
        model = model.to(self.device)
        if fp64:
            model = model.double()
        args, k = [], 0
        for v in self._raw:
            if isinstance(v, torch.Tensor):
                t = named[k][1].to(self.device)
                args.append(t.double() if fp64 and t.is_floating_point() else t)
                k += 1
            else:
                args.append(v)
        with torch.no_grad():
            return model(*args)

    def model_spec(self):
        """What a candidate's ModelNew needs to stand in for Model (docs/python-kernels.md,
        "KernelBench ModelNew"): its constructor's arguments, forward's arguments (a tensor's
        index among the ABI inputs, or a number as get_inputs gives it), the state_dict's keys in
        the order their tensors follow the inputs, and the outputs' count."""
        def plain(v):
            return list(v) if isinstance(v, tuple) else v
        forward, k = [], 0
        for v in self._raw:
            if isinstance(v, self.torch.Tensor):
                forward.append({"input": k})
                k += 1
            else:
                forward.append({"value": plain(v)})
        return {"init": [plain(v) for v in self.init], "forward": forward,
                "state": list(self._model.state_dict().keys())}

    def callable_for_timing(self, named):
        torch = self.torch
        model = copy.deepcopy(self._model).to(self.device)
        args, k = [], 0
        for v in self._raw:
            if isinstance(v, torch.Tensor):
                args.append(named[k][1].to(self.device))
                k += 1
            else:
                args.append(v)

        def run():
            with torch.no_grad():
                return model(*args)
        return run


class KLineage(Problem):
    format = "klineage"

    def __init__(self, path, device, torch, make_inputs, torch_ref, module=None, fmt="klineage"):
        super().__init__(path, device, torch)
        self.make_inputs = make_inputs
        self.torch_ref = torch_ref
        self.scalars = []
        self.forward_scalars = []
        self.format = fmt
        if module is not None:
            self.declared_perturbations(module)
            self.declared_tolerance(module)
            self.declared_comparison(module)
            self.fp64 = bool(getattr(module, "LATHE_REFERENCE_FP64", True))

    def inputs(self, seed):
        produced = self.make_inputs(device=self.device, seed=seed)
        if not isinstance(produced, dict):
            raise ProblemError("make_inputs must return a dict of named tensors")
        named = []
        for name, v in produced.items():
            if isinstance(v, self.torch.Tensor):
                named.append((safe_name(name), v))
            else:
                flatten_numbers(safe_name(name), v, self.forward_scalars)
        self._scalar_args = {k: v for k, v in produced.items() if not isinstance(v, self.torch.Tensor)}
        self._names = [k for k, v in produced.items() if isinstance(v, self.torch.Tensor)]
        self.n_inputs = len(named)
        return named

    def call(self, named, fp64):
        kwargs = dict(self._scalar_args)
        for key, (_, t) in zip(self._names, named):
            t = t.to(self.device)
            kwargs[key] = t.double() if fp64 and t.is_floating_point() else t
        with self.torch.no_grad():
            return self.torch_ref(**kwargs)

    def callable_for_timing(self, named):
        kwargs = dict(self._scalar_args)
        for key, (_, t) in zip(self._names, named):
            kwargs[key] = t.to(self.device)

        def run():
            with self.torch.no_grad():
                return self.torch_ref(**kwargs)
        return run


def definition_problem(path, device, torch):
    """A KLineage definition (JSON): {"name", "axes": {A: int | {"value": int}}, "inputs":
    {name: {"shape": [axis | int], "dtype", "distribution"?}}, "outputs": {...}, "reference":
    Python source defining torch_ref(**inputs) (or run)}."""
    with open(path) as f:
        d = json.load(f)
    for key in ("axes", "inputs", "reference"):
        if key not in d:
            raise ProblemError(f"{path}: a definition needs '{key}'")
    axes = {}
    for name, v in d["axes"].items():
        axes[name] = int(v["value"] if isinstance(v, dict) else v)
    names = dtype_names(torch)
    by_name = {v: k for k, v in names.items()}
    specs = []
    for name, spec in d["inputs"].items():
        shape = [axes[s] if isinstance(s, str) else int(s) for s in spec.get("shape", [])]
        dt = spec.get("dtype", "float32")
        if dt not in by_name:
            raise ProblemError(f"{path}: input {name}: unknown dtype {dt}")
        specs.append((name, shape, by_name[dt], spec.get("distribution", "normal")))
    scope = {}
    exec(compile(d["reference"], f"{path}:reference", "exec"), scope)
    ref = scope.get("torch_ref") or scope.get("run")
    if ref is None:
        raise ProblemError(f"{path}: the reference defines neither torch_ref nor run")

    def make_inputs(*, device, seed):
        g = torch.Generator(device="cpu")
        g.manual_seed(seed)
        out = {}
        for name, shape, dt, dist in specs:
            if dt.is_floating_point:
                t = torch.randn(shape, generator=g, dtype=torch.float32)
                if dist == "uniform":
                    t = torch.rand(shape, generator=g, dtype=torch.float32) * 2 - 1
            elif dt == torch.bool:
                t = torch.randint(0, 2, shape, generator=g).bool()
            else:
                t = torch.randint(0, 64, shape, generator=g)
            out[name] = t.to(dt).to(device)
        return out

    problem = KLineage(path, device, torch, make_inputs, ref, fmt="klineage-definition")
    problem.output_names = [safe_name(n) for n in d.get("outputs", {})]
    p = d.get("perturbations")
    if p:
        problem.perturbations = {k: [float(v) for v in p.get(k, [])] for k in ("scale", "shift")}
    problem.fp64 = bool(d.get("reference_fp64", True))
    if d.get("tolerance"):
        problem.tolerance = {k: float(v) for k, v in d["tolerance"].items() if k in ("rtol", "atol", "nerr")}
    return problem


def open_problem(path, device, torch):
    if path.endswith(".json"):
        return definition_problem(path, device, torch)
    name = "lathe_problem_" + safe_name(os.path.splitext(os.path.basename(path))[0])
    module = load_module(path, name)
    if all(hasattr(module, a) for a in ("Model", "get_inputs", "get_init_inputs")):
        return KernelBench(path, device, torch, module)
    if hasattr(module, "make_inputs") and hasattr(module, "torch_ref"):
        return KLineage(path, device, torch, module.make_inputs, module.torch_ref, module)
    raise ProblemError(f"{path}: neither KernelBench (Model, get_inputs, get_init_inputs) nor "
                       "KLineage (make_inputs, torch_ref)")


def as_outputs(value, torch, names=None):
    if isinstance(value, torch.Tensor):
        value = [value]
        if not names:
            return [("out", value[0])]
    if isinstance(value, (tuple, list)) and all(isinstance(v, torch.Tensor) for v in value):
        if names and len(names) == len(value):
            return list(zip(names, value))
        return [(f"out{i}", v) for i, v in enumerate(value)]
    if isinstance(value, dict) and all(isinstance(v, torch.Tensor) for v in value.values()):
        return [(safe_name(k), v) for k, v in value.items()]
    raise ProblemError(f"the reference returned {type(value).__name__}, not tensors")


class Worker:
    def __init__(self, path, device, torch, reply):
        self.torch = torch
        self.reply = reply
        self.device = device
        self.problem = open_problem(path, device, torch)
        self.ref_dtype = None
        self.peers = None  # lathe_ipc.Peers, on the first attach

    def reference(self, named):
        """Outputs in float64 when the problem runs in float64, else in its own dtype."""
        p = self.problem
        if p.fp64 and self.ref_dtype != "native":
            try:
                out = as_outputs(p.call(named, True), self.torch, p.output_names)
                self.ref_dtype = "float64"
                return out
            except ProblemError:
                raise
            except Exception as e:  # an operator without a float64 kernel: the native dtype
                self.ref_dtype = "native"
                self.fp64_failure = f"{type(e).__name__}: {e}"
        self.ref_dtype = "native"
        return as_outputs(p.call(named, False), self.torch, p.output_names)

    def describe(self, req):
        torch = self.torch
        p = self.problem
        named = p.inputs(int(req.get("seed", 0)))
        outputs = self.reference(named)
        names = dtype_names(torch)

        def tensor(name, t, kind):
            if t.dtype not in names:
                raise ProblemError(f"{name}: dtype {t.dtype} has no lathe dtype")
            return {"name": name, "dtype": names[t.dtype], "shape": list(t.shape), "kind": kind}
        ins = [tensor(n, t, "input" if i < p.n_inputs else "param") for i, (n, t) in enumerate(named)]
        # Output dtypes are the model's own (the candidate writes those), not the fp64 reference's.
        native = as_outputs(p.call(named, False), torch, p.output_names) if self.ref_dtype == "float64" else outputs
        outs = [tensor(n, t, "output") for n, t in native]
        scalars = [{"name": n, "value": v} for n, v in p.scalars + p.forward_scalars]
        # The outputs' magnitude (RMS of the reference over every floating output): an imported
        # problem's absolute tolerance scales with it (docs/problems.md, "Tolerances").
        sq, count = 0.0, 0
        for _, t in outputs:
            if t.is_floating_point() and t.numel() > 0:
                sq += float(t.double().pow(2).sum())
                count += t.numel()
        r = {"ok": True, "format": p.format, "torch": torch.__version__,
             "output_rms": math.sqrt(sq / count) if count else 0.0,
             "tolerance": p.tolerance, "comparison": p.comparison,
             "python": platform.python_version(), "device": self.device,
             "cuda": torch.version.cuda if self.device.startswith("cuda") else None,
             "inputs": ins, "outputs": outs, "scalars": scalars,
             "perturbations": p.perturbations, "reference_dtype": self.ref_dtype}
        if getattr(self, "fp64_failure", None):
            r["fp64_failure"] = self.fp64_failure
        if hasattr(p, "model_spec"):
            r["model"] = dict(p.model_spec(), outputs=len(outs), ops=self.reference_ops(named))
        return r

    def reference_ops(self, named):
        """The compute ops the Model runs (its own dtypes), as the candidate's observer names
        them: what --refuse-torch-fallback refuses in a ModelNew (python/lathe_ops.py)."""
        here = os.path.dirname(os.path.abspath(__file__))
        ops = load_module(os.path.join(here, "lathe_ops.py"), "lathe_ops")
        return ops.record_ops(self.torch, lambda: self.problem.call(named, False))

    def draw(self, req, n_outputs):
        """One trial's inputs (named, ABI order) and reference outputs."""
        p = self.problem
        named = p.inputs(int(req["seed"]))
        named = p.perturb(named, p.n_inputs, float(req.get("scale", 1.0)), float(req.get("shift", 0.0)))
        outputs = self.reference(named)
        in_offsets = req["inputs"]
        if len(in_offsets) != len(named) or n_outputs != len(outputs):
            raise ProblemError(f"the problem produced {len(named)} inputs and {len(outputs)} outputs; "
                               f"the task has {len(in_offsets)} and {n_outputs} (it changed?)")
        return named, outputs

    def trial(self, req):
        named, outputs = self.draw(req, len(req["outputs"]))
        self.share(req, named, outputs)
        return {"ok": True, "reference_dtype": self.ref_dtype}

    def reference_of(self, req):
        """The reference of inputs lathe wrote into the region (a timed call's, whose windows no
        seed draws): each tensor shaped and typed as `seed` draws it, its bytes from the region."""
        torch = self.torch
        p = self.problem
        template = p.inputs(int(req["seed"]))
        size = int(req["bytes"])
        with mmap.mmap(SHARED_FD, size) as mm:
            named = []
            for (name, t), off in zip(template, req["inputs"]):
                if t.numel() == 0:
                    named.append((name, t))
                    continue
                view = torch.frombuffer(mm, dtype=t.dtype, count=t.numel(), offset=int(off))
                named.append((name, view.clone().reshape(t.shape).to(t.device)))
                del view
            outputs = self.reference(named)
            if len(outputs) != len(req["outputs"]):
                raise ProblemError(f"the problem produced {len(outputs)} outputs; the task has "
                                   f"{len(req['outputs'])} (it changed?)")
            for (name, t), off in zip(outputs, req["outputs"]):
                self.put(mm, off, t.detach().to(torch.float64).contiguous().cpu(), name)
            del mm
        return {"ok": True, "reference_dtype": self.ref_dtype}

    def share(self, req, named, outputs):
        """Inputs and float64 outputs into the shared region at the offsets the gate asked for."""
        torch = self.torch
        in_offsets, out_offsets = req["inputs"], req["outputs"]
        size = int(req["bytes"])
        with mmap.mmap(SHARED_FD, size) as mm:
            for (name, t), off in zip(named, in_offsets):
                self.put(mm, off, t.contiguous().cpu(), name)
            for (name, t), off in zip(outputs, out_offsets):
                self.put(mm, off, t.detach().to(torch.float64).contiguous().cpu(), name)
            del mm  # no exported buffers may outlive the mapping

    # CUDA IPC (python/lathe_ipc.py): a candidate's device buffer opened here, inputs written
    # into it and outputs compared in place. Any failure is an error reply; the gate then goes
    # back to the shared region (trial) for the rest of the evaluation.
    def ipc(self):
        if not self.device.startswith("cuda"):
            raise ProblemError("CUDA IPC needs a CUDA problem worker")
        if self.peers is None:
            here = os.path.dirname(os.path.abspath(__file__))
            module = load_module(os.path.join(here, "lathe_ipc.py"), "lathe_ipc")
            self.peers = module.Peers(self.torch, self.device)
        return self.peers

    def attach(self, req):
        return {"ok": True, "peer": self.ipc().attach(req["handle"], int(req["bytes"]))}

    def detach(self, req):
        self.ipc().detach(int(req["peer"]))
        return {"ok": True}

    def device_trial(self, req):
        """Like trial, but the inputs go into slot `base` of peer `peer` on the device; with
        `mirror` (a trial request's fields), the shared region gets them too."""
        peers = self.ipc()
        named, outputs = self.draw(req, int(req["num_outputs"]))
        peers.write_inputs(int(req["peer"]), int(req["base"]), named, req["inputs"], outputs)
        if req.get("mirror"):
            self.share(dict(req["mirror"], inputs=req["inputs"]), named, outputs)
        return {"ok": True, "reference_dtype": self.ref_dtype}

    def compare(self, req):
        r = self.ipc().compare(int(req["peer"]), int(req["base"]), req["outputs"])
        r["ok"] = True
        return r

    def put(self, mm, offset, t, name):
        torch = self.torch
        nbytes = t.numel() * t.element_size()
        if offset + nbytes > len(mm):
            raise ProblemError(f"{name}: {nbytes} bytes at {offset} pass the shared region's end")
        if nbytes == 0:
            return
        view = torch.frombuffer(mm, dtype=t.dtype, count=t.numel(), offset=offset)
        view.copy_(t.reshape(-1))
        del view

    def time(self, req):
        """The eager problem, timed live on this device with the named protocol."""
        torch = self.torch
        p = self.problem
        named = p.inputs(int(req.get("seed", 0)))
        run = p.callable_for_timing(named)
        protocol = req.get("protocol", "kernelbench")
        cuda = self.device.startswith("cuda")
        times = []
        if cuda:
            sync = torch.cuda.synchronize
            if protocol == "kernelbench":
                for _ in range(int(req.get("warmup", 3))):
                    run()
                sync()
                for _ in range(int(req.get("trials", 100))):
                    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    a.record()
                    run()
                    b.record()
                    sync()
                    times.append(a.elapsed_time(b) * 1e-3)
            else:
                cache = torch.empty(256 << 20, dtype=torch.int8, device=self.device)
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                for _ in range(5):
                    cache.zero_()
                    run()
                b.record()
                sync()
                est = max(a.elapsed_time(b) * 1e-3 / 5, 1e-7)
                n_warm = max(1, int(float(req.get("warmup_ms", 25)) * 1e-3 / est))
                n_rep = min(100000, max(1, int(float(req.get("rep_ms", 100)) * 1e-3 / est)))
                for _ in range(n_warm):
                    run()
                ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(n_rep)]
                for s, e in ev:
                    cache.zero_()
                    s.record()
                    run()
                    e.record()
                sync()
                times = [s.elapsed_time(e) * 1e-3 for s, e in ev]
        else:
            warm = int(req.get("warmup", 3))
            trials = int(req.get("trials", 100))
            if protocol == "do_bench":
                t0 = time.perf_counter()
                run()
                est = max(time.perf_counter() - t0, 1e-7)
                warm = max(1, int(float(req.get("warmup_ms", 25)) * 1e-3 / est))
                trials = min(100000, max(1, int(float(req.get("rep_ms", 100)) * 1e-3 / est)))
            for _ in range(warm):
                run()
            for _ in range(trials):
                t0 = time.perf_counter()
                run()
                times.append(time.perf_counter() - t0)
        return {"ok": True, "protocol": protocol, "seconds": times, "torch": torch.__version__}


def cuda_healthy(torch):
    try:
        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1).item()
        return True
    except Exception:
        return False


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--fds", action="store_true",
                    help="requests on descriptor 4, replies on 5, stderr on 6 (lathe's sandboxed start)")
    args = ap.parse_args()
    # The protocol's own channel: a problem that prints must not corrupt it.
    if args.fds:
        out = os.fdopen(5, "w", buffering=1)
        os.dup2(4, 0)
        os.dup2(6, 2)
        os.close(4)
        os.close(6)
    else:
        out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def reply(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    try:
        import torch
    except Exception as e:  # the gate tries the next interpreter
        reply({"ok": False, "error": "no_torch", "message": f"{type(e).__name__}: {e}",
               "python": sys.executable})
        return 3
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        reply({"ok": False, "error": "problem",
               "message": f"torch {torch.__version__} at {sys.executable} sees no CUDA device: a CUDA problem "
                          "(a .cu kernel, a Python kernel that asks for the GPU, platform = \"cuda\") needs "
                          "CUDA PyTorch on an NVIDIA machine (a .cpp kernel, a torch-only ModelNew run on CPU "
                          "PyTorch; --platform cpu runs a bare problem file on the CPU whatever its kernel "
                          "names)"})
        return 4
    try:
        worker = Worker(os.path.abspath(args.problem), args.device, torch, reply)
    except Exception as e:
        reply({"ok": False, "error": "problem", "message": f"{type(e).__name__}: {e}",
               "trace": traceback.format_exc(limit=4)})
        return 4
    reply({"ok": True, "ready": True, "torch": torch.__version__})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            op = req.get("op")
            if op == "quit":
                return 0
            handler = {"describe": worker.describe, "trial": worker.trial, "time": worker.time,
                       "reference": worker.reference_of,
                       "attach": worker.attach, "detach": worker.detach,
                       "device_trial": worker.device_trial, "compare": worker.compare}.get(op)
            if handler is None:
                raise ProblemError(f"unknown op {op!r}")
            reply(handler(req))
        except Exception as e:
            reply({"ok": False, "error": "problem", "message": f"{type(e).__name__}: {e}",
                   "trace": traceback.format_exc(limit=4)})
            # A CUDA error that sticks to this context would fail every later trial of every
            # evaluation: end the worker instead, and the gate starts a fresh one.
            if args.device.startswith("cuda") and not cuda_healthy(torch):
                return 5
    return 0


if __name__ == "__main__":
    sys.exit(main())
