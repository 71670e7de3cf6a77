"""Ranks as processes: each rank's own ``__main__`` and its own copies of the program's modules.

Real MPI ranks are processes: each runs the program as its ``__main__`` and imports its own
copy of every module. pyopenib's ranks are greenlets in one interpreter with one
``sys.modules``, so, as SimGrid's SMPI privatizes each rank's data segment, this module
privatizes what a process would own:

* each rank runs the program in a ``ModuleType('__main__')`` of its own, so
  ``unittest.main()``, ``pickle`` of the program's classes and ``if __name__ == "__main__"``
  find the program and not pyopenib's CLI;
* each rank has its own ``sys.argv`` (a copy of the job's command line, or a spawned
  process's own), so a rank that rewrites it (``mpi4py.run`` does, before running the
  program) does not change its peers';
* a module imported during the job from outside the standard library, site-packages and
  pyopenib (the program's own modules, anything on its directory or ``PYTHONPATH``) is
  *private*: each rank that imports it runs it afresh and keeps its copy. Every other module
  is *shared*, as a process shares the pages of its installed libraries, and so are the
  modules the interpreter had imported before the job and C extensions (CPython keeps one
  copy of a single-phase extension's state whatever ``sys.modules`` says).

How: ``sys.modules`` holds the private modules of one rank, the *installed* one, and no
other rank's. ``greenlet.settrace`` calls ``on_switch`` at every greenlet switch; a switch
into a rank greenlet whose rank is not installed moves the installed rank's private
entries out of ``sys.modules`` into its table and the new rank's in. The kernel resumes a
process from several places (``sleep``, ``wait``, ``resume``, ``spawn``) and the runner
throws into ranks at the end; one trace function sees every one of them without a line in
``sim``, and costs one dict lookup on the switches back to the simulator's loop, which
leave the installed rank alone (the loop runs pyopenib's code, never the program's).
``Classifier``, on ``sys.meta_path`` right after the mpi4py finder, decides private or
shared for each module as it is found, and records a private one in the installed rank's
table.

Not isolated: the interpreter-wide state of shared modules (``sys.path``, ``os.environ``,
``unittest``'s classes a program patches), and a program's own threads, which see whichever
rank's modules are installed.
"""

from __future__ import annotations

import builtins
import importlib.machinery
import os
import site
import sys
import sysconfig
import types

import greenlet

__all__ = ["Classifier", "ModuleSpace", "RankModules", "is_private"]

