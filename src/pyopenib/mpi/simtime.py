"""A rank's ``time`` module: its clocks read simulated time and its ``sleep`` sleeps in it.

Real ranks are processes: one that calls ``time.sleep(1)`` stops for a second while the
others run on, and its clocks then read a second later. pyopenib's ranks are greenlets
of one thread on one simulated clock, so the real ``time.sleep`` would stall every rank
and the simulator for that second of wall time, and simulated time would not move: a
rank that sleeps would look, to its peers and to ``MPI.Wtime``, as if it had not slept
at all, and a timeout measured in simulated time (``future.result(timeout=...)`` while
a worker sleeps) would never expire. As SimGrid's SMPI does for ``sleep`` and
``gettimeofday`` (``smpi_sleep``, ``smpi_gettimeofday``), a rank's calls are answered
from the simulation:

* ``sleep(secs)`` blocks the calling rank for ``secs`` simulated seconds (the others keep
  running; ``sleep(0)`` lets the ranks due at this instant run first, as a real one yields
  the CPU); it does not progress MPI, as a sleeping process's MPI library does not;
* ``time``, ``monotonic``, ``perf_counter`` (and their ``_ns`` forms) read the simulated
  clock, in seconds since the simulation started: the wall-clock epoch is the start of
  the run (SMPI's ``gettimeofday`` too), so the same program and seed print the same
  bytes; ``gmtime``, ``localtime``, ``ctime``, ``asctime`` and ``strftime`` without a time
  argument read that same clock, so a rank's calendar and its ``time()`` agree;
* everything else (``process_time``, ``thread_time``, the conversions) is the real
  module's.

Where: while a job runs, ``sys.modules["time"]`` is this module's proxy (``Installed``),
so the program, its modules and any module first imported during the job get it from
``import time``, and ``time.sleep`` pickled by one rank (``executor.submit(time.sleep,
0.5)``) is the proxy's on the rank that unpickles it. pyopenib itself, the simulator and
every module imported before the job keep the real module. The proxy answers from the
simulation only when a rank (or a rank's ``threading.Thread``, a simulator process of
the rank: ``coop_threading``) calls it on the simulator's thread; a call from anywhere
else (the launcher, an OS thread, a module that kept the proxy after the job) is the
real function's, so the proxy is never the simulator's clock. ``threading``'s and
``queue``'s timeouts (``Event.wait(timeout)``, ``Queue.get(timeout=...)``) are
simulated time too, through ``coop_threading``.

Not covered: waits inside C code (``select``), which block in wall time, and
``datetime.now()``, which reads the system clock directly.
"""

from __future__ import annotations

import math
import operator
import sys
import time as _real
import types

from .context import lookup

__all__ = ["RANK_TIME", "Installed"]

_PS_PER_S = 1_000_000_000_000
_PS_PER_NS = 1_000


def _rank_now_ps() -> int | None:
    """The simulated time in picoseconds when a rank calls, else None (the real clock's)."""
    rc = lookup()
    return None if rc is None else rc.sim.now


def _seconds(secs) -> float | int:
    """``secs`` as ``time.sleep`` accepts it: a float, or an int-like object; the real
    function's errors otherwise."""
    if isinstance(secs, float):
        if math.isnan(secs):
            raise ValueError("Invalid value NaN (not a number)")
        value = secs
    else:
        value = operator.index(secs)  # TypeError, as the real sleep, for a str or None
    if value < 0:
        raise ValueError("sleep length must be non-negative")
    return value


def sleep(secs) -> None:
    """Block the calling rank for ``secs`` simulated seconds (module docstring)."""
    rc = lookup()
    if rc is None:
        _real.sleep(secs)
        return
    delay = round(_seconds(secs) * _PS_PER_S)
    outer = rc.blocked_in
    if outer is None:
        rc.blocked_in = f"time.sleep({secs!r})"
    try:
        rc.sim.sleep(delay)
    finally:
        rc.blocked_in = outer


def _clock(name: str, real):
    """``time.<name>``: simulated seconds for a rank, the real clock for anyone else."""

    def clock() -> float:
        now = _rank_now_ps()
        return real() if now is None else now / _PS_PER_S

    clock.__name__ = clock.__qualname__ = name
    return clock


def _clock_ns(name: str, real):
    """``time.<name>_ns``: simulated nanoseconds for a rank, the real clock for anyone else."""

    def clock_ns() -> int:
        now = _rank_now_ps()
        return real() if now is None else now // _PS_PER_NS

    clock_ns.__name__ = clock_ns.__qualname__ = name
    return clock_ns


def _calendar(name: str, real):
    """``time.<name>([secs])``: without ``secs`` (or with None), the rank's ``time()``."""

    def convert(secs=None):
        if secs is None:
            now = _rank_now_ps()
            if now is not None:
                secs = now / _PS_PER_S
        return real(secs)

    convert.__name__ = convert.__qualname__ = name
    return convert


def _formatting(name: str, real, *leading):
    """``time.<name>(*leading, [t])``: without ``t``, the rank's ``localtime()``."""

    def formatting(*args):
        if len(args) == len(leading):
            now = _rank_now_ps()
            if now is not None:
                args = (*args, _real.localtime(now / _PS_PER_S))
        return real(*args)

    formatting.__name__ = formatting.__qualname__ = name
    return formatting


def _build() -> types.ModuleType:
    module = types.ModuleType("time", _real.__doc__)
    module.__dict__.update(
        {k: v for k, v in vars(_real).items() if k not in ("__name__", "__doc__")}
    )
    replaced = {
        "sleep": sleep,
        "ctime": _calendar("ctime", _real.ctime),
        "gmtime": _calendar("gmtime", _real.gmtime),
        "localtime": _calendar("localtime", _real.localtime),
        "asctime": _formatting("asctime", _real.asctime),
        "strftime": _formatting("strftime", _real.strftime, "format"),
    }
    for name in ("time", "monotonic", "perf_counter"):
        replaced[name] = _clock(name, getattr(_real, name))
        replaced[f"{name}_ns"] = _clock_ns(f"{name}_ns", getattr(_real, f"{name}_ns"))
    for name, function in replaced.items():
        function.__module__ = "time"
        function.__doc__ = getattr(_real, name).__doc__
        setattr(module, name, function)
    return module


RANK_TIME = _build()
"""The ``time`` module the ranks import (the proxy)."""


class Installed:
    """``sys.modules["time"]`` is the ranks' proxy for a job's duration (and the real
    module again afterwards)."""

    def __enter__(self):
        self.saved = sys.modules.get("time")
        sys.modules["time"] = RANK_TIME
        return self

    def __exit__(self, *exc):
        if self.saved is None:
            sys.modules.pop("time", None)
        else:
            sys.modules["time"] = self.saved
        return False
