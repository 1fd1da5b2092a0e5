"""lathe.LatheError: the one exception the API raises for anything lathe itself reported."""

from typing import Any, Dict, Optional


class LatheError(Exception):
    """A lathe command did not give the answer the call asked for.

    Attributes:
        outcome: what happened, as a short string. For ``lathe.eval`` it is the gate's outcome
            from the document (``wrong_result``, ``compile_error``, ``input_mutated``,
            ``unstable`` …, the list in docs/schemas.md). Otherwise one of:
            ``usage`` (exit code 2: bad usage or input, e.g. an unknown task),
            ``failed`` (exit code 1 from bench/optimize, or lathe killed by a signal),
            ``bad_output`` (stdout was not the versioned JSON document expected),
            ``no_binary`` (the lathe binary could not be found or started).
        message: one or a few lines saying what went wrong (the evaluation's ``message``, or
            what lathe wrote on stderr).
        exit_code: lathe's exit status (0 ok, 1 failure, 2 usage, 3 unstable; negative: killed
            by that signal, as in ``subprocess``); ``None`` when lathe never ran.
        document: the parsed JSON document when lathe printed one (``None`` otherwise), so a
            failing evaluation's ``checks`` and ``diagnostics`` are still at hand.
        stderr: what lathe wrote on stderr (its last lines, at most a few hundred).
        argv: the command line that was run.
    """

    def __init__(self, outcome: str, message: str, exit_code: Optional[int] = None,
                 document: Optional[Dict[str, Any]] = None, stderr: str = "",
                 argv: Optional[list] = None):
        super().__init__(outcome, message)
        self.outcome = outcome
        self.message = message
        self.exit_code = exit_code
        self.document = document
        self.stderr = stderr
        self.argv = list(argv or [])

    def __str__(self) -> str:
        return f"{self.outcome}: {self.message}"

    def __repr__(self) -> str:
        return (f"LatheError(outcome={self.outcome!r}, message={self.message!r}, "
                f"exit_code={self.exit_code!r})")
