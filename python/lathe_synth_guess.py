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


# Inputs by usage (issue 47 item 2): a forward argument that forward hands to torch where torch
# reads indices is drawn as int64 indices, not floats. Where: a torch.nn.functional call, or a
# call of an attribute the constructor set to a torch.nn module; which argument: (position,
# keyword). Roles: `rows`, indices into a table of C rows (an embedding's), drawn in the shared
# shape; `classes`, a class per sample of the first argument (its shape without dim 1, values
# below its dim 1); `labels`, the first argument's shape, values below its dim 1.
# `unit`: values torch reads as probabilities or a variance, drawn in [0, 1) (torch.rand) in the
# shared shape (BCELoss' input and target, KLDivLoss' target, GaussianNLLLoss' var).
INDEX_FUNCTIONS = {"embedding": [("rows", 0, "input")], "embedding_bag": [("rows", 0, "input")],
                   "nll_loss": [("classes", 1, "target")],
                   "cross_entropy": [("classes", 1, "target")],
                   "multi_margin_loss": [("classes", 1, "target")],
                   "multilabel_margin_loss": [("labels", 1, "target")],
                   "binary_cross_entropy": [("unit", 0, "input"), ("unit", 1, "target")],
                   "kl_div": [("unit", 1, "target")], "gaussian_nll_loss": [("unit", 2, "var")]}
INDEX_MODULES = {"Embedding": "embedding", "EmbeddingBag": "embedding_bag", "NLLLoss": "nll_loss",
                 "CrossEntropyLoss": "cross_entropy", "MultiMarginLoss": "multi_margin_loss",
                 "MultiLabelMarginLoss": "multilabel_margin_loss", "BCELoss": "binary_cross_entropy",
                 "KLDivLoss": "kl_div", "GaussianNLLLoss": "gaussian_nll_loss"}
# Constructor arguments whose default None leaves some modules unable to run (Upsample needs a
# size or a scale factor): each set by keyword, one at a time, in candidates after the defaults.
FILLS = ("scale_factor", "size", "output_size")


def attribute_classes(init):
    """{attr: qualified name} of `self.attr = <torch.nn class>(...)` in the constructor."""
    out = {}
    for n in ast.walk(init) if init is not None else ():
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            for t in n.targets:
                if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                        and t.value.id == "self"):
                    out[t.attr] = n.value.func
    return out


def index_roles(index, init, fwd, names):
    """{forward argument: role} for the arguments forward passes where torch reads indices."""
    attrs, roles = attribute_classes(init), {}
    for call in (n for n in ast.walk(fwd) if isinstance(n, ast.Call)):
        func, rules = call.func, []
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id == "self" and func.attr in attrs):
            q = index.qualify(attrs[func.attr])
            if q and q[0] == "import" and q[1].startswith("torch.nn."):
                rules = INDEX_FUNCTIONS.get(INDEX_MODULES.get(q[1].rsplit(".", 1)[-1]), [])
        else:
            q = index.qualify(func)
            if q and q[0] == "import" and q[1].startswith("torch.nn.functional."):
                rules = INDEX_FUNCTIONS.get(q[1].rsplit(".", 1)[-1], [])
        args = [a for a in call.args if not isinstance(a, ast.Starred)]
        for role, pos, key in rules:
            node = args[pos] if pos < len(args) else next(
                (k.value for k in call.keywords if k.arg == key), None)
            if isinstance(node, ast.Name) and node.id in names:
                roles.setdefault(node.id, role)
    return roles


def index_input(role, shape):
    """(shape, high) of an index input drawn with the shared float shape `shape`."""
    if role == "rows":
        return list(shape), shape[1]
    if role == "classes":
        return [shape[0]] + list(shape[2:]), shape[1]
    return list(shape), shape[1]


def fills(init):
    """The constructor's keyword fills: [{}] (its defaults), then one {name: value} per
    FILLS argument whose default is None."""
    out = [{}]
    if init is None:
        return out
    args = init.args.posonlyargs + init.args.args
    pairs = list(zip(args[len(args) - len(init.args.defaults):], init.args.defaults))
    pairs += list(zip(init.args.kwonlyargs, init.args.kw_defaults))
    unset = {a.arg for a, d in pairs if isinstance(d, ast.Constant) and d.value is None}
    return out + [{name: BY_NAME[name]} for name in FILLS if name in unset]


