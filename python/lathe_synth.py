"""lathe synth SRC... --out DIR: KernelBench problems mined from PyTorch source trees.

    python3 -I -B lathe_synth.py --out DIR [--max-file-bytes N] [--trials N] SRC...
    python3 -I -B lathe_synth.py --out DIR --apply DIR/trials.json

Run by `lathe synth` (src/cli/synth_cmd.cpp, docs/synth.md). The trees are untrusted: their files
are read beneath each SRC without following a link (a link is listed as not followed), regular
files only, each at most --max-file-bytes, and parsed with `ast`; nothing of them is imported or
run here. Writes DIR/problems/*.py (KernelBench: Model, get_inputs, get_init_inputs) for the kept
modules, DIR/extracted/*.py (the standalone source) for every module whose extraction succeeded,
DIR/plan.json (candidate problem files for the modules whose inputs the source does not declare,
lathe_synth_guess.py) and DIR/manifest.json (lathe.synth_manifest/1); prints one JSON line, the
summary. lathe tries the plan in its sandbox (src/cli/synth_trials.cpp, lathe_synth_trial.py);
--apply then keeps each module's first candidate that ran and prints the summary again.
"""
import argparse
import ast
import json
import os
import re
import shutil
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lathe_synth_dedup as dd  # noqa: E402
import lathe_synth_extract as ex  # noqa: E402
import lathe_synth_family as fam  # noqa: E402
import lathe_synth_guess as guess  # noqa: E402
import lathe_synth_trial as trial  # noqa: E402  (the batch line both sides write; no torch here)

LICENSE = re.compile(r"(SPDX-License-Identifier|[Ll]icen[sc]e|Copyright)")
HEADER_LINES = 30
SKIP_DIRS = {".git", "__pycache__", ".hg", ".svn"}
# Refusals a trial may lift: values and shapes the source does not declare (lathe_synth_guess.py).
# What a candidate that ran may fail (lathe_synth_trial.py): each a refusal's kind.
FILTERS = ("nondeterministic", "not finite", "constant", "too many tensors", "returns its input")
# A kept module's measured bytes (lathe_synth_trial.py): forward's tensors, the state_dict, outputs.
COST_BYTES = ("inputs", "parameters", "outputs")
TRIABLE = {"constructor argument without default", "forward argument undetermined",
           "constructor not read"}
# What --out may hold: this script's own output (and the C++ side's trial files).
OUTPUT_NAMES = {"problems", "extracted", "manifest.json", "trials", "plan.json", "trials.json"}


def walk(root, max_bytes, report):
    """(relative path, text, package) of every *.py beneath root; links are not followed."""
    if os.path.isfile(root):
        yield from read_one(os.path.dirname(root), os.path.basename(root), None, max_bytes, report,
                            os.path.basename(root), outer_package(os.path.dirname(root)))
        return
    packages = {}
    for d, dirs, files, dfd in os.fwalk(root, follow_symlinks=False):
        rel_dir = os.path.relpath(d, root)
        for name in list(dirs) + list(files):
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                report["links"].append(os.path.normpath(os.path.join(rel_dir, name)))
                if name in dirs:
                    dirs.remove(name)
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
        # The dotted package of each folder, from the __init__.py files listed (never opened).
        if rel_dir == ".":
            packages["."] = outer_package(root) if "__init__.py" in files else None
        else:
            base = packages.get(os.path.dirname(rel_dir) or ".")
            here = os.path.basename(d)
            packages[rel_dir] = ((f"{base}.{here}" if base else here) if "__init__.py" in files else None)
        for name in sorted(files):
            if name.endswith(".py") and os.path.normpath(os.path.join(rel_dir, name)) not in report["links"]:
                yield from read_one(d, name, dfd, max_bytes, report,
                                    os.path.normpath(os.path.join(rel_dir, name)), packages[rel_dir])


def outer_package(d):
    """The dotted package of directory d from the __init__.py files above it (an installed
    torch/nn is torch.nn), or None."""
    names = []
    d = os.path.abspath(d)
    while os.path.isfile(os.path.join(d, "__init__.py")) and not os.path.islink(os.path.join(d, "__init__.py")):
        names.insert(0, os.path.basename(d))
        d = os.path.dirname(d)
    return ".".join(names) or None


