"""Datatypes and buffer specs, printed rank by rank: the same under real Open MPI + mpi4py
and under pyopenib (tests/mpi/test_datatypes_differential.py compares the two)."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def show(*words):
    print(*words, flush=True)


# -- every predefined datatype: name, size, extent, bounds, codes ------------------------
names = sorted(n for n in dir(MPI) if isinstance(getattr(MPI, n), MPI.Datatype))
for n in names:
    t = getattr(MPI, n)
    if t == MPI.DATATYPE_NULL:
        show("null", n)
        continue
    try:
        row = (t.Get_name(), t.size, t.extent, t.lb, t.true_lb, t.true_extent)
    except MPI.Exception as exc:
        show("invalid", n, exc.Get_error_class(), t.typechar, t.typestr)
        continue
    show("type", n, *row, t.typechar, t.typestr, t.Pack_external_size("external32", 2))

# -- derived datatypes: bounds, decoding, packed bytes, element counts ----------------------
INT, DBL, CHR, SHT = MPI.INT, MPI.DOUBLE, MPI.CHAR, MPI.SHORT
marked = INT.Create_resized(-4, 12)
pair = MPI.Datatype.Create_struct([1, 1], [0, 8], [DBL, CHR])
derived = {
    "contiguous": INT.Create_contiguous(3),
    "vector": INT.Create_vector(3, 2, 4),
    "vector-neg": INT.Create_vector(3, 2, -3),
    "hvector": DBL.Create_hvector(2, 1, 12),
    "indexed": INT.Create_indexed([2, 0, 1], [5, 100, -2]),
    "hindexed": DBL.Create_hindexed([1, 2], [0, 3]),
    "indexed_block": SHT.Create_indexed_block(3, [7, 0, 2]),
    "hindexed_block": DBL.Create_hindexed_block(2, [0, 3, 40]),
    "struct": MPI.Datatype.Create_struct([3, 1, 2], [1, 16, 30], [CHR, MPI.C_DOUBLE_COMPLEX, INT]),
    "struct-pairs": MPI.Datatype.Create_struct([2, 1], [0, 40], [MPI.SHORT_INT, MPI.DOUBLE_INT]),
    "struct-marked": MPI.Datatype.Create_struct([1, 1], [0, 5], [CHR, INT.Create_resized(0, 5)]),
    "resized": INT.Create_vector(2, 2, 3).Create_resized(2, 7),
    "subarray": marked.Create_subarray([4, 5], [2, 3], [1, 1]),
    "subarray-F": SHT.Create_subarray([4, 5, 3], [2, 3, 2], [1, 0, 1], order=MPI.ORDER_F),
    "darray-block": INT.Create_darray(
        4, 1, [8, 8], [MPI.DISTRIBUTE_BLOCK] * 2, [MPI.DISTRIBUTE_DFLT_DARG] * 2, [2, 2]
    ),
    "darray-cyclic": SHT.Create_darray(
        6, 4, [7, 5], [MPI.DISTRIBUTE_CYCLIC, MPI.DISTRIBUTE_BLOCK], [2, -1], [3, 2], MPI.ORDER_F
    ),
    "nested": MPI.Datatype.Create_struct(
        [1, 2], [0, 20], [INT.Create_vector(2, 1, 3), pair.Create_hvector(2, 1, -18)]
    ).Create_indexed([1, 2], [2, -1]),
    "dup": pair.Dup(),
}
status = MPI.Status()
for label, t in derived.items():
    t.Commit()
    env = t.Get_envelope()
    ints, addrs, counts, types = t.Get_contents()
    show("derived", label, t.size, t.lb, t.extent, t.true_lb, t.true_extent, env, ints, addrs)
    show("  decode", t.decode()[1], sorted(t.decode()[2]), t.typechar, t.typestr)
    count = 3
    lo = min(t.true_lb, t.true_lb + (count - 1) * t.extent)
    base = -lo if lo < 0 else 0
    hi = base + max(t.true_ub, t.true_ub + (count - 1) * t.extent)
    mem = (np.arange(hi + 8, dtype=np.int64) * 7 % 251).astype(np.uint8)
    if t.true_lb >= 0 and 0 < t.extent and t.true_ub <= t.extent:
        packed = bytearray(t.Pack_size(count, comm))
        n = t.Pack(mem[: count * t.extent], packed, 0, comm)
        show("  pack", bytes(packed[:n]).hex())
        back = np.zeros(count * t.extent, np.uint8)
        t.Unpack(packed, 0, back, comm)
        show("  unpack", back.tobytes().hex())
        if "pair" not in label:  # Open MPI 4.1 packs a long double's padding as garbage
            ext = bytearray(t.Pack_external_size("external32", count))
            n = t.Pack_external("external32", mem[: count * t.extent], ext, 0)
            show("  external32", bytes(ext[:n]).hex())
    elements = []
    for nbytes in (0, 1, 2, 4, 8, 12, t.size, t.size + 4, 2 * t.size):
        status.Set_elements(MPI.BYTE, nbytes)
        elements.append((status.Get_count(t), status.Get_elements(t)))
    show("  counts", elements)

# -- non-contiguous data through point-to-point, eager and rendezvous sizes ----------------
if size >= 2:
    column = DBL.Create_vector(64, 1, 8).Commit()  # one column of a 64 x 8 matrix
    for rows, label in ((64, "eager"), (4096, "rendezvous")):
        t = DBL.Create_vector(rows, 1, 8).Commit()
        if rank == 0:
            a = np.arange(rows * 8, dtype="f8")
            comm.Send([a, 1, t], dest=1, tag=1)
            comm.Send([a[3:], 1, t], dest=1, tag=2)
        elif rank == 1:
            b = np.full(rows * 8, -1.0)
            comm.Recv([b, 1, t], source=0, tag=1, status=status)
            c = np.full(rows, -1.0)
            comm.Recv(c, source=0, tag=2)
            show(label, "column", b[::8][:4].tolist(), b[-8:].tolist(), status.Get_count(t))
            show(label, "as doubles", c[:4].tolist(), c[-2:].tolist(), status.Get_elements(DBL))
    sub = INT.Create_subarray([6, 6], [3, 2], [2, 3]).Commit()
    if rank == 0:
        comm.Isend([np.arange(36, dtype="i"), 1, sub], dest=1, tag=3).Wait()
        comm.Send([np.arange(6, dtype="i"), 6, MPI.INT], dest=1, tag=4)
    elif rank == 1:
        grid = np.zeros(36, "i")
        req = comm.Irecv([grid, 1, sub], source=0, tag=3)
        req.Wait(status)
        show("subarray", grid.reshape(6, 6).tolist(), status.Get_count(sub))
        comm.Recv([grid, 1, sub], source=0, tag=4, status=status)
        show("subarray from ints", grid.reshape(6, 6).tolist(), status.Get_elements(MPI.INT))
    pairs = np.zeros(3, dtype=np.dtype([("v", "f8"), ("i", "i4")], align=True))
    if rank == 0:
        pairs["v"], pairs["i"] = [1.5, 2.5, 3.5], [7, 8, 9]
        comm.Send([pairs, MPI.DOUBLE_INT], dest=1, tag=5)
    elif rank == 1:
        comm.Recv([pairs, MPI.DOUBLE_INT], source=0, tag=5, status=status)
        show("pairs", pairs.tolist(), status.Get_count(MPI.BYTE), status.Get_count(MPI.DOUBLE_INT))

# -- v-collective buffer specs: scalar and sequence counts/displacements --------------------
mine = np.full(2, rank + 1, dtype="i")
forms = {
    "[buf, count, displ, type]": lambda b: [b, 2, 3, MPI.INT],
    "[buf, (count, displ), type]": lambda b: [b, (2, 3), MPI.INT],
    "[buf, counts, displs, type]": lambda b: [b, [2] * size, [3 * i for i in range(size)], MPI.INT],
    "[buf, (counts, None), type]": lambda b: [b, ([2] * size, None), MPI.INT],
    "[buf, count, type]": lambda b: [b, 2, MPI.INT],
}
for label, form in forms.items():
    out = np.full(3 * size, -1, dtype="i")
    comm.Allgatherv(mine, form(out))
    show("Allgatherv", label, out.tolist())
    out = np.full(3 * size, -1, dtype="i")
    comm.Gatherv(mine, form(out) if rank == 0 else None, root=0)
    show("Gatherv", label, out.tolist())
    src = np.arange(3 * size, dtype="i")
    got = np.full(2, -1, dtype="i")
    comm.Scatterv(form(src) if rank == 0 else None, got, root=0)
    show("Scatterv", label, got.tolist())

# -- malformed specs: mpi4py's exceptions and texts ------------------------------------------
bad = {
    "five items": [np.zeros(2, "i"), 1, 0, MPI.INT, 5],
    "int": 3,
    "None": None,
    "negative count": [np.zeros(3, "i"), -1, MPI.INT],
    "negative displ": [np.zeros(3, "i"), (1, -1), MPI.INT],
    "displ out of bounds": [np.zeros(3, "i"), (1, 5), MPI.INT],
    "bad length": [bytes(7), MPI.INT],
    "None with count": [None, 1, MPI.BYTE],
    "bad code": [np.zeros(3, "i"), "zz"],
    "float count": [np.zeros(3, "i"), 1.5, MPI.INT],
    "null type": [np.zeros(3, "i"), MPI.DATATYPE_NULL],
}
for label, spec in bad.items():
    try:
        comm.Isend(spec, dest=rank, tag=77).Cancel()
        show("accepted", label)
    except (TypeError, ValueError, KeyError) as exc:
        show("rejected", label, type(exc).__name__, exc)
    except MPI.Exception as exc:
        show("rejected", label, "MPI", exc.Get_error_class())
for spec in ([None, MPI.BYTE], [None, 0, MPI.BYTE]):
    comm.Sendrecv(spec, rank, 9, spec, rank, 9, status)
    show("empty", status.Get_count(MPI.BYTE))
