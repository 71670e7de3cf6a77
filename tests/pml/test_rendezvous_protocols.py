"""ob1's rendezvous protocols as Open MPI 4.1 chooses them (``pml/pipeline.py``): which
protocol each size takes with and without leave_pinned, how many copy-in/out fragments
and RDMA-pipeline pieces it moves, the two pipeline depths, and that every registration
is released. Mechanisms and counts, never timings.

The openib BTL on the Chelsio T3 with its two per-peer queues: eager_limit 12288, so an
RTS carries 12288 - 36 = 12252 bytes; max_send_size 65536, so a FRAG carries 65516;
min_rdma_pipeline_size is raised to 12288 + 1 MiB = 1060864."""

import io
import textwrap
from collections import Counter

import pytest

from pyopenib.apps.run_command import openib_btls
from pyopenib.apps.stats import registration_rows
from pyopenib.btl.interface import RendezvousLimits
from pyopenib.mpi import run_job
from pyopenib.pml import pipeline
from pyopenib.pml.pipeline import copy_offset, sender_pins

T3_QUEUES = "P,128,256,192,128:P,65536,256,192,128"
MIB = 1 << 20
RTS = 12288 - 36
FRAG = 65536 - 20
MIN_PIPELINE = 12288 + MIB

STOCK = RendezvousLimits(False, MIN_PIPELINE, MIB, MIB, 3, 4)


@pytest.mark.parametrize(
    "total,pins",
    [(65536, True), (MIN_PIPELINE, True), (MIN_PIPELINE + 1, False), (4 * MIB, False)],
)
def test_without_leave_pinned_a_sender_registers_only_up_to_min_rdma_pipeline_size(total, pins):
    assert sender_pins(STOCK, total) is pins
    assert sender_pins(STOCK._replace(leave_pinned=True), total)
    assert sender_pins(None, total)  # a BTL that needs no registration (sm)


def test_where_copy_in_out_starts_when_not_both_registered():
    # at most min_rdma_pipeline_size (the receive buffer too large to register): all
    assert copy_offset(STOCK, MIB, RTS) == RTS
    # above: the last rdma_pipeline_send_length bytes by copy, the pipeline before them
    assert copy_offset(STOCK, 4 * MIB, RTS) == 3 * MIB
    # just above: the copy would reach back past the RTS; it starts after it
    assert copy_offset(STOCK, MIN_PIPELINE + 1, RTS) == 12289
    assert copy_offset(STOCK._replace(rdma_pipeline_send_length=2 * MIB), 2 * MIB, RTS) == RTS
    # no copy length: the pipeline moves everything after the RTS
    assert copy_offset(STOCK._replace(rdma_pipeline_send_length=0), 2 * MIB, RTS) == 2 * MIB


_PROGRAM = """
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
for n, room in {messages}:
    if rank == 0:
        comm.Send((np.arange(n) % 251).astype(np.uint8), dest=1)
    else:
        buf = np.zeros(room, np.uint8)
        status = MPI.Status()
        comm.Recv(buf, source=0, status=status)
        assert status.Get_count(MPI.BYTE) == n
        assert (buf[:n] == (np.arange(n) % 251).astype(np.uint8)).all(), n
"""


def _run(tmp_path, monkeypatch, messages, mca=()):
    """Run rank 0 -> 1 sends of ``messages`` ((size, receive buffer size) pairs); returns
    FRAGs and PUTs per message size, the deepest copy-in/out and RDMA-pipeline queues
    seen, and the registration rows."""
    frags, puts, depth = Counter(), Counter(), Counter()
    on_frag, on_put = pipeline.RendezvousPaths.on_frag, pipeline.RendezvousPaths.on_put
    schedule_copy = pipeline.RendezvousPaths._schedule_copy
    schedule_puts = pipeline.RendezvousPaths._schedule_puts

    def count_frag(self, req, offset, payload):
        frags[req.sent] += 1
        on_frag(self, req, offset, payload)

    def count_put(self, req, recv_id, key, offset, n):
        puts[len(req.data)] += 1
        on_put(self, req, recv_id, key, offset, n)

    def watch_copy(self, req):
        schedule_copy(self, req)
        depth["copy"] = max(depth["copy"], req.copy.in_flight)

    def watch_puts(self, req, limits):
        schedule_puts(self, req, limits)
        depth["pipeline"] = max(depth["pipeline"], len(req.pipeline.pieces))

    monkeypatch.setattr(pipeline.RendezvousPaths, "on_frag", count_frag)
    monkeypatch.setattr(pipeline.RendezvousPaths, "on_put", count_put)
    monkeypatch.setattr(pipeline.RendezvousPaths, "_schedule_copy", watch_copy)
    monkeypatch.setattr(pipeline.RendezvousPaths, "_schedule_puts", watch_puts)
    prog = tmp_path / "sizes.py"
    prog.write_text(textwrap.dedent(_PROGRAM.format(messages=list(messages))))
    kept = []
    make = openib_btls("chelsio-t3", [("btl_openib_receive_queues", T3_QUEUES), *mca], 1)

    def make_btls(sim, nprocs):
        btls = make(sim, nprocs)
        kept.extend(btls)
        return btls

    err = io.StringIO()
    result = run_job(str(prog), 2, make_btls, stdout=io.StringIO(), stderr=err)
    assert result.exit_code == 0, err.getvalue()
    return frags, puts, depth, registration_rows(kept)


