"""``mpi4py.futures``: execute computations asynchronously on MPI processes.

mpi4py 4.1's package: ``MPIPoolExecutor`` (workers it spawns, or the shared pool of
``python -m mpi4py.futures``), ``MPICommExecutor``, ``get_comm_workers``, ``collect``/
``compose``, and the ``server``/``__main__`` programs (``mpi4py_package``). How the
workers are reached is ``_core``; why waits run in simulated time is ``_base``.
"""

from ._base import (
    ALL_COMPLETED,
    FIRST_COMPLETED,
    FIRST_EXCEPTION,
    BrokenExecutor,
    CancelledError,
    Executor,
    Future,
    InvalidStateError,
    TimeoutError,  # noqa: A004 - mpi4py re-exports it under this name
    as_completed,
    wait,
)
from .pool import (
    MPICommExecutor,
    MPIPoolExecutor,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    get_comm_workers,
)
from .util import collect, compose

__all__ = [
    "Future",
    "Executor",
    "wait",
    "FIRST_COMPLETED",
    "FIRST_EXCEPTION",
    "ALL_COMPLETED",
    "as_completed",
    "CancelledError",
    "TimeoutError",
    "InvalidStateError",
    "BrokenExecutor",
    "MPIPoolExecutor",
    "MPICommExecutor",
    "ThreadPoolExecutor",
    "ProcessPoolExecutor",
    "get_comm_workers",
    "collect",
    "compose",
]
