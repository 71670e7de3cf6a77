"""One-sided communication (``MPI.Win`` over ``pml.osc``): results of every call under every
synchronisation mode equal real Open MPI + mpi4py's, the bytes travel as RDMA WRITE/READ
on the openib BTL, and RMA calls outside an epoch fail as Open MPI's do."""

import io
import textwrap

import pytest

from pyopenib.apps.stats import job_stats
from pyopenib.mpi import run_job
from pyopenib.sim import Tracer, make_simulator

from .loopback_btl import make_loopback_btls
from .test_mpi_differential import PROGRAMS, _our_output, _real_output


def _openib(device="mellanox-hermon", ppn=1):
    from pyopenib.apps.run_command import openib_btls

    return openib_btls(device, (), ppn)


def _run(tmp_path, source: str, nprocs: int, make_btls=None, ppn: int = 1, sim=None):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(source))
    out, err = io.StringIO(), io.StringIO()
    make_btls = make_btls or _openib(ppn=ppn)
    result = run_job(str(prog), nprocs, make_btls, stdout=out, stderr=err, ppn=ppn, sim=sim)
    return result, out.getvalue(), err.getvalue()


# -- differential: the same final window contents as real Open MPI ----------------------
@pytest.mark.parametrize(
    "nprocs,ppn,device",
    [(3, 1, "mellanox-hermon"), (4, 2, "chelsio-t3")],
    ids=["n3-openib-hermon", "n4-ppn2-sm+openib-t3"],
)
def test_every_rma_call_and_sync_mode_ends_with_real_open_mpis_window_contents(nprocs, ppn, device):
    path = PROGRAMS / "rma_modes.py"
    real = _real_output(path, nprocs)
    ours = _our_output(path, nprocs, _openib(device, ppn))
    assert ours == real
    assert len(ours[0]) >= 15  # every phase printed


def test_rma_results_do_not_depend_on_timing_over_the_loopback_btl():
    """The loopback BTL lets a large message overtake a small one: accumulates must still
    apply in issue order, lock grants and PSCW counts still hold."""
    path = PROGRAMS / "rma_modes.py"
    assert _our_output(path, 3, make_loopback_btls) == _our_output(path, 3, _openib())


# -- the transport -----------------------------------------------------------------------
def test_put_and_get_travel_as_rdma_write_and_read_on_the_last_qp(tmp_path):
    tracer = Tracer()
    sim = make_simulator(0, tracer=tracer)
    btls = []
    inner = _openib()

    def make_btls(sim, nprocs):
        btls.extend(inner(sim, nprocs))
        return btls

    result, out, err = _run(
        tmp_path,
        """
        import numpy as np
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        mem = np.zeros(1024, "u1")
        win = MPI.Win.Create(mem, comm=comm)
        win.Fence()
        if comm.rank == 0:
            win.Put(np.full(1000, 7, "u1"), 1)
            win.Put(np.full(10, 8, "u1"), 1, 1000)
        win.Fence()
        got = np.zeros(8, "u1")
        if comm.rank == 1:
            win.Get(got, 0)
        win.Fence()
        print(comm.rank, int(mem.sum()), int(got.sum()))
        win.Free()
        """,
        2,
        make_btls,
        sim=sim,
    )
    assert result.exit_code == 0, err
    assert sorted(out.splitlines()) == ["0 0 0", "1 7080 0"]
    emitted = [dict(f) for _, layer, kind, _, f in tracer.events if kind == "send_emit"]
    writes = [e for e in emitted if e["op"] == "RDMA_WRITE"]
    reads = [e for e in emitted if e["op"] == "RDMA_READ"]
    assert len(writes) == 2 and len(reads) == 1
    rows = job_stats(btls)
    last_qp = max(r.qp for r in rows)
    assert {r.rank: r.rdma_ops for r in rows if r.qp == last_qp} == {0: 2, 1: 1}


def test_a_large_accumulate_is_cut_into_active_messages_and_applied_whole(tmp_path):
    result, out, err = _run(
        tmp_path,
        """
        import numpy as np
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        n = 20000  # 80 KB of int32: many eager-sized active messages
        mem = np.zeros(n, "i4")
        win = MPI.Win.Create(mem, 4, comm=comm)
        old = np.zeros(n, "i4")
        win.Fence()
        win.Accumulate(np.arange(n, dtype="i4"), 0, 0, MPI.SUM)
        win.Fence()
        if comm.rank == 1:
            win.Get_accumulate(np.ones(n, "i4"), old, 0, 0, MPI.SUM)
        win.Fence()
        if comm.rank == 0:
            print(bool((mem == 2 * np.arange(n) + 1).all()))
        if comm.rank == 1:
            print(bool((old == 2 * np.arange(n)).all()))
        win.Free()
        """,
        2,
    )
    assert result.exit_code == 0, err
    assert out.splitlines() == ["True", "True"]


