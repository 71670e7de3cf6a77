"""What a process runs: a Python invocation, resolved as ``mpirun`` and ``python`` would.

The job's first processes run the program ``pyopenib run`` names; a spawned process runs
the command an ``MPI_Comm_spawn`` names. pyopenib's processes are Python (greenlets of
one interpreter), so a command is accepted only when it is a Python invocation:

* the interpreter (``sys.executable``, or any ``python``/``pythonX.Y`` on ``PATH``) with
  ``script args...``, ``-c CODE args...`` or ``-m module args...`` (and the flags that
  change nothing here: ``-u``, ``-B``, ``-q``);
* a script whose ``#!`` line names a Python interpreter (directly or through ``env``).

Anything else is refused up front, as ``mpirun`` refuses an executable it cannot
launch: a missing command with Open MPI's "could not access or execute" report, another
executable with pyopenib's reason. What ``python`` itself would report once started (a
script that does not exist, a module not found, a syntax error) is reported by the
process when it starts, with Python's words and exit status (``Program.load``).

Spawn info keys (Open MPI 4.1's ``ompi/dpm/dpm.c`` list): ``ompi_non_mpi`` is applied
(the children never connect back; the intercommunicator is ``COMM_NULL``); keys that
cannot change anything in one simulated interpreter on one file system are accepted
(``ompi_preload_binary``/``ompi_preload_files``, ``ompi_prefix``, ``display_map``,
``bind_to``, ``ompi_stdin_target``, ``personality``, and ``wdir`` naming the job's own
working directory); keys that would need a process of its own or another placement
(``env``, ``ompi_param``, another ``wdir``, ``host``/``hostfile``/``add-host``/
``add-hostfile``, ``mapper``/``map_by``/``rank_by``/``npernode``/``pernode``/``ppr``)
are refused with the reason. Other keys are ignored, as MPI requires of unknown keys.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from dataclasses import dataclass

__all__ = ["Program", "ProgramFailed", "SpawnRefused", "resolve_command", "spawn_options"]

_RULE = "-" * 74

_PYTHON_NAME = re.compile(r"python(\d+(\.\d+)*)?$")
_QUIET_FLAGS = frozenset({"-u", "-B", "-q"})
"""Interpreter flags that change nothing for a process of the simulation (its streams are
forwarded line by line anyway, it writes no bytecode of its own, it prints no banner)."""


class SpawnRefused(Exception):  # noqa: N818 - a refusal, reported as MPI_ERR_SPAWN
    """The command cannot be launched: ``report`` is what ``mpirun`` prints."""

    def __init__(self, report: str):
        super().__init__(report)
        self.report = report


class ProgramFailed(Exception):  # noqa: N818 - ends the process as the interpreter would
    """The interpreter could not start the program: its message and exit status."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass
class Program:
    """One process's program: ``kind`` is ``file`` (``target`` a path), ``code`` (``-c``:
    ``target`` the source) or ``module`` (``-m``: ``target`` a module name); ``args``
    the arguments after it. ``path`` is the file the code comes from (``<string>`` for
    ``-c``; a module's file once it is found); ``argv`` what ``sys.argv`` is in the
    process (for ``-m``, the module's file replaces ``-m`` once found, as in Python)."""

    kind: str
    target: str
    args: tuple[str, ...] = ()
    interpreter: str = sys.executable
    code: object = None
    """The compiled program, once loaded (the launched job's is compiled up front)."""
    spec: object = None
    """A ``-m`` module's spec, once found (in the process that runs it, which imports its
    parent packages)."""

    @classmethod
    def script(cls, path: str, args=()) -> Program:
        return cls("file", os.path.abspath(path), tuple(args))

    @property
    def path(self) -> str:
        if self.kind == "file":
            return self.target
        if self.kind == "code":
            return "<string>"
        return self.spec.origin if self.spec is not None else self.target

    @property
    def argv(self) -> list[str]:
        first = {"file": self.target, "code": "-c"}.get(self.kind)
        if first is None:
            first = self.spec.origin if self.spec is not None else "-m"
        return [first, *self.args]

    @property
    def directory(self) -> str:
        """What leads ``sys.path`` in the process (the script's directory, or the working
        directory for ``-c`` and ``-m``, as Python does)."""
        return os.path.dirname(self.target) if self.kind == "file" else os.getcwd()

    def load(self):
        """The code object to run, as the interpreter would compile it; ``ProgramFailed``
        when the interpreter would exit before running anything."""
        if self.code is None:
            self.code = self._load()
        return self.code

    def _load(self):
        exe = os.path.basename(self.interpreter) or "python3"
        if self.kind == "code":
            return self._compile(self.target, "<string>")
        if self.kind == "module":
            try:
                spec = importlib.util.find_spec(self.target)
            except (ImportError, ValueError):
                spec = None
            if spec is None or spec.origin is None or not hasattr(spec.loader, "get_code"):
                raise ProgramFailed(f"{self.interpreter}: No module named {self.target}", 1)
            self.spec = spec
            return spec.loader.get_code(self.target)
        try:
            with open(self.target, encoding="utf-8") as f:
                source = f.read()
        except OSError as exc:
            raise ProgramFailed(
                f"{exe}: can't open file {self.target!r}: [Errno {exc.errno}] {exc.strerror}", 2
            ) from None
        return self._compile(source, self.target)

    def prepare(self, main, argv: list[str]) -> None:
        """Give the process's loaded program the ``__main__`` and ``sys.argv`` (``argv``,
        changed in place) Python gives it."""
        if self.kind == "code":
            for name in ("__file__", "__loader__"):
                main.__dict__.pop(name, None)
        elif self.kind == "module":
            main.__spec__ = self.spec
            main.__file__ = self.spec.origin
            main.__loader__ = self.spec.loader
            main.__package__ = self.spec.parent
            argv[0] = self.spec.origin

    @staticmethod
    def _compile(source: str, filename: str):
        try:
            return compile(source, filename, "exec")
        except SyntaxError as exc:
            import traceback

            text = "".join(traceback.format_exception_only(exc)).rstrip()
            raise ProgramFailed(text, 1) from None


