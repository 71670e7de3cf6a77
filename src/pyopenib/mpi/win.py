"""``MPI.Win``: one-sided communication with Open MPI 4.1's semantics, over ``pml.osc``.

A window object holds its ``WinState``: the window's own duplicate of the communicator
(Open MPI dups it, so window traffic never matches user messages), this process's
``OscWindow`` (memory exposed for RDMA, per-peer keys) and the epoch state that decides
whether an RMA call is legal. An RMA call outside an epoch that covers its target raises
``MPI.Exception(ERR_RMA_SYNC)``, as Open MPI's osc/rdma returns ``OMPI_ERR_RMA_SYNC``:

- access epochs: fence (opened by ``Fence`` without ``MODE_NOSUCCEED``), ``Lock``
  (per target), ``Lock_all``, ``Start`` (a group of targets);
- exposure epochs: fence and ``Post``.

Completion: ``Put``/``Get`` are RDMA WRITE/READ whose completion at the origin means the
bytes are at the target (RC semantics), accumulates are complete when the target's
acknowledgement arrives; ``Flush``/``Unlock``/``Complete``/``Fence`` wait for both. So
``Flush_local`` is as strong as ``Flush`` here (MPI allows that).

Memory model: ``WIN_UNIFIED`` (Open MPI's osc/rdma on coherent memory): ``Sync`` has
nothing to do. ``Allocate_shared`` needs every rank of the communicator on one simulated
node (``--ppn``); its segment is one array shared by those ranks, as a POSIX shared
memory segment is shared by the processes of a node.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..pml.osc import DONE, OscError, OscModule
from . import attributes, errhandler, pack
from . import info as hints_of
from .attributes import attributes_of, delete_attributes
from .buffers import as_bytes, message
from .comm import Comm, Intracomm
from .constants import RMA, WIN_BASE, WIN_CREATE_FLAVOR, WIN_DISP_UNIT, WIN_MODEL, WIN_SIZE
from .context import current
from .error_classes import ERROR_CLASSES, Exception
from .handles import HandleObject, MpiObject
from .memory import buffer
from .ops import OPS, Op, check_op
from .request import Operation, Request, completed_request, wrap
from .status import PROC_NULL, UNDEFINED, empty_fields

__all__ = ["NAMES", "WIN_NULL", "Win"]

_ERR = {name: code for name, (code, _) in ERROR_CLASSES.items()}

LOCK_EXCLUSIVE = RMA["LOCK_EXCLUSIVE"]
LOCK_SHARED = RMA["LOCK_SHARED"]
_NOCHECK = RMA["MODE_NOCHECK"]
_NOSUCCEED = RMA["MODE_NOSUCCEED"]
_CREATE = RMA["WIN_FLAVOR_CREATE"]
_ALLOCATE = RMA["WIN_FLAVOR_ALLOCATE"]
_DYNAMIC = RMA["WIN_FLAVOR_DYNAMIC"]
_SHARED = RMA["WIN_FLAVOR_SHARED"]
_UNIFIED = RMA["WIN_UNIFIED"]
"""Only NOCHECK and NOSUCCEED among the assertions change what is done."""

_OSC: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Each rank's osc component (keyed by its ``RankContext``), made at its first window."""
_SEGMENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Per job: the shared-memory segments of ``Allocate_shared`` windows, by (node, cid)."""


def _error(name: str) -> Exception:
    return Exception(_ERR[name])


def _accumulate_ops() -> dict:
    """The predefined ops an accumulate may use, on typed arrays: (target, origin) -> new.
    MPI forbids user-defined ops in RMA; REPLACE and NO_OP are the osc's own."""
    logical = {"LAND": np.logical_and, "LOR": np.logical_or, "LXOR": np.logical_xor}
    table = {
        "SUM": np.add,
        "PROD": np.multiply,
        "MAX": np.maximum,
        "MIN": np.minimum,
        "BAND": np.bitwise_and,
        "BOR": np.bitwise_or,
        "BXOR": np.bitwise_xor,
        "MAXLOC": _loc(np.greater),
        "MINLOC": _loc(np.less),
    }
    for name, fn in logical.items():
        table[name] = lambda a, b, fn=fn: fn(a, b).astype(a.dtype)
    return table


