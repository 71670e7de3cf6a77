"""OSU-style bidirectional bandwidth (osu_bibw) in mpi4py: both ranks send a window at once.

Options: -m MAX size, -i iterations, -x warm-up, -W window size.
"""

import argparse

import numpy as np
from mpi4py import MPI

parser = argparse.ArgumentParser()
parser.add_argument("-m", "--max-size", type=int, default=1 << 20)
parser.add_argument("-i", "--iterations", type=int, default=20)
parser.add_argument("-x", "--warmup", type=int, default=2)
parser.add_argument("-W", "--window", type=int, default=64)
opts = parser.parse_args()

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
if comm.Get_size() != 2:
    if rank == 0:
        print("This test requires exactly two processes")
    raise SystemExit(1)

peer = 1 - rank
sizes = [1 << k for k in range(opts.max_size.bit_length()) if 1 << k <= opts.max_size]
sbuf = np.zeros(opts.max_size * opts.window, dtype=np.uint8)
rbuf = np.zeros(opts.max_size * opts.window, dtype=np.uint8)
if rank == 0:
    print("# OSU MPI Bi-Directional Bandwidth Test")
    print(f"# {'Size':<10}{'Bandwidth (MB/s)':>18}")
for size in sizes:
    comm.Barrier()
    for i in range(opts.iterations + opts.warmup):
        if i == opts.warmup:
            t0 = MPI.Wtime()
        reqs = [
            comm.Irecv([rbuf[w * size : (w + 1) * size], MPI.BYTE], source=peer, tag=10)
            for w in range(opts.window)
        ]
        reqs += [
            comm.Isend([sbuf[w * size : (w + 1) * size], MPI.BYTE], dest=peer, tag=10)
            for w in range(opts.window)
        ]
        MPI.Request.Waitall(reqs)
    elapsed = MPI.Wtime() - t0
    if rank == 0:
        mbps = size / 1e6 * opts.iterations * opts.window * 2 / elapsed
        print(f"{size:<12}{mbps:>18.2f}")
