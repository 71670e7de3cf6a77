"""``MPI.Info``: ordered string key/value sets, ``INFO_NULL`` and Open MPI's ``INFO_ENV``.

An info object keeps its keys in insertion order (``Get_nthkey`` numbers them so, as Open
MPI's ``opal_info`` list does); keys longer than ``MAX_INFO_KEY`` or values longer than
``MAX_INFO_VAL`` are errors, as in Open MPI. The mapping protocol (``info[k]``, ``keys()``,
``update``...) is mpi4py's, where a missing key or a null info raises ``KeyError``.

``INFO_ENV`` holds what ``mpirun`` tells Open MPI 4.1 about the job (command, argv,
maxprocs, soft, host, arch, wdir, thread_level and Open MPI's own ``ompi_*`` keys), computed
when a rank reads it, for that rank's job (the predefined object outlives jobs).
"""

from __future__ import annotations

import os
import platform
import sys

from . import context
from .constants import MAX_LENGTHS
from .error_classes import ERROR_CLASSES, Exception
from .handles import HandleObject, MpiObject
from .startup import Query_thread

__all__ = ["INFO_ENV", "INFO_NULL", "Get_info", "Info", "NAMES", "Set_info", "hints", "info_items"]

_ERR_INFO = ERROR_CLASSES["ERR_INFO"][0]
_ERR_INFO_KEY = ERROR_CLASSES["ERR_INFO_KEY"][0]
_ERR_INFO_VALUE = ERROR_CLASSES["ERR_INFO_VALUE"][0]
_ERR_INFO_NOKEY = ERROR_CLASSES["ERR_INFO_NOKEY"][0]
_MAX_KEY = MAX_LENGTHS["MAX_INFO_KEY"]
_MAX_VAL = MAX_LENGTHS["MAX_INFO_VAL"]
_THREAD_LEVELS = (
    "MPI_THREAD_SINGLE",
    "MPI_THREAD_FUNNELED",
    "MPI_THREAD_SERIALIZED",
    "MPI_THREAD_MULTIPLE",
)


class InfoObject(MpiObject):
    """The MPI info object: ``items`` in insertion order, or, for ``INFO_ENV``, ``fill``
    that computes them for the job of the rank that reads (it cannot be set)."""

    __slots__ = ("items", "fill")

    def __init__(self, items=None, fill=None):
        super().__init__()
        self.items: dict[str, str] = dict(items or {})
        self.fill = fill

    def table(self) -> dict[str, str]:
        return self.items if self.fill is None else self.fill()


def _text(arg) -> str:
    """mpi4py's ``asmpistr``: keys and values are ``str`` (or ``bytes``), nothing else."""
    if isinstance(arg, bytes):
        return arg.decode()
    if not isinstance(arg, str):
        raise TypeError(f"expected str, got {type(arg).__name__}")
    return arg


def _key(key) -> str:
    key = _text(key)
    if not key or len(key) > _MAX_KEY:
        raise Exception(_ERR_INFO_KEY)
    return key


def _value(value) -> str:
    value = _text(value)
    if not value or len(value) > _MAX_VAL:
        raise Exception(_ERR_INFO_VALUE)
    return value