def resolve_command(command, args, hostname: str) -> Program:
    """The ``Program`` a spawn of ``command`` with ``args`` runs, or ``SpawnRefused``."""
    name = os.fsdecode(command)
    args = [os.fsdecode(a) for a in (args or ())]
    found = shutil.which(name) if os.sep not in name else name
    if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise SpawnRefused(_cannot_launch(name, hostname))
    if _is_python(found):
        return _python_invocation(found, args, name)
    if _has_python_shebang(found):
        return Program("file", os.path.abspath(found), tuple(args), _shebang_interpreter(found))
    raise SpawnRefused(
        f"{_RULE}\npyopenib runs spawned processes as Python, in the job's simulation:\n\n"
        f"  Executable: {name}\n\nis neither a Python interpreter nor a script whose #! line "
        f"names one.\nSpawn sys.executable with [script, args...], ['-c', code] or "
        f"['-m', module].\n{_RULE}"
    )


def _cannot_launch(name: str, hostname: str) -> str:
    """Open MPI's report for a spawn of a missing or non-executable command."""
    return (
        f"{_RULE}\nmpirun was unable to launch the specified application as it could not "
        f"access\nor execute an executable:\n\nExecutable: {name}\nNode: {hostname}\n\n"
        f"while attempting to start process rank 0.\n{_RULE}"
    )


def _is_python(path: str) -> bool:
    if os.path.realpath(path) == os.path.realpath(sys.executable):
        return True
    return bool(_PYTHON_NAME.match(os.path.basename(path)))


def _first_line(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.readline(4096).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _shebang_words(path: str) -> list[str]:
    line = _first_line(path)
    return line[2:].split() if line.startswith("#!") else []


def _shebang_interpreter(path: str) -> str:
    words = _shebang_words(path)
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    return words[0] if words else ""


def _has_python_shebang(path: str) -> bool:
    interpreter = _shebang_interpreter(path)
    return bool(interpreter) and _is_python(interpreter)


def _python_invocation(interpreter: str, args: list[str], name: str) -> Program:
    """Read a Python command line as the interpreter does: flags, then the program."""
    rest = list(args)
    while rest and rest[0] in _QUIET_FLAGS:
        rest.pop(0)
    if not rest:
        raise SpawnRefused(
            f"{_RULE}\npyopenib cannot spawn {name} without a program: the interpreter would "
            f"read its standard input,\nwhich a spawned process does not have.\n{_RULE}"
        )
    first = rest.pop(0)
    if first in ("-c", "-m"):
        if not rest:
            raise SpawnRefused(
                f"{_RULE}\n{name}: argument expected for the {first} option\n{_RULE}"
            )
        kind = "code" if first == "-c" else "module"
        return Program(kind, rest[0], tuple(rest[1:]), interpreter)
    if first.startswith("-"):
        raise SpawnRefused(
            f"{_RULE}\npyopenib cannot spawn {name} with the interpreter option {first!r}: "
            f"spawned processes\nrun in the job's interpreter, which started without it.\n"
            f"{_RULE}"
        )
    return Program("file", os.path.abspath(first), tuple(rest), interpreter)


# -- spawn info keys -------------------------------------------------------------------------
_REFUSED = {
    "env": "the simulated processes share one interpreter's environment",
    "ompi_param": "MCA parameters are the job's, resolved once before it starts",
    "host": "each spawned process runs on a node of its own",
    "hostfile": "each spawned process runs on a node of its own",
    "add-host": "each spawned process runs on a node of its own",
    "add-hostfile": "each spawned process runs on a node of its own",
    "mapper": "each spawned process runs on a node of its own",
    "map_by": "each spawned process runs on a node of its own",
    "rank_by": "each spawned process runs on a node of its own",
    "npernode": "each spawned process runs on a node of its own",
    "pernode": "each spawned process runs on a node of its own",
    "ppr": "each spawned process runs on a node of its own",
}


@dataclass(frozen=True)
class SpawnOptions:
    """What a spawn's info asks for that pyopenib applies."""

    non_mpi: bool = False


def spawn_options(items: dict[str, str]) -> SpawnOptions:
    """Apply or refuse (``SpawnRefused``) the info keys of one command of a spawn."""
    for key, value in items.items():
        reason = _REFUSED.get(key)
        if key == "wdir" and os.path.realpath(value) != os.path.realpath(os.getcwd()):
            reason = f"the simulated processes share the job's working directory {os.getcwd()}"
        if reason is not None:
            raise SpawnRefused(
                f"{_RULE}\npyopenib cannot apply the spawn info key {key}={value!r}: "
                f"{reason}.\n{_RULE}"
            )
    non_mpi = items.get("ompi_non_mpi", "false").strip().lower() in ("true", "1", "yes", "on")
    return SpawnOptions(non_mpi=non_mpi)
