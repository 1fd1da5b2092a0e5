"""lathe synth, candidate inputs: constructor values and forward shapes guessed for a module whose
source does not declare them (issue 47 item 2, first increment).

Read with `ast` only, like the extraction. The guesses are a short, ordered list: each becomes a
KernelBench problem file that lathe tries in its sandbox (python/lathe_synth_trial.py); the first
that loads and runs forward to finite outputs is kept. Nothing here runs the module.

Constructor arguments without a default get a value from their name (kernel_size 3, stride 1,
eps 1e-5, *_channels / *_features / *_dim / num_* / hidden 16 …), else from their annotation
(int 16, float 0.1, bool False); an argument that names a module, a sequence or a string gets
none, and the module is not tried. Forward's tensors without a declared shape share one shape,
tried over ranks 2-5 with the channel dimension C set to the first size given to the constructor
(else the first int default of a size-like argument, else 16): (2, C), (2, C, 8), (2, C, 8, 8),
(2, 8, C), (2, C, 8, 8, 8); a class named *1d / *2d / *3d tries its own rank first. A second
round uses 32 for the sizes.
"""
import ast

import lathe_synth_extract as ex

TENSOR_NAMES = {"torch.Tensor", "torch.tensor.Tensor", "torch._tensor.Tensor"}
# Exact names first: what a torch.nn argument of that name means.
BY_NAME = {
    "kernel_size": 3, "stride": 1, "padding": 1, "dilation": 1, "output_padding": 0,
    "groups": 2, "num_groups": 4, "upscale_factor": 2, "downscale_factor": 2, "output_size": 4,
    "size": 3, "dim": 1, "axis": 1, "num_heads": 2, "nhead": 2, "heads": 2, "n_heads": 2,
    "num_layers": 1, "n_layers": 1, "depth": 1,
    "eps": 1e-5, "momentum": 0.1, "p": 0.1, "dropout": 0.1, "norm_type": 2.0, "threshold": 0.1,
    "value": 0.0, "negative_slope": 0.01, "lambd": 0.5, "alpha": 1.0, "beta": 1.0, "margin": 1.0,
    "scale": 2.0, "scale_factor": 2.0, "temperature": 1.0, "bias": True, "affine": True,
}
SIZE_NAMES = {"normalized_shape", "num_embeddings", "embedding_dim"}
SIZE_WORDS = ("channel", "feature", "dim", "size", "hidden", "embed", "width", "d_model", "planes",
              "units", "neurons")
SIZE_PREFIXES = ("in_", "out_", "num_", "n_", "in1_", "in2_", "inp", "outp")
REFUSE_WORDS = ("layer", "module", "block", "activation", "norm_layer", "act", "fn", "func",
                "original", "cutoffs", "name", "mode", "shape", "sizes")


def size_like(name):
    n = name.lower()
    return n.startswith(SIZE_PREFIXES) or any(w in n for w in SIZE_WORDS)


def annotation_text(a):
    return ast.unparse(a.annotation) if a.annotation is not None else ""


def guess_value(a, size):
    """(value, None) for one constructor argument, or (None, why)."""
    name, ann = a.arg, annotation_text(a).replace(" ", "")
    if name in SIZE_NAMES:
        return size, None
    if name in BY_NAME:
        return BY_NAME[name], None
    if ann in ("bool", "Optional[bool]"):
        return False, None
    if ann in ("float", "Optional[float]"):
        return 0.1, None
    low = name.lower()
    if any(low == w or low.endswith("_" + w) for w in REFUSE_WORDS) or ann.startswith(
            ("str", "Sequence", "List", "Tuple", "Callable", "Module", "nn.", "torch.nn", "Dict")):
        return None, f"constructor argument {name}{': ' + ann if ann else ''}: no guess for it"
    if ann in ("int", "Optional[int]") or size_like(name) or (not ann and low.startswith("num")):
        return size, None
    if ann.startswith("_size") or "int" in ann:
        return size, None
    return None, f"constructor argument {name}{': ' + ann if ann else ''}: no guess for it"


def tensor_like(index, a):
    """True when forward's argument may be a tensor: no annotation, or a Tensor one."""
    if a.annotation is None:
        return True
    node = ex.annotation_node(a)
    if isinstance(node, ast.Subscript):  # Optional[Tensor], Annotated[Tensor, ...]
        q = index.qualify(node.value)
        if q and q[1] in ("typing.Optional", "typing.Annotated", "typing_extensions.Annotated"):
            inner = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) else node.slice
            q = index.qualify(inner)
            return bool(q and q[1] in TENSOR_NAMES)
        return False
    q = index.qualify(node) if node is not None else None
    return bool(q and q[1] in TENSOR_NAMES) or ast.unparse(node) in ("Tensor", "torch.Tensor")


def shape_order(class_name, c):
    shapes = [(2, c), (2, c, 8), (2, c, 8, 8), (2, 8, c), (2, c, 8, 8, 8)]
    low = class_name.lower()
    for tag, rank in (("1d", 3), ("2d", 4), ("3d", 5)):
        if tag in low:
            first = [s for s in shapes if len(s) == rank and s[1] == c]
            shapes = first + [s for s in shapes if s not in first]
            break
    return shapes


def default_sizes(init):
    """The int defaults of the constructor's size-like arguments (Transformer's d_model=512)."""
    if init is None:
        return []
    args = init.args.posonlyargs + init.args.args
    pairs = list(zip(args[len(args) - len(init.args.defaults):], init.args.defaults))
    pairs += [(a, d) for a, d in zip(init.args.kwonlyargs, init.args.kw_defaults) if d is not None]
    return [d.value for a, d in pairs if size_like(a.arg) and isinstance(d, ast.Constant)
            and type(d.value) is int and d.value > 1]


def candidates(index, chain, cls_name, limit):
    """Up to `limit` candidates [{"init": [values], "shapes": [[dims]...]}], or ex.Refusal (kind
    "no trial") saying why none can be made. Forward tensors with a declared shape keep it."""
    _, init = ex.find_method(chain, "__init__")
    init_req = []
    if init is not None:
        init_req, kw = ex.required_args(init)
        if kw is not None:
            raise ex.Refusal("no trial",
                             f"constructor keyword-only argument {kw.arg} has no default")
    _, fwd = ex.find_method(chain, "forward")
    fwd_req, kw = ex.required_args(fwd)
    if kw is not None:
        raise ex.Refusal("no trial", f"forward's keyword-only argument {kw.arg} has no default")
    if not fwd_req:
        raise ex.Refusal("no trial", "forward takes no argument without a default")
    declared = []
    for a in fwd_req:
        node = ex.annotation_node(a) if a.annotation is not None else None
        shape = ex.tensor_shape(index, node) if node is not None else None
        if shape is None and not tensor_like(index, a):
            raise ex.Refusal("no trial",
                             f"forward argument {a.arg}: {annotation_text(a)} is not a tensor")
        declared.append(shape)
    out = []
    for size in (16, 32):
        values = []
        for a in init_req:
            v, why = guess_value(a, size)
            if why:
                raise ex.Refusal("no trial", why)
            values.append(v)
        sizes = [v for a, v in zip(init_req, values) if type(v) is int and size_like(a.arg)
                 and a.arg not in BY_NAME]
        c = sizes[0] if sizes else (default_sizes(init) or [size])[0]
        rounds = shape_order(cls_name, c) if None in declared else [None]
        for shape in rounds:
            cand = {"init": values, "shapes": [list(d) if d else list(shape) for d in declared]}
            if cand not in out:
                out.append(cand)
    return out[:limit]
