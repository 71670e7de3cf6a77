"""Kernel benchmark: one ping-pong model on four event loops.

Two endpoints bounce a message back and forth; each one-way trip takes ``DELAY_PS`` of
simulated time, and a run is ``round_trips`` round trips. The same model runs on

* ``kernel-callbacks``: pyopenib's kernel, each delivery a ``sim.schedule`` callback — how
  hardware models use the kernel;
* ``kernel-processes``: pyopenib's kernel, two greenlet processes that ``sim.sleep`` for the
  wire delay, trigger the peer's inbox ``Event`` and ``sim.wait`` on their own — how rank
  programs use it;
* ``simpy``: SimPy 4 written the idiomatic way (generator processes, ``env.timeout`` for the
  wire, ``env.event()`` inboxes) — the processes twin of ``kernel-processes``;
* ``simpy-callbacks``: SimPy with a callback appended to each timeout — the twin of
  ``kernel-callbacks``, shown so loop can be compared with loop;
* ``heapq``: a bare loop over ``(time, seq, fn, args)`` tuples — the floor any Python
  kernel with FIFO tie-breaking stands on.

An *event* is one heap entry executed (one scheduled callback, timeout or triggered event),
counted the same way everywhere: the loop's own counter or its sequence number. The process
variants need two per message (the wire delay, then the wake-up of the receiver), the
callback variants one; so events/s compares the cost of one loop iteration, round trips/s
the cost of the model. Every variant reports the simulated end time, which must agree.

Wall time is ``time.perf_counter`` around the whole run (building the model included), best
of ``repeats`` after a warm-up (see ``measure``); the first, cold run is shown beside it. The
garbage collector stays on, as in a real simulation.
"""

from __future__ import annotations

import gc
import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass
from heapq import heappop, heappush

from rich.console import Console
from rich.table import Table

from pyopenib.sim import Simulator

DELAY_PS = 1_000
ROUND_TRIPS = 200_000
REPEATS = 5
WARMUP_CALLS = 8
WARMUP_ROUND_TRIPS = 10

# (numerator, denominator, minimum ratio of events/s) — the kernel's performance contract.
TARGETS = (
    ("kernel-callbacks", "simpy", 2.5),
    ("kernel-callbacks", "heapq", 0.7),
)


@dataclass(frozen=True, slots=True)
class Run:
    """What one execution of the model reports: events executed, simulated end time (ps)."""

    events: int
    end_ps: int


def ping_pong_kernel_callbacks(round_trips: int) -> Run:
    sim = Simulator(seed=0)
    schedule = sim.schedule
    left = [round_trips]

    def at_pong(msg):
        schedule(DELAY_PS, at_ping, msg)

    def at_ping(msg):
        left[0] -= 1
        if left[0]:
            schedule(DELAY_PS, at_pong, msg + 1)

    schedule(DELAY_PS, at_pong, 0)
    events = sim.run()
    return Run(events, sim.now)


def ping_pong_kernel_processes(round_trips: int) -> Run:
    sim = Simulator(seed=0)
    sleep, wait, new_event = sim.sleep, sim.wait, sim.event
    inbox = {"ping": new_event(), "pong": new_event()}

    def send(peer, msg):
        sleep(DELAY_PS)
        inbox[peer].succeed(msg)

    def ping():
        for msg in range(round_trips):
            send("pong", msg)
            wait(inbox["ping"])
            inbox["ping"] = new_event()

    def pong():
        for _ in range(round_trips):
            msg = wait(inbox["pong"])
            inbox["pong"] = new_event()
            send("ping", msg)

    sim.spawn(ping)
    sim.spawn(pong)
    events = sim.run()
    return Run(events, sim.now)


def ping_pong_simpy(round_trips: int) -> Run:
    import simpy

    env = simpy.Environment()
    timeout, new_event = env.timeout, env.event
    inbox = {"ping": new_event(), "pong": new_event()}

    def ping():
        for msg in range(round_trips):
            yield timeout(DELAY_PS)
            inbox["pong"].succeed(msg)
            yield inbox["ping"]
            inbox["ping"] = new_event()

    def pong():
        for _ in range(round_trips):
            msg = yield inbox["pong"]
            inbox["pong"] = new_event()
            yield timeout(DELAY_PS)
            inbox["ping"].succeed(msg)

    env.process(ping())
    env.process(pong())
    env.run()
    # SimPy numbers every scheduled event from one counter; all of them ran.
    return Run(next(env._eid), env.now)


def ping_pong_simpy_callbacks(round_trips: int) -> Run:
    import simpy

    env = simpy.Environment()
    timeout = env.timeout
    left = [round_trips]

    def at_pong(event):
        timeout(DELAY_PS, event.value).callbacks.append(at_ping)

    def at_ping(event):
        left[0] -= 1
        if left[0]:
            timeout(DELAY_PS, event.value + 1).callbacks.append(at_pong)

    timeout(DELAY_PS, 0).callbacks.append(at_pong)
    env.run()
    return Run(next(env._eid), env.now)


