"""``MPI.Op``: the predefined reduction operations and user-defined ones (``Op.Create``).

An ``Op`` object refers to an ``_OpHandle`` (what an ``MPI_Op`` handle points to in Open MPI):
the operation on typed numpy arrays (uppercase collectives), mpi4py's own definition of it on
Python objects (lowercase collectives and ``op(x, y)``), and whether it commutes.

Which (operation, datatype) pairs are valid is Open MPI 4.1's table (``ompi/op/op.c``),
checked against real Open MPI + mpi4py with ``Reduce_local`` on every predefined datatype:
C integers (and BYTE, CHAR, AINT, OFFSET, COUNT, INTEGER1/2/8) take the arithmetic, min/max,
logical and bitwise ops; Fortran INTEGER (INTEGER4) all but the logical ones; floating types
SUM, PROD, MAX, MIN; complex types SUM and PROD; booleans (C_BOOL, CXX_BOOL, LOGICAL,
LOGICAL4) the logical ones; pair types MAXLOC and MINLOC; PACKED, WCHAR, REPLACE and NO_OP
in a reduction: none. Anything else is ``MPI_ERR_OP``, as Open MPI reports it.

User operations live in a registry of 32 slots per rank, as mpi4py keeps 32 C callbacks
(one more ``Op.Create`` raises ``RuntimeError``); ranks are greenlets of one process, so
the registry is the rank's (``context.lookup``), not the module's.
"""

from __future__ import annotations

import copyreg
import weakref

import numpy as np

from . import context
from .error_classes import ERROR_CLASSES, Exception
from .surface import MpiClass

__all__ = ["OPS", "OP_NULL", "Op", "check_op", "reduce_arrays"]

_ERR_OP = ERROR_CLASSES["ERR_OP"][0]
MAX_USER_OPS = 32
"""mpi4py's limit on live user-defined operations (its table of C callbacks)."""


# -- mpi4py's object definitions (``opimpl.pxi``) -----------------------------------------
def _obj_max(x, y):
    return y if y > x else x


def _obj_min(x, y):
    return y if y < x else x


def _obj_maxloc(x, y):
    (u, i), (v, j) = x, y
    if u > v:
        return x
    if v > u:
        return y
    return y if j < i else x


def _obj_minloc(x, y):
    (u, i), (v, j) = x, y
    if u < v:
        return x
    if v < u:
        return y
    return y if j < i else x


# -- numpy definitions: ``f(a, b)`` is ``a op b`` with a from the lower rank --------------
def _loc(better):
    """MAXLOC/MINLOC on (value, index) records: the better value, the lower index on ties."""

    def apply(a, b):
        out = b.copy()
        take_a = better(a["v"], b["v"]) | ((a["v"] == b["v"]) & (a["i"] < b["i"]))
        out[take_a] = a[take_a]
        return out

    return apply


def _logical(fn):
    return lambda a, b: fn(a != 0, b != 0).astype(a.dtype)


_INT, _FINT, _FLOAT, _COMPLEX, _BOOL, _PAIR = "int", "fint", "float", "complex", "bool", "pair"
_ARITH = frozenset({_INT, _FINT, _FLOAT, _COMPLEX})
_ORDERED = frozenset({_INT, _FINT, _FLOAT})
_LOGICAL = frozenset({_INT, _BOOL})
_BITWISE = frozenset({_INT, _FINT})


class _OpHandle:
    """What an ``MPI_Op`` handle designates: numpy and object forms, commutativity, and
    the datatype classes it applies to (``None``: a user operation, any datatype)."""

    __slots__ = ("name", "apply", "apply_obj", "commute", "classes", "user", "slot", "__weakref__")

    def __init__(self, name, apply, apply_obj, classes, commute=True, user=None, slot=0):
        self.name = name
        self.apply = apply
        self.apply_obj = apply_obj
        self.classes = classes
        self.commute = commute
        self.user = user
        self.slot = slot


def _predefined(name, apply, apply_obj, classes):
    return _OpHandle(name, apply, apply_obj, frozenset(classes))


