"""MPI-IO under every access family; each rank prints what it read and the error classes."""

import os
import shutil
import tempfile

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
folder = comm.bcast(tempfile.mkdtemp(prefix="pyopenib-io-") if rank == 0 else None)
path = os.path.join(folder, "data.bin")


def show(label, value):
    print(rank, label, value)


def code(call):
    try:
        call()
    except MPI.Exception as exc:
        return exc.Get_error_class()
    return 0


# -- opening: the error classes of OMPIO ------------------------------------------------
show("missing", code(lambda: MPI.File.Open(comm, path, MPI.MODE_RDONLY)))
show("no-access-mode", code(lambda: MPI.File.Open(comm, path, MPI.MODE_CREATE)))
show("rdonly-create", code(lambda: MPI.File.Open(comm, path, MPI.MODE_RDONLY | MPI.MODE_CREATE)))
show(
    "rdwr-sequential", code(lambda: MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_SEQUENTIAL))
)
fh = MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_CREATE)
show("amode", fh.Get_amode() == MPI.MODE_RDWR | MPI.MODE_CREATE)
show("view0", (fh.Get_view()[0], fh.Get_view()[3], fh.Get_position(), fh.Get_size()))
fh.Close()
show(
    "excl", code(lambda: MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_CREATE | MPI.MODE_EXCL))
)

# -- explicit offsets, sizes --------------------------------------------------------------
fh = MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_CREATE)
st = MPI.Status()
fh.Write_at(rank * 8, np.arange(2, dtype="i4") + 10 * rank, st)
show("write-at-count", st.Get_count(MPI.INT))
fh.Sync()
comm.Barrier()
fh.Sync()
got = np.full(2 * size + 2, -1, "i4")
fh.Read_at(0, got, st)
show("read-at", (got.tolist(), st.Get_count(MPI.BYTE)))
comm.Barrier()


def size_after(change, *args):
    """The size every rank sees once all ranks made the (collective) change."""
    getattr(fh, change)(*args)
    comm.Barrier()
    seen = fh.Get_size()
    comm.Barrier()
    return seen


show("size", size_after("Sync"))
show("prealloc-small", size_after("Preallocate", 4))
show("prealloc-big", size_after("Preallocate", 100))
show("set-size", size_after("Set_size", 8 * size))

# -- individual file pointer, nonblocking, split collectives ---------------------------
fh.Set_view(0, MPI.INT)
fh.Seek(2 * rank)
fh.Write(np.array([100 + rank, 200 + rank], "i4"))
show("position", fh.Get_position())
fh.Seek(0, MPI.SEEK_END)
show("seek-end", fh.Get_position())
fh.Seek(-1, MPI.SEEK_CUR)
show("seek-cur", fh.Get_position())
fh.Sync()
comm.Barrier()
fh.Sync()
one = np.zeros(4, "i4")
fh.Seek(0)
req = fh.Iread(one)
st2 = MPI.Status()
req.Wait(st2)
show("iread", (one.tolist(), st2.Get_count(MPI.INT), fh.Get_position()))
two = np.zeros(2, "i4")
fh.Read_at_all_begin(2 * ((rank + 1) % size), two)
fh.Read_at_all_end(two, st2)
show("split-read", (two.tolist(), st2.Get_count(MPI.INT)))
mark = np.array([7 * rank], "i4")  # a split collective may use the buffer until _end
fh.Write_at_all_begin(2 * size + rank, mark)
fh.Write_at_all_end(mark)
fh.Sync()
comm.Barrier()
fh.Sync()
tail = np.zeros(size, "i4")
fh.Iread_at_all(2 * size, tail).Wait()
show("split-write", tail.tolist())
comm.Barrier()

# -- shared file pointer: serialised shared writes, ordered writes and reads -----------
fh.Set_size(0)
fh.Set_view(0, MPI.SHORT)
for turn in range(size):
    if rank == turn:
        fh.Write_shared(np.full(turn + 1, turn + 1, "i2"))
    comm.Barrier()
show("shared-pos", fh.Get_position_shared())
fh.Write_ordered(np.full(2, -rank - 1, "i2"))
show("after-ordered", fh.Get_position_shared())
fh.Sync()
comm.Barrier()
fh.Sync()
fh.Seek_shared(0)
back = np.zeros(rank + 1, "i2")
fh.Read_ordered(back)
show("read-ordered", back.tolist())
everything = np.zeros(size * (size + 1) // 2 + 2 * size, "i2")
fh.Read_at(0, everything)
show("file-shorts", everything.tolist())
comm.Barrier()

# -- views: a subarray filetype interleaves the ranks' blocks ---------------------------
fh.Set_size(0)
ftype = MPI.INT.Create_subarray([3, 2 * size], [3, 2], [0, 2 * rank]).Commit()
fh.Set_view(4, MPI.INT, ftype)
show("byte-offsets", [fh.Get_byte_offset(k) for k in range(4)])
fh.Write_all(np.arange(6, dtype="i4") + 100 * rank)
show("view-pos", fh.Get_position())
fh.Sync()
comm.Barrier()
fh.Sync()
mine = np.zeros(6, "i4")
fh.Seek(0)
fh.Read_all(mine)
show("view-read", mine.tolist())
disp, et, ft, rep = fh.Get_view()
show("get-view", (disp, et.Get_size(), ft.Get_size(), ft.Get_extent()[1], rep))
ft.Free()
fh.Set_view(0, MPI.BYTE, MPI.BYTE)
raw = np.zeros(4 + 4 * 6 * size, "u1")
fh.Read_at(0, raw)
show("raw-ints", raw[4:].view("i4").tolist())
ftype.Free()
fh.Close()

# -- access modes ---------------------------------------------------------------------
fh = MPI.File.Open(comm, path, MPI.MODE_RDONLY)
show("write-rdonly", code(lambda: fh.Write_at(0, np.zeros(1, "i4"))))
fh.Close()
fh = MPI.File.Open(comm, path, MPI.MODE_WRONLY | MPI.MODE_APPEND)
show("append-pos", fh.Get_position())
show("read-wronly", code(lambda: fh.Read_at(0, np.zeros(1, "i4"))))
fh.Close()
comm.Barrier()
if rank == 0:
    show("delete", code(lambda: MPI.File.Delete(path)))
    show("delete-again", code(lambda: MPI.File.Delete(path)))
comm.Barrier()
fh = MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_CREATE | MPI.MODE_DELETE_ON_CLOSE)
fh.Close()
show("deleted-on-close", os.path.exists(path))
show("null-close", code(MPI.FILE_NULL.Close))
comm.Barrier()
if rank == 0:
    shutil.rmtree(folder)
