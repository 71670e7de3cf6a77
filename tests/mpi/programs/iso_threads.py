"""A Python thread calls MPI: the provided level is MPI_THREAD_FUNNELED, so a call from the
thread raises MPI.Exception naming the call; Query_thread and Is_thread_main work there."""

import threading

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
dup = comm.Dup()
seen = []


def worker():
    seen.append((MPI.Query_thread(), MPI.Is_thread_main()))
    for name, call in (
        ("send", lambda: comm.send(1, dest=0)),
        ("Isend", lambda: dup.Isend(np.zeros(1), dest=0)),
        ("Barrier", lambda: dup.Barrier()),
        ("Wtime", MPI.Wtime),
    ):
        try:
            call()
            seen.append(f"{name}: no error")
        except MPI.Exception as exc:
            seen.append(f"{name}: {exc.Get_error_class() == MPI.ERR_OTHER} {exc}")


provided = MPI.Query_thread()
t = threading.Thread(target=worker, name="worker")
t.start()
t.join()
dup.Barrier()
if comm.rank == 0:
    print(provided == MPI.THREAD_FUNNELED, MPI.Is_thread_main(), *seen, sep="\n")