_PYOPENIB_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def _shared_roots() -> tuple[str, ...]:
    """Directories whose modules every rank shares: the standard library, site-packages
    (the interpreter's, the venv's and the user's) and pyopenib."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.update(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        roots.add(site.getusersitepackages())
    roots.add(_PYOPENIB_DIR)
    return tuple(sorted(os.path.join(os.path.realpath(r), "") for r in roots))


_SHARED_ROOTS = _shared_roots()
_EXTENSIONS = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def is_private(spec) -> bool:
    """Whether each rank gets its own copy of the module ``spec`` describes."""
    if spec.has_location:
        locations = [spec.origin]
        if spec.origin.endswith(_EXTENSIONS):
            return False
    else:  # built-in, frozen, or a namespace package (only its directories)
        locations = list(spec.submodule_search_locations or ())
    if not locations:
        return False
    return not any(os.path.realpath(loc).startswith(_SHARED_ROOTS) for loc in locations)


class RankModules:
    """One rank's ``__main__`` and its other private modules by ``sys.modules`` name. While
    the rank is installed they live in ``sys.modules`` and ``table``'s values are stale; a
    name found but not yet loaded has the value ``None``. ``__main__`` is kept apart: it is
    the one private module every rank has, so the trace function swaps it by itself."""

    __slots__ = ("rank", "main", "table", "argv")

    def __init__(self, rank: int, path: str, argv: list[str] | None = None):
        self.rank = rank
        self.argv = [path] if argv is None else list(argv)
        main = types.ModuleType("__main__")
        main.__file__ = path
        main.__builtins__ = builtins
        main.__spec__ = None
        main.__package__ = None
        main.__cached__ = None
        main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
        self.main = main
        self.table: dict[str, types.ModuleType | None] = {}

    def take_out(self, modules: dict) -> None:
        """Move this rank's entries from ``modules`` (``sys.modules``) into the table (the
        trace function inlines this); a private module whose import failed, or that the
        rank deleted from ``sys.modules``, is forgotten."""
        main = modules.get("__main__")
        if main is not None:
            self.main = main  # the program may have put something else there
        self.argv = sys.argv
        table = self.table
        pop = modules.pop
        for name in table:
            table[name] = pop(name, None)
        if None in table.values():
            self.forget_missing()

    def keep_private(self, name: str) -> None:
        """Make ``name`` one of this (installed) rank's private modules, for a module a
        program puts into ``sys.modules`` itself (``mpi4py.futures``' ``__worker__``)."""
        self.table.setdefault(name, None)

    def forget_missing(self) -> None:
        for name in [name for name, module in self.table.items() if module is None]:
            del self.table[name]

    def put_in(self, modules: dict) -> None:
        sys.argv = self.argv
        modules["__main__"] = self.main
        modules.update(self.table)


class Classifier:
    """Meta-path finder: finds a module with the finders behind it, then records it in the
    installed rank's table when it is private (``is_private``). Returns the spec those
    finders found, so an import resolves exactly as it would without isolation."""

    def __init__(self, space: ModuleSpace):
        self.space = space

    def find_spec(self, fullname, path=None, target=None):
        rank = self.space.installed
        if rank is None:
            return None
        meta_path = sys.meta_path
        for finder in meta_path[meta_path.index(self) + 1 :]:
            find = getattr(finder, "find_spec", None)
            spec = None if find is None else find(fullname, path, target)
            if spec is not None:
                if is_private(spec):
                    rank.table[fullname] = None
                return spec
        return None


class ModuleSpace:
    """The job's ranks' private modules, and the one of them installed in ``sys.modules``.

    ``enter(glet, rank_modules)`` is called by a rank greenlet when it starts; from then on
    every switch into it installs its modules. ``__enter__``/``__exit__`` bracket the job:
    the host's ``__main__`` and greenlet trace function come back at the end, and no
    private module of any rank stays in ``sys.modules``."""

    def __init__(self):
        self.installed: RankModules | None = None
        self._ranks: dict = {}
        self.classifier = Classifier(self)

    def keep_private(self, name: str) -> None:
        """Make ``name`` private to the rank installed now (none: nothing to do)."""
        if self.installed is not None:
            self.installed.keep_private(name)

    def enter(self, glet, rank: RankModules) -> None:
        self._ranks[glet] = rank
        self._install(rank)

    def _install(self, rank: RankModules) -> None:
        modules = sys.modules
        if self.installed is not None:
            self.installed.take_out(modules)
        rank.put_in(modules)
        self.installed = rank

    def _tracer(self, chained):
        """The greenlet trace function: a closure with ``_install`` inlined, as it runs at
        every switch of the job: measured at ~0.55 us per resume of a rank when the rank
        changes (two trace calls and the swap), ~2 % of an 8-byte ping-pong message."""
        ranks_get = self._ranks.get
        modules = sys.modules
        get = modules.get
        pop = modules.pop
        update = modules.update

        def on_switch(event, args):
            rank = ranks_get(args[1])
            if rank is not None:
                old = self.installed
                if rank is not old:
                    main = get("__main__")
                    if main is not old.main and main is not None:
                        old.main = main  # the program put something else there
                    old.argv = sys.argv
                    sys.argv = rank.argv
                    table = old.table
                    if table:
                        for name in table:
                            table[name] = pop(name, None)
                        if None in table.values():
                            old.forget_missing()
                    modules["__main__"] = rank.main
                    if rank.table:
                        update(rank.table)
                    self.installed = rank
            if chained is not None:
                chained(event, args)

        return on_switch

    def __enter__(self):
        self._host_main = sys.modules.get("__main__")
        sys.meta_path.insert(0, self.classifier)
        self._chained = greenlet.gettrace()
        greenlet.settrace(self._tracer(self._chained))
        return self

    def __exit__(self, *exc):
        greenlet.settrace(self._chained)
        sys.meta_path.remove(self.classifier)
        if self.installed is not None:
            self.installed.take_out(sys.modules)
            self.installed = None
        sys.modules.pop("__main__", None)
        if self._host_main is not None:
            sys.modules["__main__"] = self._host_main
        self._ranks.clear()
        return False
