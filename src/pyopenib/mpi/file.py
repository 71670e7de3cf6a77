"""``MPI.File``: MPI-IO over the local file system, with Open MPI 4.1's (OMPIO's) semantics.

Each rank opens the file with its own descriptor; bytes go to the real file system with
``pread``/``pwrite``, so a program's output files are real files. What Open MPI's OMPIO
does and this module reproduces:

- ``Open`` is collective over a duplicate of the communicator: rank 0 creates the file
  (``MODE_CREATE``, ``MODE_EXCL``), the others open it once it exists, and every rank
  raises the same error class (``ERR_AMODE`` for an access mode MPI forbids,
  ``ERR_NO_SUCH_FILE``, ``ERR_FILE_EXISTS``, ``ERR_ACCESS``...). A read on a ``MODE_WRONLY``
  file is ``ERR_ACCESS``, a write on a ``MODE_RDONLY`` one ``ERR_READ_ONLY``.
- Views: ``Set_view(disp, etype, filetype)`` tiles the filetype's typemap from byte
  ``disp`` on, one copy per filetype extent; offsets and file pointers count etypes of
  the view; ``Set_view`` resets both file pointers to 0. Memory-side datatypes are packed
  and unpacked through the buffer layer; file-side layouts become (offset, length) runs.
  Only the ``native`` data representation is supported (``ERR_UNSUPPORTED_DATAREP``).
- Collective accesses (``*_all``, split ``*_begin``/``*_end``) are performed as
  individual ones, as OMPIO's ``fcoll/individual`` component does; nonblocking ones are
  complete when they return (their request only reports the status).
- The shared file pointer lives in one record per open file that every rank of the job
  can reach, as OMPIO's ``sharedfp/lockedfile`` keeps it in a locked side file on the
  shared file system: an access is an atomic fetch-and-add on it (ranks are greenlets
  that never switch inside it). ``*_ordered`` place ranks' data in rank order from it.

Simulated time: every access, ``Sync`` and size change charges its rank
``IO_LATENCY_PS`` plus ``IO_PS_PER_BYTE`` for each byte moved (a local NVMe-class device:
10 us per request, 2 GB/s), so I/O shows in ``MPI.Wtime`` without depending on the host's
disk. Durations are fixed numbers, never the host's wall clock.
"""

from __future__ import annotations

import errno
import os
import weakref

import numpy as np

from . import errhandler, pack
from . import info as hints_of
from .buffers import message
from .comm import Comm
from .constants import IO_MODES
from .datatypes import DATATYPES
from .error_classes import ERROR_CLASSES, Exception
from .handles import HandleObject, MpiObject
from .request import completed_request
from .status import ANY_SOURCE, ANY_TAG

__all__ = ["FILE_NULL", "File", "IO_LATENCY_PS", "IO_PS_PER_BYTE", "NAMES"]

IO_LATENCY_PS = 10_000_000
"""Simulated cost of one I/O request (10 us)."""
IO_PS_PER_BYTE = 500
"""Simulated cost per byte moved (2 GB/s)."""

_ERR = {name: code for name, (code, _) in ERROR_CLASSES.items()}

_CREATE, _RDONLY, _WRONLY, _RDWR = (
    IO_MODES[m] for m in ("MODE_CREATE", "MODE_RDONLY", "MODE_WRONLY", "MODE_RDWR")
)
_DELETE_ON_CLOSE = IO_MODES["MODE_DELETE_ON_CLOSE"]
_EXCL = IO_MODES["MODE_EXCL"]
_APPEND = IO_MODES["MODE_APPEND"]
_SEQUENTIAL = IO_MODES["MODE_SEQUENTIAL"]
SEEK_SET, SEEK_CUR, SEEK_END = IO_MODES["SEEK_SET"], IO_MODES["SEEK_CUR"], IO_MODES["SEEK_END"]
DISPLACEMENT_CURRENT = IO_MODES["DISPLACEMENT_CURRENT"]