def read_one(d, name, dfd, max_bytes, report, rel, package):
    try:
        fd = os.open(name if dfd is not None else os.path.join(d, name),
                     os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except OSError as e:
        report["unreadable"].append({"file": rel, "reason": f"not opened without following links: {e.strerror}"})
        return
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            report["unreadable"].append({"file": rel, "reason": "not a regular file"})
            return
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        report["unreadable"].append({"file": rel, "reason": f"larger than {max_bytes} bytes"})
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        report["unreadable"].append({"file": rel, "reason": "not UTF-8"})
        return
    report["read"] += 1
    yield rel, text, package


def license_line(text):
    for line in text.splitlines()[:HEADER_LINES]:
        if LICENSE.search(line):
            return line.strip().lstrip("#").strip()[:200]
    return None


def slug(s):
    return re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_") or "x"


def batch_name(defined):
    """The name of a scalable problem's leading dimension, as KernelBench's problems name it."""
    return "batch_size" if "batch_size" not in defined else "lathe_batch_size"


def input_text(shape, draw, batch=None):
    """One of get_inputs' values (lathe_synth_guess.forward_inputs' draws); `batch` names the
    leading dimension where the trial may scale it."""
    if draw and "value" in draw:
        return repr(draw["value"])
    dims = ", ".join([batch or str(shape[0])] + [str(d) for d in shape[1:]])
    if not draw:
        return f"torch.randn({dims})"
    if draw.get("unit"):
        return f"torch.rand({dims})"
    return f"torch.randint(0, {draw['below']}, ({dims}{',' if len(shape) == 1 else ''}))"


def model_text(cls, init_names, kwargs):
    """KernelBench's Model: the class itself, or, where a candidate sets constructor arguments by
    keyword, a constructor taking the guessed values (get_init_inputs' order) and passing the
    keyword ones by name, so every value stays a number lathe's ABI carries."""
    if not kwargs:
        return f"\n\nclass Model({cls}):\n    pass\n"
    params = list(init_names) + list(kwargs)
    call = list(init_names) + [f"{k}={k}" for k in kwargs]
    return (f"\n\nclass Model({cls}):\n    def __init__(self, {', '.join(params)}):\n"
            f"        super().__init__({', '.join(call)})\n")


def problem_text(entry, source, defined, shapes, init=None, note=None, cand=None):
    head = [f"# lathe synth: {entry['class']} from {entry['tree']}/{entry['file']} line {entry['line']}"
            " (docs/synth.md). Parsed, inlined and written without being run."]
    if note:
        head.append(f"# {note}")
    if entry.get("license"):
        head.append(f"# license (the file's header): {entry['license']}")
    text = "\n".join(head) + "\n" + source
    if shapes is None:
        return text
    cand = cand or {}
    kwargs = cand.get("kwargs") or {}
    if entry["class"] != "Model" or kwargs:
        if "Model" in defined:
            raise ex.Refusal("name clash", "the file's own Model would clash with KernelBench's Model")
        text += model_text(entry["class"], cand.get("init_names", []), kwargs)
    draws = cand.get("draws") or [None] * len(shapes)
    batch = batch_name(defined) if cand.get("batch") else None
    args = ", ".join(input_text(s, d, batch) for s, d in zip(shapes, draws))
    init = list(init or []) + list(kwargs.values())
    init_line = (f"return {init!r}  # guessed, then tried" if init else
                 "return []  # the constructor's defaults")
    if batch:
        text += f"\n\n{trial.batch_line(batch, cand['batch'])}"
    text += (f"\n\ndef get_inputs():\n    return [{args}]\n\n\n"
             f"def get_init_inputs():\n    {init_line}\n")
    ast.parse(text)  # what lathe writes must parse; never run here
    return text


def installed_root(root):
    """The tree's own package name where the tree is that package as this interpreter installed
    it (Debian's /usr/lib/python3/dist-packages/torchvision), else None. With --own-package its
    imports are then allowed: the sandbox imports the same read-only files, and torchvision's
    modules use it for small helpers in other files (utils._log_api_usage_once,
    ops.misc.Conv2dNormActivation) that cross-file inlining would otherwise need. Off by default:
    a candidate that imports torchvision is killed by lathe's worker sandbox (its native
    libraries open a socket for a user lookup), so such a problem cannot be evaluated with its own
    Model as the candidate (docs/synth.md). Found with importlib's finder, which reads the path
    and never imports the package."""
    import importlib.util
    name = outer_package(root) if os.path.isdir(root) else None
    if not name or "." in name:
        return None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = spec and spec.origin and os.path.dirname(os.path.realpath(spec.origin))
    return name if origin == os.path.realpath(root) else None


def analyze(tree_name, rel, text, package, modules, limit, own=()):
    try:
        index = ex.FileIndex(text, package, own)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        return {"file": rel, "reason": f"does not parse: {type(e).__name__}: {str(e)[:200]}"}
    lic = license_line(text)
    for stmt in index.tree.body:
        if not isinstance(stmt, ast.ClassDef):
            continue
        chain, torch_base = index.module_bases(stmt)
        if not torch_base:
            continue
        entry = {"tree": tree_name, "file": rel, "class": stmt.name, "line": stmt.lineno,
                 "license": lic, "torch_base": torch_base}
        if ex.find_method(chain, "forward")[1] is None:
            entry.update(status="skipped", kind="no forward", reason="no forward in the class or its in-file bases")
            modules.append(entry)
            continue
        try:
            source, defined = index.standalone(stmt)
            entry["source"] = source
            entry["defined"] = defined
            entry["code_hash"] = dd.code_hash(source)
            entry["requires"] = [r for r in own if re.search(rf"^(from|import) {r}\b", source, re.M)]
            entry["shapes"] = ex.inputs(index, chain, torch_base)
            entry.update(status="kept")
        except ex.Refusal as r:
            entry.update(status="refused", kind=r.kind, reason=r.detail)
            if r.kind in TRIABLE and "source" in entry:
                add_candidates(entry, index, chain, stmt.name, limit,
                               r.kind == "constructor not read")
        except RecursionError:
            entry.update(status="refused", kind="too deep", reason="nesting too deep to analyze")
        modules.append(entry)
    return None


def add_candidates(entry, index, chain, name, limit, inherited=False):
    """entry["candidates"] for a trial, or entry["no_trial"] saying why none runs."""
    if limit <= 0:
        entry["no_trial"] = "--trials 0"
        return
    try:
        entry["candidates"] = guess.candidates(index, chain, name, limit, inherited)
    except ex.Refusal as g:
        entry["no_trial"] = g.detail
    except RecursionError:
        entry["no_trial"] = "nesting too deep to analyze"


def write(out, modules, trials):
    """Writes problems/ and extracted/; returns the plan of trials (lathe_synth_trial.py): the
    guessed candidates of modules whose inputs the source does not declare, and with trials on,
    each declared problem (one candidate: the filters run only in the sandbox)."""
    plan = []
    shutil.rmtree(os.path.join(out, "trials"), ignore_errors=True)
    for sub in ("problems", "extracted"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
        os.makedirs(os.path.join(out, sub))
    used = set()
    for m in modules:
        source, defined, shapes = m.pop("source", None), m.pop("defined", set()), m.pop("shapes", None)
        cands, why = m.pop("candidates", None), m.pop("no_trial", None)
        if why:
            m["reason"] += f"; no trial ran: {why}"
        if source is None:
            continue
        name = slug(f"{m['tree']}__{m['file'][:-3]}__{m['class']}")
        k = 1
        while name in used:
            k += 1
            name = slug(f"{m['tree']}__{m['file'][:-3]}__{m['class']}") + f"_{k}"
        used.add(name)
        write_file(os.path.join(out, "extracted", name + ".py"), problem_text(m, source, defined, None))
        m["extracted"] = f"extracted/{name}.py"
        if cands:
            plan_trials(out, m, name, guessed_texts(m, source, defined, cands), plan)
        if m["status"] != "kept":
            continue
        try:
            text = problem_text(m, source, defined, shapes)
            write_file(os.path.join(out, "problems", name + ".py"), text)
            m["problem"] = f"problems/{name}.py"
            m["inputs"] = [{"shape": s, "dtype": "float32"} for s in shapes]
            m["init_inputs"] = []
            m["inputs_found"] = "declared"
        except (ex.Refusal, SyntaxError) as r:
            m.update(status="refused", kind=getattr(r, "kind", "internal"), reason=getattr(r, "detail", str(r)))
            continue
        if trials > 0:
            plan_trials(out, m, name, [{"text": text, "shapes": shapes, "init": []}], plan)
        else:
            m["filters"] = "not run (--trials 0)"
    return plan


def guessed_texts(m, source, defined, cands):
    """One problem file per guessed candidate, or None (the module's reason says why)."""
    texts = []
    try:
        for k, c in enumerate(cands):
            note = (f"inputs guessed, candidate {k + 1} of {len(cands)}: tried in lathe's sandbox "
                    "and kept because it loads, runs forward and passes the filters")
            texts.append({"text": problem_text(m, source, defined, c["shapes"], c["init"], note, c),
                          "shapes": c["shapes"], "init": c["init"] + list(c["kwargs"].values()),
                          "draws": c["draws"], "kwargs": c["kwargs"],
                          "batch": {"name": batch_name(defined), "value": c["batch"]}
                          if c.get("batch") else None})
    except (ex.Refusal, SyntaxError) as r:
        m["reason"] += f"; no trial ran: {getattr(r, 'detail', str(r))}"
        return None
    return texts


def plan_trials(out, m, name, texts, plan):
    """The candidates into the plan and trials/<name>/ (to read); the module's trial pending."""
    if not texts:
        return
    plan_id = len(plan)
    folder = os.path.join(out, "trials", name)
    os.makedirs(folder)
    for k, c in enumerate(texts):
        write_file(os.path.join(folder, f"candidate_{k + 1}.py"), c["text"])
    m["trial"] = {"id": plan_id, "candidates": len(texts), "status": "pending"}
    plan.append({"id": plan_id, "name": name, "class": m["class"], "candidates": texts})


def write_file(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def summarize(modules, reports, seconds, trial_seconds=0.0):
    found = [m for m in modules if m["status"] != "skipped"]
    refused = {}
    for m in found:
        if m["status"] == "refused":
            r = refused.setdefault(m["kind"], {"count": 0, "example": m["reason"]})
            r["count"] += 1
    kept = [m for m in found if m["status"] == "kept"]
    tried = [m["trial"] for m in found if "trial" in m]
    return {"files_read": sum(r["read"] for r in reports),
            "links_not_followed": sum(len(r["links"]) for r in reports),
            "files_refused": sum(len(r["unreadable"]) + len(r["unparsed"]) for r in reports),
            "without_forward": len(modules) - len(found), "found": len(found),
            "extracted": sum(1 for m in found if "extracted" in m),
            "kept": len(kept),
            "kept_declared": sum(1 for m in kept if m.get("inputs_found") == "declared"),
            "kept_by_trial": sum(1 for m in kept if m.get("inputs_found", "").startswith("trial")),
            "refused": sum(1 for m in found if m["status"] == "refused"),
            "duplicates": sum(1 for m in found if m["status"] == "duplicate"),
            "families": {f: n for f in fam.FAMILIES
                         if (n := sum(1 for m in kept if m.get("family") == f))},
            "clusters": len({m["cluster"] for m in found if m.get("cluster")}),
            "refused_by_kind": dict(sorted(refused.items(), key=lambda kv: -kv[1]["count"])),
            "trials": {"modules": len(tried),
                       "candidates_tried": sum(t.get("tried", 0) for t in tried),
                       "pending": sum(1 for t in tried if t["status"] == "pending"),
                       "seconds": round(trial_seconds, 3)},
            "seconds": round(seconds + trial_seconds, 3),
            "filters": {"passed": sum(1 for m in found if m.get("filters") == "passed"),
                        "refused": {k: sum(1 for m in found if m.get("kind") == k) for k in FILTERS}},
            "sized": sum(1 for m in kept if "sizes" in m),
            "not_done": ["inputs from where the tree builds and calls a module"]}


def strings(v, cap=200):
    """A list of short strings from the sandbox's reply (anything else: empty)."""
    return [str(s)[:80] for s in v[:cap] if isinstance(s, str)] if isinstance(v, list) else []


def input_specs(c):
    """The manifest's inputs of a kept candidate: shape and dtype (int64 for drawn indices, with
    the bound they are drawn below; a number's value)."""
    specs = []
    for s, d in zip(c["shapes"], c.get("draws") or [None] * len(c["shapes"])):
        if d and "value" in d:
            specs.append({"value": d["value"]})
        elif d and d.get("unit"):
            specs.append({"shape": s, "dtype": "float32", "range": [0, 1]})
        else:
            specs.append({"shape": s, "dtype": "float32"} if not d else
                         {"shape": s, "dtype": "int64", "below": d["below"]})
    return specs


def scaled(c, sizes, m):
    """The kept candidate at the batch its trial chose for the target forward time (the record's
    `sizes`, into the manifest), or as planned where none was chosen."""
    b = c.get("batch")
    if not isinstance(sizes, dict) or not b:
        return c
    chosen = sizes.get("batch")
    if type(chosen) is not int or not 1 <= chosen <= trial.MAX_BATCH:
        return c
    text = trial.with_batch(c["text"], b["name"], b["value"], chosen)
    if text is None:
        return c
    m["sizes"] = {"batch": chosen, "planned": b["value"], "target_ms": sizes.get("target_ms"),
                  "forward_ms": sizes.get("forward_ms"), "tried": sizes.get("tried")}
    shapes = [[chosen] + list(s[1:]) if s else s for s in c["shapes"]]
    return {**c, "text": text, "shapes": shapes}


def apply_one(out, m, p, r, why_none):
    """One module's trial result: its problem kept (the first candidate that ran and passed the
    filters) or refused with the reason; a declared problem kept or refused by its filters."""
    t = m["trial"]
    n = len(p["candidates"]) if p else 0
    kept = r.get("kept") if r else None
    t["tried"] = int(r.get("tried", 0)) if r else 0
    declared = m.get("inputs_found") == "declared"
    if p and isinstance(kept, int) and not isinstance(kept, bool) and 0 <= kept < n:
        rec = r.get("record") if isinstance(r.get("record"), dict) else {}
        m.update(ops=strings(rec.get("ops")), layers=strings(rec.get("layers")), filters="passed")
        cost = rec.get("cost") if isinstance(rec.get("cost"), dict) else {}
        b = cost.get("bytes") if isinstance(cost.get("bytes"), dict) else {}
        if isinstance(cost.get("flops"), int) and all(isinstance(b.get(k), int) for k in COST_BYTES):
            m["flops"] = cost["flops"]
            m["bytes"] = {k: b[k] for k in COST_BYTES}
        if isinstance(rec.get("fingerprint"), dict):
            m["fingerprint"] = rec["fingerprint"]  # for the dedup; not written to the manifest
        t["status"] = "kept"
        if declared:
            return
        c = scaled(p["candidates"][kept], rec.get("sizes"), m)
        write_file(os.path.join(out, "problems", p["name"] + ".py"), c["text"])
        m.update(status="kept", problem=f"problems/{p['name']}.py", inputs_found=f"trial {kept + 1} of {n}",
                 inputs=input_specs(c), init_inputs=c["init"], refused_before=m.pop("reason"))
        if c.get("kwargs"):
            m["init_keywords"] = list(c["kwargs"])
        m.pop("kind", None)
        return
    errors = (r or {}).get("errors") or []
    rejected = (r or {}).get("filter")
    if r is None or t["tried"] == 0 and not errors:
        t["status"] = "not run"
        why = f"no trial ran: {str(why_none)[:300]}"
        if declared:  # kept as before the filters, unchecked
            m["filters"] = why
        else:
            m["reason"] += f"; {why}"
        return
    t["status"] = "failed"
    if isinstance(rejected, dict) and rejected.get("kind") in FILTERS:
        kind, first = rejected["kind"], str(rejected.get("error"))[:300]
        detail = f"ran, failed the filter: {first}"
    else:
        kind, first = "trials failed", str(errors[0])[:300] if errors else "no candidate ran"
        detail = f"trials failed ({t['tried']} of {n} tried): {first}"
    if declared:
        os.unlink(os.path.join(out, m.pop("problem")))
        m.update(status="refused", reason=f"declared inputs; {detail}",
                 kind=kind if kind != "trials failed" else "does not run")
    else:
        m["reason"] += f"; {detail}"
        m["kind"] = kind


def apply_trials(out, results_path):
    """The trials' results (lathe synth's C++ side, trials.json) applied to the manifest (the
    first candidate that ran and passed the filters is the module's problem; the others keep
    their reason), then the dedup and the families."""
    with open(os.path.join(out, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    with open(os.path.join(out, "plan.json"), encoding="utf-8") as f:
        plan = {p["id"]: p for p in json.load(f)["modules"]}
    with open(results_path, encoding="utf-8") as f:
        results = json.load(f)
    by_id = {r.get("id"): r for r in results.get("modules", []) if isinstance(r, dict)}
    why_none = results.get("error") or "the sandbox gave no result for it"
    for m in manifest["modules"]:
        t = m.get("trial")
        if t and t["status"] == "pending":
            apply_one(out, m, plan.get(t["id"]), by_id.get(t["id"]), why_none)
    dd.dedup(out, manifest["modules"])
    for m in manifest["modules"]:
        m.pop("fingerprint", None)
        if "ops" in m:  # it ran in the sandbox: its family from what it ran
            m["family"] = fam.family(m["ops"], m.get("layers"))
    old = manifest["summary"]
    trial_seconds = float(results.get("seconds", 0.0))
    manifest["summary"] = summarize(manifest["modules"], manifest["sources"],
                                    old["seconds"] - old["trials"]["seconds"], trial_seconds)
    write_file(os.path.join(out, "manifest.json"), json.dumps(manifest, indent=1) + "\n")
    print(json.dumps(manifest["summary"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-file-bytes", type=int, default=1 << 20)
    ap.add_argument("--trials", type=int, default=8, help="candidates per module at most")
    ap.add_argument("--apply", help="trials.json: the trials' results, applied to --out")
    ap.add_argument("--own-package", action="store_true",
                    help="a tree that is an installed package may import itself (installed_root)")
    ap.add_argument("src", nargs="*")
    a = ap.parse_args()
    if a.apply:
        return apply_trials(os.path.realpath(a.out), a.apply)
    if not a.src:
        sys.exit("synth: name at least one source tree")
    if not ex.STDLIB:
        sys.exit("synth: needs Python 3.10 or later (sys.stdlib_module_names)")
    start = time.monotonic()
    out = os.path.realpath(a.out)
    modules, reports = [], []
    for src in a.src:
        root = os.path.realpath(src)  # the user's own path; links beneath it are not followed
        if not os.path.exists(root):
            sys.exit(f"synth: {src}: no such file or directory")
        if out == root or out.startswith(root.rstrip("/") + "/"):
            sys.exit(f"synth: --out {a.out} lies inside {src}: write the problems elsewhere")
        # A tree's name is its folder's; a single file's, the folder holding it.
        top = os.path.dirname(root) if os.path.isfile(root) else root
        tree_name = os.path.basename(top.rstrip("/")) or "root"
        own = tuple(filter(None, [installed_root(root)])) if a.own_package else ()
        report = {"tree": root, "read": 0, "links": [], "unreadable": [], "unparsed": [],
                  "imports_allowed": ["torch", "math", "the standard library", *own]}
        for rel, text, package in walk(root, a.max_file_bytes, report):
            bad = analyze(tree_name, rel, text, package, modules, a.trials, own)
            if bad:
                report["unparsed"].append(bad)
        reports.append(report)
    if os.path.exists(out) and set(os.listdir(out)) - OUTPUT_NAMES:
        sys.exit(f"synth: --out {a.out} holds other files: name an empty or new folder")
    os.makedirs(out, exist_ok=True)
    plan = write(out, modules, a.trials)
    for name in ("plan.json", "trials.json"):
        if os.path.lexists(os.path.join(out, name)):
            os.unlink(os.path.join(out, name))
    if plan:
        write_file(os.path.join(out, "plan.json"),
                   json.dumps({"schema": "lathe.synth_plan/1", "modules": plan}) + "\n")
    if not plan:  # else after the trials (apply_trials): the dedup by behaviour needs them
        dd.dedup(out, modules)
    summary = summarize(modules, reports, time.monotonic() - start)
    manifest = {"schema": "lathe.synth_manifest/1", "sources": reports, "modules": modules, "summary": summary}
    write_file(os.path.join(out, "manifest.json"), json.dumps(manifest, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
