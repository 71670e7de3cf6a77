"""Rendezvous registrations are released when their transfer is over (ob1 without
mpi_leave_pinned): after many large messages only the eager-RDMA rings stay pinned."""

import io
import textwrap

import pytest

from pyopenib.apps.run_command import openib_btls
from pyopenib.apps.stats import registration_rows
from pyopenib.mpi import run_job

_PROGRAM = """
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
buf = np.zeros(256 * 1024, dtype=np.uint8)
for i in range({messages}):
    if rank == 0:
        comm.send(bytes(200 * 1024), dest=1)
        buf[:] = i % 251
        comm.Send(buf, dest=1)
    else:
        assert len(comm.recv(source=0)) == 200 * 1024
        comm.Recv(buf, source=0)
        assert (buf == i % 251).all()
"""


def _run(tmp_path, messages: int, ppn: int = 1):
    prog = tmp_path / "rndv.py"
    prog.write_text(textwrap.dedent(_PROGRAM.format(messages=messages)))
    kept = []
    make = openib_btls("mellanox-hermon", [], ppn)

    def make_btls(sim, nprocs):
        btls = make(sim, nprocs)
        kept.extend(btls)
        return btls

    err = io.StringIO()
    result = run_job(str(prog), 2, make_btls, stdout=io.StringIO(), stderr=err)
    assert result.exit_code == 0, err.getvalue()
    return registration_rows(kept)


@pytest.mark.parametrize("messages", [1, 20])
def test_only_the_eager_rdma_rings_stay_registered_after_rendezvous_traffic(tmp_path, messages):
    rows = _run(tmp_path, messages)
    assert [r.rank for r in rows] == [0, 1]
    for r in rows:
        # two rendezvous transfers per iteration, each registered once on this side
        assert r.registered - r.held == 2 * messages
        assert r.deregistered == 2 * messages
        assert r.held <= 1  # the eager-RDMA ring to the one peer, if it was opened
    assert rows[0].pinned_bytes == rows[1].pinned_bytes  # one ring each way, same size


def test_pinned_memory_does_not_grow_with_the_number_of_messages(tmp_path):
    few, many = _run(tmp_path, 20), _run(tmp_path, 60)  # both past the eager-RDMA threshold
    for a, b in zip(few, many, strict=True):
        assert b.peak_pinned_bytes == a.peak_pinned_bytes
        assert b.pinned_bytes == a.pinned_bytes
