"""A one-node Slurm cluster for a test (issue 46 item 3): scripts/slurm-local started in a folder
of its own on free ports, stopped at the end. A test that cannot start it exits 77 (ctest's skip)
and says why: no root, Slurm's packages missing, or the daemons' own reason."""
import os
import socket
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "slurm-local")
SKIP = 77  # SKIP_RETURN_CODE in tests/slurm/CMakeLists.txt


def free_port_pair():
    """A port p with p and p+1 free on 127.0.0.1 (slurmctld's and slurmd's)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        if p >= 65535:
            continue
        try:
            with socket.socket() as s2:
                s2.bind(("127.0.0.1", p + 1))
            return p
        except OSError:
            continue
    raise RuntimeError("no two free adjacent ports on 127.0.0.1")


class cluster:
    def __init__(self, folder):
        self.folder = folder
        self.env = dict(os.environ, LATHE_SLURM_PORT=str(free_port_pair()),
                        SLURM_CONF=os.path.join(folder, "slurm.conf"))

    def __enter__(self):
        if os.geteuid() != 0:
            print("SKIP: Slurm's slurmd must run as root, and this test is not root")
            sys.exit(SKIP)
        got = subprocess.run([SCRIPT, "start", self.folder], env=self.env, capture_output=True, text=True)
        if got.returncode != 0:
            print("SKIP: Slurm cannot start here: " + (got.stderr or got.stdout).strip())
            sys.exit(SKIP)
        print(got.stdout.strip())
        return self

    def __exit__(self, *exc):
        subprocess.run([SCRIPT, "stop", self.folder], env=self.env, capture_output=True)

    def run(self, *argv, check=True):
        got = subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=120)
        if check and got.returncode != 0:
            raise AssertionError(f"{' '.join(argv)}: exit {got.returncode}: {got.stderr}")
        return got.stdout.strip()

    def state(self, job):
        """The job's state as squeue reports it (finished jobs are kept: MinJobAge)."""
        return self.run("squeue", "-h", "--states=all", "-j", str(job), "-o", "%T", check=False)
