"""The 8-byte ping-pong of benchmarks/smpi_ratio.py, as pyopenib runs it (pingpong.c's twin).

Two ranks bounce an 8-byte buffer ROUND_TRIPS times with ``Send``/``Recv``; rank 0 prints
the messages moved and the simulated time, the same line pingpong.c prints.
"""

import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
peer = 1 - rank
round_trips = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
msg = [np.zeros(8, dtype=np.uint8), MPI.BYTE]
t0 = MPI.Wtime()
for _ in range(round_trips):
    if rank == 0:
        comm.Send(msg, dest=peer)
        comm.Recv(msg, source=peer)
    else:
        comm.Recv(msg, source=peer)
        comm.Send(msg, dest=peer)
elapsed = MPI.Wtime() - t0
if rank == 0:
    print(f"messages {2 * round_trips} simulated_s {elapsed:.9f}")