_HANDLES: dict[str, _OpHandle] = {
    "MAX": _predefined("MPI_MAX", np.maximum, _obj_max, _ORDERED),
    "MIN": _predefined("MPI_MIN", np.minimum, _obj_min, _ORDERED),
    "SUM": _predefined("MPI_SUM", np.add, lambda x, y: x + y, _ARITH),
    "PROD": _predefined("MPI_PROD", np.multiply, lambda x, y: x * y, _ARITH),
    "LAND": _predefined(
        "MPI_LAND", _logical(np.logical_and), lambda x, y: bool(x) & bool(y), _LOGICAL
    ),
    "BAND": _predefined("MPI_BAND", np.bitwise_and, lambda x, y: x & y, _BITWISE),
    "LOR": _predefined(
        "MPI_LOR", _logical(np.logical_or), lambda x, y: bool(x) | bool(y), _LOGICAL
    ),
    "BOR": _predefined("MPI_BOR", np.bitwise_or, lambda x, y: x | y, _BITWISE),
    "LXOR": _predefined(
        "MPI_LXOR", _logical(np.logical_xor), lambda x, y: bool(x) ^ bool(y), _LOGICAL
    ),
    "BXOR": _predefined("MPI_BXOR", np.bitwise_xor, lambda x, y: x ^ y, _BITWISE),
    "MAXLOC": _predefined("MPI_MAXLOC", _loc(np.greater), _obj_maxloc, {_PAIR}),
    "MINLOC": _predefined("MPI_MINLOC", _loc(np.less), _obj_minloc, {_PAIR}),
    # RMA-only operations: valid in Accumulate, MPI_ERR_OP in a reduction (Open MPI)
    "REPLACE": _predefined("MPI_REPLACE", lambda a, b: b, lambda x, y: y, ()),
    "NO_OP": _predefined("MPI_NO_OP", lambda a, b: a, lambda x, y: x, ()),
}
_NULL = _OpHandle("MPI_OP_NULL", None, None, frozenset())
_HANDLE_IDS: dict[int, _OpHandle] = {0: _NULL}
for _i, _h in enumerate(_HANDLES.values(), start=1):
    _HANDLE_IDS[_i] = _h
_IDS = {id(h): i for i, h in _HANDLE_IDS.items()}
_USER_BASE = 1000
"""Integer handles of user operations start here (slot s is ``_USER_BASE + s``)."""


class _Registry:
    """One rank's user-operation slots (1..32, as mpi4py numbers them)."""

    __slots__ = ("slots",)

    def __init__(self):
        self.slots: list[_OpHandle | None] = [None] * (MAX_USER_OPS + 1)


_REGISTRIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_OUTSIDE_JOB = _Registry()


def _registry() -> _Registry:
    ctx = context.lookup()
    if ctx is None:
        return _OUTSIDE_JOB
    reg = _REGISTRIES.get(ctx)
    if reg is None:
        reg = _REGISTRIES[ctx] = _Registry()
    return reg


