"""Send modes, buffered sends, matched probes, cancel, persistent and generalized requests,
the Wait/Test families and Status, printed so real Open MPI + mpi4py and pyopenib agree."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
peer = 1 - rank if rank < 2 else rank
BIG = 100_000  # int32 items: far above every eager limit


def fields(st):
    return (
        st.Get_source(),
        st.Get_tag(),
        st.Get_error(),
        st.Get_count(MPI.BYTE),
        st.Is_cancelled(),
    )


def error_class(call):
    try:
        call()
    except MPI.Exception as exc:
        return exc.Get_error_class()
    except (TypeError, OverflowError) as exc:
        return type(exc).__name__
    return "ok"


if rank < 2:
    # -- argument checks: tag before rank, wildcards, C int range, floats truncate -------
    print(
        "errors",
        [
            error_class(lambda: comm.Send(b"x", 5, 0)),
            error_class(lambda: comm.Send(b"x", 0, -5)),
            error_class(lambda: comm.Send(b"x", MPI.ANY_SOURCE, 0)),
            error_class(lambda: comm.Send(b"x", peer, MPI.ANY_TAG)),
            error_class(lambda: comm.Send(b"x", 7, -3)),
            error_class(lambda: comm.Recv(bytearray(1), 5, 0)),
            error_class(lambda: comm.Recv(bytearray(1), 0, -5)),
            error_class(lambda: comm.Send(b"x", 0, 2**31)),
            error_class(lambda: comm.Isend(b"x", -7, 0)),
            error_class(lambda: comm.Send_init(b"x", 9, 0)),
            error_class(lambda: comm.send("x", "a", 0)),
        ],
    )
    comm.Send(b"y", rank + 0.7, 3)  # 0.7 truncates to this rank
    st = MPI.Status()
    comm.Recv(bytearray(1), MPI.ANY_SOURCE, MPI.ANY_TAG, st)
    print("float rank", st.Get_source(), st.Get_tag())

    # -- send statuses: ob1's send-inline path vs a rendezvous --------------------------
    r = comm.Irecv(bytearray(12), peer, 1)
    s = comm.Isend(np.arange(3, dtype="i"), peer, 1)
    MPI.Request.Waitall([r, s], statuses := [])
    print("small statuses", [fields(x) for x in statuses])
    big_in = np.zeros(BIG, "i")
    r = comm.Irecv(big_in, peer, 2)
    s = comm.Isend(np.full(BIG, rank, "i"), peer, 2)
    statuses = [MPI.Status(), MPI.Status()]
    MPI.Request.Waitall([r, s], statuses)
    print("big statuses", [fields(x) for x in statuses], int(big_in[-1]))

    # -- synchronous: not complete until matched ---------------------------------------
    s = comm.Issend(np.arange(2, dtype="i"), peer, 3)
    comm.Barrier()
    flag = s.Test()
    comm.Barrier()
    comm.Recv(np.zeros(2, "i"), peer, 3)
    s.Wait()
    print("issend complete before the match:", flag)

    # -- buffered sends -----------------------------------------------------------------
    # A failed Bsend costs Open MPI 4.1 the message's sequence number (later messages to
    # that peer on that communicator never match), so the failures go on a duplicate.
    bad = comm.Dup()
    comm.Bsend(b"small, no buffer attached", peer, 4)
    print(
        "bsend big, nothing attached", error_class(lambda: bad.Bsend(np.zeros(BIG, "i"), peer, 5))
    )
    MPI.Attach_buffer(bytearray(BIG * 4 + MPI.BSEND_OVERHEAD))
    print("attach twice", error_class(lambda: MPI.Attach_buffer(bytearray(10))))
    comm.Bsend(np.full(BIG, 7, "i"), peer, 5)
    print("bsend big, no room left", error_class(lambda: bad.Bsend(np.zeros(BIG, "i"), peer, 6)))
    ib = comm.Ibsend(np.full(4, 9, "i"), peer, 7)
    ib.Wait()
    small_raw = bytearray(25)
    comm.Recv(small_raw, peer, 4)
    got = small_raw[:5].decode()
    big_b = np.zeros(BIG, "i")
    comm.Recv(big_b, peer, 5)
    small_b = np.zeros(4, "i")
    comm.Recv(small_b, peer, 7)
    print("detached", len(MPI.Detach_buffer()), got, int(big_b.sum()), small_b.tolist())
    print("detach again", error_class(MPI.Detach_buffer))
    comm.bsend({"k": rank}, peer, 8)
    print("bsend obj", comm.recv(source=peer, tag=8))

    # -- ready mode (ob1 sends it as standard) ------------------------------------------
    r = comm.Irecv(bytearray(3), peer, 9)
    comm.Barrier()
    comm.Rsend(b"abc", peer, 9)
    r.Wait()
    print("rsend done")

    # -- Sendrecv_replace ----------------------------------------------------------------
    buf = np.full(5, rank, "i")
    st = MPI.Status()
    comm.Sendrecv_replace(buf, peer, 10, peer, 10, st)
    print("replace", buf.tolist(), st.Get_source(), st.Get_tag(), st.Get_count(MPI.INT))

    # -- matched probe: the probed message is no one else's -----------------------------
    comm.Send(np.array([1], "i"), peer, 11)
    comm.Send(np.array([2, 2], "i"), peer, 11)
    st = MPI.Status()
    m = comm.Mprobe(peer, 11, st)
    first_count = st.Get_count(MPI.INT)
    comm.Probe(peer, 11, st)
    second_count = st.Get_count(MPI.INT)
    other = np.zeros(2, "i")
    comm.Recv(other, peer, 11)
    mine = np.zeros(1, "i")
    m.Recv(mine)
    print("mprobe", first_count, second_count, other.tolist(), mine.tolist(), m == MPI.MESSAGE_NULL)
    print("improbe nothing", comm.Improbe(peer, 12))
    comm.Barrier()
    comm.send(("obj", rank), peer, 12)
    comm.Barrier()
    m = comm.improbe(peer, 12)
    print("improbe obj", m.recv())
    m = comm.Mprobe(MPI.PROC_NULL, 0, st)
    print("mprobe procnull", m == MPI.MESSAGE_NO_PROC, fields(st))

    # -- cancel: receives yes, sends never (ob1) -----------------------------------------
    c = comm.Irecv(np.zeros(1, "i"), peer, 13)
    c.Cancel()
    st = MPI.Status()
    c.Wait(st)
    print("cancelled recv", fields(st))
    s = comm.Issend(np.zeros(1, "i"), peer, 14)
    s.Cancel()
    comm.Barrier()
    print("cancel unmatched ssend: complete", s.Get_status(st), st.Is_cancelled())
    comm.Barrier()  # no rank matches the peer's send before both have looked at theirs
    comm.Recv(np.zeros(1, "i"), peer, 14)
    s.Wait(st)
    print("after the match", st.Is_cancelled())

    # -- persistent ---------------------------------------------------------------------
    inbox = np.zeros(2, "i")
    precv = comm.Recv_init(inbox, peer, 15)
    psend = comm.Send_init(np.array([rank, 5], "i"), peer, 15)
    pbig = comm.Ssend_init(np.full(BIG, rank + 1, "i"), peer, 16)
    bigbox = np.zeros(BIG, "i")
    pbigr = comm.Recv_init(bigbox, peer, 16)
    for it in range(2):
        MPI.Prequest.Startall([precv, psend, pbigr, pbig])
        statuses = []
        MPI.Request.Waitall([precv, psend, pbigr, pbig], statuses)
        print(
            "persistent", it, inbox.tolist(), int(bigbox[0]), [fields(x)[:2] for x in statuses[::2]]
        )
    psend.Start()
    psend.Start()  # Open MPI restarts a send the PML already completed
    comm.Recv(np.zeros(2, "i"), peer, 15)
    comm.Recv(np.zeros(2, "i"), peer, 15)
    psend.Wait()
    st = MPI.Status()
    st.Set_source(3)
    precv.Wait(st)
    print("inactive wait", fields(st), precv.Test(), precv != MPI.REQUEST_NULL)
    copy = MPI.Prequest(precv)
    print("copy", copy == precv, type(copy).__name__)
    for p in (precv, psend, pbig, pbigr):
        p.Free()
    print(
        "freed",
        precv == MPI.REQUEST_NULL,
        error_class(lambda: MPI.Prequest(comm.Isend(b"", MPI.PROC_NULL))),
    )
    print("Waitany over inactive", MPI.Request.Waitany([comm.Send_init(b"", peer, 99)]))

    # -- Waitsome / Testsome / Waitany / Testany with statuses -------------------------
    reqs = [comm.Irecv(np.zeros(1, "i"), peer, 20 + i) for i in range(4)]
    print("testsome none", MPI.Request.Testsome(reqs, []), MPI.Request.Testany(reqs))
    comm.Barrier()
    for i in (2, 0, 3):
        comm.Ssend(np.array([i], "i"), peer, 20 + i)
    done, tags = [], []
    while len(done) < 3:
        statuses = []
        idx = MPI.Request.Waitsome(reqs, statuses)
        done += idx
        tags += [s.Get_tag() for s in statuses]
    print("waitsome", sorted(done), sorted(tags), [bool(r) for r in reqs])
    comm.Ssend(np.array([1], "i"), peer, 21)
    st = MPI.Status()
    print("waitany", MPI.Request.Waitany(reqs, st), st.Get_tag())
    print(
        "all null",
        MPI.Request.Waitany(reqs),
        MPI.Request.Testany(reqs),
        MPI.Request.Waitsome(reqs),
        MPI.Request.Testsome(reqs),
    )
    objs = [comm.irecv(source=peer, tag=30 + i) for i in range(3)]
    for i in range(3):
        comm.send(i * 10, peer, 30 + i)
    print("waitall objects", MPI.Request.waitall(objs))

    # -- truncation: an error in Wait, ERR_IN_STATUS in Waitall -------------------------
    r = comm.Irecv(np.zeros(1, "i"), peer, 40)
    comm.Send(np.zeros(3, "i"), peer, 40)
    st = MPI.Status()
    print("truncate", error_class(lambda: r.Wait(st)), st.Get_error(), st.Get_count(MPI.BYTE))
    ok_obj = comm.irecv(50000, source=peer, tag=44)
    comm.send("y" * 40000, peer, 44)
    print("irecv with room", len(ok_obj.wait()))

# -- generalized requests and Status (local) ---------------------------------------------
state = {}
greq = MPI.Grequest.Start(
    lambda s: (s.Set_source(3), s.Set_tag(7)),
    lambda: state.setdefault("freed", True),
    lambda done: state.setdefault("cancel", done),
)
print("grequest", greq.Test(), state)
greq.Cancel()
greq.Complete()
st = MPI.Status()
print("grequest", greq.Test(st), fields(st), state, bool(greq))
st = MPI.Status()
st.Set_elements(MPI.INT, 3)
st.Set_cancelled(True)
copy = MPI.Status(st)
print(
    "status",
    st.Get_count(MPI.BYTE),
    st.Get_count(MPI.INT),
    st.Get_elements(MPI.SHORT),
    st.Get_count(MPI.DOUBLE),
    copy.cancelled,
    copy == st,
    MPI.Status() == MPI.Status(),
)
print(
    "request null",
    MPI.Request() == MPI.REQUEST_NULL,
    bool(MPI.REQUEST_NULL),
    MPI.REQUEST_NULL.py2f(),
    MPI.MESSAGE_NULL.py2f(),
    MPI.MESSAGE_NO_PROC.py2f(),
)
comm.Barrier()