class Info(HandleObject):
    """Info object."""

    __slots__ = ()
    _constants: dict = {}
    _null_name = "INFO_NULL"
    _first_fint = 2

    def _table(self) -> dict[str, str]:
        obj = self._obj
        if obj is None:
            raise Exception(_ERR_INFO)
        return obj.table()

    def _map(self) -> dict[str, str]:
        """The table for the mapping protocol: a null info has no keys and takes none."""
        obj = self._obj
        return {} if obj is None else obj.table()

    def _reduce_created(self):
        return (type(self).Create, (self.items(),))

    # -- MPI calls ----------------------------------------------------------------------
    @classmethod
    def Create(cls, items=None):
        """A new info object, optionally filled from a mapping or (key, value) pairs."""
        info = cls._wrap(InfoObject())
        if items is not None:
            if hasattr(items, "keys"):
                items = [(k, items[k]) for k in items.keys()]
            try:
                pairs = list(items)
            except TypeError:
                raise TypeError(f"expected a mapping or key/value pairs, got {items!r}") from None
            for key, value in pairs:
                info.Set(key, value)
        return info

    @classmethod
    def Create_env(cls, args=None):
        """An info object with ``INFO_ENV``'s keys for a program started as ``args``."""
        table = dict(INFO_ENV._table())
        if args is not None:
            argv = [args] if isinstance(args, str) else [str(a) for a in args]
            if argv:
                table["command"] = argv[0]
                table["argv"] = " ".join(argv[1:])
        return cls._wrap(InfoObject(table))

    def Free(self) -> None:
        """Free the info object (it becomes ``INFO_NULL``)."""
        obj = self._obj
        if obj is None or obj.predefined is not None:
            raise Exception(_ERR_INFO)
        self._obj = None

    def Dup(self):
        """A new info object with the same keys and values."""
        return type(self)._wrap(InfoObject(self._table()))

    def Get(self, key: str) -> str | None:
        """The value of ``key``, or None if it is not set."""
        return self._table().get(_key(key))

    def Get_string(self, key: str) -> str | None:
        """Return the value of a key, or ``None`` (``MPI_Info_get_string``)."""
        return self.Get(key)

    def Set(self, key: str, value: str) -> None:
        """Store a value for a key."""
        table = self._table()
        if self._obj.predefined is not None:
            raise Exception(_ERR_INFO)
        table[_key(key)] = _value(value)

    def Delete(self, key: str) -> None:
        """Remove a key."""
        table = self._table()
        key = _key(key)
        if key not in table:
            raise Exception(_ERR_INFO_NOKEY)
        del table[key]

    def Get_nkeys(self) -> int:
        """Return the number of keys."""
        return len(self._table())

    def Get_nthkey(self, n: int) -> str:
        """Return the ``n``-th key."""
        keys = list(self._table())
        if not 0 <= n < len(keys):
            raise Exception(_ERR_INFO_KEY)  # Open MPI's class for an index past the end
        return keys[n]

    # -- mapping protocol (mpi4py) --------------------------------------------------------
    def __len__(self) -> int:
        return len(self._map())

    def __contains__(self, key) -> bool:
        return _text(key) in self._map()

    def __iter__(self):
        return iter(list(self._map()))

    def __getitem__(self, key: str) -> str:
        if not self:
            raise KeyError(key)
        value = self.Get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: str) -> None:
        if not self:
            raise KeyError(key)
        self.Set(key, value)

    def __delitem__(self, key: str) -> None:
        if not self:
            raise KeyError(key)
        if key not in self._table():
            raise KeyError(key)
        self.Delete(key)

    def get(self, key: str, default: str | None = None) -> str | None:
        """Return the value of a key, or ``default`` if it has none."""
        if not self:
            return default
        value = self.Get(key)
        return default if value is None else value

    def keys(self) -> list[str]:
        """Return the keys."""
        return list(self._map())

    def values(self) -> list[str]:
        """Return the values."""
        return list(self._map().values())

    def items(self) -> list[tuple[str, str]]:
        """Return the (key, value) pairs."""
        return list(self._map().items())

    def update(self, other=(), **kwds) -> None:
        """Store the pairs of a mapping or of (key, value) pairs, and keyword arguments."""
        if not self:
            raise KeyError("cannot update a null info object")
        pairs = [(k, other[k]) for k in other.keys()] if hasattr(other, "keys") else other
        for key, value in pairs:
            self.Set(key, value)
        for key, value in kwds.items():
            self.Set(key, value)

    def pop(self, key: str, *default: str) -> str:
        """Remove a key and return its value (or ``default``)."""
        value = self.Get(key) if self else None
        if value is None:
            if default:
                return default[0]
            raise KeyError(key)
        self.Delete(key)
        return value

    def popitem(self) -> tuple[str, str]:
        """Remove and return some (key, value) pair."""
        table = self._map()
        if not table:
            raise KeyError("popitem(): info object is empty")
        key = list(table)[-1]
        value = table[key]
        self.Delete(key)
        return key, value

    def copy(self):
        """Return a duplicate (``Dup``; a null info copies as null)."""
        return self.Dup() if self else type(self)()

    def clear(self) -> None:
        """Remove every key."""
        if self:
            for key in list(self._table()):
                self.Delete(key)

    def __repr__(self) -> str:
        obj = self._obj
        name = "INFO_NULL" if obj is None else obj.predefined
        return f"<mpi4py.MPI.Info {name or f'object {obj.hid}'}>"


Info.__module__ = "mpi4py.MPI"


def _environment() -> dict[str, str]:
    """What Open MPI 4.1's ``MPI_INFO_ENV`` holds under ``mpirun -n N python prog.py``."""
    rc = context.current()
    argv = list(sys.argv)
    return {
        "command": os.path.basename(sys.executable),
        "argv": " ".join(argv),
        "maxprocs": str(rc.size),
        "soft": str(rc.size),
        "host": rc.hostname,
        "arch": platform.machine(),
        "wdir": os.getcwd(),
        "thread_level": _THREAD_LEVELS[Query_thread()],
        "ompi_num_apps": "1",
        "ompi_first_rank": "0",
        "ompi_np": str(rc.size),
    }


# -- the hints of a window or a file ---------------------------------------------------
# ``Set_info``/``Get_info``/``info`` as ``Win`` and ``File`` declare them in their bodies:
# the hints the program gave (the object's state's ``info``), as osc/rdma and OMPIO keep
# no hints of their own to report.


def Set_info(self, info) -> None:
    """Set new values of the hints."""
    self._s().info = info


def Get_info(self) -> Info:
    """Return the hints in use: a copy of those given."""
    info = self._s().info
    return info.Dup() if info else Info.Create()


def _get_hints(self) -> Info:
    """Info hints."""
    return self.Get_info()


def _set_hints(self, value) -> None:
    self.Set_info(value)


hints = property(_get_hints, _set_hints)
"""The ``info`` property of a window or a file."""


INFO_NULL = Info._predefine("INFO_NULL", None)
INFO_ENV = Info._predefine("INFO_ENV", InfoObject(fill=_environment), fint=1)


def info_items(info) -> dict[str, str]:
    """The keys and values of an ``info`` argument (None or INFO_NULL: none), for calls
    that take hints (``Dup_with_info``, ``Win.Create``...)."""
    if info is None or not info:
        return {}
    if not isinstance(info, Info):
        raise TypeError(f"expected Info, got {type(info).__name__}")
    return dict(info._table())


NAMES = {"Info": Info, "INFO_NULL": INFO_NULL, "INFO_ENV": INFO_ENV}
"""The names ``mpi4py.MPI`` exports from this module."""
