"""Point-to-point as mpi4py 4.1 over Open MPI 4.1's ob1: each send mode, buffered sends,
matched probes, cancel, persistent / generalized / partitioned requests, the Wait/Test
families with their statuses, Status, argument checks and mpi4py.util.pkl5."""

import io
import textwrap

from pyopenib.mpi import run_job

from .loopback_btl import make_loopback_btls

PRELUDE = """
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank = comm.rank
peer = 1 - rank
def err(call):
    try:
        call()
    except MPI.Exception as exc:
        return exc.Get_error_class()
    except (TypeError, OverflowError, ValueError) as exc:
        return type(exc).__name__
    return "ok"
"""


def _run(tmp_path, source, nprocs=2) -> list[str]:
    """Rank 0's output lines (the job must succeed)."""
    prog = tmp_path / "prog.py"
    prog.write_text(PRELUDE + textwrap.dedent(source))
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(prog), nprocs, make_loopback_btls, tag_output=True, stdout=out, stderr=err)
    assert result.exit_code == 0, err.getvalue()
    prefix = "[1,0]<stdout>:"
    return [line[len(prefix) :] for line in out.getvalue().splitlines() if line.startswith(prefix)]


def test_waitall_fills_the_statuses_list_it_is_given(tmp_path):
    out = _run(
        tmp_path,
        """
        bufs = [np.zeros(2, "i") for _ in range(3)]
        reqs = [comm.Irecv(bufs[i], peer, 10 + i) for i in range(3)]
        reqs += [comm.Isend(np.full(2, i, "i"), peer, 10 + i) for i in range(3)]
        statuses = []
        MPI.Request.Waitall(reqs, statuses)
        print(len(statuses), [(s.source, s.tag, s.Get_count(MPI.INT)) for s in statuses[:3]])
        """,
    )
    assert out == ["6 [(1, 10, 2), (1, 11, 2), (1, 12, 2)]"]


def test_a_synchronous_send_completes_only_once_the_receiver_matched_it(tmp_path):
    out = _run(
        tmp_path,
        """
        req = comm.Issend(np.arange(4, dtype="i"), peer, 1)
        comm.Barrier()
        before = req.Test()
        comm.Barrier()
        comm.Recv(np.zeros(4, "i"), peer, 1)
        req.Wait()
        if rank == 1:
            comm.ssend("obj", 0, 2)
        else:
            print(before, comm.recv(source=1, tag=2))
        """,
    )
    assert out == ["False obj"]


def test_buffered_sends_need_attached_room_only_above_the_eager_limit(tmp_path):
    out = _run(
        tmp_path,
        """
        big = np.zeros(100_000, "i")
        if rank == 0:
            dup = comm.Dup()
            print(err(lambda: comm.Bsend(b"tiny", 1, 0)), err(lambda: dup.Bsend(big, 1, 1)))
            MPI.Attach_buffer(bytearray(big.nbytes + MPI.BSEND_OVERHEAD))
            print(err(lambda: MPI.Attach_buffer(bytearray(1))))
            comm.Bsend(big, 1, 2)
            print(err(lambda: dup.Bsend(big, 1, 3)))
            print(len(MPI.Detach_buffer()), err(MPI.Detach_buffer))
            comm.bsend([1, 2], 1, 4)
            comm.Ibsend(np.ones(3, "i"), 1, 5).Wait()
        else:
            comm.Dup()
            comm.Recv(bytearray(4), 0, 0)
            comm.Recv(big, 0, 2)
            comm.recv(source=0, tag=4)
            comm.Recv(np.zeros(3, "i"), 0, 5)
        """,
    )
    assert out == ["ok 1", "14", "1", "400128 14"]


def test_a_matched_probe_takes_the_message_away_from_every_other_receive(tmp_path):
    out = _run(
        tmp_path,
        """
        comm.Send(np.array([1], "i"), peer, 7)
        comm.Send(np.array([2, 2], "i"), peer, 7)
        st = MPI.Status()
        m = comm.Mprobe(peer, 7, st)
        first = st.Get_count(MPI.INT)
        other = np.zeros(2, "i")
        comm.Recv(other, peer, 7)
        mine = np.zeros(1, "i")
        req = m.Irecv(mine)
        req.Wait()
        print(first, other.tolist(), mine.tolist(), m == MPI.MESSAGE_NULL, bool(req))
        comm.Barrier()
        print(comm.Improbe(peer, 8), comm.mprobe(MPI.PROC_NULL).recv())
        comm.send({"x": rank}, peer, 9)
        print(comm.mprobe(peer, 9).recv())
        """,
    )
    assert out == ["1 [2, 2] [1] True False", "None None", "{'x': 1}"]


