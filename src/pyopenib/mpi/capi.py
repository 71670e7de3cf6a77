"""The C-level view of MPI objects mpi4py gives: ``_sizeof``, ``_addressof``, ``_handleof``
and the C API capsules of ``MPI.__pyx_capi__``.

C extensions (and ``ctypes`` code) built on mpi4py convert between Python objects and MPI
handles with ``PyMPI<Class>_New(handle)`` and ``PyMPI<Class>_Get(object)``, which mpi4py
exports as capsules named by their C signature (``"PyObject *(MPI_Comm)"``). pyopenib has
no C MPI library, but an MPI handle here is an integer all the same (the ``handle`` of
``handles``), so the capsules hold real C function pointers (``ctypes`` callbacks) that do
what mpi4py's do: ``_New`` makes the object of a handle, ``_Get`` returns the address of
memory holding the object's handle, which C code may also write (``_addressof``). A status is its memory: Open MPI's 24-byte
``MPI_Status``, which ``Status.tomemory`` exposes, so its address is real and a C reader
sees the fields.
"""

from __future__ import annotations

import ctypes
import weakref

from .status import Status

__all__ = ["NAMES", "capsules"]

HANDLE_BYTES = 8  # Open MPI's handles are pointers
STATUS_BYTES = 24  # sizeof(MPI_Status) in Open MPI 4.1 on x86-64
HANDLE_CLASSES = "Datatype Request Message Op Group Info Errhandler Session Comm Win File".split()


def _sizeof(arg) -> int:
    """Return the size in bytes of the C object behind an MPI class or instance."""
    cls = arg if isinstance(arg, type) else type(arg)
    if issubclass(cls, Status):
        return STATUS_BYTES
    if any(k.__name__ in HANDLE_CLASSES and _is_ours(k) for k in cls.__mro__):
        return HANDLE_BYTES
    raise TypeError("expecting an MPI type or instance")


def _is_ours(cls: type) -> bool:
    return cls.__module__.startswith(("pyopenib.", "mpi4py."))


def _status_address(status: Status) -> int:
    return ctypes.addressof(ctypes.c_char.from_buffer(status.tomemory()))


def _addressof(arg) -> int:
    """Return the address of memory holding the object's handle value.

    It is what a C program sees of an ``MPI_Comm`` variable, and what ``PyMPIComm_Get``
    returns: reading it gives the handle (``_handleof``), writing a handle there makes
    the object that handle's, as mpi4py's objects are their ``MPI_Xxx`` field
    (``_HandleCell``). A status's address is that of its own fields."""
    if isinstance(arg, Status):
        return _status_address(arg)
    _sizeof(type(arg))
    cell = _CELLS.get(id(arg))
    if cell is None:
        cell = _CELLS[id(arg)] = _HandleCell(arg)
        weakref.finalize(arg, _CELLS.pop, id(arg), None)
    return ctypes.addressof(cell.memory)


class _HandleCell:
    """The C memory that backs one object's handle once ``_addressof`` was asked for it.

    pyopenib's objects keep their state in a slot (``Comm._s``, ``Datatype._h``...), read
    on every call: keeping it in C memory instead would cost every read of every object
    a ctypes access (~470 ns), for the few objects whose address a program ever takes.
    So the state stays in the slot and the first ``_addressof`` on an object of a class
    puts ``_CellBacked`` in front of that class's slot: a read looks for the object's
    cell and, when C code wrote a handle there since (``memory`` is not ``seen``), takes
    that handle's state into the slot first; a write puts the new state's handle into
    the memory. Classes whose objects never had their address taken keep their plain
    slot and pay nothing."""

    __slots__ = ("memory", "seen")

    def __init__(self, obj):
        _CellBacked.engage(type(obj))
        self.memory = ctypes.c_uint64(obj.handle)
        self.seen = self.memory.value


_CELLS: dict[int, _HandleCell] = {}
_CELLS_GET = _CELLS.get


