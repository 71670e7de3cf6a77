"""The thread level a job provides, and the error a call from a forbidden thread raises.

pyopenib's ranks are greenlets of the one OS thread that runs the simulator. An MPI call
that waits (``Recv``, ``Wait``, a collective) sleeps in simulated time by switching to the
simulator's loop, and a greenlet can only switch to greenlets of its own thread; a call
that does not wait still changes the rank's PML and BTL state, which the simulator's thread
is changing at the same time. So only that thread may call MPI: the job provides
``MPI_THREAD_FUNNELED``, and ``Init_thread``/``Query_thread`` say so. A program's other
threads may run Python code (and ``Query_thread``/``Is_thread_main``, which MPI allows
from any thread); an MPI call from one raises ``ThreadLevelError`` naming the call and
the level, before it touches anything.

The level requested comes from ``mpi4py.rc`` as mpi4py reads it at initialisation:
``rc.threads`` false means ``MPI_Init`` (``THREAD_SINGLE``), otherwise ``rc.thread_level``.
A job's ``rc`` is one object for all ranks (``mpi4py`` is one package, as a site-package
is one file for all processes), so the level is the job's.
"""

from __future__ import annotations

import sys
import threading

from .error_classes import ERROR_CLASSES, Exception

__all__ = [
    "SUPPORTED",
    "THREAD_FUNNELED",
    "THREAD_MULTIPLE",
    "THREAD_SERIALIZED",
    "THREAD_SINGLE",
    "ThreadLevelError",
    "ThreadSupport",
    "Init_thread",
    "Is_thread_main",
    "Query_thread",
]

THREAD_SINGLE, THREAD_FUNNELED, THREAD_SERIALIZED, THREAD_MULTIPLE = range(4)
SUPPORTED = THREAD_FUNNELED
"""The highest level a job can honour (see the module docstring)."""

LEVEL_NAMES = {
    THREAD_SINGLE: "MPI_THREAD_SINGLE",
    THREAD_FUNNELED: "MPI_THREAD_FUNNELED",
    THREAD_SERIALIZED: "MPI_THREAD_SERIALIZED",
    THREAD_MULTIPLE: "MPI_THREAD_MULTIPLE",
}
_RC_LEVELS = {
    "single": THREAD_SINGLE,
    "funneled": THREAD_FUNNELED,
    "serialized": THREAD_SERIALIZED,
    "multiple": THREAD_MULTIPLE,
}
_ERR_OTHER = ERROR_CLASSES["ERR_OTHER"][0]
_MPI_DIR = __file__.rpartition("/")[0] + "/"


_ROUTING_WRAPPER = "_routed.<locals>.method"
"""The wrapper ``errhandler.routes_errors`` puts around every MPI method once a program
installs an error handler: the call it wraps is the one to name."""


def _call_name(frame) -> str:
    """``Class.method`` for the MPI method running in ``frame``. A method written as a
    function of the module that owns its concern (``p2p.Send``, declared in ``Comm``'s
    body) has no class in its qualified name: the class is the first one along the
    receiver's MRO that declares the name, as a program reads it (``Comm.Send``)."""
    code = frame.f_code
    owner, dot, method = code.co_qualname.rpartition(".")
    if dot:
        return f"{owner}.{method}"
    receiver = frame.f_locals.get("self", frame.f_locals.get("cls"))
    if receiver is not None:
        for klass in receiver.__mro__ if isinstance(receiver, type) else type(receiver).__mro__:
            if method in klass.__dict__ and klass.__dict__.get("_mpi4py_class"):
                return f"{klass.__name__}.{method}"
    return method


class ThreadLevelError(Exception):
    """An MPI call from a thread the provided level forbids (error class ``MPI_ERR_OTHER``,
    as Open MPI has no class of its own for it); ``str()`` names the call, the thread and
    the level."""

    def __init__(self, call: str, thread_name: str, provided: int):
        super().__init__(_ERR_OTHER)
        self.call = call
        self.thread_name = thread_name
        self.provided = provided

    def __str__(self) -> str:
        return (
            f"{self.call} called from thread {self.thread_name!r}, but MPI provides "
            f"{LEVEL_NAMES[self.provided]}: only the main thread may call MPI (pyopenib's "
            "ranks are greenlets of the thread that runs the simulator)"
        )

    def __repr__(self) -> str:
        return f"MPI.ThreadLevelError({self.call!r}, {self.thread_name!r})"


class ThreadSupport:
    """One job's thread level: the simulator's thread, and the level provided once the
    program's ``mpi4py.rc`` has been read (at the first query or ``Init_thread``)."""

    def __init__(self, rc):
        self.rc = rc
        self.main_ident = threading.get_ident()
        self.main_name = threading.current_thread().name
        self.provided: int | None = None

    def level(self, required: int | None = None) -> int:
        if self.provided is None:
            if required is None:
                rc = self.rc
                required = _RC_LEVELS.get(rc.thread_level, THREAD_MULTIPLE) if rc.threads else 0
            self.provided = min(required, SUPPORTED)
        return self.provided

    def forbidden(self) -> ThreadLevelError:
        """The error for a call from the current (non-main) thread, naming the MPI call
        from the outermost frame of pyopenib's MPI layer on the stack."""
        frame = sys._getframe(1)
        call = None
        while frame is not None:
            code = frame.f_code
            if code.co_filename.startswith(_MPI_DIR):
                if code.co_qualname != _ROUTING_WRAPPER:
                    call = _call_name(frame)
            elif call is not None:
                break
            frame = frame.f_back
        return ThreadLevelError(f"MPI.{call}", threading.current_thread().name, self.level())


_ACTIVE: ThreadSupport | None = None


def activate(support: ThreadSupport | None) -> None:
    """Make ``support`` the running job's (``None`` when it ends)."""
    global _ACTIVE
    _ACTIVE = support


def active_or_none() -> ThreadSupport | None:
    return _ACTIVE


def active() -> ThreadSupport:
    if _ACTIVE is None:
        raise RuntimeError(
            "pyopenib's MPI was called outside a running job (run the program with `pyopenib run`)"
        )
    return _ACTIVE


def Init_thread(required: int = THREAD_MULTIPLE) -> int:  # noqa: N802 - mpi4py's name
    """Return the level of thread support provided: ``required`` capped at ``SUPPORTED``.

    MPI is initialised when a rank starts, so this only fixes the level if nothing has
    asked for it yet."""
    return active().level(required)


def Query_thread() -> int:  # noqa: N802
    """Return the level of thread support provided."""
    return active().level()


def Is_thread_main() -> bool:  # noqa: N802
    """Indicate whether this thread called ``Init`` (the simulator's thread)."""
    return threading.get_ident() == active().main_ident
