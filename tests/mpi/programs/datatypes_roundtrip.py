"""Send derived datatypes from rank 0 to rank 1 and print what arrived, for each
``[recipe, count]`` of the JSON file named by argv[1] (see tests/mpi/test_datatypes.py):
once into the same datatype (the user's layout) and once into bytes (the packed order)."""

import hashlib
import json
import sys

import numpy as np
from mpi4py import MPI


def build(recipe):
    """The datatype a recipe describes: ``["named", NAME]`` or a constructor and its
    arguments, with child recipes last."""
    kind, *args = recipe
    if kind == "named":
        return getattr(MPI, args[0])
    if kind == "struct":
        lengths, displs, children = args
        return MPI.Datatype.Create_struct(lengths, displs, [build(c) for c in children])
    *params, child = args
    old = build(child)
    if kind == "resized":
        return old.Create_resized(*params)
    return getattr(old, f"Create_{kind}")(*params)


comm = MPI.COMM_WORLD
with open(sys.argv[1]) as f:
    cases = json.load(f)
for i, (recipe, count) in enumerate(cases):
    t = build(recipe).Commit()
    nbytes = t.true_ub + (count - 1) * t.extent
    if comm.rank == 0:
        src = (np.arange(nbytes, dtype=np.int64) * 7 % 251 + 1).astype(np.uint8)
        comm.Send([src, count, t], dest=1, tag=2 * i)
        comm.Send([src, count, t], dest=1, tag=2 * i + 1)
    elif comm.rank == 1:
        dst = np.full(nbytes, 0xEE, np.uint8)
        status = MPI.Status()
        comm.Recv([dst, count, t], source=0, tag=2 * i, status=status)
        packed = np.zeros(count * t.size, np.uint8)
        comm.Recv(packed, source=0, tag=2 * i + 1)
        digests = [hashlib.sha256(a.tobytes()).hexdigest()[:16] for a in (dst, packed)]
        print(i, t.size, t.extent, status.Get_count(t), *digests)