def _loc(better):
    def combine(a, b):
        out = a.copy()
        take = better(b["v"], a["v"]) | ((b["v"] == a["v"]) & (b["i"] < a["i"]))
        out[take] = b[take]
        return out

    return combine


_ACC_OPS = _accumulate_ops()
_RMA_OPS = (*_ACC_OPS, "REPLACE", "NO_OP")
"""The ``OPS`` names of the ops an RMA call accepts (user-defined ops are not)."""


def _osc_of(rc) -> OscModule:
    osc = _OSC.get(rc)
    if osc is None:
        osc = _OSC[rc] = rc.pml.one_sided(_ACC_OPS)
    return osc


def _op_name(op, datatype=None) -> str:
    """``SUM`` for ``MPI.SUM`` (and, given ``datatype``, one it applies to, as Open MPI's
    ``ompi_op_is_valid``); ``MPI_ERR_OP`` for anything else, user-defined ops included."""
    name = next((n for n in _RMA_OPS if OPS[n] == op), None) if isinstance(op, Op) else None
    if name is None:
        raise _error("ERR_OP")
    if datatype is not None and name not in ("REPLACE", "NO_OP"):
        check_op(op, datatype)
    return name


class WinState(MpiObject):
    """One rank's view of a window: communicator, osc part, flavor, epochs."""

    def __init__(self, comm, osc_win, flavor: int, memory, disp_unit: int, shared=None):
        super().__init__()
        self.comm = comm
        self.st = comm._st()
        self.rc = self.st.rc
        self.osc = osc_win
        self.flavor = flavor
        self.memory = memory
        self.disp_unit = disp_unit
        self.shared = shared
        """Allocate_shared: (segment, [(offset, size, disp_unit) per rank])."""
        self.name = ""
        self.info = None
        self.fence = False
        self.locks: dict[int, tuple[bool, bool]] = {}
        """Locked targets: (exclusive, taken with MODE_NOCHECK)."""
        self.lock_all: bool | None = None
        """None: no Lock_all epoch; else whether it was taken with MODE_NOCHECK."""
        self.start: list[int] | None = None
        self.start_seen: set[int] = set()
        self.start_nocheck = False
        self.post: list[int] | None = None
        self.post_nocheck = False
        self.requests: list = []
        self.finishers: list = []
        """(request, unpack) of gets whose result still has to reach the user's layout."""


def _wait(rc, reqs, call: str) -> None:
    pending = [r for r in reqs if not r.complete]
    if pending:
        rc.wait_for(lambda: all(r.complete for r in pending), call)
    for r in reqs:
        if r.error is not None:
            raise _error("ERR_RMA_RANGE")


class _RmaOperation(Operation):
    """The operation behind a request-based RMA call's ``Request`` (``Rput``...):
    complete when the RMA operation completed at the target; completing it runs
    ``done`` (the fetched result reaches the user's layout). Its status is the empty
    one, as Open MPI's osc requests report."""

    __slots__ = ("req", "done", "label")

    def __init__(self, req, done):
        self.req = req
        self.done = done
        self.label = req.label

    def ready(self) -> bool:
        return self.req.complete

    def peek(self) -> tuple:
        return empty_fields()

    def take(self):
        self.done()
        return empty_fields(), None


