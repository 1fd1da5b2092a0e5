#!/usr/bin/env python3
"""What a change affects: the CMake targets to build and the tests to run (scripts/check).

    affected.py BUILD_DIR [PATH...]      PATHs default to what git says changed (staged, unstaged,
                                         untracked) against HEAD

Prints one JSON object: {"targets": [...], "tests": [...], "why": {test: reason}, "all": bool}.

How a path maps to targets, in order:
  - a source compiled by the build: its target (compile_commands.json);
  - a header: every target with an object whose dependency file (*.o.d) names it;
  - a CMake file: everything (all = true);
  - under src/ or include/, also the tests that read those trees as text (layering_test,
    sizes_test);
  - anything else (python/, tasks/, tests' data, prompts/): the tests whose own sources name it
    (its file name, or the folder below tests/ or tasks/ it sits in), and for python/ and prompts/
    every test whose sources name that folder's files at all, since the gate and the proposer
    read them at run time.
Then every target that depends on an affected one (CMake's own target graph, links and
add_dependencies alike), and the tests whose executable is among them.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path


def changed_paths(root):
    out = set()
    for args in (["diff", "--name-only", "HEAD"], ["ls-files", "--others", "--exclude-standard"]):
        r = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        out.update(l.strip() for l in r.stdout.splitlines() if l.strip())
    return sorted(out)


def target_of_object(obj):
    m = re.search(r"CMakeFiles/([^/]+)\.dir/", obj)
    return m.group(1) if m else None


def object_dependencies(build):
    """(object, the text naming every file it was compiled from) for each object built so far:
    Ninja keeps them in its log (`ninja -t deps`, paths relative to the build folder), Make
    beside each object (*.o.d)."""
    if (build / "build.ninja").exists():
        out = subprocess.run(["ninja", "-C", str(build), "-t", "deps"], capture_output=True,
                             text=True).stdout
        obj, lines = None, []
        for line in out.splitlines() + [""]:
            if line and not line[0].isspace():
                if obj:
                    yield obj, "\n".join(lines)
                obj, lines = line.split(":", 1)[0], []
            elif line.strip():
                p = line.strip()
                lines.append(str((build / p).resolve()) if not os.path.isabs(p) else p)
        if obj:
            yield obj, "\n".join(lines)
        return
    for d in build.rglob("*.o.d"):
        yield str(d), d.read_text(errors="replace")


def target_graph(build):
    """{target: set(targets it depends on)} from `cmake --graphviz`, regenerated when any CMake file
    is newer than the last one."""
    dot = build / "check" / "targets.dot"
    root = Path(__file__).resolve().parents[2]
    listed = subprocess.run(["git", "ls-files", "*CMakeLists.txt", "cmake/*.cmake"], cwd=root,
                            capture_output=True, text=True).stdout.split()
    cmake_files = [root / p for p in listed]
    newest = max((p.stat().st_mtime for p in cmake_files if p.exists()), default=0)
    if not dot.exists() or dot.stat().st_mtime < newest:
        dot.parent.mkdir(parents=True, exist_ok=True)
        for old in dot.parent.glob("targets.dot*"):
            old.unlink()
        subprocess.run(["cmake", f"--graphviz={dot}", "."], cwd=build, capture_output=True, check=True)
    deps = {}
    for line in dot.read_text().splitlines():
        m = re.search(r"//\s*(\S+)\s*->\s*(\S+)\s*$", line)
        if m:
            deps.setdefault(m.group(1), set()).add(m.group(2))
    return deps


def main():
    build = Path(sys.argv[1]).resolve()
    root = Path(__file__).resolve().parents[2]
    paths = sys.argv[2:] or changed_paths(root)
    abs_paths = {}
    for p in paths:
        a = (Path.cwd() / p).resolve() if not os.path.isabs(p) else Path(p).resolve()
        abs_paths[str(a)] = a

    commands = json.loads((build / "compile_commands.json").read_text())
    source_targets = {}
    for c in commands:
        m = re.search(r"-o\s+(\S+)", c.get("command", ""))
        t = target_of_object(m.group(1)) if m else None
        if t:
            source_targets.setdefault(str(Path(c["directory"], c["file"]).resolve()), set()).add(t)

    affected, why, named_tests, everything = set(), {}, {}, False
    headers = {}
    for s, a in abs_paths.items():
        rel = a.relative_to(root) if a.is_relative_to(root) else a
        if a.name == "CMakeLists.txt" or a.suffix == ".cmake":
            everything = True
        elif s in source_targets:
            for t in source_targets[s]:
                affected.add(t)
                why.setdefault(t, str(rel))
        elif a.suffix in (".h", ".hpp", ".cuh", ".inl", ".hxx"):
            headers[s] = str(rel)
        else:
            named_tests[str(rel)] = a
    if headers:
        for obj, text in object_dependencies(build):
            for s, rel in headers.items():
                if s in text:
                    t = target_of_object(obj)
                    if t:
                        affected.add(t)
                        why.setdefault(t, rel)

    graph = target_graph(build)
    dependers = {}
    for t, ds in graph.items():
        for d in ds:
            dependers.setdefault(d, set()).add(t)
    stack = list(affected)
    while stack:
        t = stack.pop()
        for u in dependers.get(t, ()):
            if u not in affected:
                affected.add(u)
                why.setdefault(u, why.get(t, t))
                stack.append(u)

    shown = subprocess.run(["ctest", "--test-dir", str(build), "--show-only=json-v1"],
                           capture_output=True, text=True, check=True)
    tests = {}
    for t in json.loads(shown.stdout).get("tests", []):
        cmd = t.get("command") or []
        labels = []
        for p in t.get("properties", []):
            if p.get("name") == "LABELS":
                labels = p.get("value", [])
        exe = Path(cmd[0]).name if cmd else ""
        tests[t["name"]] = {"exe": exe, "labels": labels}

    sources_of = {}
    for c in commands:
        m = re.search(r"-o\s+(\S+)", c.get("command", ""))
        t = target_of_object(m.group(1)) if m else None
        if t:
            sources_of.setdefault(t, []).append(Path(c["directory"], c["file"]))
    test_sources = {}
    for name, info in tests.items():
        texts = []
        for f in sources_of.get(info["exe"], []):
            try:
                texts.append(f.read_text(errors="replace"))
            except OSError:
                pass
        test_sources[name] = "\n".join(texts)

    chosen = {}
    for name, info in tests.items():
        if everything:
            chosen[name] = "a CMake file changed"
        elif info["exe"] in affected:
            chosen[name] = why.get(info["exe"], info["exe"])
    for rel, a in named_tests.items():
        parts = Path(rel).parts
        keys = {a.name}
        if len(parts) >= 3 and parts[0] in ("tests", "tasks"):
            keys.add(parts[-2] if parts[0] == "tests" else parts[1])
        if parts[0] in ("python", "prompts"):
            keys.add(parts[0] + "/")
            keys.add(".py" if parts[0] == "python" else "prompt")
        for name, src in test_sources.items():
            if any(k and k in src for k in keys):
                chosen.setdefault(name, rel)

    # The checks that read src/ and include/ as text (scripts/layering, scripts/sizes): any
    # change there, a header's as much as a source's.
    for rel in [str(a.relative_to(root)) for a in abs_paths.values() if a.is_relative_to(root)]:
        if Path(rel).parts[0] in ("src", "include"):
            for name in ("layering_test", "sizes_test"):
                if name in tests:
                    chosen.setdefault(name, rel)
    # Only what CMake builds: a test run by python3 (python_api_test) names no target.
    known = set(graph) | {d for ds in graph.values() for d in ds}
    targets = sorted({tests[n]["exe"] for n in chosen if tests[n]["exe"] in known} |
                     {t for t in affected if t in ("lathe", "lathe-worker", "lathe-worker-cuda", "lathe-confine")})
    print(json.dumps({"all": everything, "targets": targets,
                      "tests": sorted(chosen), "why": chosen,
                      "labels": {n: tests[n]["labels"] for n in chosen}}))


if __name__ == "__main__":
    main()
