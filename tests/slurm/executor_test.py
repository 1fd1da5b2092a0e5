"""`lathe bench --executor slurm` on a real one-node Slurm (issue 46 items 2-3): a small CPU suite
of checks-only evaluations (a hostile kernel that writes its input, two correct ones) goes out as
Slurm jobs. The first task's job is cancelled while it runs (scancel) and must be submitted again,
never counted as the kernel's failure; the submitter is killed (SIGKILL) while the second task's
job is queued or running and run again with the same arguments, which must adopt that job and
redo nothing finished; that second submitter takes Slurm from lathe.toml's [executor] instead of
--executor (a wrong [executor] is refused first, naming the file and the key). The verdicts must
equal the local executor's; an API key in the submitter's environment must reach no job. Skipped, with why, where Slurm cannot start."""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slurm_cluster import ROOT, cluster  # noqa: E402

LATHE = os.environ["LATHE_BIN"]
SECRET = "sk-planted-secret-46"


def make_suite(d):
    """axpy with a kernel that writes its input (input_mutated), mm and silu with their naive kernels (ok)."""
    suite, cands = os.path.join(d, "suite"), os.path.join(d, "cands")
    os.makedirs(cands)
    for src in ("tests/integration/tasks/axpy", "tests/integration/tasks/mm", "tasks/silu"):
        shutil.copytree(os.path.join(ROOT, src), os.path.join(suite, os.path.basename(src)))
    shutil.copy(os.path.join(ROOT, "tests/integration/hostile/mutate_input.cpp"), os.path.join(cands, "axpy.cpp"))
    shutil.copy(os.path.join(suite, "mm/kernels/naive.cpp"), os.path.join(cands, "mm.cpp"))
    shutil.copytree(os.path.join(suite, "silu/kernels/naive"), os.path.join(cands, "silu"))
    return suite, cands


def verdicts(stdout):
    return {t["task"]: (t["status"], t["outcome"]) for t in json.loads(stdout)["tasks"]}


def requests(ws):
    """The open ledger's request folders, each with the ids of the jobs it took."""
    out = {}
    for folder in glob.glob(os.path.join(ws, ".lathe/runs/slurm/*/*")):
        if ".done-" in folder:
            continue
        jobs = open(os.path.join(folder, "jobs")).read().split() if os.path.exists(os.path.join(folder, "jobs")) else []
        script = open(os.path.join(folder, "job.sh")).read() if os.path.exists(os.path.join(folder, "job.sh")) else ""
        if "'eval' '" not in script:
            continue  # being written
        task = script.split("'eval' '")[1].split("'")[0]
        out[os.path.basename(task)] = (folder, jobs)
    return out


def wait_for(what, predicate, seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"waited {seconds} s for {what}")


def main():
    with tempfile.TemporaryDirectory(prefix="lathe-slurm-exec-") as d:
        suite, cands = make_suite(d)
        args = ["bench", suite, "--candidates", cands, "--check-only", "--json"]
        local = subprocess.run([LATHE, "--workspace", os.path.join(d, "local"), *args],
                               capture_output=True, text=True, timeout=300)
        assert local.returncode == 0, local.stderr
        want = verdicts(local.stdout)
        assert want == {"axpy": ("failed", "input_mutated"), "mm": ("correct", "ok"),
                        "silu": ("correct", "ok")}, want
        with cluster(os.path.join(d, "cluster")) as c:
            ws = os.path.join(d, "ws")
            env = dict(c.env, OPENAI_API_KEY=SECRET)
            cmd = [LATHE, "--workspace", ws, *args, "--executor", "slurm", "--slurm-resubmits", "2"]
            first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

            def running(task):
                got = requests(ws).get(task)
                return got if got and got[1] and c.state(got[1][-1]) == "RUNNING" else None

            # The first task's job cancelled while it runs: Slurm's CANCELLED, submitted again.
            _, jobs = wait_for("axpy's job to run", lambda: running("axpy"))
            c.run("scancel", jobs[0])
            # The submitter killed while mm's job runs: the job goes on without it.
            _, mm_jobs = wait_for("mm's job to run", lambda: running("mm"))
            first.send_signal(signal.SIGKILL)
            first.communicate()
            mm_state_at_kill = c.state(mm_jobs[0])
            before = requests(ws)
            assert "silu" not in before, "silu was submitted before mm ended (--in-flight 1)"
            toml = os.path.join(ws, "lathe.toml")
            with open(toml, "w") as f:
                f.write('[executor]\nkind = "slurm"\nresubmit = 2\n')
            bad = subprocess.run([LATHE, "--workspace", ws, *args], env=env, capture_output=True, text=True, timeout=120)
            assert bad.returncode == 2 and f"{toml}: [executor] resubmit: unknown key" in bad.stderr, bad.stderr
            with open(toml, "w") as f:
                f.write('[executor]\nkind = "slurm"\nresubmits = 2\n')
            second = subprocess.run([LATHE, "--workspace", ws, *args], env=env, capture_output=True, text=True,
                                    timeout=300)
            assert second.returncode == 0, second.stderr
            got = verdicts(second.stdout)
            assert got == want, f"slurm executor {got} != local {want}"
            done = glob.glob(os.path.join(ws, ".lathe/runs/slurm/*.done-*/*"))
            ledger = {}
            for folder in done:
                task = os.path.basename(open(os.path.join(folder, "job.sh")).read().split("'eval' '")[1].split("'")[0])
                ledger[task] = open(os.path.join(folder, "jobs")).read().split()
            assert set(ledger) == {"axpy", "mm", "silu"}, f"the ledger was not closed with every request: {ledger}"
            assert len(ledger["axpy"]) == 2 and c.state(ledger["axpy"][0]) == "CANCELLED", \
                f"axpy's cancelled job was not submitted again: {ledger['axpy']}"
            assert ledger["mm"] == mm_jobs[:1], f"mm's job (state {mm_state_at_kill} at the kill) was redone: {ledger['mm']}"
            assert len(ledger["silu"]) == 1, ledger["silu"]
            # The resumed submitter submitted silu's job only: axpy's result and mm's job were there.
            submitted = [line for line in second.stderr.splitlines() if line.startswith("slurm: job")]
            assert len(submitted) == 1 and " silu " in submitted[0], second.stderr
            # No job saw the submitter's API key: not in its script, its output or lathe eval's.
            for f in glob.glob(os.path.join(ws, ".lathe/runs/slurm/*/*/*")):
                assert SECRET not in open(f, errors="replace").read(), f"{f} holds the planted key"
    print(f"ok: verdicts {got} equal the local executor's; axpy's cancelled job submitted again; "
          f"mm's job ({mm_state_at_kill} when the submitter was killed) adopted by the resumed submitter")


if __name__ == "__main__":
    main()
