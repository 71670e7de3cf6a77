"""``MPI.Errhandler``: what happens when an MPI call on a communicator, window, file or
session fails — and the methods those classes share to get, set and call it.

Open MPI's default handler is ``MPI_ERRORS_ARE_FATAL``, but mpi4py (``rc.errors =
'exception'``) sets ``MPI_ERRORS_RETURN`` on ``COMM_SELF``/``COMM_WORLD`` at initialisation
and on every window and file it creates, and turns each returned code into
``MPI.Exception``; a new communicator inherits its parent's handler. So here every object
starts with ``ERRORS_RETURN`` unless its constructor passes the parent's on
(``inherit``). ``ERRORS_ARE_FATAL`` and ``ERRORS_ABORT`` end the job as Open MPI does,
after printing its ``*** An error occurred`` block; a user handler is called with the
object and the code, then the call raises ``MPI.Exception`` (the code MPI returns).

Handlers are per rank and per object: each rank's table maps an object's state to its
handler (weakly, so a freed communicator takes its entry with it). Classes declare the
calls below in their bodies; ``routes_errors`` also sends every ``MPI.Exception`` their
methods raise through the object's handler, as an MPI call does. mpi4py keeps
32 slots for the functions of user handlers of each kind and never frees one (a process
creates at most 32); the 33rd raises ``RuntimeError``.
"""

from __future__ import annotations

import functools
import inspect
import sys
import weakref

from ..errors import TOPICS, register_topics
from . import context
from .error_classes import ERROR_CLASSES, Exception, error_string
from .handles import HandleObject, MpiObject

__all__ = [
    "Call_errhandler",
    "Create_errhandler",
    "ERRORS_ABORT",
    "ERRORS_ARE_FATAL",
    "ERRORS_RETURN",
    "ERRHANDLER_NULL",
    "Errhandler",
    "Get_errhandler",
    "NAMES",
    "Set_errhandler",
    "inherit",
    "route_subclass",
    "routes_errors",
]

_ERR_ARG = ERROR_CLASSES["ERR_ARG"][0]
_SUCCESS = 0
MAX_USER_ERRHANDLERS = 32
"""mpi4py's table of user handlers holds 32 per kind of object."""

register_topics(
    {
        "mpi-errors-are-fatal": (
            "[{host}:{rank}] *** An error occurred in {call}\n"
            "[{host}:{rank}] *** reported by process [{rank}]\n"
            "[{host}:{rank}] *** on {kind} {name}\n"
            "[{host}:{rank}] *** {text}\n"
            "[{host}:{rank}] *** {handler} ({kind_plural} in this {kind} will now abort,\n"
            "[{host}:{rank}] ***    and potentially your MPI job)"
        ),
    }
)


class ErrhandlerObject(MpiObject):
    """An MPI error handler: ``action`` is ``return``, ``fatal``, ``abort`` or ``user``;
    ``kind`` the class a user handler was created for; ``fn(obj, code)`` its function."""

    __slots__ = ("action", "kind", "fn")

    def __init__(self, action: str, kind: str | None = None, fn=None):
        super().__init__()
        self.action = action
        self.kind = kind
        self.fn = fn


class Errhandler(HandleObject):
    """Error handler."""

    __slots__ = ()
    _constants: dict = {}
    _null_name = "ERRHANDLER_NULL"
    _first_fint = 3
    _free_predefined = True

    def Free(self) -> None:
        """Free the error handler (this object becomes ``ERRHANDLER_NULL``).

        A module constant stays as it is, as mpi4py never frees those."""
        obj = self._obj
        if obj is None:
            raise Exception(_ERR_ARG)
        if self._is_constant():
            return
        self._obj = None

    def __repr__(self) -> str:
        obj = self._obj
        name = "ERRHANDLER_NULL" if obj is None else obj.predefined
        return f"<mpi4py.MPI.Errhandler {name or f'object {obj.hid}'}>"


Errhandler.__module__ = "mpi4py.MPI"

