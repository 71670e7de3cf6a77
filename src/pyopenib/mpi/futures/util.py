"""``collect`` and ``compose``: futures made from other futures, as mpi4py 4.1's.

The new future is of the first input's class, so waiting on it (``Future.result``)
drives the rank's pools as waiting on the inputs would (``_base``). Callbacks may run
in a ``ThreadPoolExecutor``'s threads, hence the lock.
"""

from __future__ import annotations

import threading

from . import _base

__all__ = ["collect", "compose"]


class _Collect:
    """The state of one ``collect``: the output future, each input's indices in the
    result list, and that list."""

    def __init__(self, future, positions: dict):
        self.lock = threading.RLock()
        self.future = future
        self.positions = positions
        self.result = [None] * sum(map(len, positions.values()))

    def item_done(self, item) -> None:
        with self.lock:
            future = self.future
            if future is None or future.done():
                return
            if item.cancelled():
                future.cancel()
            elif item.exception() is not None:
                if future.set_running_or_notify_cancel():
                    future.set_exception(item.exception())
            else:
                for index in self.positions.pop(item):
                    self.result[index] = item.result()
                if not self.positions and future.set_running_or_notify_cancel():
                    future.set_result(self.result)

    def output_done(self, future) -> None:
        """The output finished (or was cancelled): cancel the inputs still pending."""
        with self.lock:
            pending, self.positions, self.future = self.positions, {}, None
        for item in pending:
            item.cancel()
        if future.cancelled():
            future.set_running_or_notify_cancel()


def collect(fs):
    """A new future whose result is the list of the results of ``fs`` (in order); it
    fails with the first input that fails, and cancelling it cancels the inputs."""
    positions: dict = {}
    for index, item in enumerate(fs):
        positions.setdefault(item, []).append(index)
    if not positions:
        future = _base.Future()
        future.set_result([])
        return future
    future = next(iter(positions)).__class__()
    state = _Collect(future, positions)
    future.add_done_callback(state.output_done)
    for item in list(positions):
        item.add_done_callback(state.item_done)
    return future


def compose(future, resulthook=None, excepthook=None):
    """A new future completed from ``future``: its result through ``resulthook``, its
    exception through ``excepthook`` (which may return an exception to fail with, or a
    value to succeed with); cancelling the new future cancels ``future``."""
    new = future.__class__()

    def cancel_input(new_future):
        if new_future.cancelled():
            new_future.set_running_or_notify_cancel()
            future.cancel()

    def complete(old):
        if new.done():
            return
        try:
            if old.cancelled():
                new.cancel()
            elif old.exception() is not None:
                reason = old.exception()
                if excepthook is not None:
                    reason = excepthook(reason)
                if isinstance(reason, BaseException):
                    new.set_exception(reason)
                else:
                    new.set_result(reason)
            else:
                result = old.result()
                new.set_result(resulthook(result) if resulthook is not None else result)
        except BaseException as exc:  # noqa: BLE001 - a hook's failure is the new future's
            new.set_exception(exc)

    new.add_done_callback(cancel_input)
    future.add_done_callback(complete)
    return new
