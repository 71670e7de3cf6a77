"""The program every rank runs for ``benchmarks/mpi4py_suite.py``: one mpi4py test file's suite.

Usage (as an MPI program, under ``mpirun`` or ``pyopenib run``)::

    mpi4py_suite_driver.py TEST_FILE OUT_DIR

It imports the test file as an ordinary module (its directory first on ``sys.path``, as
``python test_x.py`` would have it), loads its tests with ``unittest``'s loader and runs them
with a result object that appends one JSON line per finished test to
``OUT_DIR/rank-<rank>.jsonl`` and flushes it. Writing as it goes is why this driver exists
rather than parsing ``-v`` output: the lines of concurrent ranks never interleave, and a rank
that crashes, deadlocks or is killed by the harness's timeout still leaves the results of the
tests it finished. A record is ``{"test": id, "outcome": ..., "detail": first line of the
reason}`` with outcome ``pass``, ``fail``, ``error``, ``skip``, ``xfail`` or ``xpass``; an
import failure of the test file is one ``error`` record for the test id ``<import>``; the last
line is ``{"done": true}`` when the suite ran to its end. The exit status is 0 whatever
the tests did.

It does what mpi4py's own ``test/main.py`` does before loading tests (``cupy`` and ``numba``
hidden, ``mpi4py.MPI`` imported first) and nothing else, so a test sees the environment it
sees under ``python test_x.py``. The file is the program's own work: each rank of a
``pyopenib run`` job executes it as its ``__main__``.
"""

import importlib
import json
import sys
import traceback
import unittest
from pathlib import Path

# Like mpi4py's test/main.py: GPU array backends stay out unless asked for.
sys.modules["cupy"] = None
sys.modules["numba"] = None

from mpi4py import MPI  # noqa: E402 - after the array backends are hidden, as main.py does


def _first_line(text: str) -> str:
    """The last non-empty line of a traceback: the exception and its message."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


class RecordingResult(unittest.TextTestResult):
    """A ``-v`` text result that also appends each test's outcome to a JSON-lines file."""

    def __init__(self, stream, descriptions, verbosity, *, sink):
        super().__init__(stream, descriptions, verbosity)
        self.sink = sink

    def record(self, test, outcome: str, detail: str = "") -> None:
        self.sink.write(json.dumps({"test": test.id(), "outcome": outcome, "detail": detail}))
        self.sink.write("\n")
        self.sink.flush()

    def addSuccess(self, test):  # noqa: N802 - unittest's names
        super().addSuccess(test)
        self.record(test, "pass")

    def addFailure(self, test, err):  # noqa: N802
        super().addFailure(test, err)
        self.record(test, "fail", _first_line(self.failures[-1][1]))

    def addError(self, test, err):  # noqa: N802
        super().addError(test, err)
        self.record(test, "error", _first_line(self.errors[-1][1]))

    def addSkip(self, test, reason):  # noqa: N802
        super().addSkip(test, reason)
        self.record(test, "skip", str(reason)[:300])

    def addExpectedFailure(self, test, err):  # noqa: N802
        super().addExpectedFailure(test, err)
        self.record(test, "xfail")

    def addUnexpectedSuccess(self, test):  # noqa: N802
        super().addUnexpectedSuccess(test)
        self.record(test, "xpass")

    def addSubTest(self, test, subtest, err):  # noqa: N802
        # A failing subtest fails its test (unittest then reports no success for it): the
        # record names the test, the detail names the subtest.
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            entry = (self.failures if failed else self.errors)[-1][1]
            params = subtest.id().removeprefix(test.id()).strip()
            detail = f"{params}: {_first_line(entry)}"
            self.record(test, "fail" if failed else "error", detail)


def main(test_file: str, out_dir: str) -> None:
    path = Path(test_file).resolve()
    rank = MPI.COMM_WORLD.Get_rank()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"rank-{rank}.jsonl", "w", encoding="utf-8") as sink:
        if str(path.parent) not in sys.path:
            sys.path.insert(0, str(path.parent))
        try:
            module = importlib.import_module(path.stem)
            suite = unittest.defaultTestLoader.loadTestsFromModule(module)
        except BaseException as exc:  # noqa: BLE001 - an import failure is the file's result
            detail = _first_line("".join(traceback.format_exception(exc)))
            sink.write(json.dumps({"test": "<import>", "outcome": "error", "detail": detail}))
            sink.write("\n")
            sink.flush()
            traceback.print_exception(exc)
            return
        runner = unittest.TextTestRunner(
            stream=sys.stderr,
            verbosity=2,
            resultclass=lambda stream, descriptions, verbosity: RecordingResult(
                stream, descriptions, verbosity, sink=sink
            ),
        )
        runner.run(suite)
        sink.write(json.dumps({"done": True}) + "\n")
        sink.flush()


# The exit status stays 0 whatever the tests did: the records are the result, and a rank
# exiting non-zero would end a pyopenib job before its peers have finished their tests.
if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
