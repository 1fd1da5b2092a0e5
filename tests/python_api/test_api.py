#!/usr/bin/env python3
"""The Python API (python/lathe, docs/python-api.md) against the real lathe binary.

Run: LATHE_BIN=build/lathe python3 tests/python_api/test_api.py   (CTest: python_api_test)

Two steps in one file. Outside (no argument): a temporary virtual environment
(`python3 -m venv --system-site-packages`) gets `pip install --no-index --no-build-isolation`
of a copy of python/ (offline, with the system's setuptools and wheel; a copy, so that the
build's build/ and lathe.egg-info never land in the source tree and two runs cannot race);
then this file runs again with the venv's interpreter, and the tests below import `lathe` from
there. Nothing is timed: evaluations are --no-time, doctor --no-measure, bench --check-only,
so the test may run beside others (`unit`); its builds use a lock directory of their own.
"""

import importlib.metadata
import importlib.util
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
AXPY = REPO / "tests/integration/tasks/axpy"
MUTATE = REPO / "tests/integration/hostile/mutate_input.cpp"
INSIDE = "LATHE_PYTHON_API_TEST_VENV"  # set (to the venv's path) for the second step

# An axpy kernel with `#pragma omp` built without -fopenmp: correct, and lathe warns on stderr.
OMP_KERNEL = """#include <lathe/abi.h>
extern "C" int lathe_launch(const lathe_args* a) {
  const float* x = (const float*)a->inputs[0].data; const float* y = (const float*)a->inputs[1].data;
  float* z = (float*)a->outputs[0].data; const long n = a->inputs[0].shape[0];
#pragma omp parallel for
  for (long i = 0; i < n; ++i) z[i] = a->scalars[0] * x[i] + y[i];
  return 0;
}
"""


def fake_lathe(directory: Path, name: str, body: str) -> str:
    """A stand-in for the binary (a Python script), for what the real one cannot be made to do
    on demand: a stderr and a stdout both larger than a pipe, a run interrupted midway."""
    path = directory / name
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie has ended
    except (FileNotFoundError, ProcessLookupError):
        return True


