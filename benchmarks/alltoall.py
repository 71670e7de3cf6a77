"""MPI-layer benchmark: one 256-rank 8-byte ``MPI_Alltoall`` over the openib BTL.

Every rank sends 8 bytes (one int64) to every other rank with ``comm.Alltoall`` — the
pairwise-exchange algorithm over ob1 and openib on ``mellanox-hermon`` (ConnectX) devices,
one per rank, as ``pyopenib run -n 256`` would build them. The job connects all
256 x 255 endpoint pairs, so this measures connection setup and per-endpoint receive
resources as much as the messages: wall time, CPU time of the whole child process
(steadier than wall time when other work shares the machine; it includes the imports),
peak resident memory and simulated time.

Each size runs in a child process (``--child N``), so peak RSS
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``) is that job's alone, interpreter and
imports included. The program checks every received value.

Run: ``.venv/bin/python benchmarks/alltoall.py [ranks ...]`` (default 256, 512 and 1024;
give smaller counts for a quick look).

``--census N`` says where the memory goes instead (issue 13): jobs of N/2 and N ranks fit
peak RSS = base + per rank x ranks + per pair x connected pairs; then the N-rank job runs
under ``tracemalloc`` with its BTL modules kept alive after it ends, and the objects and
allocation sites still held are divided by the connected (ordered) pairs: what one
endpoint costs, by type and by source line. What is held after the job is not what the
peak holds (the messages in flight, the fragments waiting for their connection), so a
sampling thread also snapshots the allocation sites at the traced peak. Events and Python
calls per message come from the simulator's event count and a ``cProfile`` of the
N/2-rank job.
"""

from __future__ import annotations

import collections
import cProfile
import gc
import io
import json
import pstats
import resource
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

from rich.console import Console
from rich.table import Table

DEVICE = "mellanox-hermon"
RANKS = (256, 512, 1024)

_PROGRAM = """
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
n, r = comm.Get_size(), comm.Get_rank()
send = np.arange(n, dtype=np.int64) + r * n
recv = np.empty(n, dtype=np.int64)
comm.Alltoall(send, recv)
assert (recv == np.arange(n, dtype=np.int64) * n + r).all(), recv
if r == 0:
    print(MPI.Wtime())
"""


def _run(nprocs: int, keep: list | None = None, sim=None) -> tuple[float, str]:
    """Run the job in this process: (wall seconds, rank 0's output). ``keep`` collects
    the job's BTL modules, so what they hold outlives the job for a census."""
    from pyopenib.apps.run_command import openib_btls
    from pyopenib.mpi import run_job

    factory = openib_btls(DEVICE, [], 1)

    def make_btls(sim, n):
        btls = factory(sim, n)
        if keep is not None:
            keep.append(btls)
        return btls

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "alltoall.py"
        path.write_text(_PROGRAM)
        out, err = io.StringIO(), io.StringIO()
        t0 = time.perf_counter()
        result = run_job(str(path), nprocs, make_btls, stdout=out, stderr=err, sim=sim)
        wall = time.perf_counter() - t0
    if result.exit_code:
        raise SystemExit(f"alltoall job failed ({result.reason}):\n{err.getvalue()}")
    return wall, out.getvalue()


def child(nprocs: int) -> dict:
    """Run the job in this process; return its figures."""
    wall, out = _run(nprocs)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "ranks": nprocs,
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "sim_us": float(out) * 1e6,
        "peak_rss_mb": usage.ru_maxrss / 1024,
    }


def _type_census() -> tuple[collections.Counter, collections.Counter]:
    """(count, bytes) per type name of every object the garbage collector tracks, plus
    the data of numpy arrays that own it (``sys.getsizeof`` counts a deque's block, a
    list's slots and a dict's table, not what they point to)."""
    count: collections.Counter = collections.Counter()
    size: collections.Counter = collections.Counter()
    for obj in gc.get_objects():
        name = type(obj).__qualname__
        count[name] += 1
        size[name] += sys.getsizeof(obj)
    return count, size