def test_cancel_takes_an_unmatched_receive_but_never_a_send(tmp_path):
    out = _run(
        tmp_path,
        """
        r = comm.Irecv(np.zeros(1, "i"), peer, 3)
        r.Cancel()
        st = MPI.Status()
        r.Wait(st)
        print(st.Is_cancelled(), st.source, st.tag)
        s = comm.Issend(np.zeros(1, "i"), peer, 4)
        s.Cancel()
        comm.Barrier()
        st = MPI.Status()
        print(s.Get_status(st), st.Is_cancelled())
        comm.Recv(np.zeros(1, "i"), peer, 4)
        s.Wait(st)
        print(st.Is_cancelled())
        """,
    )
    assert out == ["True -1 -1", "False False", "False"]


def test_persistent_requests_go_inactive_between_starts(tmp_path):
    out = _run(
        tmp_path,
        """
        inbox = np.zeros(3, "i")
        modes = [comm.Send_init, comm.Ssend_init, comm.Rsend_init]
        for it, init in enumerate(modes):
            r = comm.Recv_init(inbox, peer, it)
            comm.Barrier()
            s = init(np.full(3, it + rank, "i"), peer, it)
            MPI.Prequest.Startall([r, s])
            MPI.Request.Waitall([r, s])
            st = MPI.Status()
            r.Wait(st)  # inactive: the empty status, at once
            print(inbox.tolist(), st.source, st.tag, bool(r), r == MPI.Prequest(r))
            r.Free()
            s.Free()
            print(r == MPI.REQUEST_NULL)
        print(MPI.Request.Waitany([comm.Send_init(b"", peer, 0)]) == MPI.UNDEFINED)
        """,
    )
    assert out == [
        "[1, 1, 1] -1 -1 True True",
        "True",
        "[2, 2, 2] -1 -1 True True",
        "True",
        "[3, 3, 3] -1 -1 True True",
        "True",
        "True",
    ]


def test_waitsome_and_testsome_give_completed_indices_with_their_statuses(tmp_path):
    out = _run(
        tmp_path,
        """
        reqs = [comm.Irecv(np.zeros(1, "i"), peer, 20 + i) for i in range(4)]
        print(MPI.Request.Testsome(reqs), MPI.Request.Testany(reqs))
        comm.Barrier()
        for i in (3, 1):
            comm.Ssend(np.array([i], "i"), peer, 20 + i)
        statuses = []
        got = []
        while len(got) < 2:
            got += MPI.Request.Waitsome(reqs, statuses)
        print(sorted(got), sorted(s.tag for s in statuses), [bool(r) for r in reqs])
        for i in (0, 2):
            comm.Ssend(np.array([i], "i"), peer, 20 + i)
        MPI.Request.Waitall(reqs)
        print(MPI.Request.Waitsome(reqs), MPI.Request.Testany(reqs), MPI.Request.Waitany(reqs))
        """,
    )
    assert out[0] == "[] (-32766, False)"
    assert out[1] == "[1, 3] [21, 23] [True, False, True, False]"
    assert out[2] == "None (-32766, True) -32766"


def test_generalized_requests_call_query_free_and_cancel(tmp_path):
    out = _run(
        tmp_path,
        """
        calls = []
        g = MPI.Grequest.Start(lambda st: (st.Set_source(3), st.Set_tag(7), calls.append("q")),
                               lambda: calls.append("free"), lambda done: calls.append(done))
        print(g.Test(), MPI.Grequest(g) == g, MPI.Request(g) == g)
        g.Cancel()
        g.Complete()
        st = MPI.Status()
        print(g.Test(st), st.source, st.tag, calls, bool(g))
        h = MPI.Grequest.Start()
        h.complete(42)
        print(h.wait())
        """,
    )
    assert out == ["False True True", "True 3 7 [False, 'q', 'free'] False", "42"]


