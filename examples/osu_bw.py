"""OSU-style unidirectional bandwidth (osu_bw) in mpi4py: windows of nonblocking sends.

Rank 0 posts a window of Isends, rank 1 a window of Irecvs; after each window rank 1
acknowledges with a 4-byte message. Options: -m MAX size, -i iterations, -x warm-up,
-W window size.
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

sizes = [1 << k for k in range(opts.max_size.bit_length()) if 1 << k <= opts.max_size]
buf = np.zeros(opts.max_size * opts.window, dtype=np.uint8)
ack = np.zeros(4, dtype=np.uint8)
if rank == 0:
    print("# OSU MPI Bandwidth Test")
    print(f"# {'Size':<10}{'Bandwidth (MB/s)':>18}")
for size in sizes:
    comm.Barrier()
    for i in range(opts.iterations + opts.warmup):
        if i == opts.warmup:
            t0 = MPI.Wtime()
        if rank == 0:
            reqs = [
                comm.Isend([buf[w * size : (w + 1) * size], MPI.BYTE], dest=1, tag=100)
                for w in range(opts.window)
            ]
            MPI.Request.Waitall(reqs)
            comm.Recv(ack, source=1, tag=101)
        else:
            reqs = [
                comm.Irecv([buf[w * size : (w + 1) * size], MPI.BYTE], source=0, tag=100)
                for w in range(opts.window)
            ]
            MPI.Request.Waitall(reqs)
            comm.Send(ack, dest=0, tag=101)
    elapsed = MPI.Wtime() - t0
    if rank == 0:
        mbps = size / 1e6 * opts.iterations * opts.window / elapsed
        print(f"{size:<12}{mbps:>18.2f}")