class python_api(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import lathe  # the venv's: sys.path holds this folder and the venv, not python/
        cls.lathe = lathe
        cls.tmp = Path(tempfile.mkdtemp(prefix="lathe-pyapi-"))
        cls.ws = cls.tmp / "ws"
        cls.ws.mkdir()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_installed_from_the_venv_and_only_the_package(self):
        self.assertTrue(Path(self.lathe.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()),
                        self.lathe.__file__)
        self.assertNotEqual(Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve())
        for worker in ("lathe_problem", "lathe_kernel", "lathe_ext", "lathe_ipc", "lathe_screen", "lathe_wire"):
            self.assertIsNone(importlib.util.find_spec(worker), worker)
        files = [str(f) for f in importlib.metadata.files("lathe")]
        self.assertTrue(all(f.startswith(("lathe/", "lathe-")) for f in files), files)
        self.assertIn("lathe/__init__.py", files)

    def test_ok_kernel_returns_the_eval_document(self):
        doc = self.lathe.eval(AXPY, "naive", no_time=True, seeds=3, workspace=self.ws)
        self.assertEqual(doc["schema"], "lathe.eval/1")
        self.assertEqual(doc["outcome"], "ok")
        self.assertEqual(doc["task"], "axpy")
        self.assertTrue(doc["checks"] and all(c["passed"] for c in doc["checks"]))
        self.assertIsNone(doc["paired"])  # not timed
        self.assertGreater(doc["id"], 0)  # stored in the workspace given
        self.assertTrue((self.ws / ".lathe").is_dir())

    def test_failing_kernel_raises_with_its_outcome(self):
        with self.assertRaises(self.lathe.LatheError) as cm:
            self.lathe.eval(str(AXPY), str(MUTATE), no_time=True, workspace=self.ws)
        e = cm.exception
        self.assertEqual(e.outcome, "input_mutated")
        self.assertEqual(e.exit_code, 1)
        self.assertIn("wrote into its inputs", e.message)
        self.assertEqual(e.document["schema"], "lathe.eval/1")
        self.assertEqual(e.document["message"], e.message)
        self.assertIn("input_mutated", str(e))
        self.assertIn("--no-time", e.argv)

    def test_failing_kernel_returned_without_raise_on_failure(self):
        doc = self.lathe.eval(AXPY, MUTATE, no_time=True, workspace=self.ws, raise_on_failure=False)
        self.assertEqual(doc["outcome"], "input_mutated")

    def test_usage_error_raises_with_exit_code_2(self):
        with self.assertRaises(self.lathe.LatheError) as cm:
            self.lathe.eval("no_such_task_anywhere", "naive", workspace=self.ws)
        self.assertEqual(cm.exception.exit_code, 2)
        self.assertEqual(cm.exception.outcome, "usage")
        self.assertIn("no_such_task_anywhere", cm.exception.message)
        self.assertIsNone(cm.exception.document)
        with self.assertRaises(self.lathe.LatheError) as cm:
            self.lathe.optimize(None, workspace=self.ws)  # neither a task nor resume=
        self.assertEqual((cm.exception.outcome, cm.exception.exit_code), ("usage", 2))
        self.assertIn("needs a TASK", cm.exception.message)

    def test_unknown_keyword_raises_type_error_naming_the_flags(self):
        with self.assertRaises(TypeError) as cm:
            self.lathe.eval(AXPY, "naive", no_tme=True, workspace=self.ws)
        text = str(cm.exception)
        for name in ("no_tme", "no_time", "max_time", "seeds", "mode", "baseline", "workspace"):
            self.assertIn(name, text)
        with self.assertRaises(TypeError):
            self.lathe.doctor(json=True)  # the API passes --json itself
        with self.assertRaises(TypeError):
            self.lathe.eval(AXPY, "naive", no_time="yes")  # a switch takes True or False
        with self.assertRaises(TypeError):
            self.lathe.eval(AXPY, "naive", seeds=True)  # a value, not a switch
        with self.assertRaises(TypeError):
            self.lathe.optimize(None, "naive")

    def test_options_become_flags(self):
        from lathe import _cli
        binary = _cli.find_binary()
        flags = _cli.verb_flags(binary, ("decompose",))
        argv = _cli.options_to_argv("t", "decompose", flags, {"prior": ["a", "b"], "max_steps": 2,
                                                              "no_forward": True, "no_induce": False}, ())
        self.assertEqual(argv, ["--prior", "a", "--prior", "b", "--max-steps", "2", "--no-forward"])
        flags = _cli.verb_flags(binary, ("optimize",))
        argv = _cli.options_to_argv("t", "optimize", flags, {"budget": {"steps": 3, "time": "10m"},
                                                             "ablate": ["intent-only", "no-admission"],
                                                             "out": Path("/x/best"), "resume": None}, ())
        self.assertEqual(argv, ["--budget", "steps=3,time=10m", "--ablate", "intent-only,no-admission",
                                "--out", "/x/best"])
        eval_flags = _cli.verb_flags(binary, ("eval",))
        self.assertEqual(_cli.options_to_argv("t", "eval", eval_flags, {"max_time": 2, "mode": "kernelbench"}, ()),
                         ["--max-time", "2", "--mode", "kernelbench"])

    def test_missing_binary_says_how_to_point_at_one(self):
        with self.assertRaises(self.lathe.LatheError) as cm:
            self.lathe.eval(AXPY, "naive", lathe_bin=self.tmp / "nowhere" / "lathe")
        e = cm.exception
        self.assertEqual(e.outcome, "no_binary")
        self.assertIsNone(e.exit_code)
        for hint in ("does not exist", "lathe_bin=", "LATHE_BIN", "PATH"):
            self.assertIn(hint, e.message)
        saved = dict(os.environ)
        try:
            os.environ.pop("LATHE_BIN", None)
            os.environ["PATH"] = str(self.tmp / "empty-path")
            with self.assertRaises(self.lathe.LatheError) as cm:
                self.lathe.doctor()
            self.assertEqual(cm.exception.outcome, "no_binary")
            self.assertIn("not on PATH", cm.exception.message)
            self.assertIn("LATHE_BIN", cm.exception.message)
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def test_doctor_returns_its_document(self):
        doc = self.lathe.doctor(no_measure=True, workspace=self.ws)
        self.assertEqual(doc["schema"], "lathe.doctor/1")
        self.assertIn("compiler", doc)
        self.assertEqual(Path(doc["workspace"]).resolve(), (self.ws / ".lathe").resolve())

    def test_bench_check_only_returns_its_document(self):
        suite = self.tmp / "suite"
        shutil.copytree(AXPY, suite / "axpy")
        doc = self.lathe.bench(suite, kernel="naive", check_only=True, workspace=self.ws)
        self.assertEqual(doc["schema"], "lathe.bench/1")
        self.assertEqual(doc["aggregates"]["correct"], 1)
        self.assertEqual([t["status"] for t in doc["tasks"]], ["correct"])

    def test_solve_returns_its_document_with_a_failed_problem_as_its_row(self):
        # A problem that does not import: that problem's failure, not the call's (nothing timed).
        suite = self.tmp / "level1"
        suite.mkdir()
        shutil.copy(REPO / "tests" / "problems" / "kb_bad_init.py", suite / "1_Bad_Init.py")
        doc = self.lathe.solve(suite, out=self.tmp / "solved", proposer="rules", workspace=self.ws)
        self.assertEqual(doc["schema"], "lathe.solve/1")
        self.assertEqual([p["status"] for p in doc["problems"]], ["failed"])
        self.assertEqual(doc["aggregates"]["correct"], 0)
        self.assertTrue((self.tmp / "solved" / "eval_results.json").is_file())
        with self.assertRaises(self.lathe.LatheError) as e:
            self.lathe.solve(self.tmp / "nowhere", out=self.tmp / "solved", workspace=self.ws)
        self.assertEqual(e.exception.outcome, "usage")

    def test_stderr_lines_reach_progress_and_the_document_survives(self):
        kernel = self.tmp / "omp_axpy.cpp"
        kernel.write_text(OMP_KERNEL)
        lines, threads = [], set()

        def progress(line):
            lines.append(line)
            threads.add(threading.current_thread() is threading.main_thread())

        doc = self.lathe.eval(AXPY, kernel, no_time=True, workspace=self.ws, progress=progress)
        self.assertEqual(doc["outcome"], "ok")
        self.assertTrue(any("built without -fopenmp" in ln for ln in lines), lines)
        self.assertEqual(threads, {True})  # called on the caller's thread, as a notebook needs

    def test_large_stderr_and_stdout_together(self):
        binary = fake_lathe(self.tmp, "chatty", """
            import json, sys
            text = json.dumps({"schema": "lathe.eval/1", "outcome": "ok", "message": "", "pad": "x" * 300000})
            n = 4000
            step = len(text) // n + 1
            for i in range(n):  # both pipes well past their 64 KiB, interleaved
                print(f"progress {i} " + "." * 40, file=sys.stderr, flush=True)
                sys.stdout.write(text[i * step:(i + 1) * step]); sys.stdout.flush()
            """)
        seen = []
        doc = self.lathe.eval("t", "k", lathe_bin=binary, progress=seen.append)
        self.assertEqual(len(doc["pad"]), 300000)
        self.assertEqual(len(seen), 4000)
        self.assertEqual(seen[-1], "progress 3999 " + "." * 40)

    def test_wrong_schema_is_bad_output(self):
        binary = fake_lathe(self.tmp, "future", """
            print('{"schema": "lathe.eval/2", "outcome": "ok"}')
            """)
        with self.assertRaises(self.lathe.LatheError) as cm:
            self.lathe.eval("t", "k", lathe_bin=binary)
        self.assertEqual(cm.exception.outcome, "bad_output")
        self.assertIn("lathe.eval/2", cm.exception.message)

    def test_keyboard_interrupt_ends_the_process_group(self):
        pids = self.tmp / "pids"
        binary = fake_lathe(self.tmp, "slow", f"""
            import os, subprocess, sys, time
            # a worker that ignores SIGINT and SIGTERM: only the group's SIGKILL ends it
            w = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                                  "signal.signal(signal.SIGINT, signal.SIG_IGN); "
                                  "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"])
            open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{w.pid}}")
            time.sleep(0.3)
            print("ready", file=sys.stderr, flush=True)
            time.sleep(120)
            """)
        main = threading.main_thread().ident

        def progress(line):
            if line == "ready":  # Ctrl-C while the call waits on lathe
                threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT)).start()

        start = time.monotonic()
        with self.assertRaises(KeyboardInterrupt):
            self.lathe.optimize("t", lathe_bin=binary, progress=progress)
        lathe_pid, worker_pid = map(int, pids.read_text().split())
        deadline = time.monotonic() + 10
        while not (gone(lathe_pid) and gone(worker_pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(gone(lathe_pid), "lathe left running")
        self.assertTrue(gone(worker_pid), "its worker left running")
        self.assertLess(time.monotonic() - start, 30)


def install_and_rerun() -> int:
    """The first step: a venv, the package installed offline, the tests run from the venv."""
    binary = os.environ.get("LATHE_BIN") or shutil.which("lathe")
    if not binary:
        print("test_api.py: set LATHE_BIN to the lathe binary (e.g. build/lathe)", file=sys.stderr)
        return 1
    tmp = Path(tempfile.mkdtemp(prefix="lathe-pyapi-venv-"))
    try:
        source = tmp / "python"
        source.mkdir()
        shutil.copy2(REPO / "python/pyproject.toml", source)
        shutil.copytree(REPO / "python/lathe", source / "lathe", ignore=shutil.ignore_patterns("__pycache__"))
        # The interpreter running this file first; Debian's own when that one cannot build a
        # wheel offline (setuptools before 70.1 needs the wheel package: python3-wheel).
        bases = []
        for c in (sys.executable, "/usr/bin/python3"):
            if os.path.exists(c) and os.path.realpath(c) not in [os.path.realpath(b) for b in bases]:
                bases.append(c)
        able = [b for b in bases if subprocess.run([b, "-c", "import ensurepip, venv, setuptools, wheel"],
                                                   capture_output=True).returncode == 0]
        failures = []
        for base in able or bases[:1]:
            venv = tmp / f"venv{len(failures)}"
            steps = [[base, "-m", "venv", "--system-site-packages", str(venv)],
                     [str(venv / "bin/python"), "-m", "pip", "install", "--no-index", "--no-build-isolation",
                      "--disable-pip-version-check", "--quiet", str(source)]]
            for cmd in steps:
                done = subprocess.run(cmd, capture_output=True, text=True)
                if done.returncode != 0:
                    failures.append(f"$ {' '.join(cmd)}\n{done.stdout}{done.stderr}")
                    break
            else:
                env = dict(os.environ, LATHE_BIN=os.path.abspath(binary), **{INSIDE: str(venv)})
                # Builds take the CPU lock shared: a lock directory of our own, so timed tests
                # elsewhere do not hold these untimed checks up (as the other unit tests do).
                env.setdefault("LATHE_LOCK_DIR", str(tmp / "locks"))
                env.pop("PYTHONPATH", None)
                return subprocess.run([str(venv / "bin/python"), "-B", __file__, *sys.argv[1:]],
                                      env=env, cwd=tmp).returncode
        print("test_api.py: the offline install failed (Debian 12: python3-venv, python3-wheel; "
              "scripts/install-deps)\n" + "\n".join(failures), file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if os.environ.get(INSIDE):
        unittest.main()
    else:
        sys.exit(install_and_rerun())
