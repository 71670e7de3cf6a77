"""Nonblocking requests: Waitall, Waitany, Test, Testall, Issend, persistent requests, Cancel."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
peer = 1 - rank if rank < 2 else rank

if rank < 2:
    bufs = [np.zeros(4, dtype="i") for _ in range(3)]
    rreqs = [comm.Irecv(bufs[i], source=peer, tag=i) for i in range(3)]
    sreqs = [comm.Isend(np.full(4, rank * 10 + i, dtype="i"), dest=peer, tag=i) for i in range(3)]
    MPI.Request.Waitall(sreqs)
    statuses = [MPI.Status() for _ in range(3)]
    MPI.Request.Waitall(rreqs, statuses)
    print("waitall", [b.tolist() for b in bufs], [s.Get_tag() for s in statuses])

    reqs = [comm.irecv(source=peer, tag=20 + i) for i in range(2)]
    for i in range(2):
        comm.isend(f"obj{i} from {rank}", dest=peer, tag=20 + i).wait()
    print("waitall obj", MPI.Request.waitall(reqs))

    if rank == 0:
        anyreqs = [comm.Irecv(np.zeros(1, "i"), source=1, tag=30 + i) for i in range(2)]
        first = MPI.Request.Waitany(anyreqs)
        comm.send("ack", dest=1, tag=32)
        second = MPI.Request.Waitany(anyreqs)
        print("waitany", first, second, MPI.Request.Waitany(anyreqs) == MPI.UNDEFINED)
    else:
        comm.Send(np.ones(1, "i"), dest=0, tag=31)
        comm.recv(source=0, tag=32)
        comm.Send(np.ones(1, "i"), dest=0, tag=30)

    s = comm.Issend(np.arange(2, dtype="i"), dest=peer, tag=40)
    comm.Recv(np.zeros(2, "i"), source=peer, tag=40)
    s.Wait()
    print("issend done")

    cancelled = comm.Irecv(np.zeros(1, "i"), source=peer, tag=999)
    cancelled.Cancel()
    st = MPI.Status()
    cancelled.Wait(st)
    print("cancelled", st.Is_cancelled())

    buf = np.zeros(2, "i")
    precv = comm.Recv_init(buf, source=peer, tag=50)
    psend = comm.Send_init(np.array([rank, 7], "i"), dest=peer, tag=50)
    for it in range(3):
        MPI.Prequest.Startall([precv, psend])
        MPI.Request.Waitall([precv, psend])
        print("persistent", it, buf.tolist())

    t = comm.Irecv(np.zeros(1, "i"), source=peer, tag=60)
    comm.Send(np.ones(1, "i"), dest=peer, tag=60)
    while not t.Test():
        pass
    print("test true")
    r2 = [comm.Irecv(np.zeros(1, "i"), source=peer, tag=70)]
    comm.Send(np.ones(1, "i"), dest=peer, tag=70)
    while not MPI.Request.Testall(r2):
        pass
    print("testall true")
else:
    print("idle", rank)
comm.Barrier()