@errhandler.routes_errors
class Win(HandleObject):
    """Remote memory access context."""

    __slots__ = ()
    __module__ = "mpi4py.MPI"
    _constants: dict = {}
    _null_name = "WIN_NULL"

    def _s(self) -> WinState:
        w = self._obj
        if w is None:
            raise _error("ERR_WIN")
        return w

    # -- attributes (attributes; Get_attr below answers the window's own first) ---------
    _attr_kind = "Win"
    _attributes = attributes.win_object_attributes
    Create_keyval = classmethod(attributes.Create_keyval)
    Free_keyval = classmethod(attributes.Free_keyval)
    Set_attr = attributes.Set_attr
    Delete_attr = attributes.Delete_attr

    # -- hints (info) -------------------------------------------------------------------
    Set_info = hints_of.Set_info
    Get_info = hints_of.Get_info
    info = hints_of.hints

    # -- error handlers (errhandler) ----------------------------------------------------
    _errh_kind = "Win"
    _errh_noun = "window"
    _errh_state = _s
    Create_errhandler = classmethod(errhandler.Create_errhandler)
    Get_errhandler = errhandler.Get_errhandler
    Set_errhandler = errhandler.Set_errhandler
    Call_errhandler = errhandler.Call_errhandler

    def __init_subclass__(cls, **kwargs):
        """Route a subclass's errors too once routing is on (``errhandler.routes_errors``)."""
        super().__init_subclass__(**kwargs)
        errhandler.route_subclass(cls)

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Win {'MPI_WIN_NULL' if self._obj is None else self._obj.name}>"

    # -- creation -----------------------------------------------------------------------
    @classmethod
    def _make(cls, comm, memory, disp_unit, flavor, shared=None, info=None) -> Win:
        if not isinstance(comm, Comm) or not comm:
            raise _error("ERR_COMM")
        if disp_unit <= 0:
            raise _error("ERR_DISP")
        dup = comm.Dup()
        st = dup._st()
        rc = st.rc
        osc = _osc_of(rc)
        region = osc.register(memory) if memory is not None else None
        owin = osc.add_window(st.cid, list(st.ranks), st.rank, region, flavor == _DYNAMIC)
        key = region.key if region is not None else -1
        size = 0 if memory is None else len(memory)
        # this exchange also proves every member registered the window before any RMA
        owin.remote = dup.allgather((key, size, disp_unit))
        _wait(rc, osc.connect([p for p in st.ranks if p != rc.rank]), "MPI_Win_create")
        win = cls.__new__(cls)
        win._obj = WinState(dup, owin, flavor, memory, disp_unit, shared)
        win._obj.info = info
        return win

    @classmethod
    def Create(cls, memory, disp_unit: int = 1, info=None, comm=None) -> Win:
        """A window over the caller's ``memory`` (a writable buffer, or None/BOTTOM)."""
        comm = _comm_or_self(comm)
        data = None
        if memory is not None and not _is_bottom(memory):
            data = as_bytes(memory, writable=True)[0]
        return cls._make(comm, data, disp_unit, _CREATE, info=info)

    @classmethod
    def Allocate(cls, size: int, disp_unit: int = 1, info=None, comm=None) -> Win:
        """Create a window over memory allocated by MPI."""
        if size < 0:
            raise _error("ERR_SIZE")
        return cls._make(
            _comm_or_self(comm), np.zeros(size, np.uint8), disp_unit, _ALLOCATE, info=info
        )

    @classmethod
    def Allocate_shared(cls, size: int, disp_unit: int = 1, info=None, comm=None) -> Win:
        """Create a window over one segment shared by the ranks of ``comm``.

        They must share a node (Open MPI's osc/sm: ``MPI_ERR_RMA_SHARED`` otherwise);
        each rank's part follows the lower ranks'."""
        comm = _comm_or_self(comm)
        if size < 0:
            raise _error("ERR_SIZE")
        if disp_unit <= 0:
            raise _error("ERR_DISP")
        rc = current()
        layout = comm.allgather((rc.hostname, size, disp_unit))
        if len({host for host, _, _ in layout}) != 1:
            raise _error("ERR_RMA_SHARED")
        parts, offset = [], 0
        for _, n, unit in layout:
            parts.append((offset, n, unit))
            offset += n
        segments = _SEGMENTS.setdefault(rc.job, {})
        name = (rc.hostname, comm._st().cid, comm._st().ranks[0])
        if comm.Get_rank() == 0:
            segments[name] = np.zeros(offset, np.uint8)
        comm.Barrier()
        segment = segments[name]
        start, n, _ = parts[comm.Get_rank()]
        win = cls._make(
            comm,
            segment[start : start + n],
            disp_unit,
            _SHARED,
            shared=(segment, parts, name),
            info=info,
        )
        return win

    @classmethod
    def Create_dynamic(cls, info=None, comm=None) -> Win:
        """Create a window without memory, to which memory is attached."""
        return cls._make(_comm_or_self(comm), None, 1, _DYNAMIC, info=info)

    def Shared_query(self, rank: int):
        """Return this process's view of ``rank``'s part and its displacement unit.

        For PROC_NULL, the first part with bytes, as Open MPI answers."""
        w = self._s()
        if w.flavor != _SHARED:
            raise _error("ERR_RMA_FLAVOR")
        segment, parts, _ = w.shared
        if rank == PROC_NULL:
            rank = next((r for r, (_, n, _) in enumerate(parts) if n), 0)
        if not 0 <= rank < len(parts):
            raise _error("ERR_RANK")
        start, n, unit = parts[rank]
        return segment[start : start + n].view(buffer), unit

    def Attach(self, memory) -> None:
        """Attach memory to a dynamic window."""
        w = self._s()
        if w.flavor != _DYNAMIC:
            raise _error("ERR_RMA_FLAVOR")
        data = as_bytes(memory, writable=True)[0]
        w.osc.attached.append(w.osc.osc.register(data))

    def Detach(self, memory) -> None:
        """Detach memory from a dynamic window."""
        w = self._s()
        if w.flavor != _DYNAMIC:
            raise _error("ERR_RMA_FLAVOR")
        address = as_bytes(memory, writable=True)[0].ctypes.data
        for i, r in enumerate(w.osc.attached):
            if r.address == address:
                del w.osc.attached[i]
                w.osc.osc.release(r)
                return
        raise _error("ERR_RMA_ATTACH")

    def Free(self) -> None:
        """Collective: every operation completes, then the window is gone everywhere."""
        w = self._s()
        _wait(w.rc, w.requests, "MPI_Win_free")
        w.requests = []
        w.comm.Barrier()
        delete_attributes(self, attributes_of(w))
        w.osc.osc.remove_window(w.osc)
        if w.shared is not None and w.st.rank == 0:
            _SEGMENTS.get(w.rc.job, {}).pop(w.shared[2], None)
        w.comm.Free()
        self._obj = None

    # -- queries ------------------------------------------------------------------------
    def Get_group(self):
        """Return the group of processes of the window."""
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

    def _base(self) -> int:
        m = self._s().memory
        return 0 if m is None else int(m.ctypes.data)

    def Get_attr(self, keyval: int):
        """Return the value of a window attribute."""
        w = self._s()
        if keyval == WIN_BASE:
            return self._base()
        if keyval == WIN_SIZE:
            return 0 if w.memory is None else len(w.memory)
        if keyval == WIN_DISP_UNIT:
            return w.disp_unit
        if keyval == WIN_CREATE_FLAVOR:
            return w.flavor
        if keyval == WIN_MODEL:
            return _UNIFIED
        return attributes.Get_attr(self, keyval)

    @property
    def attrs(self) -> tuple[int, int, int]:
        return self.Get_attr(WIN_BASE), self.Get_attr(WIN_SIZE), self.Get_attr(WIN_DISP_UNIT)

    @property
    def flavor(self) -> int:
        return self._s().flavor

    @property
    def model(self) -> int:
        self._s()
        return _UNIFIED

    def tomemory(self) -> buffer:
        """The window's memory as ``MPI.buffer`` (empty for a dynamic window)."""
        m = self._s().memory
        return buffer() if m is None else m.view(buffer)

    def Get_name(self) -> str:
        """Return the print name of the window."""
        if self._obj is None:
            return "MPI_WIN_NULL"
        return self._obj.name

    def Set_name(self, name: str) -> None:
        """Set the print name of the window."""
        self._s().name = str(name)

    @property
    def name(self) -> str:
        return self.Get_name()

    @name.setter
    def name(self, value: str) -> None:
        self.Set_name(value)

    # -- checks -------------------------------------------------------------------------
    def _target(self, w: WinState, rank: int) -> bool:
        """Tell whether ``rank`` is a target to act on (False for PROC_NULL).

        Raises ERR_RANK / ERR_RMA_SYNC as Open MPI does."""
        if rank == PROC_NULL:
            return False
        if not 0 <= rank < w.st.size:
            raise _error("ERR_RANK")
        if rank in w.locks or w.lock_all is not None or w.fence:
            return True
        if w.start is not None and rank in w.start:
            self._await_post(w, rank)
            return True
        raise _error("ERR_RMA_SYNC")

    def _await_post(self, w: WinState, rank: int) -> None:
        """Wait until ``rank``'s POST of the ``Start`` epoch has arrived.

        osc/rdma does not block in ``Start``: the first operation to each target waits."""
        if rank in w.start_seen or w.start_nocheck:
            return
        posts = w.osc.posts
        if not posts[rank]:
            w.rc.wait_for(lambda: posts[rank] > 0, "MPI_Win_start (waiting for MPI_Win_post)")
        posts[rank] -= 1
        w.start_seen.add(rank)

    def _runs(self, w: WinState, rank: int, disp: int, count: int, dt) -> list:
        """Return where ``count`` x ``dt`` at ``disp`` lie in ``rank``'s window.

        They are contiguous (offset, length) pieces of the packed stream (Open MPI's
        target convertor)."""
        base = disp if w.flavor == _DYNAMIC else disp * w.osc.remote[rank][2]
        nbytes = count * dt.size
        if not nbytes:
            return []
        if dt.size == dt.true_extent and (count == 1 or dt.extent == dt.size):
            return [(base + dt.true_lb, nbytes)]
        lo, hi = pack.span(dt._h, count)
        where = pack.gather(np.arange(lo, hi, dtype=np.int64), -lo, count, dt._h) + base
        cuts = np.flatnonzero(np.diff(where) != 1) + 1
        starts = np.concatenate(([0], cuts))
        ends = np.concatenate((cuts, [len(where)]))
        return [(int(where[i]), int(j - i)) for i, j in zip(starts, ends, strict=True)]

    def _issue(self, w: WinState, start, finish=None) -> object:
        """Start an operation; ``finish`` runs once it completed.

        ``finish`` unpacks a result into the user's layout."""
        try:
            req = start()
        except OscError:
            raise _error("ERR_RMA_RANGE") from None
        if req is DONE:
            if finish is not None:
                finish()
            return req
        w.requests.append(req)
        if finish is not None:
            w.finishers.append((req, finish))
        return req

    def _finish(self, w: WinState) -> None:
        done = [f for r, f in w.finishers if r.complete]
        if done:
            w.finishers = [(r, f) for r, f in w.finishers if not r.complete]
            for f in done:
                f()

    # -- communication ------------------------------------------------------------------
    def _put(self, origin, target_rank, target, label):
        w = self._s()
        msg = message(origin, peer=target_rank)
        if not self._target(w, target_rank):
            return DONE
        disp, count, dt = _target_spec(target, msg)
        if count * dt.size != len(msg.data):
            raise _error("ERR_COUNT")
        runs = self._runs(w, target_rank, disp, count, dt)
        return self._issue(w, lambda: w.osc.put(target_rank, msg.data, runs, label))

    def _get(self, origin, target_rank, target, label):
        w = self._s()
        msg = message(origin, writable=True, peer=target_rank)
        if not self._target(w, target_rank):
            return DONE
        disp, count, dt = _target_spec(target, msg)
        if count * dt.size != len(msg.data):
            raise _error("ERR_COUNT")
        runs = self._runs(w, target_rank, disp, count, dt)
        return self._issue(w, lambda: w.osc.get(target_rank, msg.data, runs, label), msg.finish)

    def _acc(self, origin, result, target_rank, target, op, label):
        w = self._s()
        name = _op_name(op)
        omsg = message(origin, peer=target_rank) if origin is not None else None
        rmsg = message(result, writable=True, peer=target_rank) if result is not None else None
        if not self._target(w, target_rank):
            return DONE
        like = omsg if omsg is not None and (name != "NO_OP" or rmsg is None) else rmsg
        disp, count, dt = _target_spec(target, like)
        _op_name(op, dt)
        nbytes = count * dt.size
        data = omsg.data if omsg is not None and name != "NO_OP" else None
        if data is not None and len(data) != nbytes:
            raise _error("ERR_COUNT")
        if rmsg is not None and len(rmsg.data) != nbytes:
            raise _error("ERR_COUNT")
        runs = self._runs(w, target_rank, disp, count, dt)
        element = _element_dtype(dt)
        out = None if rmsg is None else rmsg.data
        return self._issue(
            w,
            lambda: w.osc.accumulate(target_rank, data, runs, element, name, out, label),
            None if rmsg is None else rmsg.finish,
        )

    def Put(self, origin, target_rank: int, target=None) -> None:
        """Put data into the memory of a target process."""
        self._put(origin, target_rank, target, "MPI_Put")

    def Get(self, origin, target_rank: int, target=None) -> None:
        """Get data from the memory of a target process."""
        self._get(origin, target_rank, target, "MPI_Get")

    def Accumulate(self, origin, target_rank: int, target=None, op=None) -> None:
        """Combine data into the memory of a target process."""
        self._acc(origin, None, target_rank, target, _sum(op), "MPI_Accumulate")

    def Get_accumulate(self, origin, result, target_rank: int, target=None, op=None) -> None:
        """Combine data into a target's memory, fetching what it held."""
        self._acc(origin, result, target_rank, target, _sum(op), "MPI_Get_accumulate")

    def _single(self, w: WinState, origin, compare, result, target_rank: int):
        """Check the buffers of fetch-and-op / compare-and-swap as mpi4py does.

        One element each, of one datatype; None for PROC_NULL, else the (origin, compare,
        result) messages."""
        omsg = message(origin, peer=target_rank)
        cmsg = None if compare is None else message(compare, peer=target_rank)
        rmsg = message(result, writable=True, peer=target_rank)
        if target_rank == PROC_NULL:
            return None
        named = [("origin", omsg), ("compare", cmsg), ("result", rmsg)]
        for what, m in named:
            if m is not None and m.count != 1:
                raise ValueError(f"{what}: expecting a single element, got {m.count}")
        for what, m in named[1:]:
            if m is not None and m.datatype != omsg.datatype:
                raise ValueError(f"mismatch in origin and {what} MPI datatypes")
        self._target(w, target_rank)
        return omsg, cmsg, rmsg

    def Fetch_and_op(self, origin, result, target_rank: int, target_disp: int = 0, op=None) -> None:
        """Combine one element into a target's memory, fetching what it held."""
        w = self._s()
        msgs = self._single(w, origin, None, result, target_rank)
        if msgs is None:
            return
        omsg, _, rmsg = msgs
        dt = omsg.datatype
        name = _op_name(_sum(op), dt)
        runs = self._runs(w, target_rank, target_disp, 1, dt)
        data = None if name == "NO_OP" else omsg.data
        element = _element_dtype(dt)
        self._issue(
            w,
            lambda: w.osc.accumulate(
                target_rank, data, runs, element, name, rmsg.data, "MPI_Fetch_and_op"
            ),
            rmsg.finish,
        )

    def Compare_and_swap(
        self, origin, compare, result, target_rank: int, target_disp: int = 0
    ) -> None:
        """Replace one element in a target's memory if it equals a value."""
        w = self._s()
        msgs = self._single(w, origin, compare, result, target_rank)
        if msgs is None:
            return
        omsg, cmsg, rmsg = msgs
        ((offset, n),) = self._runs(w, target_rank, target_disp, 1, omsg.datatype)
        self._issue(
            w,
            lambda: w.osc.compare_and_swap(
                target_rank, omsg.data, cmsg.data, rmsg.data[:n], offset
            ),
            rmsg.finish,
        )

    def _request(self, w: WinState, req) -> Request:
        """Return a request-based call's ``Request``.

        It completes when the operation completed at the target (and, for the fetching
        ones, its result reached the user's buffer)."""
        if req is DONE:
            return completed_request(empty_fields())

        def done():
            self._finish(w)
            w.requests = [r for r in w.requests if r is not req]

        return wrap(_RmaOperation(req, done))

    def Rput(self, origin, target_rank: int, target=None):
        """Put data into a target's memory; return a request."""
        return self._request(self._s(), self._put(origin, target_rank, target, "MPI_Rput"))

    def Rget(self, origin, target_rank: int, target=None):
        """Get data from a target's memory; return a request."""
        return self._request(self._s(), self._get(origin, target_rank, target, "MPI_Rget"))

    def Raccumulate(self, origin, target_rank: int, target=None, op=None):
        """Combine data into a target's memory; return a request."""
        return self._request(
            self._s(), self._acc(origin, None, target_rank, target, _sum(op), "MPI_Raccumulate")
        )

    def Rget_accumulate(self, origin, result, target_rank: int, target=None, op=None):
        """Combine data into a target's memory, fetching; return a request."""
        return self._request(
            self._s(),
            self._acc(origin, result, target_rank, target, _sum(op), "MPI_Rget_accumulate"),
        )

    # -- synchronisation ----------------------------------------------------------------
    def _complete_all(self, w: WinState, call: str, targets=None) -> None:
        if targets is None:
            reqs, w.requests = w.requests, []
        else:
            reqs = [r for r in w.requests if r.target in targets]
            w.requests = [r for r in w.requests if r.target not in targets]
        try:
            _wait(w.rc, reqs, call)
        finally:
            self._finish(w)

    def Fence(self, assertion: int = 0) -> None:
        """Synchronize the window: end one access epoch and start the next (collective)."""
        w = self._s()
        if w.locks or w.lock_all is not None or w.start is not None or w.post is not None:
            raise _error("ERR_RMA_SYNC")
        self._complete_all(w, "MPI_Win_fence")
        w.comm.Barrier()
        w.fence = not assertion & _NOSUCCEED

    def Start(self, group, assertion: int = 0) -> None:
        """Start an access epoch to a group of targets (PSCW)."""
        w = self._s()
        if w.start is not None or w.locks or w.lock_all is not None:
            raise _error("ERR_RMA_SYNC")
        w.fence = False
        w.start = self._window_ranks(w, group)
        w.start_seen = set()
        w.start_nocheck = bool(assertion & _NOCHECK)

    def Complete(self) -> None:
        """Complete the access epoch started with ``Start``."""
        w = self._s()
        if w.start is None:
            raise _error("ERR_RMA_SYNC")
        targets = w.start
        for t in targets:
            self._await_post(w, t)
        self._complete_all(w, "MPI_Win_complete", set(targets))
        if not w.start_nocheck:
            _wait(w.rc, w.osc.osc.complete(w.osc, targets), "MPI_Win_complete")
        w.start = None

    def Post(self, group, assertion: int = 0) -> None:
        """Start an exposure epoch to a group of origins (PSCW)."""
        w = self._s()
        if w.post is not None:
            raise _error("ERR_RMA_SYNC")
        w.fence = False
        w.post = self._window_ranks(w, group)
        w.post_nocheck = bool(assertion & _NOCHECK)
        if not w.post_nocheck:
            w.osc.osc.post(w.osc, w.post)

    def _exposure_over(self, w: WinState) -> bool:
        completes = w.osc.completes
        return w.post_nocheck or all(completes[o] > 0 for o in w.post)

    def _end_exposure(self, w: WinState) -> None:
        if not w.post_nocheck:
            for o in w.post:
                w.osc.completes[o] -= 1
        w.post = None

    def Wait(self) -> bool:
        """Complete the exposure epoch started with ``Post``."""
        w = self._s()
        if w.post is None:
            raise _error("ERR_RMA_SYNC")
        if not self._exposure_over(w):
            w.rc.wait_for(lambda: self._exposure_over(w), "MPI_Win_wait")
        self._end_exposure(w)
        return True

    def Test(self) -> bool:
        """Test whether the exposure epoch started with ``Post`` is complete."""
        w = self._s()
        if w.post is None:
            raise _error("ERR_RMA_SYNC")
        if not self._exposure_over(w):
            w.rc.poll()
            if not self._exposure_over(w):
                return False
        self._end_exposure(w)
        return True

    def Lock(self, rank: int, lock_type: int = LOCK_EXCLUSIVE, assertion: int = 0) -> None:
        """Start a passive-target access epoch at one target."""
        w = self._s()
        if lock_type not in (LOCK_EXCLUSIVE, LOCK_SHARED):
            raise _error("ERR_LOCKTYPE")
        if rank == PROC_NULL:
            return
        if not 0 <= rank < w.st.size:
            raise _error("ERR_RANK")
        if rank in w.locks or w.lock_all is not None or w.start is not None:
            raise _error("ERR_RMA_SYNC")
        exclusive = lock_type == LOCK_EXCLUSIVE
        nocheck = bool(assertion & _NOCHECK)
        if not nocheck:
            req = w.osc.osc.lock(w.osc, rank, exclusive)
            _wait(w.rc, [req], "MPI_Win_lock")
        w.fence = False
        w.locks[rank] = (exclusive, nocheck)

    def Unlock(self, rank: int) -> None:
        """Complete the passive-target access epoch at one target."""
        w = self._s()
        if rank == PROC_NULL:
            return
        if rank not in w.locks:
            raise _error("ERR_RMA_SYNC")
        self._complete_all(w, "MPI_Win_unlock", {rank})
        exclusive, nocheck = w.locks.pop(rank)
        if not nocheck:
            _wait(w.rc, [w.osc.osc.unlock(w.osc, rank, exclusive)], "MPI_Win_unlock")

    def Lock_all(self, assertion: int = 0) -> None:
        """Start a shared passive-target access epoch at every target."""
        w = self._s()
        if w.lock_all is not None or w.locks or w.start is not None:
            raise _error("ERR_RMA_SYNC")
        nocheck = bool(assertion & _NOCHECK)
        if not nocheck:
            osc = w.osc.osc
            reqs = [osc.lock(w.osc, t, False) for t in range(w.st.size)]
            _wait(w.rc, reqs, "MPI_Win_lock_all")
        w.fence = False
        w.lock_all = nocheck

    def Unlock_all(self) -> None:
        """Complete the passive-target access epoch at every target."""
        w = self._s()
        if w.lock_all is None:
            raise _error("ERR_RMA_SYNC")
        self._complete_all(w, "MPI_Win_unlock_all")
        if not w.lock_all:
            osc = w.osc.osc
            reqs = [osc.unlock(w.osc, t, False) for t in range(w.st.size)]
            _wait(w.rc, reqs, "MPI_Win_unlock_all")
        w.lock_all = None

    def _passive(self, w: WinState, rank: int | None) -> None:
        if w.lock_all is not None:
            return
        if rank is None and w.locks or rank in w.locks:
            return
        raise _error("ERR_RMA_SYNC")

    def Flush(self, rank: int) -> None:
        """Complete the operations issued to one target."""
        w = self._s()
        if rank == PROC_NULL:
            return
        self._passive(w, rank)
        self._complete_all(w, "MPI_Win_flush", {rank})

    def Flush_all(self) -> None:
        """Complete the operations issued to every target."""
        w = self._s()
        self._passive(w, None)
        self._complete_all(w, "MPI_Win_flush_all")

    def Flush_local(self, rank: int) -> None:
        """Complete locally the operations issued to one target."""
        w = self._s()
        if rank == PROC_NULL:
            return
        self._passive(w, rank)
        self._complete_all(w, "MPI_Win_flush_local", {rank})

    def Flush_local_all(self) -> None:
        """Complete locally the operations issued to every target."""
        w = self._s()
        self._passive(w, None)
        self._complete_all(w, "MPI_Win_flush_local_all")

    def Sync(self) -> None:
        """Unified memory model: public and private copies are one (nothing to do)."""
        self._s()

    # -- groups -------------------------------------------------------------------------
    def _window_ranks(self, w: WinState, group) -> list[int]:
        wgroup = w.comm.Get_group()
        ranks = group.Translate_ranks(list(range(group.Get_size())), wgroup)
        if any(r == UNDEFINED for r in ranks):
            raise _error("ERR_GROUP")
        return ranks


