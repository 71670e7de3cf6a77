"""Point-to-point with objects and every buffer kind; PROC_NULL; Sendrecv ring."""

import array

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
print("rank", rank, "of", size, comm.rank, comm.size, comm.Get_name())

if rank == 0:
    comm.send({"answer": 42, "list": [1, 2, 3]}, dest=1, tag=11)
    comm.Send(np.arange(10, dtype="i"), dest=1, tag=12)
    comm.Send([np.arange(5, dtype="d"), MPI.DOUBLE], dest=1, tag=13)
    comm.Send([bytearray(b"hello world"), 5, MPI.CHAR], dest=1, tag=14)
    comm.Send(array.array("l", [7, 8, 9]), dest=1, tag=15)
    comm.Send([np.arange(8, dtype="i"), (3, 2), MPI.INT], dest=1, tag=16)
    req = comm.isend(("tuple", 1.5), dest=1, tag=17)
    req.wait()
elif rank == 1:
    st = MPI.Status()
    obj = comm.recv(source=0, tag=11, status=st)
    print("obj", obj, st.Get_source(), st.Get_tag())
    a = np.zeros(10, dtype="i")
    comm.Recv(a, source=0, tag=12, status=st)
    print("ints", a.tolist(), st.Get_count(MPI.INT), st.Get_count())
    d = np.zeros(5, dtype="d")
    comm.Recv([d, MPI.DOUBLE], source=0, tag=13)
    print("doubles", d.tolist())
    b = bytearray(8)
    comm.Recv([b, MPI.CHAR], source=0, tag=14, status=st)
    print("chars", bytes(b), st.Get_count(MPI.CHAR))
    arr = array.array("l", [0, 0, 0])
    comm.Recv(arr, source=0, tag=15)
    print("array", arr.tolist())
    part = np.full(6, -1, dtype="i")
    comm.Recv([part, (3, 1), MPI.INT], source=0, tag=16)
    print("displaced", part.tolist())
    req = comm.irecv(source=0, tag=17)
    print("irecv", req.wait())

# PROC_NULL: completes at once with the PROC_NULL status.
st = MPI.Status()
comm.Send(np.zeros(1), dest=MPI.PROC_NULL)
comm.Recv(np.zeros(1), source=MPI.PROC_NULL, status=st)
print("procnull", st.Get_source(), st.Get_tag(), st.Get_count())

# Sendrecv around a ring, objects and buffers.
right, left = (rank + 1) % size, (rank - 1) % size
got = comm.sendrecv(f"from {rank}", dest=right, sendtag=1, source=left, recvtag=1)
print("ring obj", got)
sbuf = np.full(3, rank, dtype="l")
rbuf = np.empty(3, dtype="l")
comm.Sendrecv(sbuf, dest=right, sendtag=2, recvbuf=rbuf, source=left, recvtag=2, status=st)
print("ring buf", rbuf.tolist(), st.Get_source(), st.Get_tag())
