"""lathe's static screen for Python bindings (docs/problems.md, "Screening Python bindings").

A Python binding is the Python side of a candidate (KernelBench's ModelNew with load_inline, a
ctypes wrapper...). Read with `ast`, never imported or run. Three rules, each a known reward hack
(PROTOCOL.md):

  fallback    a try/except whose handler computes (calls anything but logging) or swallows the
              error (pass, return of an input): a kernel that fails falls back to PyTorch or to
              nothing, and the gate would time the fallback
  torch_op    a call into PyTorch's compute (torch.matmul, F.softmax, x @ w, nn.Linear(...)
              layers, tensor methods such as .sum() or .exp()) when the task forbids it;
              allocation, views, dtype and device moves, and building the extension are allowed
  precision   (--fp32: the task's floats are fp32) a downgrade below that: .half(), .bfloat16(),
              .to(torch.float16), dtype=torch.bfloat16, autocast, TF32 or reduced-precision
              matmul switches, and half-precision types in the embedded C++/CUDA sources

  torch_fallback  (--reference PROBLEM.py, a ModelNew) a call in ModelNew.forward of an op the
              reference's Model.forward calls (torch.relu, F.gelu, .sum(), a layer of the same kind
              as the Model's): KernelBench's "torch fallback", the reference's own work done by
              PyTorch. lathe reports these per candidate and refuses them when asked

Usage: lathe_screen.py FILE [--allow-torch-ops] [--fp32] [--reference PROBLEM.py]
       -> one JSON object on stdout
"""

import ast
import json
import re
import sys

ALLOWED_TORCH = {
    # allocation and construction
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "tensor", "as_tensor", "from_numpy", "arange", "Size", "device", "Generator",
    "randn", "rand", "randint", "randn_like", "rand_like", "randperm",
    # layout and movement
    "cat", "stack", "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose",
    "contiguous", "chunk", "split", "narrow", "broadcast_to", "as_strided",
    # the extension machinery and the runtime
    "load_inline", "load", "is_tensor", "is_floating_point", "no_grad", "inference_mode",
    "manual_seed", "synchronize", "current_stream", "Stream", "Event", "set_device",
    "current_device", "is_available", "get_device_properties", "finfo", "iinfo", "dtype",
}
ALLOWED_METHODS = {
    "contiguous", "view", "reshape", "to", "cuda", "cpu", "size", "dim", "numel", "stride",
    "data_ptr", "is_contiguous", "element_size", "permute", "transpose", "unsqueeze", "squeeze",
    "flatten", "expand", "expand_as", "view_as", "clone", "detach", "copy_", "zero_", "fill_",
    "new_empty", "new_zeros", "new_full", "float", "double", "int", "long", "item", "tolist",
    "numpy", "storage_offset", "untyped_storage", "get_device", "type", "narrow", "split",
    "chunk", "t", "is_cuda", "requires_grad_", "empty_like", "register_buffer",
    "register_parameter", "parameters", "named_parameters", "state_dict", "load_state_dict",
    "eval", "train", "append", "extend", "items", "keys", "values", "get", "format", "join",
    "startswith", "endswith", "encode", "decode", "strip", "replace", "upper", "lower",
}
COMPUTE_METHODS = {
    "matmul", "mm", "bmm", "addmm", "mv", "dot", "sum", "mean", "max", "min", "amax", "amin",
    "exp", "log", "sqrt", "rsqrt", "pow", "softmax", "log_softmax", "relu", "gelu", "sigmoid",
    "tanh", "norm", "var", "std", "cumsum", "prod", "argmax", "argmin", "topk", "sort", "mul",
    "add", "sub", "div", "addcmul", "clamp", "abs", "neg", "einsum", "conv2d", "baddbmm",
}
NN_COMPUTE_LAYERS = {
    "Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm",
    "InstanceNorm2d", "MultiheadAttention", "LSTM", "GRU", "RNN", "Softmax", "ReLU", "GELU",
    "MaxPool2d", "AvgPool2d", "Embedding", "Transformer", "TransformerEncoderLayer",
}
LOW_DTYPES = {"float16", "half", "bfloat16", "float8_e4m3fn", "float8_e5m2"}
HALF_IN_SOURCE = re.compile(r"\b(__half2?|__nv_bfloat162?|__float2half\w*|__float2bfloat16\w*|"
                            r"half2|hexp|h2exp|__hmul2?|__hfma2?)\b")