SIZES = [65536, 262144, MIB, MIN_PIPELINE, MIN_PIPELINE + 1, 2 * MIB, 4 * MIB]


def test_without_leave_pinned_large_messages_end_by_copy_in_out_after_the_rdma_pipeline(
    tmp_path, monkeypatch
):
    frags, puts, depth, rows = _run(
        tmp_path, monkeypatch, [(n, n) for n in SIZES], [("mpi_leave_pinned", "0")]
    )
    tail = -(-MIB // FRAG)  # 17 FRAGs carry the last MiB
    # up to min_rdma_pipeline_size: RDMA from both registered buffers, no FRAG, no PUT
    assert frags == {MIN_PIPELINE + 1: tail, 2 * MIB: tail, 4 * MIB: tail}
    # the pipeline covers the bytes between the RTS and the tail in 1 MiB pieces
    assert puts == {MIN_PIPELINE + 1: 1, 2 * MIB: 1, 4 * MIB: 3}
    assert depth["copy"] == tail  # not throttled: the ACK did not say NORDMA
    assert depth["pipeline"] == 3  # all three pieces asked for at once (depth 4)
    for row in rows:  # every registration released (the eager-RDMA ring aside)
        assert row.registered - row.deregistered == row.held <= 1 and row.cached == 0


def test_with_leave_pinned_every_rendezvous_goes_by_rdma(tmp_path, monkeypatch):
    frags, puts, _, _ = _run(tmp_path, monkeypatch, [(n, n) for n in SIZES])  # auto: on
    assert not frags and not puts


def test_a_receive_buffer_too_large_to_register_takes_copy_in_out_throttled(tmp_path, monkeypatch):
    frags, puts, depth, _ = _run(
        tmp_path, monkeypatch, [(MIB, 4 * MIB)], [("mpi_leave_pinned", "0")]
    )
    assert frags == {MIB: -(-(MIB - RTS) // FRAG)} and not puts
    assert depth["copy"] == 3  # pml_ob1_send_pipeline_depth


def test_the_pipeline_depths_are_read_from_their_variables(tmp_path, monkeypatch):
    mca = [
        ("mpi_leave_pinned", "0"),
        ("pml_ob1_send_pipeline_depth", "2"),
        ("pml_ob1_recv_pipeline_depth", "2"),
        ("btl_openib_rdma_pipeline_frag_size", "256k"),
    ]
    frags, puts, depth, _ = _run(tmp_path, monkeypatch, [(MIB, 4 * MIB), (4 * MIB, 4 * MIB)], mca)
    assert depth == {"copy": 17, "pipeline": 2}  # the pipelined 4 MiB's tail is unthrottled
    assert puts == {4 * MIB: -(-(3 * MIB - RTS) // (256 << 10))}
    frags2, _, depth2, _ = _run(tmp_path, monkeypatch, [(MIB, 4 * MIB)], mca)
    assert depth2["copy"] == 2 and frags2 == {MIB: 16}


def test_leave_pinned_pipeline_keeps_the_pipelined_protocols(tmp_path, monkeypatch):
    frags, puts, _, _ = _run(
        tmp_path, monkeypatch, [(4 * MIB, 4 * MIB)] * 2, [("mpi_leave_pinned_pipeline", "1")]
    )
    assert frags == {4 * MIB: 34} and puts == {4 * MIB: 6}
