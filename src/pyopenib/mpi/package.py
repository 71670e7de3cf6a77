"""The ``mpi4py`` package a job installs around its ``mpi4py.MPI`` module.

What a program finds after ``import mpi4py`` is what mpi4py 4.1.2's ``__init__.py`` gives:
``__version__``, ``__file__``/``__path__``/``__spec__``, ``rc`` (also importable as the
module ``mpi4py.rc``, callable to update options, ``type(rc)()`` for a fresh one),
``get_include()``, ``get_config()`` and ``profile()``. ``mpi4py.MPI`` is built by
``namespace``; the other submodules come from ``SUBMODULES``, a registry from mpi4py's
names to the pyopenib modules that implement them. ``Mpi4pyFinder`` serves every
``mpi4py.*`` import while a job runs: a registered module is imported (once per
interpreter: they keep no per-job state) and installed under its mpi4py name; anything
else is a ``ModuleNotFoundError``, never the real mpi4py's extension.

Each rank has its own package and ``rc`` (``rank_modules``; the runner makes them private
to the rank, as a process has its own): ``import mpi4py.MPI`` reads the rank's ``rc``
and ``MPI4PY_RC_*`` and initialises its MPI as they say (``startup``). The ``MPI``
module itself is one for the job: its functions look the calling rank up.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import re
import sys
import types
import warnings

from ..errors import PyopenibError, register_topics
from . import startup
from .namespace import MPI4PY_VERSION, build_mpi_module
from .pickling import PICKLE

__all__ = ["Installed", "Mpi4pyFinder", "Rc", "SUBMODULES", "program_command", "rank_modules"]

PACKAGE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi4py_package")
"""The directory a job's ``mpi4py`` is in (``__path__``): its data files (stubs, ``.pxd``,
headers) and the modules that are mpi4py's own files (``run``, ``bench``...)."""
PACKAGE_FILE = os.path.join(PACKAGE_DIR, "__init__.py")

SUBMODULES: dict[str, str] = {
    "mpi4py.__main__": "pyopenib.mpi.mpi4py_package.__main__",
    "mpi4py._mpiabi": "pyopenib.mpi.mpi4py_package._mpiabi",
    "mpi4py.bench": "pyopenib.mpi.mpi4py_package.mpi4py_bench",
    "mpi4py.run": "pyopenib.mpi.mpi4py_package.run",
    "mpi4py.typing": "pyopenib.mpi.mpi4py_package.typing",
    "mpi4py.util.dtlib": "pyopenib.mpi.util_dtlib",
    "mpi4py.util.pkl5": "pyopenib.mpi.util_pkl5",
    "mpi4py.util.sync": "pyopenib.mpi.util_sync",
    "mpi4py.util.pool": "pyopenib.mpi.util_pool",
    "mpi4py.futures": "pyopenib.mpi.futures",
    "mpi4py.futures._base": "pyopenib.mpi.futures._base",
    "mpi4py.futures.aplus": "pyopenib.mpi.futures.aplus",
    "mpi4py.futures._core": "pyopenib.mpi.futures._core",
    "mpi4py.futures.pool": "pyopenib.mpi.futures.pool",
    "mpi4py.futures.util": "pyopenib.mpi.futures.util",
    "mpi4py.futures.server": "pyopenib.mpi.mpi4py_package.futures_server",
    "mpi4py.futures.__main__": "pyopenib.mpi.mpi4py_package.futures_main",
}
"""mpi4py's module name -> the pyopenib module that implements it. An entry whose module
does not exist (yet) makes the import fail as an absent module would."""

_PACKAGES = {"mpi4py.util": "Miscellaneous utilities (pyopenib's implementations)."}
"""Submodules that are packages with nothing of their own but their children."""


PROGRAM_MODULES = {
    "mpi4py": "__main__.py",
    "mpi4py.run": "run.py",
    "mpi4py.bench": "mpi4py_bench.py",
    "mpi4py.futures": "futures_main.py",
    "mpi4py.futures.server": "futures_server.py",
}
"""The modules of the package that run as programs (``python -m NAME``), by the file a
rank runs as its ``__main__``."""

_PYTHON = re.compile(r"python(\d+(\.\d+)?)?")

register_topics(
    {
        "run-python-module": (
            "python -m {module}: pyopenib runs its own mpi4py's program modules ({known}), "
            "or a Python file (python prog.py)"
        ),
        "run-python-args": (
            "{program} {args}: expected a Python file, or -m MODULE, after the interpreter "
            "(as in mpirun -n N python prog.py)"
        ),
    }
)


