"""``python -m mpi4py [options] <pyfile> [arg] ...``: what ``mpi4py.run`` does.

Run by ``pyopenib run -n N python -m mpi4py prog.py`` as each rank's ``__main__``, so it
imports ``mpi4py.run`` absolutely (the package's finder serves it)."""

from mpi4py.run import main

if __name__ == "__main__":
    main()
