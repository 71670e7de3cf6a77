"""Every RMA call under every synchronisation mode; each rank prints window contents."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size


def show(label, arr):
    print(rank, label, arr.tolist())


# -- fence: put, get, accumulate family on a Create window of int32 ------------------
mem = np.zeros(32, "i4")
win = MPI.Win.Create(mem, 4, comm=comm)
win.Fence()
win.Put(np.arange(4, dtype="i4") + 10 * rank, right, 0)
win.Accumulate(np.full(4, rank + 1, "i4"), right, 4, MPI.SUM)
win.Accumulate(np.full(4, rank + 1, "i4"), left, 4, MPI.SUM)
win.Accumulate(np.full(2, rank * 3, "i4"), right, 8, MPI.MAX)
win.Accumulate(np.full(2, 7 + rank, "i4"), rank, 10, MPI.REPLACE)
win.Accumulate(np.full(2, 1 << rank, "i4"), right, 12, MPI.BOR)
win.Fence()
show("fence-put-acc", mem[:14])
got = np.full(4, -1, "i4")
fetched = np.full(2, -1, "i4")
win.Get(got, left, 0)
win.Fence()
win.Get_accumulate(np.full(2, 100, "i4"), fetched, right, 4, MPI.SUM)
win.Fence(MPI.MODE_NOSUCCEED)
show("fence-get", got)
show("fence-getacc", fetched)
show("fence-after-getacc", mem[4:8])
try:
    win.Put(np.zeros(1, "i4"), right, 0)
except MPI.Exception as exc:
    print(rank, "put-outside-epoch", exc.Get_error_class() == MPI.ERR_RMA_SYNC)
try:
    win.Unlock(right)
except MPI.Exception as exc:
    print(rank, "unlock-unlocked", exc.Get_error_class() == MPI.ERR_RMA_SYNC)
comm.Barrier()

# -- passive target: exclusive locks, serialised fetch-and-op and compare-and-swap ----
for turn in range(size):
    if rank == turn:
        win.Lock(0, MPI.LOCK_EXCLUSIVE)
        old = np.full(1, -1, "i4")
        win.Fetch_and_op(np.array([rank + 1], "i4"), old, 0, 20, MPI.SUM)
        win.Flush(0)
        prev = np.full(1, -1, "i4")
        win.Compare_and_swap(np.array([rank + 1], "i4"), np.array([rank], "i4"), prev, 0, 21)
        win.Unlock(0)
        show("fetch-op-old", old)
        show("cas-old", prev)
    comm.Barrier()
win.Lock(0, MPI.LOCK_SHARED)
snap = np.zeros(2, "i4")
win.Get(snap, 0, 20)
win.Unlock(0)
show("passive-counter", snap)
comm.Barrier()

# -- Lock_all with request-based operations and flushes --------------------------------
win.Lock_all()
rq = win.Rput(np.array([rank * 100 + 1, rank * 100 + 2], "i4"), right, 24)
rq.Wait()
win.Flush(right)
racc = win.Raccumulate(np.array([1], "i4"), 0, 26, MPI.SUM)
MPI.Request.Waitall([racc])
win.Flush_all()
win.Unlock_all()
comm.Barrier()
win.Lock_all(MPI.MODE_NOCHECK)
back = np.zeros(3, "i4")
rg = win.Rget(back, left, 24)
rg.Wait()
res = np.zeros(1, "i4")
rga = win.Rget_accumulate(np.zeros(1, "i4"), res, 0, 26, MPI.NO_OP)
rga.Wait()
win.Flush_local_all()
win.Unlock_all()
show("lockall-rget", back)
show("lockall-noop", res)
win.Free()

# -- Allocate, doubles and MAXLOC pairs ------------------------------------------------
win = MPI.Win.Allocate(8 * 8, 8, comm=comm)
mem = np.frombuffer(win.tomemory(), "f8")
mem[:] = 0.5
win.Fence()
win.Accumulate(np.array([rank + 0.25, 2.0], "f8"), 0, 0, MPI.SUM)
win.Accumulate(np.array([rank * 1.5], "f8"), right, 2, MPI.MAX)
win.Accumulate(np.array([rank * 1.5], "f8"), right, 3, MPI.MIN)
win.Fence()
show("alloc-f8", mem[:4])
win.Free()
pair = np.dtype([("v", "<f8"), ("i", "<i4")], align=True)
pmem = np.zeros(2, pair)
pmem["v"] = -1.0
win = MPI.Win.Create(pmem, pair.itemsize, comm=comm)
win.Fence()
win.Accumulate([np.array([(float(rank % 2), rank)], pair), MPI.DOUBLE_INT], 0, 0, MPI.MAXLOC)
win.Accumulate([np.array([(float(rank % 2), rank)], pair), MPI.DOUBLE_INT], 0, 1, MPI.MINLOC)
win.Fence()
if rank == 0:
    print(rank, "maxloc", [(float(v), int(i)) for v, i in pmem.tolist()])
win.Free()

# -- dynamic window: attach, address exchange, put/get ---------------------------------
win = MPI.Win.Create_dynamic(comm=comm)
region = np.zeros(8, "i8")
win.Attach(region)
addresses = comm.allgather(region.ctypes.data)
win.Fence()
win.Put(np.array([rank + 1, rank + 2], "i8"), right, addresses[right] + 8)
win.Fence()
peek = np.zeros(2, "i8")
win.Get(peek, left, addresses[left] + 8)
win.Accumulate(np.array([5], "i8"), left, addresses[left], MPI.SUM)
win.Fence()
show("dynamic", region[:3])
show("dynamic-get", peek)
win.Detach(region)
win.Free()

# -- Allocate_shared over a single-rank communicator -----------------------------------
win = MPI.Win.Allocate_shared(16, 4, comm=MPI.COMM_SELF)
buf, unit = win.Shared_query(0)
arr = np.frombuffer(buf, "i4")
arr[:] = rank
win.Fence()
win.Accumulate(np.array([3], "i4"), 0, 1, MPI.SUM)
win.Fence()
show("shared-self", arr)
print(rank, "shared-unit", unit, win.Get_attr(MPI.WIN_CREATE_FLAVOR) == MPI.WIN_FLAVOR_SHARED)
win.Free()

# -- derived datatypes: a strided target, a strided origin -----------------------------
vec = MPI.INT.Create_vector(3, 1, 2).Commit()
mem = np.zeros(12, "i4")
win = MPI.Win.Create(mem, 4, comm=comm)
win.Fence()
win.Put(np.array([1, 2, 3], "i4") * (rank + 1), right, (0, 1, vec))
win.Accumulate(np.array([5, 6, 7], "i4"), right, (6, 1, vec), MPI.SUM)
win.Accumulate(np.array([1, 1, 1], "i4"), left, (6, 1, vec), MPI.SUM)
win.Fence()
show("vector-target", mem)
win.Fence()  # nobody changes a window while its owner reads it
strided = np.zeros(6, "i4")
win.Get([strided, 1, vec], left, (0, 3, MPI.INT))
olds = np.zeros(3, "i4")
win.Get_accumulate(np.full(3, 2, "i4"), olds, right, (6, 1, vec), MPI.PROD)
win.Fence()
show("vector-origin", strided)
show("vector-getacc", olds)
show("vector-after", mem)
win.Free()
vec.Free()

# -- PSCW: generalized active target with groups -----------------------------------------
mem = np.zeros(size + 1, "i4")
win = MPI.Win.Create(mem, 4, comm=comm)
world_group = comm.Get_group()
neighbours = world_group.Incl(sorted({left, right} - {rank}))
win.Post(neighbours)
win.Start(neighbours)
for t in sorted({left, right} - {rank}):
    win.Put(np.array([10 * (rank + 1)], "i4"), t, rank)
    win.Accumulate(np.array([rank + 1], "i4"), t, size, MPI.SUM)
win.Complete()
win.Wait()
show("pscw", mem)
others = world_group.Excl([0])
if rank == 0:
    win.Start(others)
    for t in range(1, size):
        win.Accumulate(np.array([100], "i4"), t, size, MPI.SUM)
    win.Complete()
else:
    win.Post(world_group.Incl([0]))
    polls = 0
    while not win.Test():
        polls += 1
    show("pscw-test", mem[size])
neighbours.Free()
others.Free()
world_group.Free()
win.Free()
