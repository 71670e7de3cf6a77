"""Both ranks stream mixed-size messages at each other (the credit-race workload)."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
peer = 1 - rank
sizes = [8, 2000, 8, 12000, 64, 9000, 8, 30000] * 25
buf = np.zeros(max(sizes), dtype=np.uint8)
inbox = [np.empty(n, dtype=np.uint8) for n in sizes]
reqs = [comm.Irecv(inbox[i], source=peer, tag=i % 7) for i in range(len(sizes))]
reqs += [comm.Isend([buf, n, MPI.BYTE], dest=peer, tag=i % 7) for i, n in enumerate(sizes)]
MPI.Request.Waitall(reqs)
print("rank", rank, "exchanged", len(sizes), "messages")
