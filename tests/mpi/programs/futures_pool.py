"""mpi4py.futures.MPIPoolExecutor on the job's fixed ranks (run as `mpiexec -n N python -m
mpi4py.futures futures_pool.py` under real MPI: rank 0 runs this, the others serve)."""

from mpi4py import MPI
from mpi4py.futures import MPIPoolExecutor


def cube(x):
    return x**3


def rank_of_worker(_):
    return MPI.COMM_WORLD.Get_rank()


if __name__ == "__main__":
    with MPIPoolExecutor() as executor:
        print(sum(executor.map(cube, range(20))), MPI.COMM_WORLD.Get_rank())
        ranks = set(executor.map(rank_of_worker, range(12)))
        print(sorted(ranks) == list(range(1, MPI.COMM_WORLD.Get_size())))
        print(executor.submit(pow, 2, 10).result())