def forward_int(name):
    """A forward argument annotated int: a window or a partition count (MaxViT's p)."""
    v = BY_NAME.get(name)
    return v if type(v) is int and v > 0 else 2


def forward_inputs(fwd_req, declared, roles, shape):
    """{"shapes", "draws"} of forward's arguments for one shared shape: a declared shape kept, a
    number as declared, an index drawn below its bound or values in [0, 1) (index_roles), else
    randn of `shape`. draws[i]: None (randn), {"below": n} (int64 indices), {"unit": true}
    (torch.rand) or {"value": v} (a number, not a tensor; its shape None). "batch": the shared
    shape's leading dimension where every tensor is drawn from that shape (none declared): the
    trial may scale it toward a target forward time (lathe_synth_trial.py), else None."""
    shapes, draws = [], []
    for a, d in zip(fwd_req, declared):
        if isinstance(d, dict):
            shapes.append(None)
            draws.append(dict(d))
        elif d is not None or a.arg not in roles:
            shapes.append(list(d) if d else list(shape))
            draws.append(None)
        elif roles[a.arg] == "unit":
            shapes.append(list(shape))
            draws.append({"unit": True})
        else:
            dims, high = index_input(roles[a.arg], shape)
            shapes.append(dims)
            draws.append({"below": high})
    tensors = [d for d in declared if not isinstance(d, dict)]
    batch = shape[0] if tensors and all(d is None for d in tensors) else None
    return {"shapes": shapes, "draws": draws, "batch": batch}


def constructor_rounds(init, init_req, init_kw, size, inherited):
    """[(positional values, keyword values)] to try for one size. A class whose constructor is a
    torch.nn class's (convnext's LayerNorm2d is nn.LayerNorm's), or one that takes only *args
    (torch.nn's RNN, GRU: passed on to RNNBase; none is tried first), gets one size, then two:
    the first arguments of torch.nn's layers are sizes (normalized_shape; in and out features)."""
    if inherited:
        return [([size], {}), ([size, size], {})]
    if init is not None and init.args.vararg is not None and not init_req and not init_kw:
        return [([], {}), ([size], {}), ([size, size], {})]
    values = []
    for a in init_req + init_kw:
        v, why = guess_value(a, size)
        if why:
            raise ex.Refusal("no trial", why)
        values.append(v)
    return [(values[:len(init_req)], {a.arg: v for a, v in zip(init_kw, values[len(init_req):])})]


def candidates(index, chain, cls_name, limit, inherited=False):
    """Up to `limit` candidates [{"init": [values], "shapes": [[dims]...]}], or ex.Refusal (kind
    "no trial") saying why none can be made. Forward tensors with a declared shape keep it.
    `inherited`: the constructor is a torch.nn class's (constructor_rounds)."""
    _, init = ex.find_method(chain, "__init__")
    init_req, init_kw = [], []
    if init is not None:
        init_req, _ = ex.required_args(init)
        init_kw = [a for a, d in zip(init.args.kwonlyargs, init.args.kw_defaults) if d is None]
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
        if shape is None and annotation_text(a).replace(" ", "") == "int":
            shape = {"value": forward_int(a.arg)}
        elif shape is None and not tensor_like(index, a):
            raise ex.Refusal("no trial",
                             f"forward argument {a.arg}: {annotation_text(a)} is not a tensor")
        declared.append(shape)
    roles = index_roles(index, init, fwd, {a.arg for a, d in zip(fwd_req, declared) if d is None})
    out = []
    for size in (16, 32):
        inits = constructor_rounds(init, init_req, init_kw, size, inherited)
        named = list(zip(init_req + init_kw, inits[0][0] + list(inits[0][1].values())))
        sizes = [v for a, v in named if type(v) is int and size_like(a.arg) and a.arg not in BY_NAME]
        c = sizes[0] if sizes else (default_sizes(init) or [size])[0]
        rounds = shape_order(cls_name, c) if None in declared else [None]
        for shape in rounds:
            for (values, keywords), fill in ((i, f) for i in inits for f in fills(init)):
                cand = {"init": values, "kwargs": {**keywords, **fill},
                        "init_names": [a.arg for a in init_req],
                        **forward_inputs(fwd_req, declared, roles, shape)}
                if cand not in out:
                    out.append(cand)
    return out[:limit]
