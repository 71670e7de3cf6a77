"""Futures whose waits run in simulated time, and ``wait``/``as_completed`` over them.

Why not ``concurrent.futures``' own waits: mpi4py's executors have a manager thread that
sends tasks and receives results while the program waits on a condition variable. Here
only the simulator's thread may call MPI (``threads``), so there is no manager thread:
tasks go out and results come in while the submitting rank waits on one of this
module's calls (``Future.result``/``exception``, ``wait``, ``as_completed``, and the
executors' ``map`` and ``shutdown``). Each of those *pumps* every live pool of the rank
(``_core.pump_all``) and sleeps in simulated time between pumps, so the workers run.
``concurrent.futures.wait`` on these futures would block the one thread, and the job.
"""

from __future__ import annotations

import concurrent.futures as _cf
from concurrent.futures import (
    ALL_COMPLETED,
    FIRST_COMPLETED,
    FIRST_EXCEPTION,
    BrokenExecutor,
    CancelledError,
    Executor,
    InvalidStateError,
    TimeoutError,  # noqa: A004 - mpi4py re-exports it under this name
)

from .. import context
from . import _core

__all__ = [
    "ALL_COMPLETED",
    "FIRST_COMPLETED",
    "FIRST_EXCEPTION",
    "BrokenExecutor",
    "CancelledError",
    "Executor",
    "Future",
    "InvalidStateError",
    "TimeoutError",
    "as_completed",
    "wait",
]

_PS_PER_S = 1_000_000_000_000


_IDLE_MAX_PS = 1_000_000_000
"""The longest a timed wait sleeps between polls with nothing happening (1 ms)."""


def wait_until(done, timeout, call: str) -> bool:
    """Pump and sleep in simulated time until ``done()``; False if ``timeout`` simulated
    seconds passed first (a zero timeout only looks). Without a timeout the rank sleeps
    until its PML has something, until a task runs in one of its threads (``_core.
    threads_working``: its end is no message); from then on it polls as a timed wait does:
    between fruitless polls it sleeps twice as long each time, up to ``_IDLE_MAX_PS``,
    as mpi4py's manager backs off."""
    ctx = context.current()
    if timeout is None:
        ctx.wait_for(lambda: _core.pump_all() or done() or _core.threads_working(), call)
        if done():
            return True
    deadline = None if timeout is None else ctx.sim.now + int(timeout * _PS_PER_S)
    idle = context.POLL_PS
    while not (_core.pump_all() or done()):
        left = _IDLE_MAX_PS if deadline is None else deadline - ctx.sim.now
        if left <= 0:
            return False
        idle = context.POLL_PS if ctx.poll(min(idle, left)) else min(2 * idle, _IDLE_MAX_PS)
    return True


class Future(_cf.Future):
    """A task's future (or one ``collect``/``compose`` made) whose waits drive the
    rank's pools (see the module docstring)."""

    def result(self, timeout=None):
        if not self.done() and not wait_until(self.done, timeout, "MPIPoolExecutor future"):
            raise TimeoutError
        return super().result(0)

    def exception(self, timeout=None):
        if not self.done() and not wait_until(self.done, timeout, "MPIPoolExecutor future"):
            raise TimeoutError
        return super().exception(0)


def wait(fs, timeout=None, return_when=ALL_COMPLETED):
    """``concurrent.futures.wait`` for any futures, waiting in simulated time (a future
    counts as done as ``concurrent.futures`` counts it: ``_finished``)."""
    fs = set(fs)

    def done():
        finished = [f for f in fs if _finished(f)]
        if return_when == FIRST_COMPLETED:
            return bool(finished)
        if return_when == FIRST_EXCEPTION and any(
            not f.cancelled() and f.exception(0) is not None for f in finished
        ):
            return True
        return len(finished) == len(fs)

    if fs:
        wait_until(done, timeout, "futures.wait")
    finished = {f for f in fs if _finished(f)}
    return _cf._base.DoneAndNotDoneFutures(finished, fs - finished)


def _finished(future) -> bool:
    """Done as ``concurrent.futures.wait`` counts it: finished, or cancelled and
    notified; a future cancelled but not yet notified (``CANCELLED``) is not done."""
    return future._state in (_cf._base.CANCELLED_AND_NOTIFIED, _cf._base.FINISHED)


def as_completed(fs, timeout=None):
    """Yield futures as they finish (ties in the order given), waiting in simulated time;
    ``TimeoutError`` naming how many are unfinished after ``timeout`` seconds in all."""
    pending = list(dict.fromkeys(fs))
    total = len(pending)
    ctx = context.current()
    deadline = None if timeout is None else ctx.sim.now + int(timeout * _PS_PER_S)
    while pending:
        left = None if deadline is None else max(0, deadline - ctx.sim.now) / _PS_PER_S
        done, _ = wait(pending, left, FIRST_COMPLETED)
        if not done:
            raise TimeoutError(f"{len(pending)} (of {total}) futures unfinished")
        for f in [f for f in pending if f in done]:
            pending.remove(f)
            yield f
