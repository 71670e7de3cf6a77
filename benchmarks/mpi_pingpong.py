"""MPI-layer benchmark: simulated 8-byte ping-pong messages per wall second.

Two ranks bounce an 8-byte message through everything ``pyopenib run`` uses: the job
runner (greenlet ranks, the ``mpi4py.MPI`` namespace), the ob1-like PML and the openib
BTL on two modelled ``mellanox-hermon`` (ConnectX) devices and the simulated fabric.
Each of four mpi4py idioms is one row:

* ``Send/Recv``: ``comm.Send([buf, MPI.BYTE], ...)`` / ``comm.Recv(...)`` — osu_latency;
* ``send/recv``: the pickle-based lowercase calls with an 8-byte ``bytes`` object;
* ``Isend/Irecv+Waitall``: both requests posted, then ``MPI.Request.Waitall``;
* ``Sendrecv``: both ranks exchange at once (every call moves two messages).

A *message* is one one-way transfer (a round trip is two). *msgs/s (loop)* divides the
messages by the wall time of the timed loop (measured by rank 0 inside the program,
``time.perf_counter`` after a warm-up); *msgs/CPU s* by the loop's CPU time
(``time.thread_time``: the job is one thread, so this is steadier than wall time when
other work shares the machine); *msgs/s (job)* by the wall time of the whole
``run_job`` call, which adds device setup, connection and the warm-up. Best of
``REPEATS`` runs. Issue 5's target: >= 100k messages per wall second (``Send/Recv`` loop).

Run: ``.venv/bin/python benchmarks/mpi_pingpong.py [round_trips]``.
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pyopenib.apps.run_command import openib_btls
from pyopenib.mpi import run_job

DEVICE = "mellanox-hermon"
ROUND_TRIPS = 20_000
WARMUP = 200
REPEATS = 3
TARGET = 100_000

_PROGRAM = """
import sys, time
from mpi4py import MPI
import numpy as np

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
peer = 1 - rank
n, warm, style = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
buf = np.zeros(8, dtype=np.uint8)
msg = [buf, MPI.BYTE]
obj = b"12345678"
rbuf = np.zeros(8, dtype=np.uint8)
for i in range(n + warm):
    if i == warm:
        t0 = time.perf_counter()
        c0 = time.thread_time()
        s0 = MPI.Wtime()
    if style == "Send/Recv":
        if rank == 0:
            comm.Send(msg, dest=1, tag=1)
            comm.Recv(msg, source=1, tag=1)
        else:
            comm.Recv(msg, source=0, tag=1)
            comm.Send(msg, dest=0, tag=1)
    elif style == "send/recv":
        if rank == 0:
            comm.send(obj, dest=1, tag=1)
            obj = comm.recv(source=1, tag=1)
        else:
            obj = comm.recv(source=0, tag=1)
            comm.send(obj, dest=0, tag=1)
    elif style == "Isend/Irecv+Waitall":
        r = comm.Irecv([rbuf, MPI.BYTE], source=peer, tag=1)
        s = comm.Isend(msg, dest=peer, tag=1)
        MPI.Request.Waitall([s, r])
    else:
        comm.Sendrecv(msg, dest=peer, sendtag=1, recvbuf=[rbuf, MPI.BYTE], source=peer,
                      recvtag=1)
if rank == 0:
    print(time.perf_counter() - t0, time.thread_time() - c0, MPI.Wtime() - s0)
"""

STYLES = ("Send/Recv", "send/recv", "Isend/Irecv+Waitall", "Sendrecv")


def run_once(path: str, style: str, round_trips: int) -> tuple[float, float, float, float]:
    """(loop wall s, job wall s, simulated loop s, loop CPU s) of one job."""
    out, err = io.StringIO(), io.StringIO()
    make_btls = openib_btls(DEVICE, [], 1)
    t0 = time.perf_counter()
    result = run_job(
        path, 2, make_btls, [str(round_trips), str(WARMUP), style], stdout=out, stderr=err
    )
    job = time.perf_counter() - t0
    if result.exit_code:
        raise RuntimeError(f"ping-pong job failed ({result.reason}): {err.getvalue()}")
    loop, cpu, simulated = (float(x) for x in out.getvalue().split())
    return loop, job, simulated, cpu


def measure(style: str, round_trips: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "pingpong.py")
        Path(path).write_text(_PROGRAM)
        runs = [run_once(path, style, round_trips) for _ in range(REPEATS)]
    loop = min(r[0] for r in runs)
    job = min(r[1] for r in runs)
    msgs = 2 * round_trips
    # Sendrecv and the Waitall exchange move one message each way per iteration: two.
    return {
        "style": style,
        "msgs": msgs,
        "loop_rate": msgs / loop,
        "job_rate": (msgs + 2 * WARMUP) / job,
        "loop_s": loop,
        "cpu_rate": msgs / min(r[3] for r in runs),
        "sim_us": runs[0][2] * 1e6 / round_trips,
    }


def main(round_trips: int = ROUND_TRIPS) -> None:
    rows = [measure(style, round_trips) for style in STYLES]
    table = Table(title=f"8-byte ping-pong over openib on {DEVICE} ({round_trips:,} iterations)")
    for col in (
        "idiom",
        "messages",
        "msgs/s (loop)",
        "msgs/CPU s (loop)",
        "msgs/s (job)",
        "loop s",
        "sim us/iteration",
    ):
        table.add_column(col, justify="left" if col == "idiom" else "right")
    for r in rows:
        table.add_row(
            r["style"],
            f"{r['msgs']:,}",
            f"{r['loop_rate']:,.0f}",
            f"{r['cpu_rate']:,.0f}",
            f"{r['job_rate']:,.0f}",
            f"{r['loop_s']:.3f}",
            f"{r['sim_us']:.3f}",
        )
    Console(width=120).print(table)
    rate = rows[0]["loop_rate"]
    verdict = "met" if rate >= TARGET else "not met"
    print(f"Send/Recv: {rate:,.0f} msgs/s against a target of {TARGET:,}: {verdict}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else ROUND_TRIPS)