# -- epochs and errors -------------------------------------------------------------------
def test_rma_calls_outside_their_epoch_fail_with_open_mpis_error_classes(tmp_path):
    result, out, err = _run(
        tmp_path,
        """
        import numpy as np
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(64, 4, comm=comm)
        one = np.zeros(1, "i4")

        def code(call):
            try:
                call()
            except MPI.Exception as exc:
                return exc.Get_error_class()
            return 0

        checks = {
            "put-before-fence": code(lambda: win.Put(one, 1 - comm.rank)),
            "acc-before-fence": code(lambda: win.Accumulate(one, 0, 0, MPI.SUM)),
            "complete-without-start": code(win.Complete),
            "wait-without-post": code(win.Wait),
            "flush-without-lock": code(lambda: win.Flush(0)),
            "unlock-all-without-lock": code(win.Unlock_all),
            "bad-lock-type": code(lambda: win.Lock(0, 99)),
            "bad-rank": code(lambda: win.Lock(5)),
        }
        win.Lock(0)
        checks["lock-twice"] = code(lambda: win.Lock(0))
        checks["fence-in-lock"] = code(win.Fence)
        checks["past-the-end"] = code(lambda: win.Put(np.zeros(20, "i4"), 0, 10))
        checks["band-on-float"] = code(lambda: win.Accumulate(np.zeros(1, "f4"), 0, 0, MPI.BAND))
        user_op = MPI.Op.Create(lambda a, b, t: None, commute=True)
        checks["user-op"] = code(lambda: win.Accumulate(np.zeros(1, "i4"), 0, 0, user_op))
        user_op.Free()
        win.Unlock(0)
        checks["proc-null"] = code(lambda: win.Put(one, MPI.PROC_NULL))
        checks["null-window"] = code(MPI.WIN_NULL.Fence)
        win.Free()
        for name in sorted(checks):
            print(comm.rank, name, checks[name])
        """,
        2,
    )
    assert result.exit_code == 0, err
    codes = dict(
        line.split(" ", 1)[1].rsplit(" ", 1) for line in out.splitlines() if line[0] == "0"
    )
    assert codes == {
        "put-before-fence": "47",
        "acc-before-fence": "47",
        "complete-without-start": "47",
        "wait-without-post": "47",
        "flush-without-lock": "47",
        "unlock-all-without-lock": "47",
        "bad-lock-type": "37",
        "bad-rank": "6",
        "lock-twice": "47",
        "fence-in-lock": "47",
        "past-the-end": "68",
        "band-on-float": "10",
        "user-op": "10",
        "proc-null": "0",
        "null-window": "53",
    }


def test_window_attributes_name_and_flavors(tmp_path):
    result, out, err = _run(
        tmp_path,
        """
        import numpy as np
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        mem = bytearray(40)
        win = MPI.Win.Create(mem, 4, comm=comm)
        base, size, unit = win.attrs
        print(size, unit, base == np.frombuffer(mem, "u1").ctypes.data)
        print(win.Get_attr(MPI.WIN_CREATE_FLAVOR) == MPI.WIN_FLAVOR_CREATE,
              win.Get_attr(MPI.WIN_MODEL) == MPI.WIN_UNIFIED, repr(win.Get_name()))
        win.Set_name("mywin")
        print(win.name, len(win.tomemory()), win.tomemory().format)
        win.Free()
        print(win == MPI.WIN_NULL, MPI.WIN_NULL.Get_name())
        for make, flavor in ((lambda: MPI.Win.Allocate(8, comm=comm), MPI.WIN_FLAVOR_ALLOCATE),
                             (lambda: MPI.Win.Create_dynamic(comm=comm), MPI.WIN_FLAVOR_DYNAMIC)):
            w = make()
            print(w.flavor == flavor, w.Get_attr(MPI.WIN_SIZE))
            w.Free()
        """,
        1,
    )
    assert result.exit_code == 0, err
    assert out.splitlines() == [
        "40 4 True",
        "True True ''",
        "mywin 40 B",
        "True MPI_WIN_NULL",
        "True 8",
        "True 0",
    ]


SHARED = """
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
try:
    win = MPI.Win.Allocate_shared(4 * (comm.rank + 1), 4, comm=comm)
except MPI.Exception as exc:
    print(comm.rank, "refused", exc.Get_error_class() == MPI.ERR_RMA_SHARED)
else:
    mine = np.frombuffer(win.tomemory(), "i4")
    win.Fence()
    mine[:] = comm.rank + 1
    win.Fence()
    views = [np.frombuffer(win.Shared_query(r)[0], "i4").tolist() for r in range(comm.size)]
    print(comm.rank, "views", views)
    win.Fence()
    win.Accumulate(np.array([10], "i4"), comm.size - 1, 0, MPI.SUM)
    win.Fence()
    print(comm.rank, "last", np.frombuffer(win.Shared_query(comm.size - 1)[0], "i4").tolist())
    win.Free()
"""


