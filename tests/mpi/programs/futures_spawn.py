"""mpi4py.futures.MPIPoolExecutor in a plain program: it spawns its workers (run as
`mpiexec -n 1 python futures_spawn.py`)."""

import sys

from mpi4py import MPI
from mpi4py.futures import MPIPoolExecutor, collect, compose, get_comm_workers, wait

SCALE = 10  # a module global the workers see: they import this file as __worker__


def world():
    comm = get_comm_workers()
    return (comm.Get_rank(), comm.Get_size(), MPI.Comm.Get_parent() != MPI.COMM_NULL)


def total(n):
    comm = get_comm_workers()
    return comm.allreduce(n * SCALE)


def boom(x):
    raise ValueError(f"bad {x}")


class Point:
    def __init__(self, x):
        self.x = x


def make_point(x):
    return Point(x)  # pickled as __worker__.Point by the worker


def init(value):
    global SCALE
    SCALE = value


if __name__ == "__main__":
    print(__name__, MPI.COMM_WORLD.Get_size())
    with MPIPoolExecutor(3) as executor:
        print("workers", executor.num_workers)
        fs = [executor.submit(world) for _ in range(3)]
        wait(fs)
        print(sorted(f.result() for f in fs))
        fs = [executor.submit(total, i) for i in range(3)]
        print([f.result() for f in fs])
        print(list(executor.map(pow, range(6), range(6), chunksize=2)))
        print(sorted(executor.map(abs, range(-4, 4), unordered=True)))
        print(list(executor.map(abs, range(-5, 0), buffersize=2)))
        err = executor.submit(boom, 7).exception()
        print(type(err).__name__, err, type(err.__cause__).__name__, "bad 7" in str(err.__cause__))
        print(collect([executor.submit(abs, -i) for i in range(4)]).result())
        print(compose(executor.submit(abs, -3), lambda r: r * 100).result())
        print(compose(executor.submit(boom, 1), excepthook=lambda e: str(e)).result())
        point = executor.submit(make_point, 5).result()
        print(type(point).__name__, point.x, type(point) is Point)
    with MPIPoolExecutor(2, initializer=init, initargs=(1000,)) as executor:
        print([f.result() for f in [executor.submit(total, 1) for _ in range(2)]])
    executor = MPIPoolExecutor(1)
    print(executor.submit(sum, [1, 2, 3]).result())
    executor.shutdown(wait=False)  # the rank's exit joins it, as mpi4py's atexit does
    sys.stdout.flush()
