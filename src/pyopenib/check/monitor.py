"""A time budget and a progress display around the executor an exploration maps over.

The explorers hand their frontier to ``workers.map`` in ordered batches and read every
result before asking for the next batch. ``Monitor`` is that executor with two duties
added between batches: stop with ``BudgetReached`` once ``--time-budget`` has passed
(the explorer has then judged every execution already returned, so the count and the
absence of failures so far are exact), and, when stderr is a terminal, a rich progress
bar with executions per second, the frontier done (when its size is known) and the
violations seen (redrawn at each count, by no thread of its own: a search that forks
its executions needs a single-threaded process).
"""

from __future__ import annotations

import sys
import time

__all__ = ["BudgetReached", "Monitor"]

REDRAW_S = 0.1
"""The progress bar is redrawn at most this often (results may come every millisecond)."""


class BudgetReached(Exception):  # noqa: N818 - a control-flow signal, like StopIteration
    """The time budget ran out between two batches; ``executions`` were run and judged."""

    def __init__(self, executions: int):
        super().__init__(executions)
        self.executions = executions


class Monitor:
    """``workers`` with a deadline and a progress bar; same ``jobs``/``dask``/``map``."""

    def __init__(
        self,
        workers,
        budget_s: float | None = None,
        total: int | None = None,
        show: bool | None = None,
    ):
        self.workers = workers
        self.jobs = workers.jobs
        self.dask = workers.dask
        self.deadline = None if budget_s is None else time.monotonic() + budget_s
        self.total = total
        self.executions = 0
        self.violations = 0
        self.show = sys.stderr.isatty() if show is None else show
        self._progress = None
        self._task = None

    def __enter__(self) -> Monitor:
        if self.show:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self._progress = Progress(
                TextColumn("exploring"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]:.1f} executions/s"),
                TextColumn("violations {task.fields[violations]}"),
                console=Console(stderr=True),
                transient=True,
                auto_refresh=False,  # no refresh thread: the search may fork executions
            )
            self._progress.start()
            self._task = self._progress.add_task("", total=self.total, rate=0.0, violations=0)
        self._started = time.monotonic()
        self._drawn = -REDRAW_S
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()

    def map(self, fn, items) -> list:
        self.check_budget()
        results = self.workers.map(fn, items)
        self.count(results)
        return results

    def over_budget(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def check_budget(self) -> None:
        """Between two batches: end the search if its time is up."""
        if self.over_budget():
            raise BudgetReached(self.executions)

    def count(self, results) -> None:
        """Results handed back to the explorer (which judges every one of them)."""
        self.executions += len(results)
        self.violations += sum(1 for r in results if not r[0])
        now = time.monotonic()
        if self._progress is not None and now - self._drawn >= REDRAW_S:
            self._drawn = now
            elapsed = max(now - self._started, 1e-9)
            self._progress.update(
                self._task,
                completed=self.executions,
                rate=self.executions / elapsed,
                violations=self.violations,
            )
            self._progress.refresh()