def _sum(op):
    return OPS["SUM"] if op is None else op


def _is_bottom(memory) -> bool:
    """mpi4py's ``BOTTOM`` (address 0): a window without memory of its own."""
    return (isinstance(memory, int) and memory == 0) or repr(memory) == "BOTTOM"


def _comm_or_self(comm):
    return Intracomm._of("self_comm") if comm is None else comm


def _element_dtype(dt) -> np.dtype:
    """The packed numpy dtype of the one predefined type an accumulate's datatype is built
    of (MPI allows no other); pair types lose their alignment padding when packed."""
    while not dt.is_predefined:
        base, combiner, params = dt.decode()
        dt = params["datatypes"][0] if combiner == "STRUCT" else base
    npdt = dt.dtype
    if npdt.fields is None:
        return npdt
    return np.dtype([(name, npdt.fields[name][0]) for name in npdt.names])


def _target_spec(target, msg) -> tuple[int, int, object]:
    """mpi4py's target argument: None, disp, (disp,), (disp, count) or (disp, count,
    datatype) -> (disp, count, datatype); the origin's count and datatype fill what is
    left out."""
    dt = msg.datatype
    count = msg.count
    disp = 0
    if target is None:
        pass
    elif isinstance(target, int):
        disp = target
    elif isinstance(target, list | tuple):
        if len(target) > 3:
            raise ValueError("target: expecting 3 items at most")
        if len(target) > 0:
            disp = int(target[0])
        if len(target) > 1:
            count = int(target[1])
        if len(target) > 2:
            dt = target[2]
    else:
        raise ValueError("target: expecting integral or list/tuple")
    return disp, count, dt


WIN_NULL = Win._predefine("WIN_NULL", None)

NAMES = {"Win": Win, "WIN_NULL": WIN_NULL}
"""What ``mpi4py.MPI`` exports from this module (its constants come from ``constants``)."""
