"""Non-overtaking: messages of very different sizes from one sender, matched in order."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
sizes = [200_000, 1, 64, 5_000, 0, 70_000, 12, 300, 1_000_000, 3]

if rank == 0:
    reqs = []
    for i, n in enumerate(sizes):
        data = (np.arange(n, dtype=np.int64) * (i + 1) % 251).astype(np.uint8)
        reqs.append(comm.Isend(data, dest=1, tag=5))
    MPI.Request.Waitall(reqs)
    for i, n in enumerate(sizes):
        comm.send(("obj", i, "x" * (n // 10)), dest=1, tag=6)
elif rank == 1:
    st = MPI.Status()
    for i, n in enumerate(sizes):
        comm.Probe(source=0, tag=5, status=st)
        buf = np.empty(st.Get_count(), dtype=np.uint8)
        comm.Recv(buf, source=0, tag=5)
        expect = (np.arange(n, dtype=np.int64) * (i + 1) % 251).astype(np.uint8)
        print("message", i, "bytes", len(buf), "intact", bool(np.array_equal(buf, expect)))
    for i in range(len(sizes)):
        kind, j, s = comm.recv(source=0, tag=6)
        print("object", i, j, len(s))