class _PeakSnapshot(threading.Thread):
    """Polls the traced memory every ``period`` seconds and snapshots ``tracemalloc``
    whenever it has grown ``step`` past the last snapshot: the last one is (within the
    polling period and the step) what the job held at its peak, and ``traced`` the
    highest figure polled. A snapshot costs in proportion to what is traced, so the steps
    are geometric (about 40 snapshots from 5 MB to 200 MB). A thread, because the job
    runs on this thread's greenlets; it takes the GIL to look, so the job only pauses."""

    def __init__(self, period: float = 0.25, step: float = 1.10):
        super().__init__(daemon=True)
        self.period = period
        self.step = step
        self.snapshot: tracemalloc.Snapshot | None = None
        self.traced = 0
        self._snapshot_at = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(self.period):
            current, _ = tracemalloc.get_traced_memory()
            self.traced = max(self.traced, current)
            if current > self._snapshot_at * self.step:
                self._snapshot_at = current
                self.snapshot = tracemalloc.take_snapshot()

    def stop(self) -> None:
        self._done.set()
        self.join()


def _by_site(snapshot: tracemalloc.Snapshot) -> collections.Counter:
    """Bytes held per allocation site (``package/module.py:line``)."""
    by_site: collections.Counter = collections.Counter()
    for stat in snapshot.statistics("lineno"):
        frame = stat.traceback[0]
        by_site[f"{frame.filename.rsplit('src/', 1)[-1]}:{frame.lineno}"] += stat.size
    return by_site


def census_child(nprocs: int) -> dict:
    """What the job's connections still hold once it is over, per connected pair: by
    type (against a census taken before the job) and by allocation site."""
    from pyopenib.sim import Simulator

    keep: list = []
    gc.collect()
    count0, size0 = _type_census()
    tracemalloc.start(1)
    sampler = _PeakSnapshot()
    sampler.start()
    sim = Simulator()
    _run(nprocs, keep, sim)
    sampler.stop()
    gc.collect()
    _, peak = tracemalloc.get_traced_memory()
    snapshot = tracemalloc.take_snapshot()
    tracemalloc.stop()
    count1, size1 = _type_census()
    # numpy arrays are not tracked by gc: reach the BTL's buffers through its fragments
    buffers = [o.buf for o in gc.get_objects() if type(o).__name__ == "Frag"]
    pairs = nprocs * (nprocs - 1)
    by_type = sorted(
        (
            (size1[t] - size0[t], count1[t] - count0[t], t)
            for t in count1
            if count1[t] - count0[t] > 0
        ),
        reverse=True,
    )
    by_site = _by_site(snapshot)
    at_peak = _by_site(sampler.snapshot) if sampler.snapshot is not None else by_site
    traced = sum(by_site.values())
    return {
        "ranks": nprocs,
        "pairs": pairs,
        "traced_mb": traced / 2**20,
        "traced_peak_mb": peak / 2**20,
        "events": sim.events_run,
        "frag_buffers": len(buffers),
        "frag_buffer_bytes": sum(b.nbytes for b in buffers),
        "by_type": [(t, c / pairs, b / pairs) for b, c, t in by_type[:20]],
        "by_site": [(site, b / pairs) for site, b in by_site.most_common(20)],
        "sampled_peak_mb": sampler.traced / 2**20,
        "at_peak": [(site, b / pairs) for site, b in at_peak.most_common(20)],
    }


def calls_child(nprocs: int) -> dict:
    """Python function calls and simulator events of the whole job, per message."""
    from pyopenib.sim import Simulator

    sim = Simulator()
    profile = cProfile.Profile()
    profile.enable()
    _run(nprocs, sim=sim)
    profile.disable()
    stats = pstats.Stats(profile)
    return {"ranks": nprocs, "calls": stats.total_calls, "events": sim.events_run}


