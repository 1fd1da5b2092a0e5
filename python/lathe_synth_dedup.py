"""lathe synth, duplicates (issue 47 item 3): modules that are the same code, or behave the same.

Two signs, either enough:

* **Code**: a hash of the module's standalone source (what lathe_synth_extract.py inlined) after
  normalizing: docstrings dropped (comments never reach the ast), and every name the source binds
  itself (its classes, functions, constants, arguments, locals, and the attributes it assigns on
  `self`) renamed by order of first appearance. Names bound by imports and builtins stay: `torch.exp`
  and `math.exp` are not the same code. A copy with its class, helpers and variables renamed hashes
  the same; nothing here runs the module (`ast` only).
* **Behaviour**: modules whose forward takes the same inputs (dtypes and shapes) and whose outputs
  on the shared draws agree within 1e-6 relative. The draws are the trial's (lathe_synth_trial.py):
  seed 0, and the same inputs times 8 (ReLU and a clamp at 6 agree on randn); the parameters are
  each Model's own, drawn from the same seed, so two copies that build the same layers in the same
  order hold the same weights. The outputs come back summarized (SAMPLES values at evenly spaced
  positions, the sum, the sum of magnitudes per output), so two modules that differ only away from
  those positions are taken for one.

Clusters join both signs transitively; the first module of a cluster in manifest order (tree,
file, line) is kept, the others are `status: duplicate` with `duplicate_of`, `cluster` and
`duplicate_by` (`code`, `behaviour`), their problem files removed (extracted/ keeps the source).
"""
import ast
import builtins
import hashlib
import json
import math
import os

# Relative, per value: a copy gives the same bits, and x + x, x * 2 or ELU and CELU(1) agree to a
# few ulps; a default BatchNorm in eval (x / sqrt(1 + 1e-5), 5e-6 off) is not the identity.
RTOL = 1e-6
ATOL = 1e-6   # absolute, times the output's largest sampled magnitude (at least 1)


class _Names(ast.NodeTransformer):
    """Renames what the source binds itself by first appearance: module-level names (classes,
    functions, constants, the attributes assigned on `self`) to g0, g1, …; a function's arguments
    and locals to l0, l1, … within that function, so two helpers that both call their argument
    `x` do not tie a copy to the original's choice of names."""

    def __init__(self, keep, self_attrs):
        self.keep, self.self_attrs, self.map, self.scopes = keep, self_attrs, {}, []

    def canon(self, name):
        if name in self.keep:
            return name
        for names, renamed in reversed(self.scopes):
            if name in names:
                return renamed.setdefault(name, f"l{len(renamed)}")
        return self.map.setdefault(name, f"g{len(self.map)}")

    def visit_Name(self, node):
        node.id = self.canon(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.canon(node.arg)
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node):
        node.name = self.canon(node.name)
        names = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.scopes.append((names - {"self", "cls"}, {}))
        self.generic_visit(node)
        self.scopes.pop()
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        node.name = self.canon(node.name)
        self.generic_visit(node)
        return node

    def visit_Attribute(self, node):
        if node.attr in self.self_attrs:
            node.attr = self.canon("." + node.attr)
        self.generic_visit(node)
        return node


def _strip_docstrings(tree):
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]


def code_hash(source):
    """The normalized ast's hash (16 hex digits) of a standalone source."""
    tree = ast.parse(source)
    _strip_docstrings(tree)
    keep = set(dir(builtins)) | {"self", "cls"}
    self_attrs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                keep.add(a.asname or a.name.split(".")[0])
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                self_attrs.add(t.attr)
    tree = _Names(keep, self_attrs).visit(tree)
    text = ast.dump(tree, annotate_fields=False, include_attributes=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _close(a, b):
    """Two output summaries (lists of {shape, dtype, values, sum, abs}) agree within tolerance."""
    if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if not isinstance(x, dict) or not isinstance(y, dict):
            return False
        if x.get("shape") != y.get("shape") or x.get("dtype") != y.get("dtype"):
            return False
        xs, ys = x.get("values") or [], y.get("values") or []
        if len(xs) != len(ys):
            return False
        try:
            scale = max([1.0] + [abs(float(v)) for v in xs])
            pairs = list(zip(xs, ys)) + [(x.get("sum"), y.get("sum"))]
            if any(not math.isclose(float(u), float(v), rel_tol=RTOL, abs_tol=ATOL * scale)
                   for u, v in pairs):
                return False
            mag = max(1.0, abs(float(x.get("abs"))))
            if not math.isclose(float(x.get("abs")), float(y.get("abs")), rel_tol=RTOL,
                                abs_tol=ATOL * mag):
                return False
        except (TypeError, ValueError):
            return False
    return True


def same_behaviour(fa, fb):
    """Two fingerprints (lathe_synth_trial.py): the same inputs, outputs close on both draws."""
    if fa.get("inputs") != fb.get("inputs") or not _close(fa.get("outputs"), fb.get("outputs")):
        return False
    sa, sb = fa.get("scaled"), fb.get("scaled")
    return (sa is None and sb is None) or _close(sa, sb)


def _find(parent, i):
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def dedup(out, modules):
    """Clusters the kept modules (manifest order), keeps the first of each; the summary's counts."""
    kept = [m for m in modules if m["status"] == "kept"]
    parent = list(range(len(kept)))
    by = {}  # (i, j) joined -> the signs that joined them

    def join(i, j, sign):
        by.setdefault(j, set()).add(sign)
        a, b = _find(parent, i), _find(parent, j)
        if a != b:
            parent[max(a, b)] = min(a, b)
    first_of = {}
    for j, m in enumerate(kept):
        h = m.get("code_hash")
        if h in first_of:
            join(first_of[h], j, "code")
        elif h:
            first_of[h] = j
    groups = {}
    for j, m in enumerate(kept):
        fp = m.get("fingerprint")
        if isinstance(fp, dict):
            groups.setdefault(json.dumps(fp.get("inputs")), []).append(j)
    for members in groups.values():
        for x, j in enumerate(members):
            for i in members[:x]:
                if same_behaviour(kept[i]["fingerprint"], kept[j]["fingerprint"]):
                    join(i, j, "behaviour")
                    break
    clusters = {}
    for j in range(len(kept)):
        clusters.setdefault(_find(parent, j), []).append(j)
    for root, members in clusters.items():
        if len(members) < 2:
            continue
        head = kept[root]
        name = f"{head['tree']}/{head['file']}:{head['class']}"
        head["cluster"] = name
        for j in members[1:]:
            m = kept[j]
            problem = m.pop("problem", None)
            if problem and os.path.lexists(os.path.join(out, problem)):
                os.unlink(os.path.join(out, problem))
            m.update(status="duplicate", cluster=name, duplicate_of=name,
                     duplicate_by=sorted(by.get(j, {"behaviour"})))
    return sum(1 for ms in clusters.values() if len(ms) > 1)
