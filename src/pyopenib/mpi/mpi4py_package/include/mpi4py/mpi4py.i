/* pyopenib's mpi4py.i: mpi4py's SWIG typemaps, inside a pyopenib job.
 *
 * SWIG's preprocessor honours #error: a wrapper built from this file would need mpi4py's
 * C API, which pyopenib's Python MPI does not have. */
#error "pyopenib simulates MPI in Python: its mpi4py has no C API to compile against (build against a real mpi4py and run under mpirun)"