ERRHANDLER_NULL = Errhandler._predefine("ERRHANDLER_NULL", None)
ERRORS_RETURN = Errhandler._predefine("ERRORS_RETURN", ErrhandlerObject("return"), fint=2)
ERRORS_ARE_FATAL = Errhandler._predefine("ERRORS_ARE_FATAL", ErrhandlerObject("fatal"), fint=1)
ERRORS_ABORT = Errhandler._predefine("ERRORS_ABORT", ErrhandlerObject("abort"), fint=-1)
_RETURN = ERRORS_RETURN._obj
_HANDLER_NAMES = {"fatal": "MPI_ERRORS_ARE_FATAL", "abort": "MPI_ERRORS_ABORT"}


class _RankHandlers:
    """One rank's handler table: which handler each object has, and how many user
    handler slots of each kind are taken."""

    __slots__ = ("of", "slots")

    def __init__(self):
        self.of: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.slots: dict[str, int] = {}


_RANKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NO_RANK = _RankHandlers()  # objects used outside a running job (tests, tools)


def _handlers() -> _RankHandlers:
    rc = context.lookup()
    if rc is None:
        return _NO_RANK
    table = _RANKS.get(rc)
    if table is None:
        table = _RANKS[rc] = _RankHandlers()
    return table


def _create(kind: str, fn) -> Errhandler:
    if not callable(fn):
        raise TypeError(f"error handler function must be callable, got {fn!r}")
    table = _handlers()
    taken = table.slots.get(kind, 0)
    if taken >= MAX_USER_ERRHANDLERS:
        raise RuntimeError(f"cannot create more than {MAX_USER_ERRHANDLERS} {kind} error handlers")
    table.slots[kind] = taken + 1
    return Errhandler._wrap(ErrhandlerObject("user", kind, fn))


def handler_of(state) -> ErrhandlerObject:
    """The handler of the object whose state is ``state`` (``ERRORS_RETURN`` if unset)."""
    return _handlers().of.get(state, _RETURN)


def inherit(parent_state, child_state) -> None:
    """A new communicator (window, file) takes its parent's handler, as MPI says."""
    table = _handlers()
    obj = table.of.get(parent_state)
    if obj is not None:
        table.of[child_state] = obj


def _fatal(obj: ErrhandlerObject, state, code: int, call: str, kind: str):
    rc = context.current()
    name = getattr(state, "name", "") or f"{kind} {getattr(state, 'cid', '')}".strip()
    try:
        text = error_string(code)
    except Exception:
        text = f"error code {code}"
    sys.stderr.write(
        TOPICS["mpi-errors-are-fatal"].format(
            host=rc.hostname,
            rank=rc.rank,
            call=call,
            kind=kind,
            kind_plural="processes",
            name=name,
            text=text,
            handler=_HANDLER_NAMES[obj.action],
        )
        + "\n"
    )
    raise context.JobAborted(rc.rank, code, name)


# -- the error-handler methods of Comm, Win and File -------------------------------------
# Each class declares them in its body (``Get_errhandler = errhandler.Get_errhandler``),
# with ``_errh_kind`` (mpi4py's class name), ``_errh_noun`` (what Open MPI's fatal
# message calls the object) and ``_errh_state()`` (the state its handler is kept for).


def Create_errhandler(cls, errhandler_fn) -> Errhandler:
    """Create a new error handler for objects of this class: ``errhandler_fn(obj, code)``."""
    return _create(cls._errh_kind, errhandler_fn)


def Get_errhandler(self) -> Errhandler:
    """Get the error handler of the object (a new reference)."""
    return Errhandler._wrap(handler_of(self._errh_state()))


