"""mpi4py's object model for handle classes: ``Info``, ``Errhandler``, ``Session``, ``Group``,
``Message``, ``Win``, ``File`` share it.

A Python object wraps an MPI object (``_obj``; ``None`` is the null handle), as mpi4py's
objects hold an ``MPI_Xxx`` handle. mpi4py's rules, which its tests pin:

* construction happens in ``__new__`` (mpi4py's ``__cinit__``), never in ``__init__``, so a
  program's subclass may define ``__new__(cls, obj=None)``, do its own work (dup the
  argument, say) and hand the result to ``super().__new__(cls, obj)``; ``Klass(obj)`` is a
  new wrapper of the same object, ``Klass()`` the null one, anything else a ``TypeError``;
* two wrappers are equal when they wrap the same MPI object and share the handle class;
  ordering and hashing raise ``TypeError``; a null handle is false;
* the module constants (``INFO_NULL``, ``ERRORS_RETURN``...) are *constant objects*:
  ``free()`` leaves them alone. Another wrapper of a predefined object forgets it on
  ``free()`` (it becomes null); a wrapper of a created object calls ``Free`` (``Close``...);
* a constant pickles by its module-level name (it unpickles as *the* constant), another
  wrapper of a predefined object as ``type(self).__new__(type(self), constant)``, a
  created object as its class allows (``Info`` by its items) or not at all;
* ``handle`` (the C handle, a pointer in Open MPI) gives an integer ``fromhandle`` maps back
  to a wrapper of the handle class; the null object is 0;
* ``toint``/``py2f`` give Open MPI's Fortran index, which ``fromint``/``f2py`` map back: the
  predefined objects' are fixed (``GROUP_EMPTY`` 1, ``ERRORS_RETURN`` 2; -1 for one Open MPI
  4.1 has no index for, ``ERRORS_ABORT``), another object's is the next free slot of its
  class's table in the calling process, given the first time it is asked for.
"""

from __future__ import annotations

import copyreg
import itertools
import weakref

from .context import lookup
from .error_classes import ERROR_CLASSES, Exception
from .surface import MpiClass

__all__ = ["HandleObject", "MpiObject"]

_IDS = itertools.count(1)
_BY_ID: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_ERR_ARG = ERROR_CLASSES["ERR_ARG"][0]


class MpiObject:
    """The MPI object a handle names: an integer id for ``handle``, its Fortran index once
    it has one, and the name of the module-level constant it is, if predefined."""

    __slots__ = ("hid", "fint", "predefined", "__weakref__")

    def __init__(self):
        self.hid = next(_IDS)
        self.fint: int | None = None
        self.predefined: str | None = None
        _BY_ID[self.hid] = self


_FORTRAN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PROCESS_FORTRAN: dict = {}  # the table of code that runs outside any rank (set-up, tests)


def _fortran_table(klass: type) -> dict:
    """The calling process's table of Fortran indices of ``klass``'s objects: Open MPI keeps
    one per class in each process, so each rank has its own."""
    rc = lookup()
    tables = _PROCESS_FORTRAN if rc is None else _FORTRAN.setdefault(rc, {})
    return tables.setdefault(klass, weakref.WeakValueDictionary())


