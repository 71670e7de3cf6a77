"""What a rank's ``import mpi4py.MPI`` does, and ``Init``/``Init_thread``/``Is_initialized``.

mpi4py's extension, when a process imports it (``atimport.pxi``: ``getOptions``,
``bootstrap``, ``initialize``), reads each ``mpi4py.rc`` option, unless an environment
variable ``MPI4PY_RC_<NAME>`` sets it (a number, a boolean word, or else a lower-cased
word, which is then written back into ``rc``); warns ``mpi4py.rc.NAME: unexpected value
V`` (``RuntimeWarning``) for a value it does not know, keeping the default; then, if
``rc.initialize``, initialises MPI (``MPI_Init_thread`` at ``rc.thread_level``, or
``MPI_Init`` when ``rc.threads`` is false), and, once MPI is initialised (there or by
``MPI.Init()``), gives ``COMM_SELF`` and ``COMM_WORLD`` the error handler ``rc.errors``
names: ``exception`` → ``ERRORS_RETURN`` (every object mpi4py makes gets it too),
``fatal`` → ``ERRORS_ARE_FATAL`` likewise, ``abort`` → ``ERRORS_ABORT``, ``default`` →
MPI's own (fatal for communicators and windows, return for files). At exit MPI is
finalised if ``rc.finalize`` says so (``None``: if mpi4py initialised it).

Ranks are processes: each rank has its own ``mpi4py`` package and ``rc`` (``package``)
and its own state here. ``MPI4PY_PICKLE_PROTOCOL``/``MPI4PY_PICKLE_THRESHOLD`` set
``MPI.pickle`` at the import too. A use of ``COMM_WORLD`` or ``COMM_SELF`` before
``MPI_Init`` ends the rank with Open MPI's "called before MPI_INIT was invoked"
(``called_before_init``); other objects' calls before it are not refused.
"""

from __future__ import annotations

import os
import sys
import warnings
import weakref

from ..errors import TOPICS, register_topics
from . import context, errhandler, threads

__all__ = [
    "Init",
    "Init_thread",
    "Is_initialized",
    "Query_thread",
    "bootstrap",
    "called_before_init",
    "left_active",
    "world_of",
]

_DEFAULTS = {
    "initialize": True,
    "threads": True,
    "thread_level": "multiple",
    "finalize": None,
    "fast_reduce": True,
    "recv_mprobe": True,
    "irecv_bufsz": 32768,
    "errors": "exception",
}
"""mpi4py 4.1.2's options and defaults, in the order it reads them."""

_LEVELS = {
    "single": threads.THREAD_SINGLE,
    "funneled": threads.THREAD_FUNNELED,
    "serialized": threads.THREAD_SERIALIZED,
    "multiple": threads.THREAD_MULTIPLE,
}
_ERRORS = ("default", "exception", "abort", "fatal")
_TRUE_WORDS = ("true", "yes", "on", "y", "1")
_FALSE_WORDS = ("false", "no", "off", "n", "0")

register_topics(
    {
        "mpi-init-twice": (
            "-" * 74 + "\nOpen MPI has detected that this process has attempted to initialize\n"
            "MPI (via MPI_INIT or MPI_INIT_THREAD) more than once.  This is\nerroneous.\n"
            + "-"
            * 74
            + "\n*** An error occurred in {call}\n*** on a NULL communicator\n"
            "*** Unknown error\n*** MPI_ERRORS_ARE_FATAL (processes in this communicator "
            "will now abort,\n***    and potentially your MPI job)"
        ),
        "mpi-called-before-init": (
            "*** The {call}() function was called before MPI_INIT was invoked.\n"
            "*** This is disallowed by the MPI standard.\n"
            "*** Your MPI job will now abort.\n"
            "[{host}:{pid}] Local abort before MPI_INIT completed completed successfully, but "
            "am not able to aggregate error messages, and not able to guarantee that all "
            "other processes were killed!"
        ),
    }
)


class _RankStartup:
    """One rank's initialisation: whether MPI is initialised, the level it provides,
    and what the options it read say about errors and finalising."""

    __slots__ = ("initialized", "provided", "errors", "finalize", "predefined")

    def __init__(self):
        self.initialized = False
        self.provided = threads.SUPPORTED
        self.errors = "exception"
        self.finalize = False
        self.predefined = None  # (COMM_WORLD's, COMM_SELF's state) held until MPI_Init


_RANKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _state(ctx=None) -> _RankStartup:
    ctx = ctx or context.current()
    state = _RANKS.get(ctx)
    if state is None:
        state = _RANKS[ctx] = _RankStartup()
    return state


def _option(rc, name: str):
    """mpi4py's ``getOpt``: the environment's value (written back into ``rc``), else
    the rc attribute, else the default."""
    default = _DEFAULTS[name]
    text = os.environ.get(f"MPI4PY_RC_{name.upper()}")
    if text is None:
        return getattr(rc, name, default) if rc is not None else default
    word = text.strip().lower()
    if text.isdigit() and type(default) is int:
        value = int(text)
    elif word in _TRUE_WORDS or word in _FALSE_WORDS:
        value = word in _TRUE_WORDS
    else:
        value = word
    if rc is not None:
        try:
            setattr(rc, name, value)
        except Exception:  # noqa: BLE001, S110 - mpi4py ignores an rc that refuses it
            pass
    return value


def _flag(name: str, value, default: bool) -> bool:
    if value in (True, "yes"):
        return True
    if value in (False, "no"):
        return False
    _warn(name, value)
    return default


def _warn(name: str, value) -> None:
    warnings.warn(f"mpi4py.rc.{name}: unexpected value {value!r}", RuntimeWarning, stacklevel=4)


def _read_options(rc) -> dict:
    """The options as mpi4py's ``getOptions`` resolves them (warning on bad values)."""
    raw = {name: _option(rc, name) for name in _DEFAULTS}
    opts = {
        "initialize": _flag("initialize", raw["initialize"], True),
        "threads": _flag("threads", raw["threads"], True),
    }
    level = _LEVELS.get(raw["thread_level"]) if isinstance(raw["thread_level"], str) else None
    if level is None:
        _warn("thread_level", raw["thread_level"])
        level = threads.THREAD_MULTIPLE
    opts["thread_level"] = level
    finalize = raw["finalize"]
    opts["finalize"] = opts["initialize"] if finalize is None else _flag("finalize", finalize, True)
    _flag("fast_reduce", raw["fast_reduce"], True)
    _flag("recv_mprobe", raw["recv_mprobe"], True)
    bufsz = raw["irecv_bufsz"]
    if not (type(bufsz) is int and bufsz >= 0):
        _warn("irecv_bufsz", bufsz)
    errors = raw["errors"]
    if errors not in _ERRORS:
        _warn("errors", errors)
        errors = "exception"
    opts["errors"] = errors
    return opts


def _pickle_environment(mpi) -> None:
    """``MPI4PY_PICKLE_PROTOCOL`` and ``MPI4PY_PICKLE_THRESHOLD``, read at import."""
    for variable, attribute in (("PROTOCOL", "PROTOCOL"), ("THRESHOLD", "THRESHOLD")):
        text = os.environ.get(f"MPI4PY_PICKLE_{variable}")
        if text is not None and text.strip().lstrip("-").isdigit():
            setattr(mpi.pickle, attribute, int(text))


def bootstrap(rc, mpi) -> None:
    """A rank imports ``mpi4py.MPI`` (``mpi``) with its ``rc`` (None if the program
    removed it): read the options, initialise MPI if they ask (see the module
    docstring)."""
    ctx = context.current()
    state = _state(ctx)
    opts = _read_options(rc)
    _pickle_environment(mpi)
    state.errors = opts["errors"]
    if state.initialized:
        return
    state.finalize = opts["finalize"]
    ctx.at_exit.append(_at_exit)
    if opts["initialize"]:
        _initialise(ctx, opts["thread_level"] if opts["threads"] else threads.THREAD_SINGLE)
    else:  # until MPI_Init, COMM_WORLD and COMM_SELF are not there (``called_before_init``)
        state.predefined = (ctx.world, ctx.self_comm)
        ctx.world = ctx.self_comm = None


def _initialise(ctx, required: int) -> int:
    state = _state(ctx)
    state.initialized = True
    if state.predefined is not None:
        (ctx.world, ctx.self_comm), state.predefined = state.predefined, None
    state.provided = min(required, threads.SUPPORTED)
    threads.active().provided = state.provided
    errhandler.set_rank_defaults(state.errors, ctx.world, ctx.self_comm)
    return state.provided