class Op(metaclass=MpiClass):
    """Reduction operation.

    ``Op()`` is a null operation; ``Op(op)`` another object for the same handle (equal
    to it, not identical)."""

    __slots__ = ("_h", "_py", "__weakref__")
    __module__ = "mpi4py.MPI"  # pickle finds predefined ops as ``mpi4py.MPI.<NAME>``

    def __new__(cls, op: Op | None = None):
        # construction is here, not in ``__init__``, as in mpi4py (a program's subclass
        # may define ``__new__``). ``_py``: this object knows the Python function of its
        # user operation (mpi4py copies it with ``Op(op)``, not through ``fromint``), so
        # it can be pickled
        if op is not None and not isinstance(op, Op):
            raise TypeError(f"Op() argument must be Op, not {type(op).__name__}")
        new = object.__new__(cls)
        new._h = _NULL if op is None else op._h
        new._py = True if op is None else op._py
        return new

    # -- identity -----------------------------------------------------------------------
    def __eq__(self, other):
        if not isinstance(other, Op):
            return NotImplemented
        return self._h is other._h

    def __ne__(self, other):
        if not isinstance(other, Op):
            return NotImplemented
        return self._h is not other._h

    __hash__ = None  # mpi4py's handles are unhashable

    def __bool__(self) -> bool:
        return self._h is not _NULL

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Op {self._h.name}>"

    @property
    def handle(self) -> int:
        return self.toint()

    def toint(self) -> int:
        """Translate object to integer handle."""
        h = self._h
        return _USER_BASE + h.slot if h.user is not None else _IDS[id(h)]

    py2f = toint

    @classmethod
    def fromint(cls, arg: int) -> Op:
        """Translate integer handle to object."""
        op = cls.__new__(cls)
        if arg >= _USER_BASE:
            h = _registry().slots[arg - _USER_BASE] if arg - _USER_BASE <= MAX_USER_OPS else None
        else:
            h = _HANDLE_IDS.get(arg)
        if h is None:
            raise Exception(_ERR_OP)
        op._h = h
        op._py = h.user is None
        return op

    f2py = fromint
    fromhandle = fromint

    def __reduce__(self):
        h = self._h
        if h.user is None:
            name = _NAMES[id(h)]
            return name if OPS[name] is self else (copyreg.__newobj__, (type(self), OPS[name]))
        if not self._py or _registry().slots[h.slot] is not h:
            raise ValueError("cannot pickle user-defined reduction operation")
        return (type(self).Create, (h.user, h.commute))

    # -- user operations ----------------------------------------------------------------
    @classmethod
    def Create(cls, function, commute: bool = False) -> Op:
        """Create a user-defined reduction operation.

        ``function(invec, inoutvec, datatype)`` stores ``invec op inoutvec`` into
        ``inoutvec`` (MPI's user-function contract; mpi4py passes buffers)."""
        function.__call__  # noqa: B018 - mpi4py's check that it is callable
        reg = _registry()
        try:
            slot = reg.slots.index(None, 1)
        except ValueError:
            raise RuntimeError("cannot create too many user-defined reduction operations") from None
        h = _OpHandle(f"user op {slot}", None, None, None, bool(commute), function, slot)
        h.apply = _user_apply(function)
        h.apply_obj = _user_obj(function)
        reg.slots[slot] = h
        op = cls.__new__(cls)
        op._h = h
        op._py = True
        return op

    def Free(self) -> None:
        """Free a user-defined operation (this object becomes ``OP_NULL``)."""
        h = self._h
        if h.user is None:
            raise Exception(_ERR_OP)
        reg = _registry()
        if reg.slots[h.slot] is h:
            reg.slots[h.slot] = None
        self._h = _NULL

    def free(self) -> None:
        """Call ``Free`` if not null or predefined."""
        h = self._h
        if h is _NULL or OPS.get(_NAMES.get(id(h))) is self:
            return  # null, or a module constant: mpi4py never frees those
        if h.user is None:
            self._h = _NULL  # another object for a predefined operation forgets it
            return
        self.Free()

    # -- queries ------------------------------------------------------------------------
    def Is_commutative(self) -> bool:
        """Indicate whether the operation is commutative."""
        if self._h is _NULL:
            raise Exception(_ERR_OP)
        return self._h.commute

    @property
    def is_commutative(self) -> bool:
        return self.Is_commutative()

    @property
    def is_predefined(self) -> bool:
        return self._h.user is None

    def __call__(self, x, y):
        h = self._h
        if h is _NULL:
            raise ValueError("cannot call the null reduction operation")
        if not self._py:
            raise TypeError("'NoneType' object is not callable")  # mpi4py: no function
        return h.apply_obj(x, y)

    def Reduce_local(self, inbuf, inoutbuf) -> None:
        """Apply the operation locally: ``inoutbuf = inbuf op inoutbuf``."""
        from .buffers import message

        src = message(inbuf)
        dst = message(inoutbuf, writable=True)
        if src.count != dst.count:
            raise ValueError(f"mismatch in send count {src.count} and receive count {dst.count}")
        check_op(self, dst.datatype)
        out = reduce_arrays(self, dst.datatype, src.data, dst.data)
        dst.data[:] = out


