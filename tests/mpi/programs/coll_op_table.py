"""Every predefined operation on every predefined datatype through Reduce_local and
Allreduce: which pairs work (and their result on small values), which fail with which
error class. Open MPI's op/type table, as the program prints it."""

import numpy as np
from mpi4py import MPI

OPS = "SUM PROD MAX MIN LAND LOR LXOR BAND BOR BXOR MAXLOC MINLOC REPLACE NO_OP".split()
TYPES = """BYTE PACKED CHAR WCHAR SIGNED_CHAR UNSIGNED_CHAR SHORT UNSIGNED_SHORT INT UNSIGNED
LONG UNSIGNED_LONG LONG_LONG UNSIGNED_LONG_LONG FLOAT DOUBLE LONG_DOUBLE C_BOOL CXX_BOOL
INT8_T INT16_T INT32_T INT64_T UINT8_T UINT16_T UINT32_T UINT64_T AINT OFFSET COUNT
C_FLOAT_COMPLEX C_DOUBLE_COMPLEX COMPLEX DOUBLE_COMPLEX FLOAT_INT DOUBLE_INT LONG_INT
TWOINT SHORT_INT CHARACTER LOGICAL INTEGER REAL DOUBLE_PRECISION INTEGER1 INTEGER2
INTEGER4 INTEGER8 LOGICAL4 REAL4 REAL8 COMPLEX8 COMPLEX16""".split()

comm = MPI.COMM_WORLD
for name in TYPES:
    dt = getattr(MPI, name)
    ext = dt.extent
    row = []
    for opname in OPS:
        op = getattr(MPI, opname)
        a = bytearray(bytes(range(1, 2 * ext + 1)))
        b = bytearray(bytes(range(3, 2 * ext + 3)))
        try:
            op.Reduce_local([a, 2, dt], [b, 2, dt])
            out = bytearray(2 * ext)
            comm.Allreduce([a, 2, dt], [out, 2, dt], op)
            row.append("ok")
        except MPI.Exception as exc:
            row.append(str(exc.Get_error_class()))
    print(name, " ".join(row))
ints = np.array([3, 5, 6], "i")
for opname in OPS[:10]:
    out = np.array([6, 3, 5], "i")
    getattr(MPI, opname).Reduce_local(ints, out)
    print(opname, out.tolist())
