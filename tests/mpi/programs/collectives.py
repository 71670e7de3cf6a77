"""Every collective with an answer known in advance, uppercase and lowercase."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size

comm.Barrier()
comm.barrier()

print("bcast", comm.bcast({"root": "data"} if rank == 0 else None, root=0))
b = np.arange(6, dtype="d") if rank == size - 1 else np.zeros(6)
comm.Bcast(b, root=size - 1)
print("Bcast", b.tolist())
big = np.arange(50_000, dtype="i") if rank == 0 else np.empty(50_000, dtype="i")
comm.Bcast([big, MPI.INT], root=0)
print("Bcast big", int(big.sum()))

print("reduce", comm.reduce(rank + 1, op=MPI.SUM, root=0))
print("allreduce sum", comm.allreduce(rank, op=MPI.SUM))
print("allreduce max", comm.allreduce(rank * 3 % size, op=MPI.MAX))
print("allreduce prod", comm.allreduce(rank + 1, op=MPI.PROD))
print("allreduce maxloc", comm.allreduce((rank % 2, rank), op=MPI.MAXLOC))

send = np.array([rank, rank * 2, 1], dtype="l")
recv = np.zeros(3, dtype="l")
comm.Reduce(send, recv, op=MPI.SUM, root=1 % size)
print("Reduce", recv.tolist() if rank == 1 % size else None)
comm.Allreduce(send, recv, op=MPI.MIN)
print("Allreduce min", recv.tolist())
comm.Allreduce([send, MPI.LONG], [recv, MPI.LONG], op=MPI.MAX)
print("Allreduce max", recv.tolist())
inplace = np.array([rank + 1.0, 2.0])
comm.Allreduce(MPI.IN_PLACE, inplace, op=MPI.PROD)
print("Allreduce in place", inplace.tolist())
flags = np.array([rank % 2, 1, rank & 1], dtype="i")
comm.Allreduce(MPI.IN_PLACE, flags, op=MPI.BOR)
print("Allreduce bor", flags.tolist())
pairs = np.zeros(1, dtype=[("v", "<f8"), ("i", "<i4")], order="C")
pairs = np.array(
    [(float(rank % 3), rank)], dtype=np.dtype([("v", "<f8"), ("i", "<i4")], align=True)
)
out = np.zeros_like(pairs)
comm.Allreduce([pairs, MPI.DOUBLE_INT], [out, MPI.DOUBLE_INT], op=MPI.MAXLOC)
print("Allreduce maxloc", float(out["v"][0]), int(out["i"][0]))

print("gather", comm.gather(rank * rank, root=0))
print("scatter", comm.scatter([f"part{i}" for i in range(size)] if rank == 0 else None, root=0))
print("allgather", comm.allgather(chr(ord("a") + rank)))
print("alltoall", comm.alltoall([rank * 10 + i for i in range(size)]))

g = np.zeros(size * 2, dtype="i") if rank == 0 else None
comm.Gather(np.array([rank, -rank], dtype="i"), g, root=0)
print("Gather", None if g is None else g.tolist())
s = np.arange(size * 3, dtype="d") if rank == 0 else None
mine = np.zeros(3)
comm.Scatter(s, mine, root=0)
print("Scatter", mine.tolist())
ag = np.zeros(size, dtype="i")
comm.Allgather(np.array([rank * 7], dtype="i"), ag)
print("Allgather", ag.tolist())
a2a = np.zeros(size, dtype="i")
comm.Alltoall(np.arange(size, dtype="i") + 100 * rank, a2a)
print("Alltoall", a2a.tolist())

counts = [i + 1 for i in range(size)]
displs = [sum(counts[:i]) for i in range(size)]
gv = np.zeros(sum(counts), dtype="d") if rank == 0 else None
comm.Gatherv(
    np.full(rank + 1, float(rank)),
    [gv, (counts, displs), MPI.DOUBLE] if rank == 0 else None,
    root=0,
)
print("Gatherv", None if gv is None else gv.tolist())
sv = np.arange(sum(counts), dtype="d") if rank == 0 else None
rv = np.zeros(rank + 1)
comm.Scatterv([sv, counts, MPI.DOUBLE] if rank == 0 else None, rv, root=0)
print("Scatterv", rv.tolist())
agv = np.zeros(sum(counts), dtype="i")
comm.Allgatherv(np.full(rank + 1, rank, dtype="i"), [agv, (counts, displs), MPI.INT])
print("Allgatherv", agv.tolist())
scounts = [1] * size
sdispls = list(range(size))
rcounts = [1] * size
a2av = np.zeros(size, dtype="i")
comm.Alltoallv(
    [np.arange(size, dtype="i") * (rank + 1), (scounts, sdispls), MPI.INT],
    [a2av, (rcounts, sdispls), MPI.INT],
)
print("Alltoallv", a2av.tolist())
ig = np.zeros(size, dtype="i")
ig[rank] = rank + 50
comm.Allgather(MPI.IN_PLACE, [ig, MPI.INT])
print("Allgather in place", ig.tolist())
