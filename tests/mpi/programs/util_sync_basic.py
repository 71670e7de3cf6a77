"""mpi4py.util.sync: Sequential orders the ranks; a Counter hands out every value once;
a Mutex and a Condition hand over between ranks."""

import mpi4py.util.sync as sync
from mpi4py import MPI

comm = MPI.COMM_WORLD
counter = sync.Counter(comm=comm)
with sync.Sequential(comm):
    first = next(counter)
mutex = sync.Mutex(comm=comm, recursive=True)
with mutex, mutex:
    depth = mutex.count()
    second = counter.next(10)
cv = sync.Condition(comm=comm)
if comm.rank == 0:
    woken = 0
    while woken < comm.size - 1:
        with cv:
            woken += cv.notify()
else:
    with cv:
        cv.wait()
    woken = None
print(first, depth, sorted(comm.allgather(second)), woken, mutex.locked())
comm.Barrier()
