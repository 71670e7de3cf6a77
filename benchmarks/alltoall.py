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

Run: ``.venv/bin/python benchmarks/alltoall.py [ranks ...]`` (default 256; give smaller
counts for a quick look).
"""

from __future__ import annotations

import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

DEVICE = "mellanox-hermon"
RANKS = (256,)

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


def child(nprocs: int) -> dict:
    """Run the job in this process; return its figures."""
    from pyopenib.apps.run_command import openib_btls
    from pyopenib.mpi import run_job

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "alltoall.py"
        path.write_text(_PROGRAM)
        out, err = io.StringIO(), io.StringIO()
        t0 = time.perf_counter()
        result = run_job(str(path), nprocs, openib_btls(DEVICE, [], 1), stdout=out, stderr=err)
        wall = time.perf_counter() - t0
    if result.exit_code:
        raise SystemExit(f"alltoall job failed ({result.reason}):\n{err.getvalue()}")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "ranks": nprocs,
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "sim_us": float(out.getvalue()) * 1e6,
        "peak_rss_mb": usage.ru_maxrss / 1024,
    }


def measure(nprocs: int) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(nprocs)],
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


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(int(sys.argv[2]))))
    else:
        main(tuple(int(a) for a in sys.argv[1:]) or RANKS)
