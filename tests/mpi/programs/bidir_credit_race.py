"""Both ranks of each pair keep windows of mixed-size eager messages in flight at once (the
seed's credit-race pattern): the first rank sends medium messages with a small one every
fourth; its partner answers with bursts of 8 near-eager-limit messages between runs of
small ones. Rank r pairs with r + n/2, so with --ppn n/2 every pair crosses nodes."""

import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
peer = (rank + comm.size // 2) % comm.size
count, window, small, medium, large = [int(a) for a in sys.argv[1:]] or [2000, 1024, 8, 512, 12000]
if rank < comm.size // 2:
    plan = [small if i % 4 == 0 else medium for i in range(count)]
    expect = [large if i % 64 < 8 else small for i in range(count)]
else:
    plan = [large if i % 64 < 8 else small for i in range(count)]
    expect = [small if i % 4 == 0 else medium for i in range(count)]
out = np.zeros(large, dtype=np.uint8)
inbox = np.zeros(large * window, dtype=np.uint8)
for start in range(0, count, window):
    stop = min(count, start + window)
    reqs = [
        comm.Irecv([inbox[(i - start) * large :], expect[i], MPI.BYTE], source=peer, tag=1)
        for i in range(start, stop)
    ]
    reqs += [comm.Isend([out, plan[i], MPI.BYTE], dest=peer, tag=1) for i in range(start, stop)]
    MPI.Request.Waitall(reqs)
print("rank", rank, "exchanged", count, "messages each way")