def test_allocate_shared_gives_the_ranks_of_a_node_one_segment(tmp_path):
    result, out, err = _run(tmp_path, SHARED, 2, ppn=2)
    assert result.exit_code == 0, err
    assert sorted(out.splitlines()) == [
        "0 last [22, 2]",
        "0 views [[1], [2, 2]]",
        "1 last [22, 2]",
        "1 views [[1], [2, 2]]",
    ]


def test_allocate_shared_across_nodes_is_refused_as_open_mpi_does(tmp_path):
    result, out, err = _run(tmp_path, SHARED, 2, ppn=1)
    assert result.exit_code == 0, err
    assert sorted(out.splitlines()) == ["0 refused True", "1 refused True"]


def test_dynamic_window_put_to_an_unattached_address_fails_with_rma_range(tmp_path):
    result, out, err = _run(
        tmp_path,
        """
        import numpy as np
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        win = MPI.Win.Create_dynamic(comm=comm)
        region = np.zeros(4, "i8")
        win.Attach(region)
        address = comm.bcast(region.ctypes.data, root=1)
        win.Lock(1)
        if comm.rank == 0:
            win.Put(np.array([42], "i8"), 1, address + 8)
            win.Flush(1)
            try:
                win.Put(np.array([1], "i8"), 1, address + 64)
                win.Flush(1)
            except MPI.Exception as exc:
                print("range", exc.Get_error_class() == MPI.ERR_RMA_RANGE)
        win.Unlock(1)
        comm.Barrier()
        if comm.rank == 1:
            print(region.tolist())
        win.Detach(region)
        try:
            win.Detach(region)
        except MPI.Exception as exc:
            print("detach-again", exc.Get_error_class() == MPI.ERR_RMA_ATTACH)
        comm.Barrier()
        win.Free()
        """,
        2,
    )
    assert result.exit_code == 0, err
    lines = out.splitlines()
    assert "range True" in lines and "[0, 42, 0, 0]" in lines
    assert lines.count("detach-again True") == 2


def test_freed_windows_and_detached_regions_release_their_registrations(tmp_path):
    btls = []
    inner = _openib()

    def make_btls(sim, nprocs):
        btls.extend(inner(sim, nprocs))
        return btls

    source = """
        import numpy as np
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        for i in range({windows}):
            win = MPI.Win.Allocate(4096, comm=comm)
            win.Fence()
            win.Put(np.full(64, i, "u1"), 1 - comm.rank)
            win.Fence()
            win.Free()
            dyn = MPI.Win.Create_dynamic(comm=comm)
            region = np.zeros(256, "u1")
            dyn.Attach(region)
            dyn.Detach(region)
            dyn.Free()
        """
    pinned = []
    for windows in (2, 40):
        btls.clear()
        result, out, err = _run(tmp_path, source.format(windows=windows), 2, make_btls)
        assert result.exit_code == 0, err
        pinned.append([(b.registrations.live, b.registrations.pinned_bytes) for b in btls])
    assert pinned[0] == pinned[1]  # 38 more windows and regions: nothing more held


def test_epoch_ends_are_acknowledged_before_a_barrier_can_overtake_them(tmp_path):
    """After enough traffic the PML's barrier rides an eager-RDMA ring, which may overtake
    the osc's messages: an UNLOCK must not reach a freed window, and a target's Test after
    the barrier that follows the origin's Complete must see the epoch over."""
    result, out, err = _run(
        tmp_path,
        """
        import numpy as np
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        group = comm.Get_group()
        peer = group.Incl([1 - comm.rank])
        over = []
        for i in range(30):
            win = MPI.Win.Allocate(64, comm=comm)
            win.Lock(1 - comm.rank, MPI.LOCK_SHARED)
            win.Put(np.full(8, i, "u1"), 1 - comm.rank)
            win.Unlock(1 - comm.rank)
            if comm.rank == 0:
                win.Start(peer)
                comm.Barrier()
                win.Complete()
                comm.Barrier()
            else:
                win.Post(peer)
                comm.Barrier()
                comm.Barrier()
                over.append(win.Test())
            win.Free()
        print(comm.rank, all(over))
        """,
        2,
    )
    assert result.exit_code == 0, err
    assert sorted(out.splitlines()) == ["0 True", "1 True"]
