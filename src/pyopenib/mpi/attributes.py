"""Attribute caching: keyvals and the values communicators, windows and datatypes carry.

MPI semantics, as Open MPI 4.1 implements them and mpi4py wraps them:

- ``Create_keyval(copy_fn, delete_fn, nopython)`` gives a keyval from one per-process
  counter (Open MPI starts user keyvals at 12, after the predefined ones, whatever the
  kind). ``copy_fn`` runs when the object is duplicated: ``None``/``False`` does not copy,
  ``True`` copies the value itself, a function ``copy_fn(obj, keyval, value)`` returns the
  copy or ``NotImplemented`` for none. ``delete_fn(obj, keyval, value)`` runs when the
  value is deleted, replaced, or its object freed. ``nopython`` values are integers (the
  ``void *`` a C library would store).
- Errors are Open MPI's: ``KEYVAL_INVALID`` is ``MPI_ERR_KEYVAL``; a keyval that does not
  exist, one of another kind freed through this kind, a predefined keyval set or deleted,
  or deleting a value that is not there, is ``MPI_ERR_OTHER``. An exception in a callback
  prints its traceback and the call fails with ``MPI_ERR_OTHER``, as in mpi4py.
- ``COMM_WORLD`` carries the predefined attributes (``TAG_UB``, ``IO``, ``WTIME_IS_GLOBAL``,
  ``APPNUM``, ``UNIVERSE_SIZE``, ``LASTUSEDCODE``); a duplicate of it gets all but
  ``LASTUSEDCODE``; ``COMM_SELF`` has none (what ``mpirun`` shows).

Keyvals belong to a rank (``KeyvalTable``), values to an object (``Attributes``). The
classes that cache attributes declare the methods below in their bodies, with their kind
(``_attr_kind``) and where their object's ``Attributes`` live (``_attributes``); their
constructors call ``copy_attributes`` on duplication and their ``Free`` calls
``delete_attributes``.
"""

from __future__ import annotations

import sys
import traceback
import weakref
from collections.abc import Mapping

from . import context
from .constants import (
    APPNUM,
    FIRST_USER_KEYVAL,
    IO,
    KEYVAL_INVALID,
    LASTUSEDCODE,
    TAG_UB,
    UNIVERSE_SIZE,
    WTIME_IS_GLOBAL,
)
from .error_classes import ERROR_CLASSES, Exception, codes_of

__all__ = [
    "Attributes",
    "Create_keyval",
    "Delete_attr",
    "Free_keyval",
    "Get_attr",
    "KeyvalRegistry",
    "KeyvalTable",
    "Set_attr",
    "attributes_of",
    "comm_attributes",
    "comm_get_attr",
    "comm_object_attributes",
    "copy_attributes",
    "datatype_object_attributes",
    "delete_attributes",
    "win_object_attributes",
]

_ERR_KEYVAL = ERROR_CLASSES["ERR_KEYVAL"][0]
_ERR_OTHER = ERROR_CLASSES["ERR_OTHER"][0]
TAG_UB_VALUE = 2**31 - 1
"""Open MPI's largest tag (``mca_pml.pml_max_tag``)."""


class Keyval:
    """One keyval: its object kind and callbacks; ``freed`` once ``Free_keyval`` ran
    (values already attached keep it, as MPI says)."""

    __slots__ = ("kind", "copy_fn", "delete_fn", "nopython", "freed")

    def __init__(self, kind: str, copy_fn=None, delete_fn=None, nopython: bool = False):
        self.kind = kind
        self.copy_fn = None if copy_fn is False else copy_fn
        self.delete_fn = None if delete_fn in (False, True) else delete_fn
        self.nopython = bool(nopython)
        self.freed = False


# The predefined communicator keyvals: copied on Dup except LASTUSEDCODE (Open MPI).
_PREDEFINED = {
    TAG_UB: Keyval("Comm", True),
    IO: Keyval("Comm", True),
    WTIME_IS_GLOBAL: Keyval("Comm", True),
    APPNUM: Keyval("Comm", True),
    UNIVERSE_SIZE: Keyval("Comm", True),
    LASTUSEDCODE: Keyval("Comm", None),
}


