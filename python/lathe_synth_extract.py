"""lathe synth, extraction: nn.Module classes of one Python file, read with `ast` only.

The file is untrusted (a mined repository): nothing here imports or runs it. For every top-level
class that derives from torch's nn.Module (directly, through a torch.nn module class, or through a
base class in the same file) and has a `forward`, `extract` inlines what the class needs from the
file (helper functions, constants, other classes; recursively) into one standalone source, keeps
the imports it needs when they are torch, math or the standard library, and refuses the class
with the reason otherwise. `inputs` then reads the constructor's and forward's signatures: values
from defaults, tensor shapes from `Annotated[Tensor, (8, 64)]` annotations, nothing guessed.
"""
import ast
import builtins
import sys

ALLOWED_ROOTS = {"torch", "math"}
STDLIB = set(getattr(sys, "stdlib_module_names", ())) - {"__main__"}
# torch.nn names that are not module classes (a base named after them is not an nn.Module).
NOT_MODULES = {"Parameter", "UninitializedParameter", "UninitializedBuffer", "PackedSequence"}
BUILTINS = set(dir(builtins)) | {"__name__", "__file__", "__doc__", "__spec__", "__package__",
                                 "__class__", "__builtins__", "__loader__"}


class Refusal(Exception):
    """kind: a short category for the summary; detail: the reason with its names."""

    def __init__(self, kind, detail):
        super().__init__(detail)
        self.kind, self.detail = kind, detail


def allowed_module(name, own=()):
    """torch, math, the standard library, and `own`: the tree's own installed package (lathe_synth.py's
    installed_root), which the sandbox imports from the same read-only files."""
    root = name.split(".")[0]
    return root in ALLOWED_ROOTS or root in STDLIB or root in own


