"""A user's mpi4py program as an explorer's ``run(oracle) -> (ok, outcome)``.

Each execution is a fresh job through the runner ``pyopenib run`` uses (``run_job``): the
program unmodified, N ranks, the openib BTL on the modelled devices with the settings
resolved once in the ``check`` process, and the simulator's choice points answered by
the explorer's oracle. The BTL's invariants, credit conservation between the ranks
included, are checked at every ``progress()`` call (``ConservationChecked``). The
ranks' output is captured per execution (an exploration of a thousand executions does
not print a thousand times); the counterexample's replay shows it.

An execution fails when the job does not exit 0: a rank raised (a broken BTL invariant
raises in the rank that polled), MPI_Abort, a transport failure (TERMINATE, RNR
retries exhausted), a deadlock (every rank blocked, nothing pending) or the simulated
time limit.
"""

from __future__ import annotations

import io

from ..btl import build_job_btls, stall_report
from ..config.mca import load_mca
from ..mpi.runner import run_job
from ..sim import Simulator
from .scenario_runs import Outcome

__all__ = ["ConservationChecked", "ProgramRun"]

SIMULATED_LIMIT_S = 60.0
"""An execution still running after 60 simulated seconds fails as a livelock (a polling
loop that never blocks is not a deadlock the runner can see)."""


class ProgramRun:
    """``run(oracle)`` for one job of ``path`` on ``nprocs`` ranks; a plain picklable
    object (worker processes and Dask receive it)."""

    def __init__(
        self,
        path: str,
        nprocs: int,
        devices,
        mca_pairs,
        args=(),
        timeout: float = SIMULATED_LIMIT_S,
    ):
        self.path = path
        self.nprocs = nprocs
        self.devices = list(devices)
        self.mca_pairs = list(mca_pairs)
        self.args = tuple(args)
        self.timeout = timeout

    def __call__(self, oracle) -> tuple[bool, str]:
        out = self.execute(oracle)
        return out.ok, out.text

    def execute(self, oracle, trace=None) -> Outcome:
        """One job under ``oracle`` (``trace``: a Tracer that keeps its events)."""
        btls: list = []
        # the settings resolved in the check process, as --mca pairs: no environment here
        mca = load_mca(cli_pairs=self.mca_pairs)
        devices = self.devices

        def make_btls(sim, nprocs):
            btls.extend(build_job_btls(sim, nprocs, devices, mca=mca, check_invariants=True))
            return [ConservationChecked(btl, btls) for btl in btls]

        out, err = io.StringIO(), io.StringIO()
        sim = Simulator(oracle=oracle, tracer=trace)
        result = run_job(
            self.path,
            self.nprocs,
            make_btls,
            self.args,
            sim=sim,
            timeout=self.timeout,
            stdout=out,
            stderr=err,
        )
        output = out.getvalue() + err.getvalue()
        at = f"at {result.sim_time_ps / 1e6:.3f} us"
        if result.exit_code == 0:
            return Outcome(True, f"exit 0 {at}", output=output, modules=btls)
        text = _summary(result, err.getvalue(), btls)
        stall = []
        if result.reason == "deadlock":
            # where each rank waits (the runner's report), then the BTL's share; the
            # clock stands at the simulated limit by then, so no time is claimed
            stall = [
                x.strip()
                for x in err.getvalue().splitlines()
                if x.lstrip().startswith(("rank ", "pending request"))
            ]
            stall += stall_report(btls)
            return Outcome(False, text, stall, output, btls)
        return Outcome(False, f"{text} {at}", stall, output, btls)


class ConservationChecked:
    """A rank's BTL module whose ``progress()`` also checks credit conservation between
    every pair of the job's modules (it needs both ends, so no module can check it
    alone); everything else is the module's own. A broken invariant raises in the rank
    that polled, and the job fails with it."""

    def __init__(self, btl, job_btls: list):
        self._btl = btl
        self._job = job_btls

    def progress(self) -> int:
        n = self._btl.progress()
        for a in self._job:
            for b in self._job:
                if a is not b:
                    a.assert_conservation(b)
        return n

    def __getattr__(self, name):
        return getattr(self._btl, name)


def _summary(result, err: str, btls) -> str:
    """The job's failure in one line: a transport failure from the failed module's
    ``TransportError`` (its ``detail`` field, what the hardware said), the rest from what
    ``pyopenib run`` would have printed."""
    lines = [x.strip() for x in err.splitlines() if x.strip()]
    if result.reason == "transport":
        failed = btls[result.rank].failed if result.rank is not None else None
        if failed is None:
            return f"transport failure on rank {result.rank}"
        return f"transport failure on rank {result.rank}: Detail: {failed.detail}"
    if result.reason == "deadlock":
        return "deadlock: every rank blocked, no event pending"
    if result.reason == "timeout":
        return f"still running after {SIMULATED_LIMIT_S:g} simulated seconds"
    if result.reason == "abort":
        return f"MPI_Abort on rank {result.rank} (errorcode {result.exit_code})"
    # a rank raised: the last line of its traceback (before mpirun's report) names it
    head = lines[: next((i for i, x in enumerate(lines) if x.startswith("-----")), len(lines))]
    tail = head[-1] if head else ""
    return f"rank {result.rank} exited with status {result.exit_code}: {tail}"