_BYTE = DATATYPES["BYTE"]
_SHARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Per job: the shared file pointer record of each open file, by (path, context id)."""


def _error(name: str) -> Exception:
    return Exception(_ERR[name])


def _os_error(exc: OSError) -> str:
    """The MPI error class OMPIO reports for a failed system call."""
    return {
        errno.ENOENT: "ERR_NO_SUCH_FILE",
        errno.ENOTDIR: "ERR_NO_SUCH_FILE",
        errno.EEXIST: "ERR_FILE_EXISTS",
        errno.EACCES: "ERR_ACCESS",
        errno.EPERM: "ERR_ACCESS",
        errno.EROFS: "ERR_READ_ONLY",
        errno.ENOSPC: "ERR_NO_SPACE",
        errno.EDQUOT: "ERR_QUOTA",
        errno.EISDIR: "ERR_BAD_FILE",
        errno.ENAMETOOLONG: "ERR_BAD_FILE",
    }.get(exc.errno, "ERR_IO")


def _path(filename) -> str:
    return os.fsdecode(os.fspath(filename))


def _check_amode(amode: int) -> None:
    access = [m for m in (_RDONLY, _WRONLY, _RDWR) if amode & m]
    if len(access) != 1:
        raise _error("ERR_AMODE")
    if amode & _RDONLY and amode & (_CREATE | _EXCL):
        raise _error("ERR_AMODE")
    if amode & _RDWR and amode & _SEQUENTIAL:
        raise _error("ERR_AMODE")


def _os_flags(amode: int) -> int:
    if amode & _RDONLY:
        return os.O_RDONLY
    return os.O_WRONLY if amode & _WRONLY else os.O_RDWR


class _SharedPointer:
    """The shared file pointer of one open file (in etypes of the common view)."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0

    def fetch_add(self, n: int) -> int:
        old = self.value
        self.value = old + n
        return old


