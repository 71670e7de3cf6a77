"""The thread level a job provides, and the error a call from a thread outside the job raises.

pyopenib's ranks are greenlets of the one OS thread that runs the simulator, and so are
the threads a rank starts with ``threading`` (``coop_threading``, ``rank_threads``): each
runs until it blocks, and blocks in simulated time, in MPI (the rank's threads share its
progress as Open MPI's do) or on a lock, event, condition or queue. So any thread of a
rank may call MPI at any time: the job provides ``MPI_THREAD_MULTIPLE``, and
``Init_thread``/``Query_thread`` say so. ``Is_thread_main`` is true in a rank's main
thread only.

An OS thread is outside the simulation (one started with ``_thread.start_new_thread``, by
a C library, or by the host): an MPI call from one would change a rank's PML and BTL
state while the simulator's thread does. It raises ``ThreadLevelError`` naming the call,
before it touches anything (``Query_thread``/``Is_thread_main`` excepted, which MPI
allows from any thread).

The level requested comes from the rank's ``mpi4py.rc`` as mpi4py reads it at
initialisation (``startup``): ``rc.threads`` false means ``MPI_Init`` (``THREAD_SINGLE``),
otherwise ``rc.thread_level``; ``Init_thread``/``Query_thread`` live there too. As in
Open MPI, a level below ``MULTIPLE`` is the program's promise and is not checked.
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
    "Is_thread_main",
]

THREAD_SINGLE, THREAD_FUNNELED, THREAD_SERIALIZED, THREAD_MULTIPLE = range(4)
SIMULATED_THREADS = hasattr(threading, "_set_sentinel")
"""Whether a rank's ``threading.Thread``s can be simulator processes: ``coop_threading``
works under ``threading`` as CPython 3.11 and 3.12 write it (``_start_new_thread``,
``_set_sentinel``); 3.13's joins through ``_thread._ThreadHandle``, which it does not
simulate, so there a thread is an OS thread and only a rank's main thread may call MPI."""
SUPPORTED = THREAD_MULTIPLE if SIMULATED_THREADS else THREAD_FUNNELED
"""The highest level a job can honour (see the module docstring)."""

LEVEL_NAMES = {
    THREAD_SINGLE: "MPI_THREAD_SINGLE",
    THREAD_FUNNELED: "MPI_THREAD_FUNNELED",
    THREAD_SERIALIZED: "MPI_THREAD_SERIALIZED",
    THREAD_MULTIPLE: "MPI_THREAD_MULTIPLE",
}
_ERR_OTHER = ERROR_CLASSES["ERR_OTHER"][0]
_MPI_DIR = __file__.rpartition("/")[0] + "/"
_get_ident = threading.get_ident  # the OS thread's (coop_threading patches the module's)


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
    """An MPI call from an OS thread outside the simulation (error class ``MPI_ERR_OTHER``,
    as Open MPI has no class of its own for it); ``str()`` names the call, the thread and
    the level."""

    def __init__(self, call: str, thread_name: str, provided: int):
        super().__init__(_ERR_OTHER)
        self.call = call
        self.thread_name = thread_name
        self.provided = provided

    def __str__(self) -> str:
        head = f"{self.call} called from thread {self.thread_name!r}, but MPI provides "
        if not SIMULATED_THREADS:
            return head + f"{LEVEL_NAMES[self.provided]}: only a rank's main thread may call MPI"
        return head + (
            f"{LEVEL_NAMES[self.provided]} to a rank's threads only: this is an OS thread "
            "outside the simulation (start it with threading.Thread in the rank)"
        )

    def __repr__(self) -> str:
        return f"MPI.ThreadLevelError({self.call!r}, {self.thread_name!r})"


class ThreadSupport:
    """One job's thread rules: the simulator's OS thread (the only one whose greenlets,
    the ranks and their threads, may call MPI) and the level provided, which each rank's initialisation sets (``startup``: the
    level its ``rc`` asks for, capped at ``SUPPORTED``)."""

    def __init__(self):
        self.main_ident = _get_ident()
        self.main_name = threading.current_thread().name
        self.provided = SUPPORTED

    def forbidden(self) -> ThreadLevelError:
        """The error for a call from the current OS thread (not the simulator's), naming the MPI call
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
        return ThreadLevelError(f"MPI.{call}", threading.current_thread().name, self.provided)


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


def Is_thread_main() -> bool:  # noqa: N802
    """Indicate whether this thread called ``Init``: a rank's main thread."""
    from .rank_threads import running  # rank_threads sits above context, which imports us

    support = active()
    thread = running() if SIMULATED_THREADS else None
    if thread is None:  # the host's code on the simulator's thread, or an OS thread
        return _get_ident() == support.main_ident
    return thread.is_main
