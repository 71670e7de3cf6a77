"""The C-level view of MPI objects mpi4py gives: ``_sizeof``, ``_addressof``, ``_handleof``
and the C API capsules of ``MPI.__pyx_capi__``.

C extensions (and ``ctypes`` code) built on mpi4py convert between Python objects and MPI
handles with ``PyMPI<Class>_New(handle)`` and ``PyMPI<Class>_Get(object)``, which mpi4py
exports as capsules named by their C signature (``"PyObject *(MPI_Comm)"``). pyopenib has
no C MPI library, but an MPI handle here is an integer all the same (the ``handle`` of
``handles``), so the capsules hold real C function pointers (``ctypes`` callbacks) that do
what mpi4py's do: ``_New`` makes the object of a handle, ``_Get`` returns the address of
memory holding the object's handle. A status is its memory: Open MPI's 24-byte
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

    It is what a C program sees of an ``MPI_Comm`` variable: reading it gives the handle
    (``_handleof``); writing it changes nothing here (pyopenib's objects do not live in
    that memory). A status's address is that of its own fields."""
    if isinstance(arg, Status):
        return _status_address(arg)
    _sizeof(type(arg))
    cell = _CELLS.get(id(arg))
    if cell is None:
        cell = _CELLS[id(arg)] = ctypes.c_uint64()
        weakref.finalize(arg, _CELLS.pop, id(arg), None)
    cell.value = arg.handle
    return ctypes.addressof(cell)


_CELLS: dict[int, ctypes.c_uint64] = {}


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
