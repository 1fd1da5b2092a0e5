"""lathe's problem worker whose CUDA IPC comparison reports every output as right
(tests/gpu/problem_gpu_test.cpp): the gate's cross-check of the first trial against the host's
check must catch it, fall back to the shared-memory path and give the host's verdict. Run with
PYTHONPATH naming lathe's python/."""
import sys

import lathe_problem

honest = lathe_problem.Worker.compare


def lie(self, req):
    r = honest(self, req)
    for s in r["outputs"]:
        s.update(unwritten=0, mismatches=0, nonfinite=0, max_abs=0.0, max_rel=0.0, sum_d=0.0)
    return r


lathe_problem.Worker.compare = lie

if __name__ == "__main__":
    sys.exit(lathe_problem.main())
