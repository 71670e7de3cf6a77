"""The ``mpi4py.MPI`` module object a job installs, and the ``mpi4py`` package around it.

One module serves every rank: ``COMM_WORLD``/``COMM_SELF`` and the functions below look
the calling rank up (``context.current``). Any name outside pyopenib's subset raises
``NotImplementedError`` naming it (it is an ``AttributeError`` too, so ``hasattr`` works).
"""

from __future__ import annotations

import types

from . import context, group, intercomm, p2p, topology, win
from .buffers import IN_PLACE
from .comm import TAG_UB, Comm, Intracomm, _not_implemented
from .datatypes import DATATYPES, Datatype
from .errors import ERR_LASTCODE, ERROR_CLASSES, Exception, error_string
from .ops import OPS, Op
from .request import Prequest, Request
from .status import ANY_SOURCE, ANY_TAG, PROC_NULL, UNDEFINED, Status
from .threads import (
    THREAD_FUNNELED,
    THREAD_MULTIPLE,
    THREAD_SERIALIZED,
    THREAD_SINGLE,
    Init_thread,
    Is_thread_main,
    Query_thread,
)

__all__ = ["MPI4PY_VERSION", "build_mpi_module"]

MPI4PY_VERSION = "4.1.2"
"""The mpi4py release whose API the namespace follows."""


def Wtime() -> float:
    """Simulated seconds since the job started (the clock is integer picoseconds)."""
    return context.current().sim.now / 1e12


def Wtick() -> float:
    return 1e-12


def Get_processor_name() -> str:
    return context.current().hostname


def Is_initialized() -> bool:
    context.current()
    return True


def Is_finalized() -> bool:
    return context.current().finalized


def Init() -> None:
    """MPI is initialised when the rank starts (as ``mpi4py.rc.initialize`` does)."""


def Finalize() -> None:
    context.current().finalized = True


def Get_version() -> tuple[int, int]:
    return (3, 1)


def Get_library_version() -> str:
    return "pyopenib simulated Open MPI v4.1.4 (ob1 PML, openib BTL)"


def Get_error_string(errorcode: int) -> str:
    return error_string(errorcode)


def Get_error_class(errorcode: int) -> int:
    return errorcode


def _module_getattr(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise _not_implemented(name)


def build_mpi_module() -> types.ModuleType:
    """A fresh ``mpi4py.MPI`` module object for one job (``package`` builds the rest)."""
    mpi = types.ModuleType("mpi4py.MPI", "pyopenib's mpi4py-compatible MPI namespace.")
    ns = mpi.__dict__
    for name in (
        "Wtime",
        "Wtick",
        "Get_processor_name",
        "Is_initialized",
        "Is_finalized",
        "Init",
        "Finalize",
        "Get_version",
        "Get_library_version",
        "Get_error_string",
        "Get_error_class",
    ):
        ns[name] = globals()[name]
    ns.update(DATATYPES)
    ns.update(win.NAMES)
    ns.update(group.NAMES)
    ns.update(topology.NAMES)
    ns.update(intercomm.NAMES)
    ns.update(OPS)
    ns.update({name: code for name, (code, _) in ERROR_CLASSES.items()})
    ns.update(
        Comm=Comm,
        Intracomm=Intracomm,
        Request=Request,
        Prequest=Prequest,
        Status=Status,
        Datatype=Datatype,
        Op=Op,
        Exception=Exception,
        COMM_WORLD=Intracomm("world"),
        COMM_SELF=Intracomm("self_comm"),
        COMM_NULL=Intracomm(None),
        REQUEST_NULL=Request(None),
        IN_PLACE=IN_PLACE,
        ANY_SOURCE=ANY_SOURCE,
        ANY_TAG=ANY_TAG,
        PROC_NULL=PROC_NULL,
        UNDEFINED=UNDEFINED,
        ROOT=-4,
        TAG_UB=TAG_UB,
        ERR_LASTCODE=ERR_LASTCODE,
        MAX_PROCESSOR_NAME=256,
        THREAD_SINGLE=THREAD_SINGLE,
        THREAD_FUNNELED=THREAD_FUNNELED,
        THREAD_SERIALIZED=THREAD_SERIALIZED,
        THREAD_MULTIPLE=THREAD_MULTIPLE,
        Init_thread=Init_thread,
        Query_thread=Query_thread,
        Is_thread_main=Is_thread_main,
        __getattr__=_module_getattr,
    )
    ns.update(p2p.NAMES)
    return mpi