def _is_interpreter(program: str) -> bool:
    return program == sys.executable or _PYTHON.fullmatch(os.path.basename(program)) is not None


def program_command(program: str, args) -> tuple[str, list[str]]:
    """The file each rank runs and its arguments, from ``pyopenib run``'s ``PROGRAM
    ARGS``: a Python file and its arguments, or an interpreter followed by what it would
    run, as on an mpirun command line: ``python prog.py ...`` or ``python -m mpi4py
    prog.py ...`` (``PROGRAM_MODULES``; ``sys.argv[0]`` is the module's file, as Python
    sets it for ``-m``). Anything else is an error naming what was given."""
    args = list(args)
    if not _is_interpreter(program) or os.path.isfile(program) and program.endswith(".py"):
        return program, args
    if args and args[0] == "-m":
        module = args[1] if len(args) > 1 else ""
        file = PROGRAM_MODULES.get(module)
        if file is None:
            raise PyopenibError(
                "run-python-module", module=module, known=", ".join(PROGRAM_MODULES)
            )
        return os.path.join(PACKAGE_DIR, file), args[2:]
    if args and not args[0].startswith("-") and os.path.isfile(args[0]):
        return args[0], args[1:]
    raise PyopenibError("run-python-args", program=program, args=" ".join(args))


class Rc:
    """Runtime configuration options, as ``mpi4py.rc`` (same names, defaults and errors:
    an unknown option is a ``TypeError`` to set and an ``AttributeError`` to read)."""

    initialize = True
    threads = True
    thread_level = "multiple"
    finalize = None
    fast_reduce = True
    recv_mprobe = True
    irecv_bufsz = 32768
    errors = "exception"

    def __init__(self, **kwargs):
        self(**kwargs)

    def __setattr__(self, name, value):
        if not hasattr(self, name):
            raise TypeError(f"object has no attribute {name!r}")
        super().__setattr__(name, value)

    def __call__(self, **kwargs):
        for key in kwargs:
            if not hasattr(self, key):
                raise TypeError(f"unexpected argument {key!r}")
        for key, value in kwargs.items():
            setattr(self, key, value)

    def __repr__(self) -> str:
        return "<mpi4py.rc>"


def get_include() -> str:
    """The directory of C headers for extensions that compile against mpi4py. pyopenib's
    MPI has no C API: its ``mpi4py/mpi4py.h`` stops such a build with an ``#error`` that
    says so, instead of letting it link against another MPI."""
    return os.path.join(PACKAGE_DIR, "include")


def get_config() -> dict[str, str]:
    """Information about the MPI the package was built with: mpi4py 4 returns an empty
    dict unless a packager ships an ``mpi.cfg``, and pyopenib was built with no MPI."""
    return {}


def profile(name, *, path=None) -> None:
    """mpi4py loads a PMPI profiler library into the process here. pyopenib's MPI calls
    are Python, not the C symbols a profiler intercepts, so the library is looked up as
    mpi4py does (``ValueError`` when absent) and then not loaded: a ``UserWarning``."""
    if path is None:
        path = [""]
    elif isinstance(path, os.PathLike):
        path = [path]
    elif isinstance(path, str):
        path = path.split(os.pathsep)
    elif isinstance(path, bytes):
        path = path.split(os.fsencode(os.pathsep))
    name = os.fsdecode(name)
    for directory in map(os.fsdecode, path):
        for prefix, suffix in (("", ""), ("lib", ".so")):
            filename = os.path.join(directory, f"{prefix}{name}{suffix}")
            if os.path.isfile(filename):
                warnings.warn(
                    f"mpi4py.profile: {os.path.realpath(filename)} not loaded: pyopenib's "
                    "MPI has no PMPI symbols for a profiler to intercept",
                    UserWarning,
                    stacklevel=2,
                )
                return
    raise ValueError(f"profiler {name!r} not found")