_COMM_FUNCTIONS = {
    "Get_rank": "rank",
    "Get_size": "size",
    "Get_group": "group",
    "rank": "rank",
    "size": "size",
    "group": "group",
    "Dup": "dup",
    "Split": "split",
    "Split_type": "split_type",
    "Create": "create",
    "Create_group": "create_group",
    "Compare": "compare",
    "Free": "free",
    "Get_name": "get_name",
    "Set_name": "set_name",
    "Get_attr": "get_attr",
    "Set_attr": "set_attr",
    "Delete_attr": "delete_attr",
    "Get_errhandler": "get_errhandler",
    "Set_errhandler": "set_errhandler",
    "Get_info": "get_info",
    "Set_info": "set_info",
}
"""mpi4py's communicator methods whose C function is ``MPI_Comm_<name>``; the others are
``MPI_<Name>`` (``Send``, ``Barrier``; ``send`` and ``bcast`` as their C calls)."""


def called_before_init(frame) -> None:
    """A rank used ``COMM_WORLD`` or ``COMM_SELF`` before ``MPI_Init`` (``rc.initialize``
    false): Open MPI's message naming the C function, and the rank ends with status 1,
    as Open MPI aborts the process. ``frame`` is the caller's: the call is the innermost
    public function from there out (``send``, not the ``_send_obj`` it calls)."""
    while frame is not None and frame.f_code.co_name.startswith("_"):
        frame = frame.f_back
    name = None if frame is None else frame.f_code.co_name
    function = _COMM_FUNCTIONS.get(name)
    if function is not None:
        call = f"MPI_Comm_{function}"
    else:
        call = f"MPI_{(name or 'Comm').lstrip('_').capitalize()}"
        if name and name[0].isupper():
            call = f"MPI_{name}"
    ctx = context.current()
    sys.stderr.write(
        TOPICS["mpi-called-before-init"].format(call=call, host=ctx.hostname, pid=ctx.rank) + "\n"
    )
    raise SystemExit(1)


def world_of(ctx):
    """The rank's ``COMM_WORLD`` state, also while ``MPI_Init`` holds it back (for
    mpirun's reports, which name a process by its rank in its job's world)."""
    state = _RANKS.get(ctx)
    if ctx.world is None and state is not None and state.predefined is not None:
        return state.predefined[0]
    return ctx.world


def _at_exit() -> None:
    """``rc.finalize``: finalise at exit a rank's MPI that is still active."""
    ctx = context.current()
    state = _state(ctx)
    if state.finalize and state.initialized and not ctx.finalized:
        sys.modules["mpi4py.MPI"].Finalize()


def left_active(ctx) -> bool:
    """Whether the rank's program ended with its MPI initialised and not finalised
    (``mpirun`` then reports that it exited improperly, and fails the job)."""
    state = _RANKS.get(ctx)
    return state is not None and state.initialized and not ctx.finalized


def _init(call: str, required: int) -> int:
    ctx = context.current()
    if _state(ctx).initialized:
        sys.stderr.write(TOPICS["mpi-init-twice"].format(call=call) + "\n")
        raise SystemExit(1)
    return _initialise(ctx, required)


def Init() -> None:  # noqa: N802 - mpi4py's names
    """Initialize the MPI execution environment.

    For a rank whose ``rc.initialize`` was false; a second initialisation ends the rank
    as Open MPI does."""
    _init("MPI_Init", threads.THREAD_SINGLE)


def Init_thread(required: int = threads.THREAD_MULTIPLE) -> int:  # noqa: N802
    """Initialize the MPI execution environment with a thread level.

    Returns the level provided: ``required`` capped at what the job can honour
    (``threads.SUPPORTED``)."""
    return _init("MPI_Init_thread", required)


def Is_initialized() -> bool:  # noqa: N802
    """Indicate whether ``Init`` has been called.

    True once MPI is initialised (at import, or by ``Init``), and still after
    ``Finalize``."""
    return _state().initialized


def Query_thread() -> int:  # noqa: N802
    """Return the level of thread support provided.

    MPI allows the call from any thread: from one that is not a rank's, the job's."""
    ctx = context.lookup()
    return threads.active().provided if ctx is None else _state(ctx).provided
