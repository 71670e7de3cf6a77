"""Long-run registration leak check: 10,000 rendezvous messages keep MRs and pinned bytes bounded.

Two ranks on the hermon model exchange large messages (buffer sends into a reused array
and pickled objects, each above the eager limit so each is a rendezvous with one
registration on each side), once with ``mpi_leave_pinned`` 0 (register per transfer,
release at FIN) and once with 1 (the registration cache keeps the reused buffer's
registration; the default, auto, means 1). The table shows, per mode and run length, the
registrations made and released, the cache's hits, what is held and pinned at the end and
at the peak: a leak shows as ``held`` and ``pinned`` growing with the message count.

Run: ``.venv/bin/python benchmarks/registration_leak.py [messages ...]`` (default 1000 10000).
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

DEVICE = "mellanox-hermon"

_PROGRAM = """
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
buf = np.zeros(64 * 1024, dtype=np.uint8)
for i in range({pairs}):
    if rank == 0:
        comm.Send(buf, dest=1)
        comm.send(bytes(48 * 1024), dest=1)
    else:
        comm.Recv(buf, source=0)
        comm.recv(source=0)
"""


MODES = ("0", "1")
"""``mpi_leave_pinned`` values measured."""


def measure(messages: int, leave_pinned: str):
    from pyopenib.apps.run_command import openib_btls
    from pyopenib.apps.stats import registration_rows
    from pyopenib.mpi import run_job

    kept = []
    make = openib_btls(DEVICE, [("mpi_leave_pinned", leave_pinned)], 1)

    def make_btls(sim, nprocs):
        btls = make(sim, nprocs)
        kept.extend(btls)
        return btls

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "leak.py"
        path.write_text(_PROGRAM.format(pairs=messages // 2))
        err = io.StringIO()
        result = run_job(str(path), 2, make_btls, stdout=io.StringIO(), stderr=err)
    if result.exit_code:
        raise SystemExit(f"leak job failed ({result.reason}):\n{err.getvalue()}")
    return registration_rows(kept)


_COLUMNS = (
    ("reg_mr", "registered"),
    ("dereg_mr", "deregistered"),
    ("cache hits", "hits"),
    ("held", "held"),
    ("cached", "cached"),
    ("pinned", "pinned_bytes"),
    ("peak pinned", "peak_pinned_bytes"),
)


def main(argv=None, console: Console | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    counts = [int(a) for a in argv] or [1000, 10_000]
    console = console or Console()
    table = Table(title=f"registrations after N rendezvous messages ({DEVICE}, 2 ranks)")
    for header in ("mpi_leave_pinned", "messages", "rank", *(h for h, _ in _COLUMNS)):
        table.add_column(header, justify="right")
    for mode in MODES:
        for n in counts:
            for r in measure(n, mode):
                table.add_row(
                    mode, f"{n:,}", str(r.rank), *(f"{getattr(r, f):,}" for _, f in _COLUMNS)
                )
    console.print(table)


if __name__ == "__main__":
    main()