def Set_errhandler(self, errhandler: Errhandler) -> None:
    """Set the error handler of the object.

    The first handler other than ``ERRORS_RETURN`` a program installs switches error
    routing on (see ``routes_errors``)."""
    global _routing
    if not isinstance(errhandler, Errhandler):
        raise TypeError(f"expected Errhandler, got {type(errhandler).__name__}")
    obj = errhandler._obj
    if obj is None or (obj.action == "user" and obj.kind != self._errh_kind):
        raise Exception(_ERR_ARG)
    _handlers().of[self._errh_state()] = obj
    if obj is not _RETURN and not _routing:
        _routing = True
        for root in _ROUTED:
            for cls in (root, *_subclasses(root)):
                _route(cls)


def Call_errhandler(self, errorcode: int) -> None:
    """Invoke the object's error handler on ``errorcode`` (``ERRORS_RETURN``: nothing)."""
    state = self._errh_state()
    obj = handler_of(state)
    if obj.action == "user":
        obj.fn(self, errorcode)
    elif obj.action in _HANDLER_NAMES and errorcode != _SUCCESS:
        call = f"MPI_{self._errh_kind}_call_errhandler"
        _fatal(obj, state, errorcode, call, self._errh_noun)


def _apply(obj, exc: Exception, call: str) -> None:
    """Run ``obj``'s handler for an ``MPI.Exception`` one of its methods raised (once)."""
    if exc.__dict__.get("_handled"):
        return
    exc._handled = True
    try:
        state = obj._errh_state()
    except Exception:  # a null object: MPI applies COMM_WORLD's handler, ERRORS_RETURN here
        return
    handler = handler_of(state)
    if handler.action == "user":
        handler.fn(obj, int(exc))
    elif handler.action in _HANDLER_NAMES:
        _fatal(handler, state, int(exc), call, obj._errh_noun)


def _routed(fn, name: str):
    call = f"MPI_{name}"

    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        try:
            return fn(self, *args, **kwargs)
        except Exception as exc:
            _apply(self, exc, call)
            raise

    method.__mpi_routed__ = True
    return method


_routing = False  # see routes_errors: off until a program installs another handler
_ROUTED: list[type] = []
"""The classes declared with ``routes_errors`` (``Comm``, ``Win``, ``File``)."""
_NOT_ROUTED = frozenset(
    {"Create_errhandler", "Get_errhandler", "Set_errhandler", "Call_errhandler"}
)


def _route(cls: type) -> None:
    """Wrap every public method ``cls`` has (its bases' too) with ``_routed``."""
    seen = set()
    for klass in cls.__mro__:
        if klass is object:
            continue
        for name, value in klass.__dict__.items():
            if name in seen or name.startswith("_") or name in _NOT_ROUTED:
                continue
            seen.add(name)
            if inspect.isfunction(value) and not getattr(value, "__mpi_routed__", False):
                setattr(cls, name, _routed(value, name))


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_subclasses(sub))
    return found


def routes_errors(cls: type) -> type:
    """Class decorator: every MPI method of ``cls`` and of its subclasses sends the
    ``MPI.Exception`` it raises through the object's error handler before it propagates,
    as an MPI call invokes the handler of the communicator (window, file) it was given:
    a user handler runs, a fatal one ends the job, ``ERRORS_RETURN`` lets the exception
    through.

    The wrapping costs about half a microsecond per call, so it is switched on only when
    a program first installs a handler other than ``ERRORS_RETURN`` (until then every
    object has ``ERRORS_RETURN``, which lets exceptions through anyway): then every
    such class's methods are wrapped, and so are those of subclasses created later (their
    ``__init_subclass__`` calls ``route_subclass``). The switch stays on for the process."""
    _ROUTED.append(cls)
    route_subclass(cls)
    return cls


def route_subclass(cls: type) -> None:
    """Wrap a class made after routing was switched on (a program's subclass)."""
    if _routing:
        _route(cls)


NAMES = {
    "Errhandler": Errhandler,
    "ERRHANDLER_NULL": ERRHANDLER_NULL,
    "ERRORS_RETURN": ERRORS_RETURN,
    "ERRORS_ARE_FATAL": ERRORS_ARE_FATAL,
    "ERRORS_ABORT": ERRORS_ABORT,
}
"""The names ``mpi4py.MPI`` exports from this module."""
