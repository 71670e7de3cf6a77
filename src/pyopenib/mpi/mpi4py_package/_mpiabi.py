"""``mpi4py._mpiabi``: which MPI ABI the ``mpi4py.MPI`` extension is built for.

mpi4py 4.1 can ship one ``MPI`` extension per MPI ABI (``MPI.mpich.so``, ``MPI.openmpi.so``,
``MPI.mpiabi.so``): this module names the ABI of the MPI library the process will load
(``MPI4PY_MPIABI``/``MPIABI``, else by looking at the library, ``MPI4PY_LIBMPI``/``LIBMPI``)
and a meta-path finder picks the extension registered for it.

pyopenib's ``mpi4py.MPI`` is one Python module, not an extension per ABI, and there is no
libmpi to dlopen: the library is the simulated Open MPI 4.1.4, so the ABI "found in the
library" is the one its vendor (``MPI.get_vendor()``) implements. The registry and the
finder keep mpi4py's rules (an unregistered module is not the finder's; a registered one
without a build for the current ABI warns ``unsupported MPI ABI``), and a registered module
the job's package serves (``mpi4py.MPI``) is found where pyopenib implements it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import warnings

__all__: list[str] = []

MPIABI: str | None = None
"""The ABI to use, overriding the environment (``MPI4PY_MPIABI``) and the library."""
LIBMPI: str | None = None
"""The MPI library to inspect, overriding ``MPI4PY_LIBMPI``."""
LIBMPI_PATH: list[str] = []
"""Directories to search for the MPI library first."""
LIBMPI_MODE: int | None = None
"""``dlopen`` mode for the MPI library."""

_registry: dict[str, list[str]] = {}
"""Module name -> the ABIs it has a build for."""


def _verbose_info(message: str, verbosity: int = 1) -> None:
    """Say what the finder does on stderr when Python runs with ``-v`` (or more)."""
    if sys.flags.verbose >= verbosity:
        print(f"# [{__name__}] {message}", file=sys.stderr)


def _site_prefixes() -> list[str]:
    """The installation prefixes a libmpi of this Python's environment would be under:
    the virtual environment, the user site, the base installation."""
    prefixes = []
    site = sys.modules.get("site")
    if site is not None:
        if sys.exec_prefix != sys.base_exec_prefix:
            prefixes.append(sys.exec_prefix)
        if site.ENABLE_USER_SITE:
            prefixes.append(os.path.abspath(site.USER_BASE))
        if sys.base_exec_prefix in site.PREFIXES:
            prefixes.append(sys.base_exec_prefix)
    return prefixes


def _dlopen_rpath() -> list[str]:
    """Where a libmpi would be searched for, in order: each prefix's library directory
    (``lib``, or on Windows ``DLLs`` and ``Library/bin``), the loader's own path (""),
    then the vendor locations the platform has (Intel MPI and Microsoft MPI on Windows,
    Homebrew and MacPorts on macOS)."""
    rpath: list[str] = []

    def add(*parts: str) -> None:
        path = os.path.join(*parts)
        if path not in rpath:
            rpath.append(path)

    for prefix in _site_prefixes():
        if os.name == "posix":
            if prefix != "/usr":
                add(prefix, "lib")
        else:
            add(prefix, "DLLs")
            add(prefix, "Library", "bin")
    add("")
    if os.name == "nt":
        impi_root = os.environ.get("I_MPI_ROOT")
        kind = os.environ.get("I_MPI_LIBRARY_KIND") or "release"
        msmpi_bin = os.environ.get("MSMPI_BIN")
        if not msmpi_bin and os.environ.get("MSMPI_ROOT"):
            msmpi_bin = os.path.join(os.environ["MSMPI_ROOT"], "bin")
        if impi_root:
            add(impi_root, "bin", "mpi", kind)
            add(impi_root, "bin", kind)
            add(impi_root, "bin")
        if msmpi_bin:
            add(msmpi_bin)
    if sys.platform == "darwin":
        for directory in ("/usr/local/lib", "/opt/homebrew/lib", "/opt/local/lib"):
            add(directory)
    return rpath


def _get_mpiabi_from_string(string: str) -> str:
    """An ABI name from how people write it: case, spaces, dashes and underscores do not
    matter; Intel MPI is MPICH's ABI on POSIX, and MPICH is Intel MPI's on Windows."""
    name = string.translate({ord(c): "" for c in " -_"}).lower()
    if os.name == "posix" and name == "impi":
        return "mpich"
    if os.name != "posix" and name == "mpich":
        return "impi"
    return name


def _get_mpiabi_from_libmpi(libmpi: str | None = None) -> str:
    """The ABI of the MPI library: pyopenib's, whatever ``libmpi`` names (there is no
    shared library to look into), is the ABI of the vendor it simulates."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None:
        raise RuntimeError("cannot load MPI library: mpi4py.MPI exists only inside a job")
    return _get_mpiabi_from_string(mpi.get_vendor()[0])


def _get_mpiabi() -> str:
    """The ABI in use, decided once and remembered on the function (as mpi4py does)."""
    mpiabi = getattr(_get_mpiabi, "mpiabi", None)
    if mpiabi is None:
        named = MPIABI or os.environ.get("MPI4PY_MPIABI")
        if named is not None:
            mpiabi = _get_mpiabi_from_string(named)
        else:
            mpiabi = _get_mpiabi_from_libmpi(LIBMPI or os.environ.get("MPI4PY_LIBMPI"))
        _get_mpiabi.mpiabi = mpiabi
    return mpiabi


def _register(module: str, mpiabi: str) -> None:
    """Record that ``module`` has a build for ``mpiabi`` (once)."""
    builds = _registry.setdefault(module, [])
    mpiabi = _get_mpiabi_from_string(mpiabi)
    if mpiabi not in builds:
        builds.append(mpiabi)


def _get_mpiabi_suffix(module: str) -> str | None:
    """The file-name suffix of ``module``'s build for the ABI in use (``".openmpi"``,
    ``""`` for the unnamed ABI), or None if the module is not registered for it."""
    builds = _registry.get(module)
    if builds is None:
        return None
    mpiabi = _get_mpiabi()
    if mpiabi not in builds:
        return None
    return f".{mpiabi}" if mpiabi else ""


class _Finder:
    """Meta-path finder for modules registered with a build per ABI."""

    @classmethod
    def find_spec(cls, fullname, path, target=None):  # noqa: ARG003 - the finder protocol
        suffix = _get_mpiabi_suffix(fullname)
        if suffix is None:
            return None
        _verbose_info(f"MPI ABI extension module: {fullname!r}")
        _verbose_info(f"MPI ABI extension suffix: {suffix!r}")
        served = _served(fullname)
        if served is not None:
            return served
        name = fullname.rpartition(".")[2]
        for entry in path or ():
            for ext in importlib.machinery.EXTENSION_SUFFIXES:
                location = os.path.join(entry, f"{name}{suffix}{ext}")
                if os.path.isfile(location):
                    return importlib.util.spec_from_file_location(fullname, location)
        warnings.warn(f"unsupported MPI ABI {suffix[1:]!r}", RuntimeWarning, stacklevel=2)
        return None


def _served(fullname: str):
    """The spec of a module the job's ``mpi4py`` package has already provided (its
    ``mpi4py.MPI`` is pyopenib's Python module, one for every ABI), located at the file
    that implements it; None for any other name."""
    module = sys.modules.get(fullname)
    if module is None or getattr(module, "__file__", None) is None:
        return None
    return importlib.util.spec_from_file_location(fullname, module.__file__)


def _install_finder() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if _Finder not in sys.meta_path:
        sys.meta_path.append(_Finder)
