"""lathe from Python: each call runs the lathe binary with --json and returns its JSON document.

    import lathe

    doc = lathe.eval("softmax", "my_softmax.cpp", no_time=True)   # lathe.eval/1, as a dict
    doc = lathe.eval("softmax", "my_softmax.cpp", max_time=2)     # checked, then timed
    print(doc["outcome"], doc["paired"]["ratio"], doc["decision"])

    try:
        lathe.eval("tests/integration/tasks/axpy", "tests/integration/hostile/mutate_input.cpp")
    except lathe.LatheError as e:
        print(e.outcome, e.message)     # input_mutated  the kernel wrote into its inputs (...)

    lathe.bench("heldout", kernel="naive", check_only=True)        # lathe.bench/1
    lathe.optimize("softmax", budget={"steps": 3}, progress=True)  # lathe.optimize/1
    lathe.solve("level1", out="solved", budget={"steps": 2})      # lathe.solve/1
    lathe.doctor(no_measure=True)                                 # lathe.doctor/1

Keyword options are the verb's flags with dashes as underscores (``no_time=True`` is
``--no-time``, ``max_time=2`` is ``--max-time 2``); an unknown one raises TypeError listing the
verb's flags. ``workspace=`` is lathe's global ``--workspace``; ``lathe_bin=`` picks the binary
(default: $LATHE_BIN, else ``lathe`` on PATH); ``progress=True`` (or a callable) streams lathe's
stderr progress lines. Every failure lathe reports is a :class:`LatheError` (``outcome``,
``message``, ``exit_code``, ``document``). The guide: docs/python-api.md in lathe's source tree.
"""

from ._api import bench, doctor, eval, optimize, solve
from ._errors import LatheError

__version__ = "0.1.0"
__all__ = ["eval", "bench", "optimize", "solve", "doctor", "LatheError", "__version__"]
