"""OSU-style point-to-point latency (osu_latency) in mpi4py: blocking ping-pong.

Runs unchanged under `mpirun -n 2 python osu_latency.py` and `pyopenib run -n 2
osu_latency.py` (where the times are simulated). Options follow the OSU benchmarks:
-m MAX message size, -i iterations, -x warm-up iterations.
"""

import argparse

import numpy as np
from mpi4py import MPI

parser = argparse.ArgumentParser()
parser.add_argument("-m", "--max-size", type=int, default=1 << 20)
parser.add_argument("-i", "--iterations", type=int, default=100)
parser.add_argument("-x", "--warmup", type=int, default=10)
opts = parser.parse_args()

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
if comm.Get_size() != 2:
    if rank == 0:
        print("This test requires exactly two processes")
    raise SystemExit(1)

sizes = [0] + [1 << k for k in range(opts.max_size.bit_length()) if 1 << k <= opts.max_size]
buf = np.zeros(opts.max_size, dtype=np.uint8)
if rank == 0:
    print(f"# OSU MPI Latency Test ({MPI.Get_library_version().splitlines()[0]})")
    print(f"# {'Size':<10}{'Latency (us)':>18}")
for size in sizes:
    msg = [buf, size, MPI.BYTE]
    comm.Barrier()
    for i in range(opts.iterations + opts.warmup):
        if i == opts.warmup:
            t0 = MPI.Wtime()
        if rank == 0:
            comm.Send(msg, dest=1, tag=1)
            comm.Recv(msg, source=1, tag=1)
        else:
            comm.Recv(msg, source=0, tag=1)
            comm.Send(msg, dest=0, tag=1)
    latency = (MPI.Wtime() - t0) * 1e6 / (2 * opts.iterations)
    if rank == 0:
        print(f"{size:<12}{latency:>18.2f}")