def test_partitioned_transfers_take_partitions_in_any_order(tmp_path):
    out = _run(
        tmp_path,
        """
        if rank == 0:
            s = comm.Psend_init(np.arange(8, dtype="i"), 4, 1, 5)
            for _ in range(2):
                s.Start()
                for part in (3, 0):
                    s.Pready(part)
                s.Pready_range(1, 2)
                s.Wait()
            print("sent")
        else:
            box = np.zeros(8, "i")
            r = comm.Precv_init(box, 4, 0, 5)
            for _ in range(2):
                r.Start()
                while not r.Parrived(3):
                    pass
                r.Wait()
            print(box.tolist())
        """,
    )
    assert out == ["sent"]


def test_bad_arguments_raise_the_error_class_open_mpi_returns(tmp_path):
    out = _run(
        tmp_path,
        """
        print([
            err(lambda: comm.Send(b"x", 2, 0)),
            err(lambda: comm.Send(b"x", 0, -1)),
            err(lambda: comm.Send(b"x", 9, -3)),
            err(lambda: comm.Recv(bytearray(1), MPI.PROC_NULL, -4)),
            err(lambda: comm.Isend(b"x", MPI.ANY_SOURCE, 0)),
            err(lambda: comm.Send(b"x", 0, 2**31)),
            err(lambda: comm.send(1, "zero", 0)),
            err(lambda: comm.Send_init(b"x", 0, -2)),
            err(lambda: comm.Probe(5)),
            err(lambda: MPI.Request.Waitall([1])),
            err(lambda: MPI.Prequest(comm.Isend(b"", MPI.PROC_NULL))),
        ])
        comm.Send(b"y", 0.9, 3)  # a float rank truncates, as mpi4py's int parameter
        if rank == 0:
            comm.Recv(bytearray(1), 0, 3)
        """,
        nprocs=1,
    )
    assert out == ["[6, 4, 4, 4, 6, 'OverflowError', 'TypeError', 4, 6, 'TypeError', 'TypeError']"]


def test_truncation_is_err_truncate_with_the_sent_length_in_the_status(tmp_path):
    out = _run(
        tmp_path,
        """
        st = MPI.Status()
        comm.Send(np.zeros(3, "i"), rank, 1)
        print(err(lambda: comm.Recv(np.zeros(1, "i"), rank, 1, st)), st.error, st.count)
        big = comm.irecv(source=rank, tag=2)  # mpi4py's 32 KiB default buffer
        comm.send("x" * 40_000, rank, 2)
        print(err(big.wait))
        roomy = comm.irecv(50_000, source=rank, tag=3)
        comm.send("y" * 40_000, rank, 3)
        print(len(roomy.wait()))
        """,
        nprocs=1,
    )
    assert out == ["15 0 12", "15", "40000"]


def test_status_getters_setters_properties_and_pickling(tmp_path):
    out = _run(
        tmp_path,
        """
        import pickle
        st = MPI.Status()
        st.source, st.tag, st.error = 1, 2, MPI.ERR_ARG
        st.Set_elements(MPI.INT, 3)
        st.cancelled = True
        copy = pickle.loads(pickle.dumps(st))
        print(copy.source, copy.tag, copy.error, copy.count, copy.Get_count(MPI.INT),
              copy.Get_elements(MPI.SHORT), copy.Get_count(MPI.DOUBLE), copy.cancelled,
              copy == st, MPI.Status(st) == st, err(lambda: MPI.Status(5)))
        """,
        nprocs=1,
    )
    assert out == ["1 2 13 12 3 6 -32766 True True True TypeError"]


def test_pkl5_moves_large_objects_and_their_out_of_band_buffers(tmp_path):
    out = _run(
        tmp_path,
        """
        from mpi4py.util import pkl5
        pcomm = pkl5.Intracomm(comm)
        data = np.arange(200_000, dtype="i") * (rank + 1)
        req = pcomm.isend({"a": data, "r": rank}, peer, 1)
        st = MPI.Status()
        got = pcomm.recv(None, peer, 1, st)
        req.wait()
        print(got["r"], int(got["a"][-1]), st.Get_count(MPI.BYTE) > data.nbytes)
        m = pcomm.mprobe(peer, 2) if rank else None
        if rank == 0:
            pcomm.ssend([data[:10]], 1, 2)
        else:
            m.irecv().wait()
        print(pcomm.bcast(data if rank == 0 else None, root=0)[-1])
        """,
    )
    assert out == ["1 399998 True", "199999"]
