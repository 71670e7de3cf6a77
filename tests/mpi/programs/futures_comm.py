"""mpi4py.futures.MPICommExecutor on COMM_WORLD: the root submits, the others serve."""

from mpi4py import MPI
from mpi4py.futures import MPICommExecutor, as_completed, get_comm_workers, wait


def square(x):
    return x * x


def workers():
    return get_comm_workers().Get_size()


def boom():
    raise KeyError("key")


with MPICommExecutor(MPI.COMM_WORLD, root=0) as executor:
    if executor is not None:
        print(list(executor.map(square, range(8))))
        futures = [executor.submit(square, i) for i in range(5)]
        print(sorted(f.result() for f in as_completed(futures)))
        done, not_done = wait([executor.submit(square, 7), executor.submit(boom)])
        print(len(done), len(not_done), sorted(type(f.exception()).__name__ for f in done))
        print(sorted(executor.map(square, range(10), chunksize=3, unordered=True)))
        print(executor.submit(workers).result() == MPI.COMM_WORLD.Get_size() - 1)
    else:
        print("served")
print(MPI.COMM_WORLD.allreduce(1))
