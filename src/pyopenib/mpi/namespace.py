"""The ``mpi4py.MPI`` module object a job installs, and the ``mpi4py`` package around it.

One module serves every rank: ``COMM_WORLD``/``COMM_SELF`` and the functions below look
the calling rank up (``context.current``). Any name outside pyopenib's subset raises
``NotImplementedError`` naming it (it is an ``AttributeError`` too, so ``hasattr`` works).
"""

from __future__ import annotations

import operator
import sys
import types

from ..errors import TOPICS, register_topics
from . import (
    buffers,
    capi,
    context,
    datatypes,
    dynproc,
    errhandler,
    file,
    group,
    info,
    intercomm,
    p2p,
    session,
    startup,
    topology,
    win,
)
from .attributes import KeyvalRegistry, comm_attributes, delete_attributes
from .buffers import IN_PLACE
from .comm import Comm, Intracomm
from .constants import CONSTANTS, SUBVERSION, VERSION
from .datatypes import DATATYPES, Datatype
from .error_classes import ERR_LASTCODE, ERROR_CLASSES, ERROR_FUNCTIONS, Exception
from .memory import MEMORY_NAMES
from .ops import OPS, Op
from .request import Prequest, Request
from .startup import Init, Init_thread, Is_initialized, Query_thread
from .status import Status
from .surface import embed_signature, missing_module_name
from .threads import Is_thread_main

__all__ = ["MPI4PY_VERSION", "build_mpi_module"]

MPI4PY_VERSION = "4.1.2"
"""The mpi4py release whose API the namespace follows."""


def Wtime() -> float:
    """Simulated seconds since the job started (the clock is integer picoseconds)."""
    return context.current().sim.now / 1e12


def Wtick() -> float:
    """Return the resolution of ``Wtime`` (the simulator's picosecond)."""
    return 1e-12


def Get_processor_name() -> str:
    """Return the name of the node the calling rank runs on."""
    return context.current().hostname


def Is_finalized() -> bool:
    """Indicate whether ``Finalize`` has completed."""
    return context.current().finalized


def Finalize() -> None:
    """Terminate the MPI execution environment.

    As the standard asks, the attributes of ``COMM_SELF`` are deleted first, so their
    ``delete_fn`` callbacks run while MPI still works (libraries hang clean-up on them).
    A second call ends the rank as Open MPI does (exit status 1)."""
    rc = context.current()
    if rc.finalized:
        sys.stderr.write(TOPICS["mpi-called-after-finalize"].format(call="MPI_Finalize") + "\n")
        raise SystemExit(1)
    if rc.self_comm is None:  # before MPI_Init
        startup.called_before_init(sys._getframe())
    delete_attributes(Intracomm._of("self_comm"), comm_attributes(rc.self_comm))
    rc.finalized = True


register_topics(
    {
        "mpi-called-after-finalize": (
            "*** The {call}() function was called after MPI_FINALIZE was invoked.\n"
            "*** This is disallowed by the MPI standard.\n"
            "*** Your MPI job will now abort."
        )
    }
)


VENDOR = ("Open MPI", (4, 1, 4))
"""The MPI library a job behaves as (``mpi4py.get_vendor``); mpi4py's tests and programs
branch on it (``skipMPI("openmpi(<5.0.0)")``)."""


def get_vendor() -> tuple[str, tuple[int, int, int]]:
    """Name and version of the MPI library: Open MPI 4.1.4, which pyopenib reproduces."""
    return VENDOR


def Get_version() -> tuple[int, int]:
    """The MPI standard version: 3.1, as Open MPI 4.1."""
    return (VERSION, SUBVERSION)


def Get_library_version() -> str:
    """Open MPI's version string, naming pyopenib as the package that built it."""
    return (
        "Open MPI v4.1.4, package: pyopenib (Open MPI's ob1 PML and openib BTL on simulated "
        "RDMA hardware), ident: 4.1.4, repo rev: v4.1.4, May 26, 2022"
    )


def Pcontrol(level: int) -> None:
    """Control profiling: a hook for profiling libraries, which Open MPI ignores."""
    operator.index(level)  # an int, as the C signature takes