class _CellBacked:
    """A handle class's state slot as seen once some object of it is backed by C memory
    (``_HandleCell``): the slot's own descriptor, behind a look at the object's cell.
    A read costs ~0.4 us more than the bare slot's (a Python-level descriptor call; a
    ``property`` measured the same), so an 8-byte Send/Recv ping-pong, which reads the
    ``Comm`` and ``Datatype`` slots twice per message, takes ~7-12 % more CPU once a
    program took the address of a communicator and a datatype."""

    __slots__ = ("klass", "name", "_slot_get", "_slot_set", "_slot_delete")

    def __init__(self, klass: type, name: str, slot):
        self.klass = klass
        self.name = name
        self._slot_get = slot.__get__
        self._slot_set = slot.__set__
        self._slot_delete = slot.__delete__

    @staticmethod
    def engage(cls: type) -> None:
        """Put a ``_CellBacked`` in front of the state slot of ``cls``'s handle class
        (the first of its MRO to declare a slot other than ``__weakref__``)."""
        for klass in reversed(cls.__mro__):
            names = [n for n in klass.__dict__.get("__slots__", ()) if n != "__weakref__"]
            if names and _is_ours(klass):
                slot = klass.__dict__[names[0]]
                if not isinstance(slot, _CellBacked):
                    setattr(klass, names[0], _CellBacked(klass, names[0], slot))
                return

    def __get__(self, obj, owner=None):
        cell = _CELLS_GET(id(obj))
        if cell is not None and cell.memory.value != cell.seen:
            self._take(obj, cell)  # C code wrote another handle there
        return self._slot_get(obj, owner)

    def _take(self, obj, cell: _HandleCell) -> None:
        handle = cell.seen = cell.memory.value
        self._slot_set(obj, self._slot_get(type(obj).fromhandle(handle)))

    def __set__(self, obj, value) -> None:
        self._slot_set(obj, value)
        cell = _CELLS_GET(id(obj))
        if cell is not None:
            cell.memory.value = cell.seen = obj.handle

    def __delete__(self, obj) -> None:
        self._slot_delete(obj)


def _handleof(arg) -> int:
    """Return the integer handle of an MPI object (a status's is its address)."""
    if isinstance(arg, Status):
        return _status_address(arg)
    _sizeof(type(arg))
    return arg.handle


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_KEEP: list = []  # the callbacks and capsule names live as long as the process


def _capsule(fn, restype, argtype, signature: str):
    callback = ctypes.PYFUNCTYPE(restype, argtype)(fn)
    name = ctypes.create_string_buffer(signature.encode())
    _KEEP.extend((callback, name))
    return _capsule_new(ctypes.cast(callback, ctypes.c_void_p), name, None)


def _new_status(address: int) -> Status:
    status = Status()
    if address:
        ctypes.memmove(_status_address(status), address, STATUS_BYTES)
    return status


def capsules(classes) -> dict:
    """``__pyx_capi__`` for the MPI classes in ``classes`` (a mapping by mpi4py name).

    The classes are the same for every job: the capsules are made once per process."""
    global _CAPI
    if _CAPI is not None:
        return _CAPI
    capi = {
        "PyMPIStatus_New": _capsule(
            _new_status, ctypes.py_object, ctypes.c_void_p, "PyObject *(MPI_Status *)"
        ),
        "PyMPIStatus_Get": _capsule(
            _status_address, ctypes.c_void_p, ctypes.py_object, "MPI_Status *(PyObject *)"
        ),
    }
    for name in HANDLE_CLASSES:
        klass = classes[name]
        capi[f"PyMPI{name}_New"] = _capsule(
            klass.fromhandle, ctypes.py_object, ctypes.c_uint64, f"PyObject *(MPI_{name})"
        )
        capi[f"PyMPI{name}_Get"] = _capsule(
            _addressof, ctypes.c_void_p, ctypes.py_object, f"MPI_{name} *(PyObject *)"
        )
    for name in ("Prequest", "Grequest"):
        capi[f"PyMPI{name}_New"] = _capsule(
            classes[name].fromhandle, ctypes.py_object, ctypes.c_uint64, "PyObject *(MPI_Request)"
        )
    _CAPI = capi
    return capi


_CAPI: dict | None = None


NAMES = {"_sizeof": _sizeof, "_addressof": _addressof, "_handleof": _handleof}
"""What ``mpi4py.MPI`` exports from here (``namespace`` adds ``__pyx_capi__``)."""
