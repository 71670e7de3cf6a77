"""Memory registrations of the rendezvous protocol and the registration cache (Open MPI's
rcache/grdma). Without mpi_leave_pinned every transfer registers its buffers and releases
them at FIN; with it (the default: auto means on, as Open MPI 4.1 decides with working
memory hooks) a buffer reused for many messages is registered once, and a registration
whose memory the program frees is released."""

import gc
import io
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner

from pyopenib.apps.run_command import openib_btls
from pyopenib.apps.stats import registration_rows
from pyopenib.btl.rcache import RegistrationCache, memory_owner
from pyopenib.btl.registrations import RegistrationCounts
from pyopenib.cli import main
from pyopenib.config import effective_settings, load_mca
from pyopenib.hw import get_device_model
from pyopenib.mpi import run_job
from pyopenib.sim import Simulator
from pyopenib.verbs import Access, open_devices

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


def _run(tmp_path, messages: int, mca=(), ppn: int = 1):
    prog = tmp_path / "rndv.py"
    prog.write_text(textwrap.dedent(_PROGRAM.format(messages=messages)))
    kept = []
    make = openib_btls("mellanox-hermon", list(mca), ppn)

    def make_btls(sim, nprocs):
        btls = make(sim, nprocs)
        kept.extend(btls)
        return btls

    err = io.StringIO()
    result = run_job(str(prog), 2, make_btls, stdout=io.StringIO(), stderr=err)
    assert result.exit_code == 0, err.getvalue()
    return registration_rows(kept)


_OFF = [("mpi_leave_pinned", "0")]


@pytest.mark.parametrize("messages", [1, 20])
def test_without_leave_pinned_each_transfer_registers_and_releases_its_buffers(tmp_path, messages):
    rows = _run(tmp_path, messages, _OFF)
    assert [r.rank for r in rows] == [0, 1]
    for r in rows:
        # two rendezvous transfers per iteration, each registered once on this side
        assert r.registered - r.held == 2 * messages
        assert r.deregistered == 2 * messages
        assert r.held <= 1  # the eager-RDMA ring to the one peer, if it was opened
        assert r.cached == 0 and r.hits == 0
    assert rows[0].pinned_bytes == rows[1].pinned_bytes  # one ring each way, same size


@pytest.mark.parametrize("mca", [_OFF, []], ids=["leave_pinned=0", "default"])
def test_pinned_memory_does_not_grow_with_the_number_of_messages(tmp_path, mca):
    few, many = _run(tmp_path, 20, mca), _run(tmp_path, 60, mca)  # both past the ring threshold
    for a, b in zip(few, many, strict=True):
        assert b.peak_pinned_bytes == a.peak_pinned_bytes
        assert b.pinned_bytes == a.pinned_bytes
        assert b.held == a.held


def test_leave_pinned_registers_a_reused_buffer_once_and_releases_freed_memory(tmp_path):
    """The default (auto = on): the reused Send/Recv buffer is one registration on each
    side, found again for every later message; the pickled messages' memory is freed
    after each message, so their registrations do not stay."""
    messages = 20
    sender, receiver = _run(tmp_path, messages)
    for r in (sender, receiver):
        assert r.hits == messages - 1  # the buffer, after its first message
        assert r.cached == 1  # the buffer's registration, kept pinned for the next one
        assert r.held == 2  # ... and the eager-RDMA ring
    # a pickled send's bytes cannot be watched for their free: registered per message
    assert sender.misses == messages + 1 + 1  # pickles, the buffer, the ring
    assert sender.deregistered == messages and sender.invalidated == 0
    # the receiver's pickled-message buffers are numpy arrays the program drops
    assert receiver.invalidated == messages
    assert receiver.deregistered == messages


def test_grdma_print_stats_prints_each_process_counters_after_run(tmp_path):
    prog = tmp_path / "rndv.py"
    prog.write_text(textwrap.dedent(_PROGRAM.format(messages=3)))
    env = {"OMPI_MCA_rcache_grdma_print_stats": "1", "HOME": str(tmp_path)}
    result = CliRunner().invoke(main, ["run", "-n", "2", str(prog)], env=env)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "grdma: stats" in line]
    # the buffer: 1 miss, 2 hits; 3 pickles; no eager-RDMA ring yet; the buffer stays
    assert lines == [
        f"[[1,1],{rank}] grdma: stats (hit/miss/found/not found/evicted/tree size): 2/4/0/0/0/1"
        for rank in (0, 1)
    ]


def test_leave_pinned_can_be_turned_on_by_the_pipeline_variant_or_its_synonym(tmp_path):
    ctx = load_mca(environ={"OMPI_MCA_mpi_leave_pinned_pipeline": "1"})
    model = get_device_model("mellanox-hermon")
    on = effective_settings(ctx, model.vendor_id[0], model.vendor_part_ids[0])
    assert on.leave_pinned and "mpi_leave_pinned_pipeline" in on.origins["leave_pinned"]
    ctx = load_mca(environ={"OMPI_MCA_opal_leave_pinned": "0"})
    off = effective_settings(ctx, model.vendor_id[0], model.vendor_part_ids[0])
    assert not off.leave_pinned
    both = load_mca(cli_pairs=[("mpi_leave_pinned", "1"), ("mpi_leave_pinned_pipeline", "1")])
    settings = effective_settings(both, model.vendor_id[0], model.vendor_part_ids[0])
    assert settings.leave_pinned
    assert any("cannot set both" in note for note in settings.notes)