def ping_pong_heapq(round_trips: int) -> Run:
    heap: list = []
    now = seq = 0
    left = round_trips

    def schedule(delay, fn, *args):
        nonlocal seq
        seq += 1
        heappush(heap, (now + delay, seq, fn, args))

    def at_pong(msg):
        schedule(DELAY_PS, at_ping, msg)

    def at_ping(msg):
        nonlocal left
        left -= 1
        if left:
            schedule(DELAY_PS, at_pong, msg + 1)

    schedule(DELAY_PS, at_pong, 0)
    while heap:
        now, _, fn, args = heappop(heap)
        fn(*args)
    return Run(seq, now)


@dataclass(frozen=True, slots=True)
class Implementation:
    key: str
    label: str
    model: Callable[[int], Run]
    needs: str | None = None  # an optional module it imports


IMPLEMENTATIONS = (
    Implementation("kernel-callbacks", "kernel callbacks", ping_pong_kernel_callbacks),
    Implementation("kernel-processes", "kernel greenlets", ping_pong_kernel_processes),
    Implementation("simpy", "SimPy processes", ping_pong_simpy, needs="simpy"),
    Implementation("simpy-callbacks", "SimPy callbacks", ping_pong_simpy_callbacks, needs="simpy"),
    Implementation("heapq", "bare heapq", ping_pong_heapq),
)


@dataclass(frozen=True, slots=True)
class Result:
    key: str
    label: str
    round_trips: int
    events: int
    end_ps: int
    best_s: float
    first_s: float

    @property
    def events_per_s(self) -> float:
        return self.events / self.best_s

    @property
    def first_events_per_s(self) -> float:
        return self.events / self.first_s

    @property
    def round_trips_per_s(self) -> float:
        return self.round_trips / self.best_s


def available(impl: Implementation) -> bool:
    return impl.needs is None or importlib.util.find_spec(impl.needs) is not None


def measure(impl: Implementation, round_trips: int, repeats: int) -> Result:
    """Time a first run, warm the code up, then keep the best wall time of ``repeats`` runs.

    CPython 3.11 specialises a function's bytecode only from its 8th call on, so a loop
    inside a function called once (``Simulator.run``, the bare heapq loop) runs generic
    bytecode on the first calls — as in a real one-shot simulation. The first run shows
    that; ``WARMUP_CALLS`` tiny runs then bring every model to the steady state measured.
    """
    gc.collect()
    start = time.perf_counter()
    run = impl.model(round_trips)
    first = time.perf_counter() - start
    for _ in range(WARMUP_CALLS):
        impl.model(WARMUP_ROUND_TRIPS)
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        again = impl.model(round_trips)
        best = min(best, time.perf_counter() - start)
        if again != run:
            raise AssertionError(f"{impl.key} is not deterministic: {run} then {again}")
    return Result(impl.key, impl.label, round_trips, run.events, run.end_ps, best, first)


def ratios(results: list[Result]) -> list[tuple[str, float | None, float]]:
    """``(name, measured events/s ratio or None when a side is missing, target)``."""
    by_key = {r.key: r for r in results}
    out = []
    for num, den, target in TARGETS:
        value = None
        if num in by_key and den in by_key:
            value = by_key[num].events_per_s / by_key[den].events_per_s
        out.append((f"{num} / {den}", value, target))
    return out


def render(results: list[Result], console: Console) -> None:
    table = Table(
        title=f"Ping-pong, {results[0].round_trips:,} round trips (rt), best wall time",
        caption="events = heap entries executed (callbacks, timeouts, triggered events); "
        "cold = the first call, before the interpreter specialised the loop",
    )
    for col in ("implementation", "ev/rt", "events/s", "rt/s", "best s", "cold ev/s"):
        if col == "implementation":
            table.add_column(col, no_wrap=True)
        else:
            table.add_column(col, justify="right")
    for r in results:
        table.add_row(
            r.label,
            f"{r.events / r.round_trips:.2f}",
            f"{r.events_per_s:,.0f}",
            f"{r.round_trips_per_s:,.0f}",
            f"{r.best_s:.3f}",
            f"{r.first_events_per_s:,.0f}",
        )
    console.print(table)
    targets = Table(title="Targets (events/s ratios)")
    for col in ("ratio", "measured", "target", "verdict"):
        targets.add_column(col, justify="left" if col == "ratio" else "right")
    for name, value, target in ratios(results):
        if value is None:
            targets.add_row(name, "n/a", f">= {target}x", "not measured")
        else:
            verdict = "[green]met[/]" if value >= target else "[red]NOT met[/]"
            targets.add_row(name, f"{value:.2f}x", f">= {target}x", verdict)
    console.print(targets)


def main(
    round_trips: int = ROUND_TRIPS, repeats: int = REPEATS, console: Console | None = None
) -> list[Result]:
    """Run every available implementation, print the tables, return the results."""
    console = console or Console()
    results = []
    for impl in IMPLEMENTATIONS:
        if not available(impl):
            console.print(
                f"{impl.label}: skipped, {impl.needs} is not installed "
                "(.venv/bin/pip install -e '.[test,bench]')"
            )
            continue
        results.append(measure(impl, round_trips, repeats))
    ends = {r.end_ps for r in results}
    if len(ends) != 1:
        raise AssertionError(f"implementations disagree on the simulated end time: {ends}")
    render(results, console)
    return results


if __name__ == "__main__":
    main()
