"""DLPack and CUDA-array-interface objects as message buffers (mpi4py reads both when an
object has no buffer protocol): point to point, a collective, Get_address, MPI.buffer and
the errors mpi4py raises for read-only and non-contiguous exports."""

import numpy as np
from mpi4py import MPI


class DLPackOnly:
    """A numpy array seen only through DLPack (numpy 2 exports versioned capsules)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class CAIOnly:
    """A numpy array seen only through the CUDA array interface."""

    def __init__(self, array, strides=None):
        face = array.__array_interface__
        self.__cuda_array_interface__ = {
            "version": 3,
            "data": face["data"],
            "typestr": face["typestr"],
            "shape": face["shape"],
            "strides": strides,
        }


comm = MPI.COMM_WORLD
rank, peer = comm.Get_rank(), 1 - comm.Get_rank()
for wrap in (DLPackOnly, CAIOnly):
    send = np.arange(6, dtype="i4") + 10 * rank
    recv = np.zeros(6, dtype="i4")
    comm.Sendrecv(wrap(send), peer, 0, wrap(recv), peer, 0)
    print(wrap.__name__, "sendrecv", recv.tolist())
    total = np.zeros(6, dtype="i4")
    comm.Allreduce(wrap(send), wrap(total), MPI.SUM)
    print(wrap.__name__, "allreduce", total.tolist())
    print(wrap.__name__, "address", MPI.Get_address(wrap(send)) == send.ctypes.data)
    buf = MPI.buffer(wrap(send))
    print(wrap.__name__, "buffer", len(buf), buf.readonly)
    matrix = np.arange(6, dtype="f8").reshape(2, 3)
    comm.Sendrecv(wrap(matrix.T.copy(order="F")), peer, 1, wrap(np.empty((3, 2))), peer, 1)
    print(wrap.__name__, "fortran ok")
gpu_buf = MPI.buffer(CAIOnly(np.zeros(4, "u1")))
try:
    gpu_buf.tobytes()
except BufferError as exc:
    print("cai tobytes", type(exc).__name__, exc)
frozen = np.zeros(3, "i4")
frozen.flags.writeable = False
self_comm = MPI.COMM_SELF
try:
    self_comm.Sendrecv(np.ones(3, "i4"), 0, 0, DLPackOnly(frozen), 0, 0)
except BufferError as exc:
    print("dlpack readonly", exc)
strided = np.zeros((3, 2), "i4")
target = np.zeros(6, "i4")
self_comm.Sendrecv(CAIOnly(strided, strides=(4, 12)), 0, 0, target, 0, 0)
print("cai fortran strides accepted")
try:
    self_comm.Sendrecv(CAIOnly(strided, strides=(16, 4)), 0, 0, target, 0, 0)
except BufferError as exc:
    print("cai strides", exc)
