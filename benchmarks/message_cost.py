"""Where one simulated message goes: events, greenlet switches and Python calls per message.

Issue 13 asks for "events and Python calls per message". This benchmark runs the 8-byte
``Send``/``Recv`` ping-pong of ``benchmarks/smpi/pingpong.py`` (two ranks, openib BTL on
two ``mellanox-hermon`` devices) in this process, twice: ``SHORT`` and ``SHORT + ROUND_TRIPS``
round trips. Every figure is the difference of the two runs divided by the extra
messages, so job start-up, connection set-up and the eager-RDMA ring's opening cancel out
and what is left is the steady per-message cost:

* **events**: heap entries pushed (``Simulator.scheduled``) and callbacks run
  (``Simulator.events_run``), and the sleeps the kernel folded instead of pushing
  (``Simulator.sleeps_folded``: a rank's sleep whose wake-up was the next event), and the
  events a callback did at once instead of scheduling (``Simulator.events_folded``: an
  ACK's serialization, ``TransmitPort.send_ack``);
* **switches**: greenlet switches (``greenlet.settrace``), a rank blocking and resuming;
* **calls**: function calls cProfile counts, by layer — the package of ``pyopenib`` the
  function is defined in (``mpi``, ``pml``, ``btl``, ``verbs``, ``hw``, ``sim``), the
  benchmark program itself, and C functions (``len``, ``heappush``, ``struct`` packing...);
* **CPU us**: CPU time per message of a run without the profiler (``time.thread_time``,
  the same difference of two runs), and the share of the profiled time each layer's own
  code took (cProfile ``tottime``; the profiler inflates small calls, so read the share,
  not an absolute).

Run: ``.venv/bin/python benchmarks/message_cost.py [ROUND_TRIPS]`` (default 5,000).
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time
from collections import Counter
from pathlib import Path

import greenlet
from rich.console import Console
from rich.table import Table

from pyopenib.apps.run_command import openib_btls
from pyopenib.mpi import run_job
from pyopenib.sim import Simulator

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "smpi" / "pingpong.py"
DEVICE = "mellanox-hermon"
ROUND_TRIPS = 5_000
SHORT = 200
LAYERS = ("mpi", "pml", "btl", "verbs", "hw", "sim")


def _job(round_trips: int, profile: cProfile.Profile | None = None) -> dict:
    """One whole job of ``round_trips`` round trips; its counters (and CPU seconds)."""
    sim = Simulator()
    switches = [0]

    def count(event, args):
        if event == "switch":
            switches[0] += 1

    out, err = io.StringIO(), io.StringIO()
    make_btls = openib_btls(DEVICE, [], 1)
    previous = greenlet.settrace(count)
    cpu = time.thread_time()
    if profile is not None:
        profile.enable()
    try:
        result = run_job(
            str(PROGRAM), 2, make_btls, [str(round_trips)], sim=sim, stdout=out, stderr=err
        )
    finally:
        if profile is not None:
            profile.disable()
        cpu = time.thread_time() - cpu
        greenlet.settrace(previous)
    if result.exit_code:
        raise SystemExit(f"message_cost: the ping-pong failed ({result.reason}):\n{err.getvalue()}")
    return {
        "pushed": sim.scheduled,
        "ran": sim.events_run,
        "folded": sim.sleeps_folded,
        "efolded": sim.events_folded,
        "switches": switches[0],
        "cpu": cpu,
        "sim_ps": result.sim_time_ps,
    }


def _layer(filename: str) -> str:
    if filename == "~":
        return "C functions"
    if "/pyopenib/" in filename:
        package = filename.rsplit("/pyopenib/", 1)[1].split("/", 1)[0]
        return package if package in LAYERS else "other pyopenib"
    if filename == str(PROGRAM):
        return "program"
    return "other Python"


def _profiled(round_trips: int) -> tuple[Counter, Counter]:
    """Calls and own (tottime) seconds by layer over one profiled job."""
    profile = cProfile.Profile()
    _job(round_trips, profile)
    calls: Counter = Counter()
    own: Counter = Counter()
    for (filename, _line, _name), (_cc, nc, tt, _ct, _callers) in pstats.Stats(
        profile
    ).stats.items():
        layer = _layer(filename)
        calls[layer] += nc
        own[layer] += tt
    return calls, own


def measure(round_trips: int = ROUND_TRIPS) -> dict:
    """Per-message figures: the difference between a long and a short job."""
    _job(SHORT)  # warm: imports, the kernel's and the MPI layer's first calls
    messages = 2 * round_trips
    short, long = _job(SHORT), _job(SHORT + round_trips)
    calls_s, own_s = _profiled(SHORT)
    calls_l, own_l = _profiled(SHORT + round_trips)
    own_total = sum(own_l.values()) - sum(own_s.values())
    layers = {}
    for layer in sorted(set(calls_l) | set(calls_s), key=lambda k: -(calls_l[k] - calls_s[k])):
        n = (calls_l[layer] - calls_s[layer]) / messages
        share = (own_l[layer] - own_s[layer]) / own_total if own_total else 0.0
        if n >= 0.05:
            layers[layer] = (n, share)
    return {
        "messages": messages,
        "pushed": (long["pushed"] - short["pushed"]) / messages,
        "ran": (long["ran"] - short["ran"]) / messages,
        "folded": (long["folded"] - short["folded"]) / messages,
        "efolded": (long["efolded"] - short["efolded"]) / messages,
        "switches": (long["switches"] - short["switches"]) / messages,
        "cpu_us": (long["cpu"] - short["cpu"]) / messages * 1e6,
        "sim_us": (long["sim_ps"] - short["sim_ps"]) / messages / 1e6,
        "calls": sum(n for n, _ in layers.values()),
        "layers": layers,
    }


def main(round_trips: int = ROUND_TRIPS) -> dict:
    m = measure(round_trips)
    console = Console(width=120)
    head = Table(
        title=f"One 8-byte message of the Send/Recv ping-pong ({m['messages']:,} messages)"
    )
    for col in (
        "CPU us",
        "heap events",
        "callbacks run",
        "sleeps folded",
        "events folded",
        "greenlet switches",
        "Python calls",
    ):
        head.add_column(col, justify="right")
    head.add_row(
        f"{m['cpu_us']:.1f}",
        f"{m['pushed']:.2f}",
        f"{m['ran']:.2f}",
        f"{m['folded']:.2f}",
        f"{m['efolded']:.2f}",
        f"{m['switches']:.2f}",
        f"{m['calls']:.1f}",
    )
    console.print(head)
    table = Table(title="Calls per message by layer (cProfile)")
    for col in ("layer", "calls/msg", "share of own time"):
        table.add_column(col, justify="left" if col == "layer" else "right")
    for layer, (n, share) in m["layers"].items():
        table.add_row(layer, f"{n:.1f}", f"{share:.0%}")
    console.print(table)
    print(f"simulated time per message: {m['sim_us']:.3f} us")
    return m


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else ROUND_TRIPS)