class HandleObject(metaclass=MpiClass):
    """Base of a handle class: each direct subclass (the *handle class*, ``Info``...) sets
    ``_constants`` (its own dict: name -> module constant) and ``_null_name``, and keeps
    its MPI object in ``_obj``."""

    __slots__ = ("_obj", "__weakref__")
    _constants: dict = {}
    _null_name: str = ""
    _first_fint = 1
    """The Fortran index of the first object a program makes (after the predefined ones)."""
    _null_fint = 0
    """The null handle's Fortran index (-1 where Open MPI 4.1 has none: ``SESSION_NULL``)."""
    _free_predefined = False
    """Whether ``free()`` calls ``Free`` on a copy of a predefined object (MPI frees
    predefined error handlers; mpi4py only forgets other predefined handles)."""

    def __new__(cls, obj: HandleObject | None = None, /):
        new = object.__new__(cls)
        if obj is None:
            new._obj = None
        elif isinstance(obj, cls._handle_class()):
            new._obj = obj._obj
        else:
            raise TypeError(
                f"expected {cls._handle_class().__name__} or None, got {type(obj).__name__}"
            )
        return new

    @classmethod
    def _handle_class(cls) -> type:
        """The class directly under ``HandleObject`` this one descends from (``Info`` for a
        program's ``MyInfo``): equality, constants and ``fromhandle`` are its."""
        for klass in cls.__mro__:
            if HandleObject in klass.__bases__:
                return klass
        return cls

    @classmethod
    def _wrap(cls, obj: MpiObject | None):
        """A new ``cls`` object for ``obj``, made as mpi4py makes results of ``Dup`` and
        ``Create``: ``cls.__new__(cls)`` (a subclass's own ``__new__`` runs), then the
        handle is set."""
        new = cls.__new__(cls)
        new._obj = obj
        return new

    @classmethod
    def _predefine(cls, name: str, obj: MpiObject | None, fint: int | None = None):
        """The module-level constant ``name`` wrapping ``obj`` (``None``: the null handle),
        whose Fortran index in Open MPI is ``fint``."""
        const = cls._wrap(obj)
        if obj is not None:
            obj.predefined = name
            obj.fint = fint
        cls._constants[name] = const
        return const

    def _predefined_name(self) -> str | None:
        """The constant's name if this wraps a predefined object (or the null one)."""
        obj = self._obj
        return self._null_name if obj is None else obj.predefined

    def _is_constant(self) -> bool:
        """This very object is a module constant (``free`` never touches it)."""
        name = self._predefined_name()
        return name is not None and self._handle_class()._constants.get(name) is self

    # -- identity ---------------------------------------------------------------------
    def __eq__(self, other):
        if not isinstance(other, HandleObject):
            return NotImplemented
        if other._handle_class() is not self._handle_class():
            return False
        return self._obj is other._obj

    def __ne__(self, other):
        if not isinstance(other, HandleObject):
            return NotImplemented
        if other._handle_class() is not self._handle_class():
            return True
        return self._obj is not other._obj

    def __lt__(self, other):
        raise TypeError(f"unorderable type '{type(self).__module__}.{type(self).__name__}'")

    __le__ = __gt__ = __ge__ = __lt__
    __hash__ = None  # mpi4py's handles are unhashable

    def __bool__(self) -> bool:
        return self._obj is not None

    def __reduce__(self):
        name = self._predefined_name()
        if name is not None:
            const = self._handle_class()._constants[name]
            if self is const:
                return name
            return (copyreg.__newobj__, (type(self), const))
        return self._reduce_created()

    def _reduce_created(self):
        """How a created (not predefined) object pickles; most cannot."""
        raise ValueError(
            f"cannot serialize '{type(self).__module__}.{type(self).__name__}' instance"
        )

    # -- freeing ----------------------------------------------------------------------
    def free(self) -> None:
        """Call ``Free`` if not null or predefined."""
        if self._obj is None or self._is_constant():
            return
        if self._obj.predefined is not None and not self._free_predefined:
            self._obj = None
            return
        self._release()

    def _release(self) -> None:
        """The MPI call that frees this kind of object (``Close`` for a file...)."""
        self.Free()

    # -- integer handles ----------------------------------------------------------------
    @property
    def handle(self) -> int:
        """MPI handle."""
        return 0 if self._obj is None else self._obj.hid

    @classmethod
    def fromhandle(cls, handle: int):
        """Create object from MPI handle."""
        handle = int(handle)
        obj = None if handle == 0 else _BY_ID.get(handle)
        if handle != 0 and obj is None:
            raise Exception(_ERR_ARG)
        return cls._handle_class()._wrap(obj)

    def toint(self) -> int:
        """Translate object to integer handle."""
        return self.py2f()

    @classmethod
    def fromint(cls, arg: int, /):
        """Translate integer handle to object."""
        return cls.f2py(arg)

    def py2f(self) -> int:
        """Fortran handle."""
        obj = self._obj
        if obj is None:
            return self._null_fint
        if obj.fint is None:
            klass = self._handle_class()
            table = _fortran_table(klass)
            fint = klass._first_fint
            while fint in table:  # the lowest free slot, as Open MPI's pointer arrays
                fint += 1
            obj.fint = fint
            table[fint] = obj
        return obj.fint

    @classmethod
    def f2py(cls, arg: int):
        """Object of a Fortran handle."""
        klass = cls._handle_class()
        arg = int(arg)
        if arg == 0:
            return klass._wrap(None)
        for const in klass._constants.values():
            if const._obj is not None and const._obj.fint == arg >= 0:
                return klass._wrap(const._obj)
        # an index no object has: Open MPI's f2c answers no object, not an error
        return klass._wrap(_fortran_table(klass).get(arg))