class KeyvalTable:
    """One rank's keyvals: a single counter for every kind, as in Open MPI."""

    __slots__ = ("next", "keyvals", "__weakref__")

    def __init__(self):
        self.next = FIRST_USER_KEYVAL
        self.keyvals: dict[int, Keyval] = {}

    def create(self, kind: str, copy_fn, delete_fn, nopython) -> int:
        keyval = self.next
        self.next += 1
        self.keyvals[keyval] = Keyval(kind, copy_fn, delete_fn, nopython)
        return keyval

    def free(self, kind: str, keyval: int) -> int:
        kv = self.keyvals.get(keyval)
        if keyval == KEYVAL_INVALID:
            raise Exception(_ERR_KEYVAL)
        if kv is None or kv.kind != kind:
            raise Exception(_ERR_OTHER)
        kv.freed = True
        del self.keyvals[keyval]
        return KEYVAL_INVALID

    def lookup(self, keyval: int) -> Keyval:
        if keyval == KEYVAL_INVALID:
            raise Exception(_ERR_KEYVAL)
        kv = self.keyvals.get(keyval) or _PREDEFINED.get(keyval)
        if kv is None:
            raise Exception(_ERR_OTHER)
        return kv


_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NO_RANK = KeyvalTable()  # objects used outside a running job (tests, tools)


def keyvals() -> KeyvalTable:
    """The calling rank's keyval table."""
    rc = context.lookup()
    if rc is None:
        return _NO_RANK
    table = _TABLES.get(rc)
    if table is None:
        table = _TABLES[rc] = KeyvalTable()
    return table


class KeyvalRegistry(Mapping):
    """``MPI._keyval_registry``: the calling rank's live keyvals of each kind (``Comm``,
    ``Datatype``, ``Win``), keyval -> its state (``copy_fn``, ``delete_fn``, ``nopython``),
    as mpi4py keeps them."""

    _KINDS = ("Datatype", "Comm", "Win")

    def __getitem__(self, kind: str) -> dict[int, Keyval]:
        if kind not in self._KINDS:
            raise KeyError(kind)
        return {k: kv for k, kv in keyvals().keyvals.items() if kv.kind == kind}

    def __iter__(self):
        return iter(self._KINDS)

    def __len__(self) -> int:
        return len(self._KINDS)

    def __repr__(self) -> str:
        return repr(dict(self))


def _callback_failed(exc: BaseException) -> Exception:
    """mpi4py's ``PyMPI_HandleException``: print the traceback, fail with ERR_OTHER."""
    traceback.print_exception(exc, file=sys.stderr)
    return Exception(_ERR_OTHER)


class Attributes:
    """The attribute values one object caches: ``keyval -> (Keyval, value)``, in the
    order they were set."""

    __slots__ = ("values", "__weakref__")

    def __init__(self):
        self.values: dict[int, tuple[Keyval, object]] = {}

    def get(self, keyval: int):
        entry = self.values.get(keyval)
        return None if entry is None else entry[1]

    def set(self, wrapper, keyval: int, kv: Keyval, value) -> None:
        if keyval in _PREDEFINED:
            raise Exception(_ERR_OTHER)
        if kv.nopython:
            value = int(value)
        if keyval in self.values:
            self.delete(wrapper, keyval)
        self.values[keyval] = (kv, value)

    def delete(self, wrapper, keyval: int) -> None:
        if keyval in _PREDEFINED or keyval not in self.values:
            raise Exception(_ERR_OTHER)
        kv, value = self.values.pop(keyval)
        if kv.delete_fn is not None:
            try:
                kv.delete_fn(wrapper, keyval, value)
            except BaseException as exc:  # noqa: BLE001 - mpi4py turns any into ERR_OTHER
                raise _callback_failed(exc) from None


def copy_attributes(wrapper, old: Attributes | None, new: Attributes) -> None:
    """What duplicating ``wrapper``'s object does to its attributes: each keyval's
    ``copy_fn`` decides whether (and what) ``new`` gets."""
    if old is None:
        return
    for keyval, (kv, value) in list(old.values.items()):
        fn = kv.copy_fn
        if fn is None:
            continue
        if fn is not True:
            try:
                value = fn(wrapper, keyval, value)
            except BaseException as exc:  # noqa: BLE001
                raise _callback_failed(exc) from None
            if value is NotImplemented:
                continue
        new.values[keyval] = (kv, value)


def delete_attributes(wrapper, attrs: Attributes | None) -> None:
    """What freeing ``wrapper``'s object does: every value's ``delete_fn`` runs."""
    if attrs is None:
        return
    failed = None
    for keyval in list(attrs.values):
        if keyval in _PREDEFINED:
            del attrs.values[keyval]
            continue
        try:
            attrs.delete(wrapper, keyval)
        except Exception as exc:
            failed = failed or exc
    if failed is not None:
        raise failed