def measure(nprocs: int, mode: str = "--child") -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, mode, str(nprocs)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode:
        raise RuntimeError(proc.stderr or proc.stdout)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(ranks=RANKS) -> list[dict]:
    rows = [measure(n) for n in ranks]
    table = Table(title=f"8-byte MPI_Alltoall over openib on {DEVICE} (one child process each)")
    for col in ("ranks", "messages", "wall s", "CPU s", "peak RSS MB", "simulated us"):
        table.add_column(col, justify="right")
    for r in rows:
        n = r["ranks"]
        table.add_row(
            str(n),
            f"{n * (n - 1):,}",
            f"{r['wall_s']:.1f}",
            f"{r['cpu_s']:.1f}",
            f"{r['peak_rss_mb']:,.0f}",
            f"{r['sim_us']:,.1f}",
        )
    Console(width=120).print(table)
    return rows


def census(nprocs: int) -> dict:
    """Print where the memory of an ``nprocs``-rank alltoall goes (``--census``)."""
    half = max(2, nprocs // 2)
    small, big = measure(half), measure(nprocs)
    # peak RSS = base + a x ranks + b x pairs, with base the interpreter and the imports
    # (the RSS of a 2-rank job, whose connections are negligible)
    base = measure(2)["peak_rss_mb"]
    n1, n2 = half, nprocs
    p1, p2 = n1 * (n1 - 1), n2 * (n2 - 1)
    r1, r2 = small["peak_rss_mb"] - base, big["peak_rss_mb"] - base
    per_pair = (r2 * n1 - r1 * n2) / (p2 * n1 - p1 * n2)
    per_rank = (r1 - per_pair * p1) / n1
    held = measure(nprocs, "--census-child")
    calls = measure(half, "--calls-child")
    console = Console(width=120)
    messages = half * (half - 1)
    console.print(
        f"peak RSS: {half} ranks {small['peak_rss_mb']:,.0f} MB, {nprocs} ranks "
        f"{big['peak_rss_mb']:,.0f} MB, 2 ranks (base) {base:,.0f} MB\n"
        f"fit: {per_rank * 1024:,.0f} KB per rank + {per_pair * 2**20:,.0f} B per connected "
        f"(ordered) pair\n"
        f"after the {nprocs}-rank job: {held['traced_mb']:,.0f} MB traced "
        f"(peak {held['traced_peak_mb']:,.0f} MB; {held['frag_buffers']:,} fragment buffers "
        f"holding {held['frag_buffer_bytes'] / 2**20:,.0f} MB of address space, resident "
        f"only where written)\n"
        f"{half} ranks: {calls['events'] / messages:,.1f} simulator events and "
        f"{calls['calls'] / messages:,.0f} Python calls per message (whole job, "
        f"{messages:,} messages)"
    )
    table = Table(title=f"held per connected pair after {nprocs} ranks, by type (gc census)")
    for col in ("type", "objects / pair", "bytes / pair"):
        table.add_column(col, justify="right")
    for name, c, b in held["by_type"]:
        table.add_row(name, f"{c:.2f}", f"{b:,.0f}")
    console.print(table)
    for title, rows in (
        ("held per connected pair after the job, by allocation site (tracemalloc)", "by_site"),
        (
            f"held per connected pair at the traced peak ({held['sampled_peak_mb']:,.0f} MB), "
            "by allocation site",
            "at_peak",
        ),
    ):
        table = Table(title=title)
        for col in ("site", "bytes / pair"):
            table.add_column(col, justify="right")
        for site, b in held[rows]:
            table.add_row(site, f"{b:,.0f}")
        console.print(table)
    return {"per_rank_kb": per_rank * 1024, "per_pair_b": per_pair * 2**20, **held}


_CHILDREN = {"--child": child, "--census-child": census_child, "--calls-child": calls_child}

if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] in _CHILDREN:
        print(json.dumps(_CHILDREN[sys.argv[1]](int(sys.argv[2]))))
    elif len(sys.argv) == 3 and sys.argv[1] == "--census":
        census(int(sys.argv[2]))
    else:
        main(tuple(int(a) for a in sys.argv[1:]) or RANKS)