class _View:
    """A file view: where the stream of etypes the view shows lies in the file."""

    __slots__ = ("disp", "etype", "filetype", "datarep", "_tile", "_contiguous")

    def __init__(self, disp: int, etype, filetype, datarep: str):
        self.disp = disp
        self.etype = etype
        self.filetype = filetype
        self.datarep = datarep
        ft = filetype
        self._contiguous = ft.size == ft.extent == ft.true_extent and ft.true_lb == 0
        self._tile = None
        if not self._contiguous and ft.size:
            lo, hi = pack.span(ft._h, 1)
            self._tile = pack.gather(np.arange(lo, hi, dtype=np.int64), -lo, 1, ft._h)

    def positions(self, start: int, nbytes: int) -> np.ndarray:
        """File offsets of stream bytes ``start .. start + nbytes``."""
        k = np.arange(start, start + nbytes, dtype=np.int64)
        size = self.filetype.size
        return self.disp + (k // size) * self.filetype.extent + self._tile[k % size]

    def runs(self, start: int, nbytes: int) -> list[tuple[int, int]]:
        """(file offset, length) pieces of stream bytes ``start .. start + nbytes``."""
        if not nbytes:
            return []
        if self._contiguous:
            return [(self.disp + start, nbytes)]
        where = self.positions(start, nbytes)
        cuts = np.flatnonzero(np.diff(where) != 1) + 1
        starts = np.concatenate(([0], cuts))
        ends = np.concatenate((cuts, [len(where)]))
        return [(int(where[i]), int(j - i)) for i, j in zip(starts, ends, strict=True)]

    def byte_offset(self, offset: int) -> int:
        """``MPI_File_get_byte_offset``: the file byte of etype ``offset`` of the view."""
        k = offset * self.etype.size
        if self._contiguous:
            return self.disp + k
        return int(self.positions(k, 1)[0])

    def etypes_before(self, file_size: int) -> int:
        """How many etypes of the view lie before byte ``file_size`` (for SEEK_END)."""
        if file_size <= self.disp:
            return 0
        span = file_size - self.disp
        if self._contiguous:
            stream = span
        elif self._tile is None:
            stream = 0
        else:
            full, rest = divmod(span, self.filetype.extent)
            stream = full * self.filetype.size + int(np.count_nonzero(self._tile < rest))
        return stream // self.etype.size


class FileState(MpiObject):
    """One rank's open file: descriptor, communicator, view, pointers, pending split."""

    def __init__(self, comm, fd: int, path: str, amode: int, shared: _SharedPointer, info):
        super().__init__()
        self.comm = comm
        self.st = comm._st()
        self.rc = self.st.rc
        self.fd = fd
        self.path = path
        self.amode = amode
        self.shared = shared
        self.info = info
        self.view = _View(0, _BYTE, _BYTE, "native")
        self.position = 0
        self.atomicity = False
        self.split = None
        """A pending split collective: (call name, status fields)."""


def _charge(rc, nbytes: int) -> None:
    rc.sim.sleep(IO_LATENCY_PS + nbytes * IO_PS_PER_BYTE)


def _fields(nbytes: int) -> tuple:
    """OMPIO fills only the count of an I/O status."""
    return (ANY_SOURCE, ANY_TAG, 0, nbytes, False)


class _NullFile:
    """What ``FILE_NULL``'s error handler belongs to: MPI applies it to errors of calls
    without a file (``Open``, ``Delete``)."""

    __slots__ = ("__weakref__",)


_NULL_FILE = _NullFile()


@errhandler.routes_errors
class File(HandleObject):
    """File I/O context."""

    __slots__ = ()
    __module__ = "mpi4py.MPI"
    _constants: dict = {}
    _null_name = "FILE_NULL"

    # -- hints (info) -------------------------------------------------------------------
    Set_info = hints_of.Set_info
    Get_info = hints_of.Get_info
    info = hints_of.hints

    # -- error handlers (errhandler) ----------------------------------------------------
    _errh_kind = "File"
    _errh_noun = "file"

    def _errh_state(self):
        return _NULL_FILE if self._obj is None else self._obj

    Create_errhandler = classmethod(errhandler.Create_errhandler)
    Get_errhandler = errhandler.Get_errhandler
    Set_errhandler = errhandler.Set_errhandler
    Call_errhandler = errhandler.Call_errhandler

    def __init_subclass__(cls, **kwargs):
        """Route a subclass's errors too once routing is on (``errhandler.routes_errors``)."""
        super().__init_subclass__(**kwargs)
        errhandler.route_subclass(cls)

    def _s(self) -> FileState:
        f = self._obj
        if f is None:
            raise _error("ERR_FILE")
        return f

    def _release(self) -> None:
        self.Close()

    def __repr__(self) -> str:
        return "<mpi4py.MPI.File MPI_FILE_NULL>" if self._obj is None else "<mpi4py.MPI.File>"

    # -- opening and closing ------------------------------------------------------------
    @classmethod
    def Open(cls, comm, filename, amode: int = _RDONLY, info=None) -> File:
        """Open a file collectively over ``comm``."""
        if not isinstance(comm, Comm) or not comm:
            raise _error("ERR_COMM")
        _check_amode(amode)
        path = os.path.abspath(_path(filename))
        dup = comm.Dup()
        rank = dup.Get_rank()
        fd, code = -1, None
        if rank == 0:
            fd, code = _open(path, amode, first=True)
        code = dup.bcast(code, root=0)
        if code is None and rank != 0:
            fd, code = _open(path, amode, first=False)
        codes = dup.allgather(code)
        failed = next((c for c in codes if c is not None), None)
        if failed is not None:
            if fd >= 0:
                os.close(fd)
            dup.Free()
            raise _error(failed)
        shared = _SHARED.setdefault(dup._st().rc.job, {}).setdefault(
            (path, dup._st().cid), _SharedPointer()
        )
        state = FileState(dup, fd, path, amode, shared, info)
        if amode & _APPEND:
            end = os.fstat(fd).st_size
            state.position = end
            if rank == 0:
                shared.value = end
        _charge(state.rc, 0)
        f = cls.__new__(cls)
        f._obj = state
        return f

    def Close(self) -> None:
        """Collective: every rank's data is in the file system once all have closed."""
        f = self._s()
        f.comm.Barrier()
        os.close(f.fd)
        if f.st.rank == 0:
            _SHARED.get(f.rc.job, {}).pop((f.path, f.st.cid), None)
            if f.amode & _DELETE_ON_CLOSE:
                try:
                    os.remove(f.path)
                except OSError as exc:
                    raise _error(_os_error(exc)) from None
        f.comm.Barrier()
        f.comm.Free()
        self._obj = None

    @classmethod
    def Delete(cls, filename, info=None) -> None:
        """Delete a file."""
        try:
            os.remove(_path(filename))
        except OSError as exc:
            raise _error(_os_error(exc)) from None

    # -- size, mode, group, info --------------------------------------------------------
    def Get_size(self) -> int:
        """Return the size of the file in bytes."""
        return os.fstat(self._s().fd).st_size

    @property
    def size(self) -> int:
        return self.Get_size()

    def Set_size(self, size: int) -> None:
        """Collective: rank 0 truncates or extends the file, every rank then sees it."""
        f = self._s()
        if size < 0:
            raise _error("ERR_ARG")
        if f.st.rank == 0 and os.fstat(f.fd).st_size != size:
            os.ftruncate(f.fd, size)
        _charge(f.rc, 0)
        f.comm.Barrier()

    def Preallocate(self, size: int) -> None:
        """Grow the file to ``size`` bytes if it is smaller (never shrinks it)."""
        f = self._s()
        if size < 0:
            raise _error("ERR_ARG")
        if f.st.rank == 0 and os.fstat(f.fd).st_size < size:
            os.ftruncate(f.fd, size)
        _charge(f.rc, 0)
        f.comm.Barrier()

    def Get_amode(self) -> int:
        """Return the access mode the file was opened with."""
        return self._s().amode

    @property
    def amode(self) -> int:
        return self.Get_amode()

    def Get_group(self):
        """Return the group of processes that opened the file."""
        return self._s().comm.Get_group()

    @property
    def group(self):
        return self.Get_group()

    @property
    def group_size(self) -> int:
        return self._s().st.size

    @property
    def group_rank(self) -> int:
        return self._s().st.rank

    def Set_atomicity(self, flag: bool) -> None:
        """Set the atomicity mode of the file (collective)."""
        self._s().atomicity = bool(flag)

    def Get_atomicity(self) -> bool:
        """Return the atomicity mode of the file."""
        return self._s().atomicity

    @property
    def atomicity(self) -> bool:
        return self.Get_atomicity()

    @atomicity.setter
    def atomicity(self, value: bool) -> None:
        self.Set_atomicity(value)

    def Sync(self) -> None:
        """Make what this rank wrote visible to every rank.

        It already is: the ranks share one host's page cache, so only the simulated cost
        of the flush is charged. OMPIO also ``fsync``s for durability across a crash,
        which no program can observe here (and which costs the host milliseconds)."""
        f = self._s()
        _charge(f.rc, 0)

    def Get_type_extent(self, datatype) -> int:
        """Extent in the file of ``datatype`` (native representation: its extent)."""
        self._s()
        return datatype.Get_extent()[1]

    # -- views --------------------------------------------------------------------------
    def Set_view(self, disp: int = 0, etype=_BYTE, filetype=None, datarep="native", info=None):
        """Set the file view: displacement, elementary type, filetype, representation."""
        f = self._s()
        filetype = etype if filetype is None else filetype
        datarep = datarep or "native"
        if datarep != "native":
            raise _error("ERR_UNSUPPORTED_DATAREP")
        if disp == DISPLACEMENT_CURRENT:
            if not f.amode & _SEQUENTIAL:
                raise _error("ERR_ARG")
            disp = f.view.byte_offset(f.shared.value)
        if disp < 0 or etype.size == 0 or filetype.size % etype.size:
            raise _error("ERR_ARG")
        f.view = _View(disp, etype, filetype, datarep)
        f.position = 0
        f.comm.Barrier()
        if f.st.rank == 0:
            f.shared.value = 0
        f.comm.Barrier()
        if info is not None:
            f.info = info

    def Get_view(self):
        """Return the file view: displacement, elementary type, filetype, representation."""
        v = self._s().view
        et = v.etype if v.etype.is_predefined else v.etype.Dup()
        ft = v.filetype if v.filetype.is_predefined else v.filetype.Dup()
        return v.disp, et, ft, v.datarep

    def Get_byte_offset(self, offset: int) -> int:
        """Return the absolute byte position of a view-relative offset."""
        return self._s().view.byte_offset(offset)

    # -- the data movement --------------------------------------------------------------
    def _write(self, f: FileState, offset: int, buf) -> int:
        """Write ``buf`` at etype ``offset`` of the view; returns the bytes written."""
        if f.amode & _RDONLY:
            raise _error("ERR_READ_ONLY")
        data = message(buf).data
        pos = 0
        try:
            for where, n in f.view.runs(offset * f.view.etype.size, len(data)):
                os.pwrite(f.fd, memoryview(data[pos : pos + n]), where)
                pos += n
        except OSError as exc:
            raise _error(_os_error(exc)) from None
        _charge(f.rc, pos)
        return pos

    def _read(self, f: FileState, offset: int, buf) -> int:
        """Read into ``buf`` from etype ``offset`` of the view; return the bytes read.

        They are fewer than asked at the end of the file."""
        if f.amode & _WRONLY:
            raise _error("ERR_ACCESS")
        msg = message(buf, writable=True)
        data = msg.data
        pos = 0
        try:
            for where, n in f.view.runs(offset * f.view.etype.size, len(data)):
                got = os.preadv(f.fd, [memoryview(data[pos : pos + n])], where)
                pos += got
                if got < n:
                    break
        except OSError as exc:
            raise _error(_os_error(exc)) from None
        msg.finish(pos)
        _charge(f.rc, pos)
        return pos

    def _etypes(self, f: FileState, nbytes: int) -> int:
        return nbytes // f.view.etype.size

    def _requested(self, f: FileState, buf, writable: bool) -> int:
        return self._etypes(f, len(message(buf, writable=writable).data))

    # explicit offsets
    def Read_at(self, offset: int, buf, status=None) -> None:
        """Read at an explicit offset."""
        _fill(status, self._read(self._s(), offset, buf))

    def Write_at(self, offset: int, buf, status=None) -> None:
        """Write at an explicit offset."""
        _fill(status, self._write(self._s(), offset, buf))

    def Read_at_all(self, offset: int, buf, status=None) -> None:
        """Read at an explicit offset (collective)."""
        self.Read_at(offset, buf, status)

    def Write_at_all(self, offset: int, buf, status=None) -> None:
        """Write at an explicit offset (collective)."""
        self.Write_at(offset, buf, status)

    def Iread_at(self, offset: int, buf):
        """Start a nonblocking read at an explicit offset."""
        return completed_request(_fields(self._read(self._s(), offset, buf)))

    def Iwrite_at(self, offset: int, buf):
        """Start a nonblocking write at an explicit offset."""
        return completed_request(_fields(self._write(self._s(), offset, buf)))

    Iread_at_all = Iread_at
    Iwrite_at_all = Iwrite_at

    # individual file pointer
    def _read_here(self, buf) -> int:
        f = self._s()
        n = self._read(f, f.position, buf)
        f.position += self._etypes(f, n)
        return n

    def _write_here(self, buf) -> int:
        f = self._s()
        n = self._write(f, f.position, buf)
        f.position += self._etypes(f, n)
        return n

    def Read(self, buf, status=None) -> None:
        """Read at the individual file pointer."""
        _fill(status, self._read_here(buf))

    def Write(self, buf, status=None) -> None:
        """Write at the individual file pointer."""
        _fill(status, self._write_here(buf))

    Read_all = Read
    Write_all = Write

    def Iread(self, buf):
        """Start a nonblocking read at the individual file pointer."""
        return completed_request(_fields(self._read_here(buf)))

    def Iwrite(self, buf):
        """Start a nonblocking write at the individual file pointer."""
        return completed_request(_fields(self._write_here(buf)))

    Iread_all = Iread
    Iwrite_all = Iwrite

    def Seek(self, offset: int, whence: int = SEEK_SET) -> None:
        """Move the individual file pointer."""
        f = self._s()
        f.position = self._seek(f, f.position, offset, whence)

    def _seek(self, f: FileState, current_pos: int, offset: int, whence: int) -> int:
        if whence == SEEK_SET:
            new = offset
        elif whence == SEEK_CUR:
            new = current_pos + offset
        elif whence == SEEK_END:
            new = f.view.etypes_before(os.fstat(f.fd).st_size) + offset
        else:
            raise _error("ERR_ARG")
        if new < 0:
            raise _error("ERR_ARG")
        return new

    def Get_position(self) -> int:
        """Return the individual file pointer, in etypes of the view."""
        return self._s().position

    # shared file pointer
    def _read_shared(self, buf) -> int:
        f = self._s()
        return self._read(f, f.shared.fetch_add(self._requested(f, buf, True)), buf)

    def _write_shared(self, buf) -> int:
        f = self._s()
        return self._write(f, f.shared.fetch_add(self._requested(f, buf, False)), buf)

    def Read_shared(self, buf, status=None) -> None:
        """Read at the shared file pointer."""
        _fill(status, self._read_shared(buf))

    def Write_shared(self, buf, status=None) -> None:
        """Write at the shared file pointer."""
        _fill(status, self._write_shared(buf))

    def Iread_shared(self, buf):
        """Start a nonblocking read at the shared file pointer."""
        return completed_request(_fields(self._read_shared(buf)))

    def Iwrite_shared(self, buf):
        """Start a nonblocking write at the shared file pointer."""
        return completed_request(_fields(self._write_shared(buf)))

    def _ordered_offset(self, f: FileState, etypes: int) -> int:
        """Return this rank's etype offset for an ordered access (collective).

        Ranks follow each other from the shared pointer, which moves past everyone's
        data."""
        counts = f.comm.allgather(etypes)
        base = f.comm.bcast(f.shared.value if f.st.rank == 0 else None, root=0)
        if f.st.rank == 0:
            f.shared.value = base + sum(counts)
        f.comm.Barrier()
        return base + sum(counts[: f.st.rank])

    def _read_ordered(self, buf) -> int:
        f = self._s()
        return self._read(f, self._ordered_offset(f, self._requested(f, buf, True)), buf)

    def _write_ordered(self, buf) -> int:
        f = self._s()
        return self._write(f, self._ordered_offset(f, self._requested(f, buf, False)), buf)

    def Read_ordered(self, buf, status=None) -> None:
        """Read at the shared file pointer, in rank order (collective)."""
        _fill(status, self._read_ordered(buf))

    def Write_ordered(self, buf, status=None) -> None:
        """Write at the shared file pointer, in rank order (collective)."""
        _fill(status, self._write_ordered(buf))

    def Seek_shared(self, offset: int, whence: int = SEEK_SET) -> None:
        """Collective: every rank gives the same arguments; rank 0 moves the pointer."""
        f = self._s()
        f.comm.Barrier()
        if f.st.rank == 0:
            f.shared.value = self._seek(f, f.shared.value, offset, whence)
        f.comm.Barrier()

    def Get_position_shared(self) -> int:
        """Return the shared file pointer, in etypes of the view."""
        return self._s().shared.value

    # split collectives: the access happens in ``_begin``, ``_end`` reports it
    def _begin(self, call: str, nbytes: int) -> None:
        f = self._obj
        if f.split is not None:
            raise _error("ERR_OTHER")
        f.split = (call, nbytes)

    def _end(self, call: str, status) -> None:
        f = self._s()
        if f.split is None or f.split[0] != call:
            raise _error("ERR_OTHER")
        _fill(status, f.split[1])
        f.split = None

    def _check_no_split(self) -> FileState:
        f = self._s()
        if f.split is not None:
            raise _error("ERR_OTHER")
        return f

    def Read_at_all_begin(self, offset: int, buf) -> None:
        """Start a split collective read at an explicit offset."""
        f = self._check_no_split()
        self._begin("read_at_all", self._read(f, offset, buf))

    def Read_at_all_end(self, buf, status=None) -> None:
        """Complete a split collective read at an explicit offset."""
        self._end("read_at_all", status)

    def Write_at_all_begin(self, offset: int, buf) -> None:
        """Start a split collective write at an explicit offset."""
        f = self._check_no_split()
        self._begin("write_at_all", self._write(f, offset, buf))

    def Write_at_all_end(self, buf, status=None) -> None:
        """Complete a split collective write at an explicit offset."""
        self._end("write_at_all", status)

    def Read_all_begin(self, buf) -> None:
        """Start a split collective read at the individual file pointer."""
        self._check_no_split()
        self._begin("read_all", self._read_here(buf))

    def Read_all_end(self, buf, status=None) -> None:
        """Complete a split collective read at the individual file pointer."""
        self._end("read_all", status)

    def Write_all_begin(self, buf) -> None:
        """Start a split collective write at the individual file pointer."""
        self._check_no_split()
        self._begin("write_all", self._write_here(buf))

    def Write_all_end(self, buf, status=None) -> None:
        """Complete a split collective write at the individual file pointer."""
        self._end("write_all", status)

    def Read_ordered_begin(self, buf) -> None:
        """Start a split collective read in rank order."""
        self._check_no_split()
        self._begin("read_ordered", self._read_ordered(buf))

    def Read_ordered_end(self, buf, status=None) -> None:
        """Complete a split collective read in rank order."""
        self._end("read_ordered", status)

    def Write_ordered_begin(self, buf) -> None:
        """Start a split collective write in rank order."""
        self._check_no_split()
        self._begin("write_ordered", self._write_ordered(buf))

    def Write_ordered_end(self, buf, status=None) -> None:
        """Complete a split collective write in rank order."""
        self._end("write_ordered", status)


def _open(path: str, amode: int, first: bool) -> tuple[int, str | None]:
    """(descriptor, None) or (-1, MPI error class name). Only the first opener creates."""
    flags = _os_flags(amode)
    if first and amode & _CREATE:
        flags |= os.O_CREAT
        if amode & _EXCL:
            flags |= os.O_EXCL
    try:
        return os.open(path, flags, 0o644), None
    except OSError as exc:
        return -1, _os_error(exc)


def _fill(status, nbytes: int) -> None:
    if status is not None:
        status._fill(*_fields(nbytes))


FILE_NULL = File._predefine("FILE_NULL", None)

NAMES = {"File": File, "FILE_NULL": FILE_NULL}
"""What ``mpi4py.MPI`` exports from this module (its constants come from ``constants``)."""
