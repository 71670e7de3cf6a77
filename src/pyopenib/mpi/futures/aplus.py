"""``mpi4py.futures.aplus``: Promises/A+-style chaining of futures (``then``/``catch``).

A chained future is of the input's class, so waiting on it drives the rank's pools
(``_base``). A callback may return a future: the chained one then follows it, and a
chain that would wait on itself is refused (``RuntimeError``), as mpi4py does.
"""

from __future__ import annotations

import concurrent.futures as _cf
import threading
import weakref

from ._base import Future

__all__ = ["ThenableFuture", "catch", "then"]


class ThenableFuture(Future):
    """A future with ``then`` and ``catch``."""

    def then(self, on_success=None, on_failure=None):
        return then(self, on_success, on_failure)

    def catch(self, on_failure=None):
        return catch(self, on_failure)


def then(future, on_success=None, on_failure=None):
    """A new future resolved from ``future``: its result through ``on_success``, its
    exception through ``on_failure`` (either may return a future to follow, an exception
    to fail with, or a value to succeed with; ``None`` passes the outcome on)."""
    new = future.__class__()
    future.add_done_callback(lambda old: _resolve(new, old, on_success, on_failure))
    return new


def catch(future, on_failure=None):
    """``then(future, None, on_failure)``; without ``on_failure`` a failure becomes the
    result ``None``."""
    return then(future, None, on_failure if on_failure is not None else (lambda _: None))


_CHAINS_LOCK = threading.Lock()
_CHAINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Each chained future's inputs so far, to refuse a cycle."""


def _follow(new, other) -> None:
    """``new`` resolves as the future ``other`` does."""
    if other is new:
        raise RuntimeError(f"chain cycle detected: Future {other} chained with itself")
    with _CHAINS_LOCK:
        seen = _CHAINS.setdefault(new, weakref.WeakSet())
        if other in seen:
            raise RuntimeError(f"chain cycle detected: Future {other} already in chain")
        seen.add(other)
    other.add_done_callback(lambda old: _resolve(new, old, None, None))


def _settle(new, value) -> None:
    if isinstance(value, _cf.Future):
        _follow(new, value)
    elif isinstance(value, BaseException):
        new.set_exception(value)
    else:
        new.set_result(value)


def _failed(new, reason, on_failure) -> None:
    if on_failure is None:
        new.set_exception(reason)
        return
    try:
        _settle(new, on_failure(reason))
    except BaseException as exc:  # noqa: BLE001 - the callback's failure is the new future's
        new.set_exception(exc)


def _resolve(new, old, on_success, on_failure) -> None:
    if old.cancelled() or new.cancelled():
        new.cancel()
        new.set_running_or_notify_cancel()
        return
    reason = old.exception()
    if reason is not None:
        _failed(new, reason, on_failure)
        return
    try:
        result = old.result()
        result = on_success(result) if on_success is not None else result
        if isinstance(result, _cf.Future):
            _follow(new, result)
        else:
            new.set_result(result)
    except BaseException as exc:  # noqa: BLE001 - the callback's failure goes on_failure
        _failed(new, exc, on_failure)
