"""Error classes as MPI reports them; Dup, Split and Free."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size

for code in (MPI.SUCCESS, MPI.ERR_TRUNCATE, MPI.ERR_RANK, MPI.ERR_TAG, MPI.ERR_COMM):
    print("error", code, MPI.Get_error_string(code))

if rank == 0:
    comm.Send(np.arange(10, dtype="i"), dest=1, tag=1)
elif rank == 1:
    st = MPI.Status()
    try:
        comm.Recv(np.zeros(4, dtype="i"), source=0, tag=1, status=st)
    except MPI.Exception as exc:
        print("truncate", exc.Get_error_class(), exc.Get_error_string(), str(exc))
try:
    comm.Send(np.zeros(1), dest=size + 3)
except MPI.Exception as exc:
    print("bad rank", exc.Get_error_class() == MPI.ERR_RANK, exc.Get_error_string())

dup = comm.Dup()
print("dup", dup.rank, dup.size, dup == comm, dup.allreduce(1))
dup.Free()
half = comm.Split(color=rank % 2, key=size - rank)
print("split", rank, half.rank, half.size, half.allgather(rank))
none = comm.Split(color=MPI.UNDEFINED if rank == 0 else 1, key=rank)
print("split undefined", none == MPI.COMM_NULL, None if none == MPI.COMM_NULL else none.size)
print("self", MPI.COMM_SELF.rank, MPI.COMM_SELF.size, MPI.COMM_SELF.allreduce(5))
print("initialized", MPI.Is_initialized(), MPI.Is_finalized())
