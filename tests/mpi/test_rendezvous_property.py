"""Received bytes are right at every offset and size whichever rendezvous protocol a
message takes: hypothesis draws the protocol limits (pipeline sizes and depths, small
so that one message crosses many FRAGs and pieces), the message sizes, the receive
buffers (larger than the message or not) and the direction of each message, runs them
over the test loopback BTL with those limits, and checks the bytes, the counts, and
that every registration was released."""

import io
import json
import textwrap

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyopenib.btl.interface import RendezvousLimits
from pyopenib.mpi import run_job

from .loopback_btl import LoopbackFabric

_PROGRAM = """
import json, sys
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
reqs, checks = [], []
for k, (sender, n, room) in enumerate(json.loads(sys.argv[1])):
    if rank == sender:
        data = ((np.arange(n) * 31 + k) % 251).astype(np.uint8)
        reqs.append(comm.Isend(data, dest=1 - rank, tag=k))
        checks.append(data)  # keep it alive until the send completes
    else:
        buf = np.zeros(room, np.uint8)
        status = MPI.Status()
        reqs.append(comm.Irecv(buf, source=1 - rank, tag=k))
        checks.append((buf, n, status))
MPI.Request.Waitall(reqs)
for k, item in enumerate(checks):
    if isinstance(item, tuple):
        buf, n, _ = item
        expected = ((np.arange(n) * 31 + k) % 251).astype(np.uint8)
        assert (buf[:n] == expected).all() and not buf[n:].any(), k
print("ok")
"""

_limits = st.builds(
    RendezvousLimits,
    leave_pinned=st.booleans(),
    min_rdma_pipeline_size=st.integers(4096, 40000),
    rdma_pipeline_send_length=st.integers(0, 30000),
    rdma_pipeline_frag_size=st.integers(0, 20000),
    send_pipeline_depth=st.integers(1, 4),
    recv_pipeline_depth=st.integers(1, 4),
)
_message = st.tuples(st.integers(0, 1), st.integers(4000, 90000), st.integers(0, 50000))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(limits=_limits, messages=st.lists(_message, min_size=1, max_size=6))
def test_every_protocol_delivers_every_byte_and_releases_every_registration(
    tmp_path, limits, messages
):
    plan = [(sender, n, n + extra) for sender, n, extra in messages]
    prog = tmp_path / "rndv.py"
    prog.write_text(textwrap.dedent(_PROGRAM))
    fabrics = []

    def make_btls(sim, nprocs):
        fabric = LoopbackFabric(sim, nprocs)
        for btl in fabric.modules:
            btl.rendezvous_limits = lambda peer: limits
        fabrics.append(fabric)
        return fabric.modules

    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(prog), 2, make_btls, [json.dumps(plan)], stdout=out, stderr=err)
    assert result.exit_code == 0, err.getvalue()
    assert out.getvalue().split() == ["ok", "ok"]
    assert fabrics[0].memory == {}  # every piece and buffer registered was released
