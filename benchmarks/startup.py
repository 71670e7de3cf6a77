"""Start-up benchmark: ``pyopenib run -n 4096`` of a program that only prints (issue 13).

Nothing is sent, so no connection is made: this measures what every rank costs before
its first message — the per-rank program and module isolation, MPI initialisation, the
published settings (the modex), and each rank's openib module: its device context, CQ,
shared receive queues and the receive buffers posted on them. The CLI runs as a child
process, so its wall time, CPU time (user + system, steadier than wall time when other
work shares the machine) and peak resident memory (``RUSAGE_CHILDREN``) are the whole
command's, interpreter and imports included. Every rank's line is checked.

Run: ``.venv/bin/python benchmarks/startup.py [ranks ...]`` (default 4096).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

RANKS = (4096,)
PYOPENIB = str(Path(sys.executable).with_name("pyopenib"))

_PROGRAM = """
from mpi4py import MPI

print(f"rank {MPI.COMM_WORLD.Get_rank()} of {MPI.COMM_WORLD.Get_size()}")
"""


def measure(nprocs: int) -> dict:
    """One ``pyopenib run -n nprocs`` in a child process that starts no other child
    (so ``RUSAGE_CHILDREN``'s peak is its own)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hello.py"
        path.write_text(_PROGRAM)
        script = (
            "import resource, subprocess, sys, time\n"
            "t0 = time.perf_counter()\n"
            "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "wall = time.perf_counter() - t0\n"
            "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "sys.stderr.write(p.stderr)\n"
            "sys.stdout.write(p.stdout)\n"
            "print(p.returncode, wall, u.ru_utime + u.ru_stime, u.ru_maxrss)\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", script, PYOPENIB, "run", "-n", str(nprocs), str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
    *lines, last = proc.stdout.strip().splitlines()
    code, wall, cpu, maxrss = last.split()
    expected = {f"rank {r} of {nprocs}" for r in range(nprocs)}
    if int(code) or set(lines) != expected or len(lines) != nprocs:
        raise RuntimeError(f"pyopenib run -n {nprocs} failed (exit {code}):\n{proc.stderr}")
    return {
        "ranks": nprocs,
        "wall_s": float(wall),
        "cpu_s": float(cpu),
        "peak_rss_mb": int(maxrss) / 1024,
    }


def main(ranks=RANKS) -> list[dict]:
    rows = [measure(n) for n in ranks]
    table = Table(title="pyopenib run -n N of a print-only program (one child process each)")
    for col in ("ranks", "wall s", "CPU s", "peak RSS MB", "KB per rank"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            str(r["ranks"]),
            f"{r['wall_s']:.1f}",
            f"{r['cpu_s']:.1f}",
            f"{r['peak_rss_mb']:,.0f}",
            f"{r['peak_rss_mb'] * 1024 / r['ranks']:,.0f}",
        )
    Console(width=120).print(table)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("ranks", nargs="*", type=int, help=f"job sizes (default {RANKS[0]})")
    main(tuple(parser.parse_args().ranks) or RANKS)