def Get_hw_resource_info():
    """Raise ``NotImplementedError``: this is MPI-4.1, which Open MPI 4.1 lacks."""
    raise NotImplementedError(
        "mpi4py.MPI.Get_hw_resource_info is MPI-4.1; Open MPI 4.1 (MPI 3.1) does not provide it"
    )


def Get_abi_version() -> tuple[int, int]:
    """MPI-5's ABI version: (-1, -1), no standard ABI (what mpi4py says on Open MPI 4.1)."""
    return (-1, -1)


def Get_abi_info() -> info.Info:
    """MPI-5's ABI facts, derived as mpi4py's fallback does from the datatype sizes."""
    return info.Info.Create(
        {f"mpi_{name.lower()}_size": str(DATATYPES[name].Get_size()) for name in _ABI_C}
    )


def Get_abi_fortran_info() -> info.Info:
    """The Fortran ABI: sizes of the default kinds and which sized types exist."""
    items = {f"mpi_{name.lower()}_size": str(DATATYPES[name].Get_size()) for name in _ABI_F}
    for name in _ABI_F_SIZED:
        items[f"mpi_{name.lower()}_supported"] = "true" if DATATYPES[name] else "false"
    return info.Info.Create(items)


_ABI_C = ("AINT", "COUNT", "OFFSET")
_ABI_F = ("LOGICAL", "INTEGER", "REAL", "DOUBLE_PRECISION")
_ABI_F_SIZED = (
    *(f"LOGICAL{n}" for n in (1, 2, 4, 8, 16)),
    *(f"INTEGER{n}" for n in (1, 2, 4, 8, 16)),
    *(f"REAL{n}" for n in (2, 4, 8, 16)),
    *(f"COMPLEX{n}" for n in (4, 8, 16, 32)),
    "DOUBLE_COMPLEX",
)


def _module_getattr(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise missing_module_name(name)


def build_mpi_module() -> types.ModuleType:
    """A fresh ``mpi4py.MPI`` module object for one job (``package`` builds the rest)."""
    mpi = types.ModuleType("mpi4py.MPI", "Message Passing Interface (pyopenib's, as mpi4py's).")
    mpi.__file__ = __file__  # real mpi4py's is its extension module; ours is this source
    ns = mpi.__dict__
    for name in (
        "Wtime",
        "Wtick",
        "Get_processor_name",
        "Is_finalized",
        "Finalize",
        "Get_version",
        "Get_library_version",
        "get_vendor",
        "Pcontrol",
        "Get_hw_resource_info",
        "Get_abi_version",
        "Get_abi_info",
        "Get_abi_fortran_info",
    ):
        ns[name] = globals()[name]
    ns.update(CONSTANTS)
    ns.update(capi.NAMES)
    ns.update({name: code for name, (code, _) in ERROR_CLASSES.items()})
    ns.update(ERROR_FUNCTIONS, ERR_LASTCODE=ERR_LASTCODE)
    ns.update(info.NAMES)
    ns.update(errhandler.NAMES)
    ns.update(MEMORY_NAMES)
    ns.update(session.NAMES, _keyval_registry=KeyvalRegistry())
    ns.update(DATATYPES)
    ns.update(datatypes.NAMES)
    ns.update(buffers.NAMES)
    ns.update(win.NAMES)
    ns.update(file.NAMES)
    ns.update(dynproc.NAMES)
    ns.update(group.NAMES)
    ns.update(topology.NAMES)
    ns.update(intercomm.NAMES)
    ns.update(OPS)
    ns.update(
        Comm=Comm,
        Intracomm=Intracomm,
        Request=Request,
        Prequest=Prequest,
        Status=Status,
        Datatype=Datatype,
        Op=Op,
        Exception=Exception,
        COMM_WORLD=Intracomm._of("world"),
        COMM_SELF=Intracomm._of("self_comm"),
        COMM_NULL=Comm._of(None),
        REQUEST_NULL=Request(None),
        IN_PLACE=IN_PLACE,
        Init=Init,
        Init_thread=Init_thread,
        Is_initialized=Is_initialized,
        Query_thread=Query_thread,
        Is_thread_main=Is_thread_main,
        __getattr__=_module_getattr,
    )
    ns.update(p2p.NAMES)
    ns["__pyx_capi__"] = capi.capsules(ns)
    for value in ns.values():
        if isinstance(value, types.FunctionType):
            embed_signature(value.__name__, value)
    return mpi
