"""Run the collective calls described in the JSON file named by argv[1] (without one,
``coll_cases_fixed.json`` beside this program); print each result, one line per call
(``tests/mpi/test_coll_property.py`` generates the calls and computes the answers)."""

import json
import os
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size


def blank(n: int, dtype: str) -> np.ndarray:
    """What a receive buffer holds before the call: -1 (wrapped for unsigned types)."""
    return np.full(n, -1, np.int64).astype(dtype)


def values(case: int, who: int, n: int, dtype: str) -> np.ndarray:
    """Small positive integers, exact in every dtype (the test computes the same)."""
    i = np.arange(n, dtype=np.int64)
    return (((i * 7 + who * 3 + case) % 11) + 1).astype(dtype)


def run(k: int, c: dict):
    name, dt, n, root = c["call"], c["dtype"], c["count"], c["root"]
    op = getattr(MPI, c["op"]) if c["op"] else None
    inplace, nonblocking = c["inplace"], c["nonblocking"]
    counts = c["counts"]
    mine = values(k, rank, n, dt)
    go = (lambda r: r.Wait()) if nonblocking else (lambda r: None)
    call = (
        (lambda f: getattr(comm, "I" + f[0].lower() + f[1:]))
        if nonblocking
        else (lambda f: getattr(comm, f))
    )
    if name in ("Allreduce", "Scan", "Exscan"):
        out = blank(n, dt)
        if inplace:
            out[:] = mine
            go(call(name)(MPI.IN_PLACE, out, op))
        else:
            go(call(name)(mine, out, op))
        return out
    if name == "Reduce":
        out = blank(n, dt)
        if inplace and rank == root:
            out[:] = mine
            go(call(name)(MPI.IN_PLACE, out, op, root))
        else:
            go(call(name)(mine, out, op, root))
        return out
    if name == "Bcast":
        buf = mine if rank == root else blank(n, dt)
        go(call(name)(buf, root))
        return buf
    if name == "Reduce_scatter_block":
        full = values(k, rank, n * size, dt)
        if inplace:
            go(call(name)(MPI.IN_PLACE, full, op))
            return full[:n]
        out = blank(n, dt)
        go(call(name)(full, out, op))
        return out
    if name == "Reduce_scatter":
        full = values(k, rank, sum(counts), dt)
        out = blank(counts[rank], dt)
        go(call(name)(full, out, counts, op))
        return out
    if name in ("Allgather", "Gather"):
        out = blank(n * size, dt)
        if inplace and (name == "Allgather" or rank == root):
            out[rank * n : (rank + 1) * n] = mine
            send = MPI.IN_PLACE
        else:
            send = mine
        go(call(name)(send, out) if name == "Allgather" else call(name)(send, out, root))
        return out
    if name in ("Allgatherv", "Gatherv"):
        mine = values(k, rank, counts[rank], dt)
        out = blank(sum(counts), dt)
        spec = [out, counts]
        if name == "Allgatherv":
            go(call(name)(mine, spec))
        else:
            go(call(name)(mine, spec, root))
        return out
    if name == "Scatter":
        src = values(k, rank, n * size, dt)
        out = blank(n, dt)
        go(call(name)(src, out, root))
        return out
    if name == "Scatterv":
        src = values(k, rank, sum(counts), dt)
        out = blank(counts[rank], dt)
        go(call(name)([src, counts], out, root))
        return out
    if name == "Alltoall":
        src = values(k, rank, n * size, dt)
        out = blank(n * size, dt)
        go(call(name)(src, out))
        return out
    raise ValueError(name)


here = os.path.dirname(os.path.abspath(__file__))
path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "coll_cases_fixed.json")
with open(path) as f:
    cases = json.load(f)
for k, case in enumerate(cases):
    print(k, run(k, case).tolist())
