"""lathe synth SRC... --out DIR: KernelBench problems mined from PyTorch source trees.

    python3 -I -B lathe_synth.py --out DIR [--max-file-bytes N] SRC...

Run by `lathe synth` (src/cli/synth_cmd.cpp, docs/synth.md). The trees are untrusted: their files
are read beneath each SRC without following a link (a link is listed as not followed), regular
files only, each at most --max-file-bytes, and parsed with `ast`; nothing of them is imported or
run. Writes DIR/problems/*.py (KernelBench: Model, get_inputs, get_init_inputs) for the kept
modules, DIR/extracted/*.py (the standalone source) for every module whose extraction succeeded,
and DIR/manifest.json (lathe.synth_manifest/1); prints one JSON line, the summary.
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
import lathe_synth_extract as ex  # noqa: E402

LICENSE = re.compile(r"(SPDX-License-Identifier|[Ll]icen[sc]e|Copyright)")
HEADER_LINES = 30
SKIP_DIRS = {".git", "__pycache__", ".hg", ".svn"}


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


def problem_text(entry, source, defined, shapes):
    head = [f"# lathe synth: {entry['class']} from {entry['tree']}/{entry['file']} line {entry['line']}"
            " (docs/synth.md). Parsed, inlined and written without being run."]
    if entry.get("license"):
        head.append(f"# license (the file's header): {entry['license']}")
    text = "\n".join(head) + "\n" + source
    if shapes is None:
        return text
    if entry["class"] != "Model":
        if "Model" in defined:
            raise ex.Refusal("name clash", "the file's own Model would clash with KernelBench's Model")
        text += f"\n\nclass Model({entry['class']}):\n    pass\n"
    args = ", ".join(f"torch.randn({', '.join(str(d) for d in s)})" for s in shapes)
    text += (f"\n\ndef get_inputs():\n    return [{args}]\n\n\n"
             "def get_init_inputs():\n    return []  # the constructor's defaults\n")
    ast.parse(text)  # what lathe writes must parse; never run here
    return text


def analyze(tree_name, rel, text, package, modules):
    try:
        index = ex.FileIndex(text, package)
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
            entry["shapes"] = ex.inputs(index, chain, torch_base)
            entry.update(status="kept")
        except ex.Refusal as r:
            entry.update(status="refused", kind=r.kind, reason=r.detail)
        except RecursionError:
            entry.update(status="refused", kind="too deep", reason="nesting too deep to analyze")
        modules.append(entry)
    return None


def write(out, modules):
    for sub in ("problems", "extracted"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
        os.makedirs(os.path.join(out, sub))
    used = set()
    for m in modules:
        source, defined, shapes = m.pop("source", None), m.pop("defined", set()), m.pop("shapes", None)
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
        if m["status"] != "kept":
            continue
        try:
            write_file(os.path.join(out, "problems", name + ".py"), problem_text(m, source, defined, shapes))
            m["problem"] = f"problems/{name}.py"
            m["inputs"] = [{"shape": s, "dtype": "float32"} for s in shapes]
            m["init_inputs"] = []
        except (ex.Refusal, SyntaxError) as r:
            m.update(status="refused", kind=getattr(r, "kind", "internal"), reason=getattr(r, "detail", str(r)))


def write_file(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def summarize(modules, reports, seconds):
    found = [m for m in modules if m["status"] != "skipped"]
    refused = {}
    for m in found:
        if m["status"] == "refused":
            r = refused.setdefault(m["kind"], {"count": 0, "example": m["reason"]})
            r["count"] += 1
    return {"files_read": sum(r["read"] for r in reports),
            "links_not_followed": sum(len(r["links"]) for r in reports),
            "files_refused": sum(len(r["unreadable"]) + len(r["unparsed"]) for r in reports),
            "without_forward": len(modules) - len(found), "found": len(found),
            "extracted": sum(1 for m in found if "extracted" in m),
            "kept": sum(1 for m in found if m["status"] == "kept"),
            "refused": sum(1 for m in found if m["status"] == "refused"),
            "refused_by_kind": dict(sorted(refused.items(), key=lambda kv: -kv[1]["count"])),
            "seconds": round(seconds, 3),
            "not_done": ["inputs by trial", "filters", "dedup", "families"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-file-bytes", type=int, default=1 << 20)
    ap.add_argument("src", nargs="+")
    a = ap.parse_args()
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
        report = {"tree": root, "read": 0, "links": [], "unreadable": [], "unparsed": []}
        for rel, text, package in walk(root, a.max_file_bytes, report):
            bad = analyze(tree_name, rel, text, package, modules)
            if bad:
                report["unparsed"].append(bad)
        reports.append(report)
    if os.path.exists(out) and set(os.listdir(out)) - {"problems", "extracted", "manifest.json"}:
        sys.exit(f"synth: --out {a.out} holds other files: name an empty or new folder")
    os.makedirs(out, exist_ok=True)
    write(out, modules)
    summary = summarize(modules, reports, time.monotonic() - start)
    manifest = {"schema": "lathe.synth_manifest/1", "sources": reports, "modules": modules, "summary": summary}
    write_file(os.path.join(out, "manifest.json"), json.dumps(manifest, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
