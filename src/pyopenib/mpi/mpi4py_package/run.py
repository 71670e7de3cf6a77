"""``mpi4py.run``: run Python code under MPI, aborting the job when it fails.

``python -m mpi4py[.run] [options] <pyfile | -m mod | -c cmd | -> [arg] ...`` runs the code
with ``runpy`` as ``__main__``. Its point (mpi4py's): a rank whose code raises would
otherwise end alone and leave its peers waiting in MPI forever; here the failure becomes
``MPI.COMM_WORLD.Abort(status)`` after Python's report, so the whole job stops with that
status, as under ``mpirun -n N python -m mpi4py prog.py``. The options are mpi4py 4.1's:
``--prefix``, ``--version``, ``--mpi-library``, ``--mpi-std-version``,
``--mpi-lib-version``, ``-rc key=value,...`` and ``-h``.

Inside ``pyopenib run -n N python -m mpi4py ...`` each rank runs it from its own
``__main__`` (see ``package.program_command``); it imports nothing but the standard
library, so it can itself be that ``__main__`` (``-m mpi4py.run``). The MPI library is pyopenib's simulated Open MPI, not a
shared library: ``--mpi-library`` prints the file that implements ``mpi4py.MPI``.
"""

from __future__ import annotations

import ast
import os
import runpy
import sys
import traceback
import types
from pathlib import Path

__all__ = ["main", "run_command_line", "set_abort_status"]

_PACKAGE = "mpi4py"
_PROGRAM = "mpi4py.run"  # the name usage shows, as mpi4py's (its __spec__.name)


def _run_source(source: str, filename: str, argv0: str) -> None:
    """Run program text as ``__main__`` (``-c`` and ``-``) in a fresh module, installed
    as ``sys.modules["__main__"]`` while it runs, as ``runpy`` runs a file."""
    code = compile(source, filename, "exec", dont_inherit=True)
    sys.argv[0] = argv0
    module = types.ModuleType("__main__")
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    finally:
        sys.modules["__main__"] = saved


def run_command_line(args=None) -> None:
    """Run ``[pyfile | -m mod | -c cmd | -] [arg] ...`` as ``__main__``; the program sees
    ``sys.argv[1:]`` as its arguments."""
    sys.argv[:] = list(args) if args is not None else sys.argv[1:]
    first = sys.argv[0]
    if first == "-":
        _run_source(sys.stdin.read(), "<stdin>", "-")
    elif first == "-c":
        command = sys.argv.pop(1)
        _run_source(command, "<string>", "-c")
    elif first == "-m":
        del sys.argv[0]
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
    else:
        if not sys.flags.isolated:
            # the script's directory first on the path, as ``python prog.py`` puts it
            sys.path[0] = os.path.realpath(os.path.dirname(first))
        runpy.run_path(first, run_name="__main__")


def _status(status) -> int:
    """The exit status an exception or exit code stands for (mpi4py's rules)."""
    if isinstance(status, SystemExit):
        status = status.code
    elif isinstance(status, KeyboardInterrupt):
        import signal

        status = 128 + signal.SIGINT
    if not isinstance(status, int):
        status = 0 if status is None else 1
    return status


def set_abort_status(status) -> None:
    """End the job with ``status`` if it is not 0 (an exception is 1, ``SystemExit``
    its code, ``KeyboardInterrupt`` 130), after printing what Python prints for the
    exception being handled. mpi4py defers ``MPI_Abort`` to interpreter exit; a rank of
    a pyopenib job is not an interpreter of its own, so the report comes first here and
    the abort right after, which is the order a user sees under mpirun."""
    code = _status(status)
    mpi = sys.modules.get(f"{_PACKAGE}.MPI")
    if not code or mpi is None or mpi.Is_finalized():
        return
    exc = sys.exc_info()[1]
    if isinstance(exc, SystemExit):
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    elif exc is not None:
        traceback.print_exception(exc)
    sys.stderr.flush()
    mpi.COMM_WORLD.Abort(code)


