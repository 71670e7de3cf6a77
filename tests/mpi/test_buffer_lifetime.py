"""A message's hold on the user's buffer ends with the message, without the garbage
collector: C MPI never keeps a buffer past the call, DLPack producers free their tensor in
the capsule's deleter when the consumer lets go, and mpi4py's tests count references
(test_cco_pr_buf's DLPack arrays failed at random when a staged receive area and its
Message kept each other, and the buffer, alive until a collection)."""

import gc
import sys

import numpy as np

from pyopenib.mpi.buffers import message
from pyopenib.mpi.datatypes import DATATYPES


class DLPackOnly:
    """A numpy array seen only through DLPack."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def _every_other_int():
    return DATATYPES["INT"].Create_indexed_block(1, [0, 2, 4, 6, 8]).Commit()


def test_a_staged_receive_lets_go_of_the_buffer_without_a_collection():
    dtype = _every_other_int()
    gc.disable()
    try:
        for buf in (np.zeros(10, "i4"), DLPackOnly(np.zeros(10, "i4"))):
            held = buf.array if isinstance(buf, DLPackOnly) else buf
            before = sys.getrefcount(held)
            msg = message([buf, 1, dtype], writable=True)
            msg.data[:] = np.arange(5, dtype="i4").view(np.uint8)  # unpacks in place
            assert held.tolist() == [0, 0, 1, 0, 2, 0, 3, 0, 4, 0]
            assert sys.getrefcount(held) > before
            del msg
            assert sys.getrefcount(held) == before
    finally:
        gc.enable()
        dtype.Free()
