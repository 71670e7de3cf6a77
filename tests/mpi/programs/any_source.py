"""ANY_SOURCE / ANY_TAG receives: what arrives from whom (printed in a fixed order)."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size

if rank == 0:
    seen = []
    st = MPI.Status()
    for _ in range(2 * (size - 1)):
        msg = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
        seen.append((st.Get_source(), st.Get_tag(), msg))
    # Messages from one sender arrive in the order it sent them.
    for src in range(1, size):
        print("from", src, [(t, m) for s, t, m in seen if s == src])
    for src in range(1, size):
        comm.send("go", dest=src, tag=8)
    buf = np.empty(4, dtype="i")
    total = 0
    for _ in range(size - 1):
        comm.Recv(buf, source=MPI.ANY_SOURCE, tag=9, status=st)
        total += int(buf.sum())
        assert buf[0] == st.Get_source()
    print("buffer total", total)
else:
    comm.send(f"first from {rank}", dest=0, tag=rank)
    comm.send(f"second from {rank}", dest=0, tag=100 + rank)
    comm.recv(source=0, tag=8)
    comm.Send(np.full(4, rank, dtype="i"), dest=0, tag=9)
print("done", rank)