def dotted(node):
    """'torch.nn.functional.relu' for the attribute chain, '' when not a plain chain."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


class Screen(ast.NodeVisitor):
    def __init__(self, allow_torch_ops, fp32):
        self.allow_torch_ops = allow_torch_ops
        self.fp32 = fp32
        self.findings = []
        self.functional = {"F", "functional"}  # names bound to torch.nn.functional
        self.torch_names = {"torch"}
        self.nn_names = {"nn"}

    def add(self, rule, node, detail):
        self.findings.append({"rule": rule, "line": getattr(node, "lineno", 0), "detail": detail})

    # Aliases: import torch as th; import torch.nn.functional as F; from torch import nn
    def visit_Import(self, node):
        for a in node.names:
            if a.name == "torch":
                self.torch_names.add(a.asname or "torch")
            elif a.name == "torch.nn.functional" and a.asname:
                self.functional.add(a.asname)
            elif a.name == "torch.nn" and a.asname:
                self.nn_names.add(a.asname)
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        if node.module == "torch.nn" or node.module == "torch":
            for a in node.names:
                if a.name == "functional":
                    self.functional.add(a.asname or "functional")
                if a.name == "nn":
                    self.nn_names.add(a.asname or "nn")
        if node.module == "torch.nn.functional" and not self.allow_torch_ops:
            for a in node.names:
                if a.name != "*":
                    self.add("torch_op", node, f"imports {a.name} from torch.nn.functional")
        self.generic_visit(node)

    def torch_call(self, name):
        """The compute op a dotted call name reaches, or ''."""
        parts = name.split(".")
        if not parts or not parts[0]:
            return ""
        if parts[0] in self.functional and len(parts) == 2:
            return name
        if parts[0] in self.torch_names:
            rest = parts[1:]
            if rest[:2] == ["nn", "functional"] and len(rest) == 3:
                return name
            if rest[:1] == ["nn"] and len(rest) == 2 and rest[1] in NN_COMPUTE_LAYERS:
                return name
            if len(rest) == 1 and rest[0] not in ALLOWED_TORCH and rest[0][0].islower():
                return name
            if rest[:1] in (["linalg"], ["fft"], ["special"]):
                return name
            return ""
        if parts[0] in self.nn_names and len(parts) == 2 and parts[1] in NN_COMPUTE_LAYERS:
            return name
        if parts[0] in self.nn_names and len(parts) == 3 and parts[1] == "functional":
            return name
        return ""

    def visit_Call(self, node):
        name = dotted(node.func)
        if not self.allow_torch_ops:
            op = self.torch_call(name)
            if op:
                self.add("torch_op", node, f"calls {op}")
            elif isinstance(node.func, ast.Attribute) and not name.startswith(tuple(self.torch_names)):
                m = node.func.attr
                if m in COMPUTE_METHODS and m not in ALLOWED_METHODS:
                    self.add("torch_op", node, f"calls the tensor method .{m}()")
        if self.fp32:
            self.precision_call(node, name)
        self.generic_visit(node)

    def precision_call(self, node, name):
        """.half(), .bfloat16(), .to(torch.float16), dtype=torch.bfloat16, autocast, TF32."""
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("half", "bfloat16") and not node.args:
            self.add("precision", node, f".{node.func.attr}() downgrades the precision")
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "type"):
            for a in node.args:
                if dotted(a).split(".")[-1] in LOW_DTYPES:
                    self.add("precision", node, f".{node.func.attr}({dotted(a)}) downgrades the precision")
        for kw in node.keywords:
            if kw.arg == "dtype" and dotted(kw.value).split(".")[-1] in LOW_DTYPES:
                self.add("precision", node, f"dtype={dotted(kw.value)} below the task's precision")
        if name.endswith("autocast"):
            self.add("precision", node, f"{name}: mixed precision below the task's contract")
        if name.endswith("set_float32_matmul_precision"):
            if any(isinstance(a, ast.Constant) and a.value in ("high", "medium") for a in node.args):
                self.add("precision", node, "set_float32_matmul_precision: TF32/bf16 matmuls")

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.MatMult) and not self.allow_torch_ops:
            self.add("torch_op", node, "the @ operator (a PyTorch matmul)")
        self.generic_visit(node)

    def visit_Assign(self, node):
        for t in node.targets:
            n = dotted(t)
            if self.fp32 and n.endswith(("allow_tf32", "allow_fp16_reduced_precision_reduction",
                           "allow_bf16_reduced_precision_reduction")):
                if isinstance(node.value, ast.Constant) and node.value.value is True:
                    self.add("precision", node, f"{n} = True: reduced-precision matmuls")
        self.generic_visit(node)

    def visit_Try(self, node):
        for h in node.handlers:
            calls = [dotted(c.func) or "a call" for b in h.body for c in ast.walk(b)
                     if isinstance(c, ast.Call)]
            calls = [c for c in calls if c.split(".")[-1] not in ("print", "warn", "warning",
                                                                  "error", "debug", "info")]
            swallows = all(isinstance(b, (ast.Pass, ast.Continue)) for b in h.body) or any(
                isinstance(b, ast.Return) for b in h.body)
            raises = any(isinstance(b, ast.Raise) for b in h.body)
            if raises and not calls:
                continue
            if calls:
                self.add("fallback", h, f"the except branch computes ({', '.join(calls[:3])}): "
                                        "a failing kernel would fall back to it")
            elif swallows:
                self.add("fallback", h, "the except branch swallows the error")
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_Constant(self, node):
        if self.fp32 and isinstance(node.value, str) and len(node.value) > 40:
            m = HALF_IN_SOURCE.search(node.value)
            if m:
                self.add("precision", node, f"the embedded source uses {m.group(0)} on an fp32 task")
        self.generic_visit(node)


def op_name(screen, node):
    """The compute op a call is, by its last name ('relu', 'gelu', 'sum', 'Linear'), or ''."""
    name = dotted(node.func)
    op = screen.torch_call(name)
    if op:
        return op.split(".")[-1]
    if isinstance(node.func, ast.Attribute) and not name.startswith(tuple(screen.torch_names)):
        m = node.func.attr
        if m in COMPUTE_METHODS and m not in ALLOWED_METHODS:
            return m
    return ""


def model_methods(tree, cls_name):
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls_name:
            return {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
    return {}


def forward_ops(tree, cls_name):
    """(ops, layer of each attribute): the compute ops cls_name.forward calls, its layers' kinds
    (self.fc = nn.Linear(...) in __init__, then self.fc(x) in forward: 'Linear')."""
    s = Screen(False, False)
    s.visit(tree)  # the module's import aliases
    methods = model_methods(tree, cls_name)
    layers = {}
    init = methods.get("__init__")
    for node in ast.walk(init) if init else []:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            kind = dotted(node.value.func).split(".")[-1]
            if kind in NN_COMPUTE_LAYERS:
                for t in node.targets:
                    if dotted(t).startswith("self."):
                        layers[dotted(t)[5:]] = kind
    ops = []
    fwd = methods.get("forward")
    for node in ast.walk(fwd) if fwd else []:
        if not isinstance(node, ast.Call):
            continue
        n = dotted(node.func)
        op = layers.get(n[5:], "") if n.startswith("self.") else op_name(s, node)
        if op:
            ops.append((op, node))
    return ops


def fallback_findings(text, reference_text):
    """torch_fallback findings of a ModelNew against the reference's Model."""
    try:
        ref = ast.parse(reference_text)
        cand = ast.parse(text)
    except SyntaxError:
        return []
    wanted = {op for op, _ in forward_ops(ref, "Model")}
    out = []
    for op, node in forward_ops(cand, "ModelNew"):
        if op in wanted:
            out.append({"rule": "torch_fallback", "line": node.lineno,
                        "detail": f"ModelNew.forward calls {op}, which the reference's Model.forward calls: "
                                  "the reference's own op done by PyTorch (KernelBench's torch fallback)"})
    return out


def screen(text, allow_torch_ops=False, fp32=False, filename="<binding>"):
    try:
        tree = ast.parse(text, filename=filename)
    except SyntaxError as e:
        return {"ok": False, "error": f"syntax error at line {e.lineno}: {e.msg}", "findings": []}
    s = Screen(allow_torch_ops, fp32)
    s.visit(tree)
    s.findings.sort(key=lambda f: (f["line"], f["rule"]))
    return {"ok": True, "findings": s.findings}


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    path = args[0]
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    result = screen(text, "--allow-torch-ops" in args, "--fp32" in args, path)
    if "--reference" in args and result["ok"]:
        with open(args[args.index("--reference") + 1], encoding="utf-8", errors="replace") as f:
            result["findings"] += fallback_findings(text, f.read())
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
