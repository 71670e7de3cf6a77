"""The directory a job's ``mpi4py`` package lives in: ``mpi4py.__file__`` and ``__path__``.

A program (and mpi4py's own ``test_package``) looks here for what an installed mpi4py
ships next to its modules: ``py.typed`` and the ``.pyi`` stubs, the Cython ``.pxd``
declarations, the C headers (``MPI.h``, ``MPI_api.h``, ``include/mpi4py/*``). pyopenib's
MPI is Python with no C API, so every header and ``.pxd`` here stops a C or Cython build
that includes it with an error saying so, instead of letting it link against another MPI.
``__main__.py`` is what ``python -m mpi4py`` runs. The package's contents themselves come
from ``pyopenib.mpi.package``, which builds one ``mpi4py`` per job.
"""