# -- the cache on its own ----------------------------------------------------------------


def _cache(leave_pinned=True, limit=None):
    ctx = open_devices(Simulator(), [get_device_model("mellanox-hermon")])[0]
    access = Access.LOCAL_WRITE | Access.REMOTE_WRITE
    counts = RegistrationCounts()
    return RegistrationCache(ctx.alloc_pd(), access, counts, leave_pinned, limit), counts, ctx


def test_a_range_inside_a_registration_is_a_hit_with_its_own_address():
    cache, counts, _ = _cache()
    memory = np.zeros(1 << 16, np.uint8)
    whole = cache.register(memory)
    part = cache.register(memory[4096:8192])
    assert (cache.stats.hits, cache.stats.misses, counts.registered) == (1, 1, 1)
    assert part.registration is whole.registration
    assert part.key >> 24 == (whole.key >> 24) + 4096  # the peer writes at the part's start
    assert part.mr.lkey == whole.mr.lkey
    cache.release(part)
    cache.release(whole)
    assert cache.unused == 1 and counts.live == 1  # leave_pinned: kept for the next one
    again = cache.register(memory)
    assert again.registration is whole.registration and cache.unused == 0


def test_rdma_through_a_hit_lands_in_the_program_memory():
    cache, _, ctx = _cache()
    memory = np.zeros(8192, np.uint8)
    cache.release(cache.register(memory))
    handle = cache.register(memory[100:200])
    mr = ctx.nic.memory.mpt[handle.mr.lkey]
    offset = handle.mr.addr - mr.addr
    mr.buffer[offset : offset + 3] = (7, 8, 9)  # what the NIC does for an RDMA write
    assert list(memory[100:103]) == [7, 8, 9]


def test_without_leave_pinned_the_last_release_deregisters_but_concurrent_uses_share():
    cache, counts, ctx = _cache(leave_pinned=False)
    memory = np.zeros(1 << 16, np.uint8)
    a, b = cache.register(memory), cache.register(memory)  # two transfers of one buffer
    assert counts.registered == 1 and cache.stats.hits == 1  # grdma finds it in its tree
    cache.release(a)
    assert counts.live == 1
    cache.release(b)
    assert counts.live == 0 and cache.unused == 0 and ctx.nic.memory.mpt == {}


def test_freeing_the_memory_invalidates_its_unused_registration():
    cache, counts, ctx = _cache()
    memory = np.zeros(1 << 16, np.uint8)
    view = memory[10:]
    cache.release(cache.register(view))
    assert cache.unused == 1 and memory_owner(view) is memory
    del memory, view
    gc.collect()
    assert cache.unused == 0 and counts.live == 0 and cache.stats.invalidated == 1
    assert ctx.nic.memory.mpt == {}


def test_memory_in_use_stays_alive_and_registered():
    cache, counts, _ = _cache()
    handle = cache.register(np.zeros(4096, np.uint8))  # the only reference: the transfer's
    gc.collect()
    assert counts.live == 1 and handle.buffer.nbytes == 4096
    cache.release(handle)
    del handle
    gc.collect()
    assert counts.live == 0 and cache.stats.invalidated == 1


def test_memory_freed_after_its_registration_was_released_is_deregistered_once():
    cache, counts, ctx = _cache(leave_pinned=False)
    handle = cache.register(np.zeros(4096, np.uint8))  # only the transfer holds it
    cache.release(handle)
    del handle
    gc.collect()
    assert (counts.registered, counts.deregistered, cache.stats.invalidated) == (1, 1, 0)
    assert ctx.nic.memory.mpt == {}


def test_bytes_cannot_be_watched_so_they_are_never_kept_unused():
    cache, counts, _ = _cache()
    data = np.frombuffer(bytes(20000), np.uint8)
    cache.release(cache.register(data))
    assert counts.live == 0 and cache.unused == 0


def test_the_registration_budget_evicts_unused_registrations_oldest_first():
    cache, counts, _ = _cache(limit=3 * 4096)
    arrays = [np.zeros(4096, np.uint8) for _ in range(4)]
    for a in arrays[:3]:
        cache.release(cache.register(a))
    assert counts.pinned_bytes == 3 * 4096 and cache.unused == 3
    busy = cache.register(arrays[1])  # in use again: not evictable
    cache.register(arrays[3])
    assert cache.stats.evicted == 1 and counts.pinned_bytes == 3 * 4096
    cache.register(arrays[0])  # evicted (the oldest unused): a miss, and room made again
    assert (cache.stats.misses, cache.stats.evicted) == (5, 2)
    assert busy.registration.ref_count == 1 and counts.pinned_bytes == 3 * 4096
