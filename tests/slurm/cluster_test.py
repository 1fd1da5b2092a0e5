"""scripts/slurm-local (issue 46 item 3): the one-node cluster starts on this host, runs a step
(srun) and a batch job (sbatch), cancels a running job (what the executor's test kills), and its
stop leaves no daemon behind. Skipped, with why, where Slurm cannot start."""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slurm_cluster import cluster  # noqa: E402


def wait_state(c, job, want, seconds=60):
    deadline = time.time() + seconds
    state = ""
    while time.time() < deadline:
        state = c.state(job)
        if state in want:
            return state
        time.sleep(0.3)
    raise AssertionError(f"job {job}: state {state!r} after {seconds} s, expected one of {want}")


def main():
    with tempfile.TemporaryDirectory(prefix="lathe-slurm-") as d:
        folder = os.path.join(d, "cluster")
        with cluster(folder) as c:
            assert c.run("sinfo", "-h", "-o", "%T").split()[0] in ("idle", "mixed"), "the node is not idle"
            # A step runs on the node and returns its output.
            assert c.run("srun", "-n1", "sh", "-c", "echo step-ran-$((6*7))") == "step-ran-42"
            # A batch job writes its file and completes.
            out = os.path.join(d, "out.txt")
            job = c.run("sbatch", "--parsable", f"--output={out}", "--wrap", "echo batch-ran")
            assert wait_state(c, job, {"COMPLETED", "FAILED"}) == "COMPLETED"
            assert open(out).read().strip() == "batch-ran"
            # A running job cancelled: CANCELLED, as the executor's test will see it.
            job = c.run("sbatch", "--parsable", "--output=/dev/null", "--wrap", "sleep 60")
            wait_state(c, job, {"RUNNING"})
            c.run("scancel", job)
            assert wait_state(c, job, {"CANCELLED", "COMPLETED", "FAILED"}) == "CANCELLED"
            pids = {p: int(open(os.path.join(folder, p)).read())
                    for p in ("slurmctld.pid", "slurmd.pid", "munge/munged.pid")}
        for name, pid in pids.items():  # stopped: none of the three daemons is left
            try:  # gone, or a zombie where nothing reaps the daemons (some containers' init)
                state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
            except FileNotFoundError:
                continue
            assert state == "Z", f"{name}: process {pid} still alive after stop (state {state})"
    print("ok: cluster started, srun and sbatch ran, scancel cancelled, stop stopped")


if __name__ == "__main__":
    main()
