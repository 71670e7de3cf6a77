"""Rendezvous messages around every protocol boundary, both ways at once: contiguous,
a strided vector datatype, and a receive buffer larger than the message. Each rank
prints what it received (kind, size, count, SHA-256), the same under any transport.

argv: comma-separated sizes in bytes."""

import hashlib
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
peer = 1 - rank
sizes = [int(s) for s in sys.argv[1].split(",")]


def pattern(n, salt):
    return ((np.arange(n, dtype=np.int64) * 131 + salt * 17 + rank) % 251).astype(np.uint8)


def report(kind, n, count, data):
    digest = hashlib.sha256(np.ascontiguousarray(data).tobytes()).hexdigest()[:16]
    print(f"{kind} {n} {count} {digest}", flush=True)


for n in sizes:
    # contiguous, three messages in flight each way
    sends = [pattern(n, k) for k in range(3)]
    recvs = [np.zeros(n, np.uint8) for _ in range(3)]
    statuses = [MPI.Status() for _ in range(3)]
    reqs = [comm.Irecv(r, source=peer, tag=k) for k, r in enumerate(recvs)]
    reqs += [comm.Isend(s, dest=peer, tag=k) for k, s in enumerate(sends)]
    MPI.Request.Waitall(reqs, statuses + [MPI.Status() for _ in range(3)])
    for k in range(3):
        report(f"contig{k}", n, statuses[k].Get_count(MPI.BYTE), recvs[k])
    # every other byte: a vector datatype on both sides
    vector = MPI.BYTE.Create_vector(n, 1, 2).Commit()
    src = pattern(2 * n, 9)
    dst = np.zeros(2 * n, np.uint8)
    status = MPI.Status()
    req = comm.Irecv([dst, 1, vector], source=peer, tag=7)
    comm.Send([src, 1, vector], dest=peer, tag=7)
    req.Wait(status)
    vector.Free()
    report("vector", n, status.Get_count(MPI.BYTE), dst)
    # a receive buffer four times the message
    big = np.zeros(4 * n, np.uint8)
    status = MPI.Status()
    req = comm.Irecv(big, source=peer, tag=8)
    comm.Send(pattern(n, 5), dest=peer, tag=8)
    req.Wait(status)
    report("larger-buffer", n, status.Get_count(MPI.BYTE), big)
