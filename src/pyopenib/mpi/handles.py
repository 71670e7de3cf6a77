"""mpi4py's object model for handle classes, shared by ``Info``, ``Errhandler``, ``Session``.

A Python object wraps an MPI object (``_obj``; ``None`` is the null handle). mpi4py's rules,
which its tests pin: two wrappers are equal when they wrap the same MPI object and are of
the same handle class; ordering and hashing raise ``TypeError``; a null handle is false;
``Klass(obj)`` is a new wrapper of the same object and ``Klass()`` the null one; a
predefined object pickles by its module-level name (so it unpickles as *the* constant),
another wrapper of a predefined object as a new wrapper of it. ``handle``/``toint``/``py2f``
give an integer the ``from*`` class methods map back; the null object is 0.
"""

from __future__ import annotations

import itertools
import weakref

from .surface import MpiClass

__all__ = ["HandleObject", "MpiObject"]

_IDS = itertools.count(1)
_BY_ID: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class MpiObject:
    """The MPI object a handle names: an integer id for ``handle`` and the name of the
    module-level constant it is, if predefined."""

    __slots__ = ("hid", "predefined", "__weakref__")

    def __init__(self):
        self.hid = next(_IDS)
        self.predefined: str | None = None
        _BY_ID[self.hid] = self


class HandleObject(metaclass=MpiClass):
    """Base of a handle class: subclasses set ``_kind`` (the class name mpi4py uses) and
    keep their MPI object in ``_obj``."""

    __slots__ = ("_obj", "__weakref__")
    _constants: dict = {}  # each subclass: name -> the predefined wrapper (pickling by name)

    def __init__(self, obj: HandleObject | None = None, /):
        if obj is None:
            self._obj = None
        elif isinstance(obj, self._base()):
            self._obj = obj._obj
        else:
            raise TypeError(f"expected {self._base().__name__}, got {type(obj).__name__}")

    @classmethod
    def _base(cls) -> type:
        for klass in cls.__mro__:
            if HandleObject in klass.__bases__:
                return klass
        return cls

    @classmethod
    def _wrap(cls, obj: MpiObject | None):
        new = cls.__new__(cls)
        new._obj = obj
        return new

    @classmethod
    def _predefine(cls, name: str, obj: MpiObject | None):
        """The module-level constant ``name`` wrapping ``obj`` (``None``: the null handle)."""
        const = cls._wrap(obj)
        if obj is not None:
            obj.predefined = name
        cls._constants[name] = const
        return const

    # -- identity ---------------------------------------------------------------------
    def __eq__(self, other):
        if not isinstance(other, HandleObject) or other._base() is not self._base():
            return NotImplemented
        return self._obj is other._obj

    def __ne__(self, other):
        if not isinstance(other, HandleObject) or other._base() is not self._base():
            return NotImplemented
        return self._obj is not other._obj

    def __lt__(self, other):
        raise TypeError(f"'<' not supported between {type(self).__name__} instances")

    __le__ = __gt__ = __ge__ = __lt__
    __hash__ = None  # mpi4py's handles are unhashable

    def __bool__(self) -> bool:
        return self._obj is not None

    def __reduce__(self):
        obj = self._obj
        name = self._null_name if obj is None else obj.predefined
        if name is not None:
            const = self._constants[name]
            if self is const:
                return name
            return (type(self), (const,))
        return self._reduce_user()

    def _reduce_user(self):
        raise ValueError(
            f"cannot serialize '{type(self).__module__}.{type(self).__name__}' instance"
        )

    # -- integer handles ----------------------------------------------------------------
    @property
    def handle(self) -> int:
        return 0 if self._obj is None else self._obj.hid

    @classmethod
    def fromhandle(cls, handle: int):
        return cls._wrap(None if handle == 0 else _BY_ID[handle])

    def toint(self) -> int:
        return self.handle

    @classmethod
    def fromint(cls, arg: int, /):
        return cls.fromhandle(arg)

    def py2f(self) -> int:
        return self.handle

    @classmethod
    def f2py(cls, arg: int):
        return cls.fromhandle(arg)