def _user_apply(function):
    """A user function as ``f(a, b) -> a op b`` on uint8 byte arrays of ``datatype``."""

    def apply(a, b, datatype):
        # bytearrays: one byte per item, and slice assignment copies raw bytes from any
        # buffer, as mpi4py's ``MPI.buffer`` behaves in a user function
        inout = bytearray(b.tobytes())
        function(bytearray(a.tobytes()), inout, datatype)
        return np.frombuffer(inout, np.uint8)

    return apply


def _user_obj(function):
    return lambda x, y: function(x, y, None)


_NAMES = {id(h): name for name, h in _HANDLES.items()}
_NAMES[id(_NULL)] = "OP_NULL"


def _predefined_op(h: _OpHandle) -> Op:
    op = Op.__new__(Op)
    op._h = h
    op._py = True
    return op


OPS: dict[str, Op] = {name: _predefined_op(h) for name, h in _HANDLES.items()}
OP_NULL = _predefined_op(_NULL)
OPS["OP_NULL"] = OP_NULL

# -- datatypes: which class each predefined one belongs to --------------------------------
_FORTRAN_INTEGER = frozenset({"MPI_INTEGER", "MPI_INTEGER4"})
_BOOLEAN = frozenset({"MPI_C_BOOL", "MPI_CXX_BOOL", "MPI_LOGICAL", "MPI_LOGICAL4"})
_NO_OPS = frozenset({"MPI_PACKED", "MPI_WCHAR"})


def _element(datatype):
    """(name, packed numpy dtype) of the one predefined type a message of ``datatype``
    is made of once packed (a derived type built from a single predefined type reduces
    element by element, as Open MPI's ``ompi_op_reduce`` does); None for a mix."""
    h = datatype._h
    leaves: dict[int, object] = {}
    stack = [h]
    while stack:
        t = stack.pop()
        if t.types:
            stack.extend(t.types)
        else:
            leaves[t.fid] = t
    if len(leaves) != 1:
        return None
    (leaf,) = leaves.values()
    dt = leaf.dtype
    if dt is None:
        return None
    if dt.fields:  # pair types travel packed: value then index, no padding
        names = list(dt.names)
        formats = [dt.fields[n][0] for n in names]
        offsets, at = [], 0
        for f in formats:
            offsets.append(at)
            at += f.itemsize
        dt = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": at})
    elif dt.kind == "S":
        dt = np.dtype(np.int8)  # MPI_CHAR's bytes reduce as signed chars
    return leaf.name, dt


def _class_of(element) -> str | None:
    if element is None:
        return None
    name, dt = element
    if name in _NO_OPS:
        return None
    if name in _BOOLEAN:
        return _BOOL
    if name in _FORTRAN_INTEGER:
        return _FINT
    if dt.fields:
        return _PAIR if set(dt.fields) == {"v", "i"} else None
    return {"i": _INT, "u": _INT, "f": _FLOAT, "c": _COMPLEX, "b": _BOOL}.get(dt.kind)


def check_op(op: Op, datatype) -> None:
    """Raise Open MPI's ``MPI_ERR_OP`` unless ``op`` applies to ``datatype``."""
    h = op._h
    if h is _NULL:
        raise Exception(_ERR_OP)
    if h.user is None and _class_of(_element(datatype)) not in h.classes:
        raise Exception(_ERR_OP)


def reduce_arrays(op: Op, datatype, lower: np.ndarray, higher: np.ndarray) -> np.ndarray:
    """``lower op higher`` on two uint8 arrays holding packed elements of ``datatype``;
    the result is a new uint8 array (``lower`` comes from the lower rank, as MPI orders
    operands)."""
    h = op._h
    if h.user is not None:
        return h.apply(lower, higher, datatype)
    dt = _element(datatype)[1]
    with np.errstate(all="ignore"):  # integer overflow wraps, as C's does
        out = h.apply(lower.view(dt), higher.view(dt))
    return np.ascontiguousarray(out, dtype=dt).view(np.uint8)
