"""osu_latency at one message size, for ``pyopenib bench``: blocking ping-pong.

argv: SIZE ITERATIONS WARMUP. Rank 0 prints the simulated seconds the timed iterations
took (``repr``, so the float survives the trip through stdout exactly).
"""

import sys

import numpy as np
from mpi4py import MPI

size, iterations, warmup = (int(a) for a in sys.argv[1:4])
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
msg = [np.zeros(max(size, 1), dtype=np.uint8), size, MPI.BYTE]
comm.Barrier()
for i in range(iterations + warmup):
    if i == warmup:
        t0 = MPI.Wtime()
    if rank == 0:
        comm.Send(msg, dest=1, tag=1)
        comm.Recv(msg, source=1, tag=1)
    else:
        comm.Recv(msg, source=0, tag=1)
        comm.Send(msg, dest=0, tag=1)
if rank == 0:
    print(repr(MPI.Wtime() - t0))
