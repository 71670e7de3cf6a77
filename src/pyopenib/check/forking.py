"""Prefix sharing by ``fork``: the executions that deviate from one parent execution share
its run up to their deviating choice point, so that run is done once.

A search's children of an execution E (those that deviate once more, at a choice point j
after E's last deviation) are E's run up to j, then a different answer at j, then whatever
follows. Re-executing each child from the start repeats E's prefix every time: with the
deviations spread over the run, about 40 % of a child's work. ``PrefixForks`` runs E once
instead; at each planned choice point it ``fork()``s one process per planned option, the
child answers that option and runs to the end, and sends back what the search keeps of an
execution (outcome, trail, ...) through a pipe; the parent answers as E did and goes on.
The child's simulator, ranks, greenlets and oracle are the parent's at the fork, which are
those a fresh run of the child's script has at that point (the model is deterministic), so
its result is the one re-execution gives; a test compares both, execution by execution.

Results come back in plan order whatever ``jobs`` is (at most ``jobs`` processes compute at
once, the parent counted), and ``on_result`` sees each one in that order: a search that
stops at its first failure or at its time budget stops forking there, and children already
forked past that point are killed. The CPU time of the children is the process's
``RUSAGE_CHILDREN``; ``PrefixForks.costs`` says what each child cost (its own CPU and the
parent's fork call), which is how a search learns what a fork costs here
(``check/executions.py``).

Fork is only safe where this process is single-threaded: a child of a threaded process
holds copies of other threads' locks in whatever state they were. ``fork_unavailable``
says why fork cannot be used (no ``os.fork``, threads running — a Dask worker, a started
process pool); the searches then re-execute every child from the start.

The API another search can reuse (``check/untimed.py``'s depth-first search, say): build
``PrefixForks(plan, jobs, on_result)``, call ``forks.at(index)`` from the oracle at each
branching choice point before answering (``ForkingOracle`` does this for a
``SearchOracle``), and run the parent through ``run_forked(run, oracle, forks, keep)``,
which returns the children's results in plan order.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
import threading
import traceback
from collections import deque
from os import _exit  # the documented way out of a forked child: no cleanup, no atexit
from time import process_time

from .search import SearchOracle, run_steered

__all__ = ["ForkingOracle", "PrefixForks", "empty_fork_cost", "fork_unavailable", "run_forked"]


def fork_unavailable() -> str | None:
    """Why this process must not fork an execution, or None when it may."""
    if not hasattr(os, "fork"):
        return "this platform has no fork()"
    threads = threading.active_count()
    if threads > 1:
        return f"{threads} threads are running (a forked child would inherit their locks)"
    return None


def empty_fork_cost() -> float:
    """CPU seconds of forking a child that exits at once: the parent's fork call (it
    copies the page tables) and the child's start and exit. A forked execution costs
    that and more (the pages it copies as it runs)."""
    start = process_time()
    pid = os.fork()
    if pid == 0:
        _exit(0)
    forking = process_time() - start
    _, _, usage = os.wait4(pid, 0)
    return forking + usage.ru_utime + usage.ru_stime


class ChildLost(RuntimeError):
    """A forked execution ended without handing back its result."""


class PrefixForks:
    """The children one parent execution forks: ``plan`` lists (choice index, option) in
    the order the search wants their results (ascending choice index). ``jobs``: how
    many processes compute at once, the parent included. ``on_result(result) -> bool``
    sees each child's result in plan order; False stops the forking there (the results
    after it are not wanted)."""

    def __init__(self, plan, jobs: int = 1, on_result=None):
        self._options: dict[int, list[int]] = {}
        last = -1
        for index, option in plan:
            if index < last:
                raise ValueError(f"fork plan not in choice order: #{index} after #{last}")
            last = index
            self._options.setdefault(index, []).append(option)
        self.planned = len(plan)
        self.jobs = max(1, jobs)
        self.on_result = on_result
        self._answers: list[bytes] = []  # each child's pickled ("result", value)
        self.costs: list[float] = []
        """CPU seconds of each child collected, in plan order: its own, user and system
        (the pages it copies included), and the parent's fork call."""
        self.child: tuple[int, int] | None = None
        """In a forked child: the (choice index, option) it took; None in the parent."""
        self._running: deque[tuple[int, int, float]] = deque()
        """(pid, read end, CPU of the fork call), oldest first."""
        self._stopped = False
        self._error: BaseException | None = None
        self._out = -1
        self._held = None

    # -- in the parent, at a choice point -------------------------------------------------
    def at(self, index: int) -> int | None:
        """At branching choice point ``index``, before it is answered: the parent forks
        the children planned here and gets None (it answers as its own script says); a
        child gets the option it must answer."""
        options = self._options.pop(index, None)
        if options is None or self._stopped:
            return None
        for option in options:
            while len(self._running) >= self.jobs and not self._stopped:
                self._collect_oldest()
            if self._stopped:
                break
            read, write = os.pipe()
            # The collector never walks what exists now, in either process: a full
            # collection touches every object, and each page it touches is then copied
            # (the parent's next collection would copy its whole heap once per child).
            gc.freeze()
            start = process_time()
            pid = os.fork()
            if pid == 0:
                os.close(read)
                self._become_child(write, index, option)
                return option
            os.close(write)
            self._running.append((pid, read, process_time() - start))
        while len(self._running) > self.jobs - 1 and not self._stopped:
            self._collect_oldest()  # the parent computes again: one process fewer
        return None

    def _collect_oldest(self) -> None:
        pid, read, forking = self._running.popleft()
        chunks = []
        while chunk := os.read(read, 1 << 16):
            chunks.append(chunk)
        os.close(read)
        _, status, usage = os.wait4(pid, 0)
        data = b"".join(chunks)
        try:
            kind, value = pickle.loads(data)
        except Exception:  # noqa: BLE001 - any undecodable answer is a lost child
            code = os.waitstatus_to_exitcode(status)
            kind, value = "error", ChildLost(f"a forked execution died (exit status {code})")
        if kind == "error":
            self._error = value
            self._stop()
            return
        # kept as the child's bytes until the parent's run is over: thousands of live
        # objects spread over the parent's heap would make every later child copy the
        # pages its own allocations land in (2 to 8 times the faults of a child)
        self._answers.append(data)
        self.costs.append(usage.ru_utime + usage.ru_stime + forking)
        if self.on_result is not None and not self.on_result(value):
            self._stop()

    def _stop(self) -> None:
        """No more children: kill the ones running past this point (their results are
        not wanted) and reap them."""
        self._stopped = True
        self._options.clear()
        gc.unfreeze()
        while self._running:
            pid, read, _ = self._running.pop()
            os.kill(pid, signal.SIGKILL)
            os.close(read)
            os.waitpid(pid, 0)

    def collect(self) -> list:
        """After the parent's run: every child's result in plan order (fewer when
        ``on_result`` stopped the forking); a child's exception is raised here."""
        while self._running and not self._stopped:
            self._collect_oldest()
        gc.unfreeze()  # the parent's run is over: its garbage is collectable again
        if self._error is not None:
            raise self._error
        if not self._stopped and self._options:
            missing = min(self._options)
            raise RuntimeError(
                f"the parent execution never reached choice point #{missing}, which its "
                "first run met: the model is not deterministic"
            )
        return [pickle.loads(data)[1] for data in self._answers]

    def abandon(self) -> None:
        """The parent's run raised (Ctrl-C, a bug): end every child now."""
        self._stop()

    # -- in a child ------------------------------------------------------------------------
    def _become_child(self, write: int, index: int, option: int) -> None:
        # Ctrl-C is the parent's: it kills the children; a child never runs the parent's
        # handlers.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        # The child ends with _exit. Freeing the simulation on the way there (as the
        # run returns) would write to every page of it, each a copy: held from here, the
        # callers' frames keep it alive until the end (a copy per page it *uses* only).
        self._held = sys._getframe()
        for _, read, _ in self._running:  # the siblings' pipes are the parent's
            os.close(read)
        self._running.clear()
        self._options.clear()
        self._answers = []
        self.child = (index, option)
        self._out = write

    def deliver(self, kind: str, value) -> None:
        """In a child: hand ``value`` back and end the process (no parent code below the
        fork point may run in it: no ``finally`` of the search, no atexit)."""
        try:
            try:
                data = pickle.dumps((kind, value))
            except Exception:  # noqa: BLE001 - say what could not be sent instead
                data = pickle.dumps(("error", ChildLost(f"unpicklable result: {value!r}")))
            view = memoryview(data)
            while view:
                view = view[os.write(self._out, view) :]
        finally:
            _exit(0)