_USAGE = """\
usage: {python} -m {program} [options] <pyfile> [arg] ...
   or: {python} -m {program} [options] -m <mod> [arg] ...
   or: {python} -m {program} [options] -c <cmd> [arg] ...
   or: {python} -m {program} [options] - [arg] ..."""

_OPTIONS = """\
options:
  --prefix             show install path and exit
  --version            show version number and exit
  --mpi-library        show MPI library path and exit
  --mpi-std-version    show MPI standard version and exit
  --mpi-lib-version    show MPI library version and exit
  -h|--help            show this help message and exit
  -rc <key=value,...>  set 'mpi4py.rc.key=value'"""


class _Command:
    """One ``python -m mpi4py`` invocation: its options, then the code to run."""

    def __init__(self, program: str):
        self.program = program
        self.python = Path(sys.executable).name
        self.rc_args: dict = {}

    def usage(self, error: str | None = None):
        text = _USAGE.format(python=self.python, program=self.program)
        if error:
            print(error, file=sys.stderr)
            print(text, file=sys.stderr)
            print(
                f"Try `{self.python} -m {self.program} -h` for more information.", file=sys.stderr
            )
            sys.exit(1)
        print(text)
        print(_OPTIONS)
        sys.exit(0)

    @staticmethod
    def _mpi():
        mpi4py = sys.modules[_PACKAGE]
        mpi4py.rc.initialize = mpi4py.rc.finalize = False
        return sys.modules[f"{_PACKAGE}.MPI"]

    def show(self, option: str):
        """The informational options: print and exit 0."""
        if option == "prefix":
            print(Path(sys.modules[_PACKAGE].__file__).parent)
        elif option == "version":
            print(f"{_PACKAGE} {sys.modules[_PACKAGE].__version__}")
        elif option == "mpi-library":
            print(self._mpi().__file__)
        elif option == "mpi-std-version":
            mpi = self._mpi()
            version = f"{mpi.VERSION}.{mpi.SUBVERSION}"
            runtime = ".".join(map(str, mpi.Get_version()))
            note = f" (runtime: MPI {runtime})" if runtime != version else ""
            print(f"MPI {version}{note}")
        else:  # mpi-lib-version
            print(self._mpi().Get_library_version())
        sys.exit(0)

    def _rc(self, text: str) -> None:
        for entry in text.split(","):
            key, _, value = entry.partition("=")
            if not key or not value:
                self.usage(f"Cannot parse rc option: {entry}")
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                pass  # a bare word is a string, as mpi4py takes it
            self.rc_args[key] = value

    def parse(self, args: list[str]) -> list[str]:
        """Consume the options; the rest is the code to run and its arguments."""
        shows = ("prefix", "version", "mpi-library", "mpi-std-version", "mpi-lib-version")
        while args and args[0].startswith("-"):
            arg = args[0]
            if arg in ("-m", "-c", "-"):
                break
            if arg in ("-h", "-help", "--help"):
                self.usage()
            name = arg.lstrip("-")
            if name in shows and arg in (f"-{name}", f"--{name}"):
                self.show(name)
            if arg.startswith("--rc="):
                arg, args[1:1] = "-rc", [arg[len("--rc=") :]]
            elif arg == "--rc":
                arg = "-rc"
            if arg != "-rc":
                self.usage(f"Unknown option: {args[0]}")
            if len(args) < 2 or args[1].startswith("-"):
                self.usage(f"Argument expected for option: {arg}")
            self._rc(args.pop(1))
            del args[0]
        if not args:
            self.usage("No path specified for execution")
        if args[0] in ("-m", "-c") and len(args) < 2:
            self.usage(f"Argument expected for option: {args[0]}")
        return args


def main() -> None:
    """``python -m mpi4py.run ...`` (and ``python -m mpi4py ...``)."""
    command = _Command(_PROGRAM)
    args = command.parse(sys.argv[1:])
    if command.rc_args:
        sys.modules[_PACKAGE].rc(**command.rc_args)
    try:
        run_command_line(args)
    except (SystemExit, KeyboardInterrupt) as exc:
        set_abort_status(exc)
        raise
    except BaseException:
        set_abort_status(1)
        raise


if __name__ == "__main__":
    main()
