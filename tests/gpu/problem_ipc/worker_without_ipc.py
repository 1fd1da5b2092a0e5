"""lathe's problem worker with CUDA IPC refused (tests/gpu/problem_gpu_test.cpp): the gate must
fall back to the shared-memory path with a note. Run with PYTHONPATH naming lathe's python/."""
import sys

import lathe_problem


def refuse(self, req):
    raise lathe_problem.ProblemError("CUDA IPC refused by the test's worker")


lathe_problem.Worker.attach = refuse

if __name__ == "__main__":
    sys.exit(lathe_problem.main())
