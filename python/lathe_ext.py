"""PyTorch extensions of Python candidates, built off the timed path (docs/python-kernels.md).

A KernelBench candidate builds its inline C++/CUDA with torch.utils.cpp_extension.load_inline
when it is imported (or when its ModelNew is constructed). Run that way, a candidate's first
call would be its compile, and the worker, which may write nothing, could not build at all.
lathe builds every extension before any kernel runs, in three steps:

  record   (the build's jail; the candidate's code) the candidate is imported and its ModelNew
           constructed with load_inline replaced by a recorder: each call's arguments become a
           request (JSON) and the call returns a placeholder module
  compile  (the build's jail; lathe's code only) one request -> the real load_inline into OUT/;
           lathe keys OUT by the request's content and runs the requests in parallel, so that
           every candidate with the same extension shares one build
  load     (the candidate's worker, confined: read-only) load_inline replaced by a loader that
           finds the request among those recorded and imports the built module from its folder

A candidate that calls load_inline at run time with arguments the build did not see gets an
error that says so, never a compile.

Usage: lathe_ext.py record KERNEL.py MODEL.json REQUESTS.json
       lathe_ext.py compile REQUEST.json OUTDIR [ARCH]

ARCH (a CUDA task's target, e.g. 9.0a) becomes TORCH_CUDA_ARCH_LIST: the compile's sandbox has no
device for torch to choose the architecture from.
"""

import importlib.util
import inspect
import json
import os
import sys
import traceback

# load_inline's arguments that are lathe's to set; every other one (its signature differs between
# torch versions) decides what is built and is part of the request.
LATHE_KEYS = ("build_directory", "verbose", "keep_intermediates")


class ExtensionError(Exception):
    pass


def request_of(real_load_inline, args, kwargs):
    """load_inline's arguments as a canonical JSON-able dict (sources as lists of strings)."""
    try:
        bound = inspect.signature(real_load_inline).bind(*args, **kwargs)
    except TypeError as e:
        raise ExtensionError(f"load_inline: {e}") from None
    req = {}
    for key, value in bound.arguments.items():
        if key in LATHE_KEYS:
            continue
        if key in ("cpp_sources", "cuda_sources") and isinstance(value, str):
            value = [value]
        if isinstance(value, tuple):
            value = list(value)
        req[key] = value
    try:
        return json.loads(json.dumps(req, sort_keys=True))
    except (TypeError, ValueError) as e:
        raise ExtensionError(f"load_inline: arguments lathe cannot record: {e}") from None


class Placeholder:
    """What load_inline returns while the build records: calling into it is an error."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        def refuse(*a, **k):
            raise ExtensionError(f"{self._name}.{attr} called while lathe records the build: an "
                                 "extension's functions run only when the kernel does")
        return refuse


def exec_candidate(source, path):
    module = {"__name__": "lathe_kernel_candidate", "__file__": path}
    exec(compile(source, path, "exec"), module)  # noqa: S102 - jailed, as the build is
    return module


def construct(module, model, torch):
    """ModelNew(*init) as the worker will construct it: seeded, in eval mode."""
    cls = module.get("ModelNew")
    if cls is None or model is None:
        return None
    torch.manual_seed(0)
    m = cls(*model.get("init", []))
    if hasattr(m, "eval"):
        m.eval()
    return m


def record(kernel, model_file, out_file):
    import torch
    import torch.utils.cpp_extension as ce
    real = ce.load_inline
    requests, notes = [], []

    def recorder(*args, **kwargs):
        req = request_of(real, args, kwargs)
        if req not in requests:
            requests.append(req)
        return Placeholder(req.get("name", "extension"))

    def no_load(*args, **kwargs):
        raise ExtensionError("torch.utils.cpp_extension.load (sources in files) is not built by "
                             "lathe: pass the sources as strings to load_inline")
    ce.load_inline, ce.load = recorder, no_load
    model = None
    if model_file:
        with open(model_file) as f:
            model = json.load(f)
    with open(kernel, "rb") as f:
        source = f.read()
    try:
        module = exec_candidate(source, kernel)
        construct(module, model, torch)
    except BaseException as e:  # noqa: BLE001 - the worker reports it again as a load error
        last = traceback.format_exception_only(type(e), e)[-1].strip()
        notes.append(f"the candidate stopped while its extensions were recorded: {last}")
    with open(out_file, "w") as f:
        json.dump({"requests": requests, "notes": notes}, f)
    for n in notes:
        print("[lathe] " + n)
    print(f"[lathe] {len(requests)} extension(s) recorded")
    return 0


def compile_request(request_file, out_dir, arch=None):
    if arch:
        os.environ["TORCH_CUDA_ARCH_LIST"] = arch
    import torch.utils.cpp_extension as ce
    with open(request_file) as f:
        req = json.load(f)
    os.makedirs(out_dir, exist_ok=True)
    # torch builds through ninja, which a virtual environment installs beside its python3 (the
    # jail's PATH holds only the system's directories).
    os.environ["PATH"] = os.path.dirname(os.path.abspath(sys.executable)) + os.pathsep + os.environ.get("PATH", "")
    try:
        mod = ce.load_inline(**req, build_directory=os.path.abspath(out_dir), verbose=True)
    except BaseException as e:  # noqa: BLE001 - the log is the answer
        print(f"[lathe] load_inline failed: {type(e).__name__}: {e}")
        return 1
    built = os.path.basename(getattr(mod, "__file__", "") or "")
    with open(os.path.join(out_dir, "lathe-ext.json"), "w") as f:
        json.dump({"name": req["name"], "file": built}, f)
    return 0


def install_loader(torch, extensions):
    """load_inline (and load) in the worker: the recorded builds, imported from their folders."""
    import torch.utils.cpp_extension as ce
    real = ce.load_inline
    loaded = {}

    def loader(*args, **kwargs):
        req = request_of(real, args, kwargs)
        for i, e in enumerate(extensions):
            if e["request"] != req:
                continue
            if i not in loaded:
                with open(os.path.join(e["dir"], "lathe-ext.json")) as f:
                    built = json.load(f)
                spec = importlib.util.spec_from_file_location(built["name"],
                                                              os.path.join(e["dir"], built["file"]))
                mod = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(mod)
                loaded[i] = mod
            return loaded[i]
        raise ExtensionError(f"load_inline({req.get('name')!r}) with arguments the build did not "
                             "record: lathe builds extensions when the candidate is imported and its "
                             "ModelNew constructed, never while it runs")

    def no_load(*args, **kwargs):
        raise ExtensionError("torch.utils.cpp_extension.load is not built by lathe: use load_inline")
    ce.load_inline, ce.load = loader, no_load


def main(argv):
    if len(argv) >= 4 and argv[0] == "record":
        return record(argv[1], argv[2] if argv[2] != "-" else None, argv[3])
    if len(argv) >= 3 and argv[0] == "compile":
        return compile_request(argv[1], argv[2], argv[3] if len(argv) >= 4 else None)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
