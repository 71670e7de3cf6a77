"""osu_bibw at one message size, for ``pyopenib bench``: both ranks send a window at once.

argv: SIZE ITERATIONS WARMUP WINDOW. Rank 0 prints the simulated seconds of the timed
iterations.
"""

import sys

import numpy as np
from mpi4py import MPI

size, iterations, warmup, window = (int(a) for a in sys.argv[1:5])
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
peer = 1 - rank
sbuf = np.zeros(size * window, dtype=np.uint8)
rbuf = np.zeros(size * window, dtype=np.uint8)
sends = [[sbuf[w * size : (w + 1) * size], MPI.BYTE] for w in range(window)]
recvs = [[rbuf[w * size : (w + 1) * size], MPI.BYTE] for w in range(window)]
comm.Barrier()
for i in range(iterations + warmup):
    if i == warmup:
        t0 = MPI.Wtime()
    reqs = [comm.Irecv(r, source=peer, tag=10) for r in recvs]
    reqs += [comm.Isend(s, dest=peer, tag=10) for s in sends]
    MPI.Request.Waitall(reqs)
if rank == 0:
    print(repr(MPI.Wtime() - t0))