def run_forked(run, oracle, forks: PrefixForks, keep) -> list:
    """Run the parent execution ``run(oracle)`` with ``forks``: the children's
    ``keep(oracle, ok, outcome)`` in plan order. In a child this never returns."""
    try:
        ok, outcome = run_steered(run, oracle)
        if forks.child is not None:
            result = keep(oracle, ok, outcome)
    except BaseException as exc:
        if forks.child is None:
            forks.abandon()
            raise
        forks.deliver("error", _portable(exc))
    if forks.child is not None:
        forks.deliver("result", result)
    return forks.collect()


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a RuntimeError carrying its traceback."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001
        text = "".join(traceback.format_exception(exc))
        return RuntimeError(f"a forked execution raised:\n{text}")


class ForkingOracle(SearchOracle):
    """A ``SearchOracle`` that asks ``forks`` at each branching choice point: a child
    answers its planned option there (its script becomes the child execution's). The
    arguments are the children's: with ``leaf`` a child goes quiet after its option,
    the parent, which must meet every choice point it forks at, never."""

    def __init__(self, forks: PrefixForks, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.forks = forks
        self._quiet_at = -1

    def choose(self, label: str, n: int) -> int:
        if self._branches(label) and not self.quiet:
            index = len(self.trail)
            option = self.forks.at(index)
            if option is not None:
                head = self.script[:index]
                self.script = [*head, *[0] * (index - len(head)), option]
                if self.leaf:
                    self._quiet_at = index + 1
        return super().choose(label, n)