class _AliasLoader:
    """Installs an already imported pyopenib module under its mpi4py name (after
    ``mpi4py.MPI``, which mpi4py's own submodules import first)."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        importlib.import_module("mpi4py.MPI")
        module = importlib.import_module(self.target)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module):
        # The import system stamped the mpi4py spec on the module; it stays pyopenib's.
        module.__spec__ = self.own_spec

    def get_code(self, fullname):
        """The implementing module's code, which ``runpy`` runs as ``__main__`` for
        ``python -m mpi4py -m mpi4py.bench ...``."""
        return importlib.util.find_spec(self.target).loader.get_code(self.target)


class _MpiLoader:
    """``import mpi4py.MPI`` in a rank: the job's one ``MPI`` module, and the rank's
    initialisation from its ``rc`` (``startup.bootstrap``), as mpi4py's extension does
    when a process imports it."""

    def __init__(self, mpi: types.ModuleType):
        self.mpi = mpi

    def create_module(self, spec):
        return self.mpi

    def exec_module(self, module):
        pkg = sys.modules.get("mpi4py")
        rc = getattr(pkg, "rc", None) if pkg is not None else None
        startup.bootstrap(rc if isinstance(rc, Rc) else sys.modules.get("mpi4py.rc"), module)


class _PackageLoader:
    """An ``mpi4py`` subpackage with nothing of its own but its children (``_PACKAGES``)."""

    def __init__(self, doc: str):
        self.doc = doc

    def create_module(self, spec):
        return _package(spec.name, self.doc, None)

    def exec_module(self, module):
        pass


class Mpi4pyFinder:
    """Meta-path finder for ``mpi4py.*`` while a job runs (see the module docstring).
    Every module it finds is private to the rank that imports it (``privatize``)."""

    def __init__(self, mpi: types.ModuleType, privatize):
        self.mpi = mpi
        self.privatize = privatize

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("mpi4py."):
            return None
        if fullname == "mpi4py.MPI":
            loader = _MpiLoader(self.mpi)
        elif fullname in _PACKAGES:
            loader = _PackageLoader(_PACKAGES[fullname])
        else:
            module = SUBMODULES.get(fullname)
            if module is None or importlib.util.find_spec(module) is None:
                raise ModuleNotFoundError(
                    f"No module named {fullname!r} (pyopenib's mpi4py does not provide it)",
                    name=fullname,
                )
            loader = _AliasLoader(module)
        self.privatize(fullname)
        return importlib.machinery.ModuleSpec(fullname, loader, is_package=fullname in _PACKAGES)


def _package(name: str, doc: str, file: str | None) -> types.ModuleType:
    module = types.ModuleType(name, doc)
    module.__path__ = [PACKAGE_DIR] if file else []
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, origin=file, is_package=True)
    if file:
        module.__file__ = file
        module.__spec__.has_location = True
    return module


def rank_modules() -> dict[str, types.ModuleType]:
    """A fresh ``mpi4py`` package and ``mpi4py.rc`` (an ``Rc``, as in mpi4py) for one
    rank, by their ``sys.modules`` names: each rank is a process with its own copy.
    ``mpi4py.MPI`` and the submodules come when the rank imports them."""
    pkg = _package(
        "mpi4py", "pyopenib's MPI for Python: the mpi4py 4.x API, simulated.", PACKAGE_FILE
    )
    pkg.__version__ = MPI4PY_VERSION
    pkg.__all__ = ["MPI"]
    pkg.rc = Rc()
    pkg.get_include = get_include
    pkg.get_config = get_config
    pkg.profile = profile
    return {"mpi4py": pkg, "mpi4py.rc": pkg.rc}


class Installed:
    """The job's ``mpi4py``: its one ``MPI`` module, each rank's package (``rank_modules``,
    which the runner makes private to the rank) and the finder first on
    ``sys.meta_path``; the interpreter's own ``mpi4py*`` modules (a real mpi4py the host
    imported) are out of ``sys.modules`` during the job and come back when it ends.
    ``privatize(name)`` makes a module the finder serves private to the importing rank."""

    def __init__(self, privatize):
        PICKLE.__init__()  # a job's processes start with mpi4py's serializer and settings
        self.mpi = build_mpi_module()
        self.mpi.__package__ = "mpi4py"
        self.finder = Mpi4pyFinder(self.mpi, privatize)

    rank_modules = staticmethod(rank_modules)

    def __enter__(self):
        self.saved = {k: v for k, v in sys.modules.items() if _is_mpi4py(k)}
        for k in self.saved:
            del sys.modules[k]
        sys.meta_path.insert(0, self.finder)
        return self

    def __exit__(self, *exc):
        sys.meta_path.remove(self.finder)
        for k in [k for k in sys.modules if _is_mpi4py(k)]:
            del sys.modules[k]
        sys.modules.update(self.saved)
        return False


def _is_mpi4py(name: str) -> bool:
    return name == "mpi4py" or name.startswith("mpi4py.")