def resolve_relative(package, level, module):
    """The absolute name of `from <level dots><module> import`, or None outside any package."""
    if not package:
        return None
    parts = package.split(".")
    if level - 1 >= len(parts):
        return None
    base = parts[:len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def loads(node):
    """Names a node reads (Load context), every nested scope included."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def stores(node):
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name.split(".")[0]) for a in n.names)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            out.update(n.names)
    return out


def is_main_guard(stmt):
    t = stmt.test if isinstance(stmt, ast.If) else None
    return (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__")


class Import:
    """One name an import binds: `qualified` is what it names (torch.nn for `from torch import
    nn`), `line` the import that binds it alone in the output, `refusal` set when not allowed."""

    def __init__(self, stmt, qualified, line, refusal=None):
        self.stmt, self.qualified, self.line, self.refusal = stmt, qualified, line, refusal


class FileIndex:
    def __init__(self, text, package, own=()):
        self.text, self.package, self.own = text, package, tuple(own)
        self.tree = ast.parse(text)
        self.lines = text.splitlines()
        self.defs, self.imports, self.compound = {}, {}, {}
        self.future, self.star_allowed = [], False
        self.bound_anywhere = stores(self.tree)
        for i, stmt in enumerate(self.tree.body):
            self.index(i, stmt)

    def index(self, i, stmt):
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                bound = a.asname or a.name.split(".")[0]
                qual = a.name if a.asname else bound
                line = f"import {a.name}" + (f" as {a.asname}" if a.asname else "")
                bad = None if allowed_module(a.name, self.own) else Refusal(
                    "import not allowed", f"imports {a.name} (not torch, math or the standard library)")
                self.imports.setdefault(bound, []).append(Import(i, qual, line, bad))
        elif isinstance(stmt, ast.ImportFrom):
            self.index_from(i, stmt)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.defs.setdefault(stmt.name, []).append(i)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                for n in stores(t):
                    self.defs.setdefault(n, []).append(i)
        elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For, ast.While)) and not is_main_guard(stmt):
            for n in stores(stmt):
                self.compound.setdefault(n, (i, type(stmt).__name__.lower()))

    def index_from(self, i, stmt):
        if stmt.module == "__future__":
            self.future.append(i)
            return
        rel = "." * stmt.level + (stmt.module or "")
        mod, bad = stmt.module or "", None
        if stmt.level:
            mod = resolve_relative(self.package, stmt.level, stmt.module)
            if mod is None or mod.split(".")[0] not in ("torch",) + self.own:
                where = f"resolves to {mod}" if mod else "outside any package"
                bad = Refusal("relative import", f"imports {rel} (a relative import, {where}: "
                                                 "other files of the tree are not inlined)")
        elif not allowed_module(mod, self.own):
            bad = Refusal("import not allowed", f"imports {mod} (not torch, math or the standard library)")
        for a in stmt.names:
            if a.name == "*":
                self.star_allowed |= bad is None
                continue
            bound = a.asname or a.name
            line = f"from {mod} import {a.name}" + (f" as {a.asname}" if a.asname else "")
            self.imports.setdefault(bound, []).append(Import(i, f"{mod}.{a.name}", line, bad))

    # -- what names mean -------------------------------------------------------------------------

    def qualify(self, expr):
        """A base or annotation expression as a dotted name: ('torch', 'torch.nn.Module'),
        ('local', 'MyBase') for a class of this file, or None."""
        parts = []
        while isinstance(expr, ast.Attribute):
            parts.insert(0, expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        if not parts and self.class_def(expr.id) is not None:
            return ("local", expr.id)
        if expr.id in self.imports:
            return ("import", ".".join([self.imports[expr.id][-1].qualified] + parts))
        return None

    def class_def(self, name):
        for i in reversed(self.defs.get(name, [])):
            if isinstance(self.tree.body[i], ast.ClassDef):
                return self.tree.body[i]
        return None

    def module_bases(self, cls, seen=None):
        """The chain of this class and its in-file bases, and whether it reaches torch's
        nn.Module (the torch base's name, else None)."""
        seen = seen or set()
        chain, torch_base = [cls], None
        seen.add(cls.name)
        for b in cls.bases:
            q = self.qualify(b)
            if q is None:
                continue
            kind, name = q
            if kind == "local" and name not in seen and self.class_def(name) is not None:
                sub, tb = self.module_bases(self.class_def(name), seen)
                if tb:
                    chain += [c for c in sub if c not in chain]
                    torch_base = torch_base or tb
            elif kind == "import" and is_torch_module(name):
                torch_base = torch_base or name
        return chain, torch_base

    # -- inlining --------------------------------------------------------------------------------

    def needed(self, cls):
        """(statement indices, import lines) the class needs, or Refusal."""
        body, imports, seen = set(), [], set()
        queue = sorted(loads(cls))
        body.add(self.tree.body.index(cls))
        while queue:
            name = queue.pop()
            if name in seen:
                continue
            seen.add(name)
            found = False
            for imp in self.imports.get(name, []):
                if imp.refusal:
                    raise imp.refusal
                imports.append(imp)
                found = True
            for i in self.defs.get(name, []):
                found = True
                if i not in body:
                    body.add(i)
                    queue.extend(sorted(loads(self.tree.body[i])))
            if found or name in BUILTINS:
                continue
            if name in self.compound:
                i, kind = self.compound[name]
                raise Refusal("conditional definition", f"uses {name}, defined under a top-level "
                                                        f"{kind} at line {self.tree.body[i].lineno} (not inlined yet)")
            if name not in self.bound_anywhere and not self.star_allowed:
                raise Refusal("undefined name", f"uses {name}, defined nowhere in the file")
        return body, imports

    def segment(self, i):
        stmt = self.tree.body[i]
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        return "\n".join(self.lines[first - 1:stmt.end_lineno])

    def standalone(self, cls):
        """The class with what it needs, as one source text (header and wrapper not included)."""
        body, imports = self.needed(cls)
        out = [self.segment(i) for i in self.future]
        lines = ["import torch"]
        for imp in sorted(imports, key=lambda m: m.stmt):
            if imp.line not in lines:
                lines.append(imp.line)
        out.append("\n".join(lines))
        out += [self.segment(i) for i in sorted(body)]
        names = set()
        for i in body:
            names |= stores(self.tree.body[i]) if not isinstance(self.tree.body[i], ast.ClassDef) else {
                self.tree.body[i].name}
        return "\n\n\n".join(out) + "\n", names


def is_torch_module(q):
    last = q.rsplit(".", 1)[-1]
    if q == "torch.nn.Module" or q.startswith("torch.nn.modules."):
        return last not in NOT_MODULES
    return q.startswith("torch.nn.") and last[:1].isupper() and last not in NOT_MODULES


def find_method(chain, name):
    for c in chain:
        for s in c.body:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == name:
                return c, s
    return None, None


# -- inputs: defaults and annotations only ------------------------------------------------------

def required_args(fn):
    """forward's or __init__'s arguments without a default (self left out), and the first
    keyword-only one without a default (None when there is none)."""
    args = fn.args.posonlyargs + fn.args.args
    req = args[1:len(args) - len(fn.args.defaults)]
    kw = [a for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is None]
    return req, (kw[0] if kw else None)


def annotation_node(a):
    ann = a.annotation
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            return ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return None
    return ann


def int_value(index, node):
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name) and len(index.defs.get(node.id, [])) == 1:
        stmt = index.tree.body[index.defs[node.id][0]]
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            return int_value(index, stmt.value)
    return None


def tensor_shape(index, ann):
    """The shape an `Annotated[Tensor, (8, 64)]` annotation declares (dimensions: int literals or
    the file's int constants), else None."""
    if not isinstance(ann, ast.Subscript):
        return None
    q = index.qualify(ann.value)
    if not q or q[1] not in ("typing.Annotated", "typing_extensions.Annotated"):
        return None
    elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
    base = index.qualify(elts[0]) if elts else None
    if not base or base[1] not in ("torch.Tensor", "torch.tensor.Tensor", "torch._tensor.Tensor"):
        return None
    for m in elts[1:]:
        if isinstance(m, (ast.Tuple, ast.List)) and m.elts:
            dims = [int_value(index, e) for e in m.elts]
            if all(d is not None and d > 0 for d in dims):
                return dims
    return None


def inputs(index, chain, torch_base):
    """The shapes of forward's tensors (get_inputs); the constructor takes no argument (its
    defaults apply). Refusal when anything is left undetermined."""
    _, init = find_method(chain, "__init__")
    if init is None and torch_base not in ("torch.nn.Module", "torch.nn.modules.module.Module",
                                           "torch.nn.modules.Module"):
        raise Refusal("constructor not read", f"its constructor is {torch_base}'s, whose arguments "
                                              "are not read yet")
    if init is not None:
        req, kw = required_args(init)
        for a in req + ([kw] if kw else []):
            ann = f": {ast.unparse(a.annotation)}" if a.annotation is not None else ""
            raise Refusal("constructor argument without default",
                          f"constructor argument {a.arg}{ann} has no default")
    _, fwd = find_method(chain, "forward")
    req, kw = required_args(fwd)
    if kw is not None:
        raise Refusal("forward argument undetermined", f"forward's keyword-only argument {kw.arg} has no default")
    if not req:
        raise Refusal("no inputs", "forward takes no argument without a default (nothing to compute on)")
    shapes = []
    for a in req:
        if a.annotation is None:
            raise Refusal("forward argument undetermined",
                          f"forward argument {a.arg} has neither an annotation nor a default")
        shape = tensor_shape(index, annotation_node(a))
        if shape is None:
            raise Refusal("forward argument undetermined",
                          f"forward argument {a.arg}: {ast.unparse(a.annotation)} declares no shape")
        shapes.append(shape)
    return shapes
