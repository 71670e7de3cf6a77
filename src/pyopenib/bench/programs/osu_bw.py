"""osu_bw at one message size, for ``pyopenib bench``: windows of non-blocking sends.

Rank 0 posts WINDOW Isends, rank 1 WINDOW Irecvs; after each window rank 1 acknowledges
with a 4-byte message (OSU's osu_bw and, with one pair, osu_mbw_mr). argv: SIZE
ITERATIONS WARMUP WINDOW. Rank 0 prints the simulated seconds of the timed iterations.
"""

import sys

import numpy as np
from mpi4py import MPI

size, iterations, warmup, window = (int(a) for a in sys.argv[1:5])
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
buf = np.zeros(size * window, dtype=np.uint8)
ack = np.zeros(4, dtype=np.uint8)
slots = [[buf[w * size : (w + 1) * size], MPI.BYTE] for w in range(window)]
comm.Barrier()
for i in range(iterations + warmup):
    if i == warmup:
        t0 = MPI.Wtime()
    if rank == 0:
        MPI.Request.Waitall([comm.Isend(s, dest=1, tag=100) for s in slots])
        comm.Recv(ack, source=1, tag=101)
    else:
        MPI.Request.Waitall([comm.Irecv(s, source=0, tag=100) for s in slots])
        comm.Send(ack, dest=0, tag=101)
if rank == 0:
    print(repr(MPI.Wtime() - t0))