# -- the attribute methods of Comm, Win and Datatype --------------------------------------
# Each class declares them in its body (``Set_attr = attributes.Set_attr``); they read the
# class's ``_attr_kind`` (the kind its keyvals are created for) and the object's
# ``_attributes()`` (where its ``Attributes`` live).


def Create_keyval(cls, copy_fn=None, delete_fn=None, nopython: bool = False) -> int:
    """Create a new attribute keyval for objects of this class."""
    return keyvals().create(cls._attr_kind, copy_fn, delete_fn, nopython)


def Free_keyval(cls, keyval: int) -> int:
    """Free an attribute keyval; returns ``KEYVAL_INVALID``."""
    return keyvals().free(cls._attr_kind, keyval)


def Get_attr(self, keyval: int):
    """Retrieve the attribute value cached under ``keyval``, or None."""
    kv = keyvals().lookup(keyval)
    if kv.kind != self._attr_kind:
        return None
    return self._attributes().get(keyval)


def Set_attr(self, keyval: int, attrval) -> None:
    """Store an attribute value under ``keyval``."""
    kv = keyvals().lookup(keyval)
    if kv.kind != self._attr_kind:
        raise Exception(_ERR_OTHER)
    self._attributes().set(self, keyval, kv, attrval)


def Delete_attr(self, keyval: int) -> None:
    """Delete the attribute value cached under ``keyval``."""
    keyvals().lookup(keyval)
    self._attributes().delete(self, keyval)


_STORES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def attributes_of(state) -> Attributes:
    """The attributes of the object whose (weak-referenceable) state is ``state``, for
    classes whose state has no slot for them (communicators, windows)."""
    attrs = _STORES.get(state)
    if attrs is None:
        attrs = _STORES[state] = Attributes()
    return attrs


def comm_attributes(state) -> Attributes:
    """The attributes of the communicator whose rank state is ``state``; the world's start
    with the predefined ones."""
    attrs = _STORES.get(state)
    if attrs is None:
        attrs = attributes_of(state)
        rc = state.rc
        if rc is not None and state is rc.world:
            predefined = {
                TAG_UB: TAG_UB_VALUE,
                IO: -1,  # MPI_ANY_SOURCE: every process can do I/O
                WTIME_IS_GLOBAL: 0,  # Open MPI's answer (the simulated clock is global)
                APPNUM: rc.appnum,
                UNIVERSE_SIZE: rc.size,
                LASTUSEDCODE: None,  # read from the rank's error codes when asked
            }
            for keyval, value in predefined.items():
                attrs.values[keyval] = (_PREDEFINED[keyval], value)
    return attrs


def comm_object_attributes(self) -> Attributes:
    """The attributes of a ``Comm`` object: its rank state's."""
    return comm_attributes(self._st())


def comm_get_attr(self, keyval: int):
    """Retrieve the attribute value cached under ``keyval``, or None.

    ``LASTUSEDCODE`` on ``COMM_WORLD`` reads the rank's error codes when asked."""
    value = Get_attr(self, keyval)
    if keyval == LASTUSEDCODE and keyval in self._attributes().values:
        return codes_of(context.current()).lastused
    return value


def win_object_attributes(self) -> Attributes:
    """The attributes of a ``Win`` object for user keyvals.

    The window's own ``Get_attr`` answers ``WIN_BASE``... and passes other keyvals on."""
    return attributes_of(self._s())


def datatype_object_attributes(self) -> Attributes:
    """The attributes of a ``Datatype`` object (its handle's ``attrs``)."""
    h = self._h
    if h.predefined:
        return _predefined_type_attributes(h)
    if h.attrs is None:
        h.attrs = Attributes()
    return h.attrs


_RANK_TYPE_ATTRS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NO_RANK_TYPE_ATTRS: dict[int, Attributes] = {}  # used outside a running job


def _predefined_type_attributes(h) -> Attributes:
    """A predefined datatype is one object for every rank of the job (and every job), but
    its attributes are each process's own: one table per rank, by the type's id."""
    rc = context.lookup()
    if rc is None:
        table = _NO_RANK_TYPE_ATTRS
    else:
        table = _RANK_TYPE_ATTRS.get(rc)
        if table is None:
            table = _RANK_TYPE_ATTRS[rc] = {}
    attrs = table.get(h.fid)
    if attrs is None:
        attrs = table[h.fid] = Attributes()
    return attrs
