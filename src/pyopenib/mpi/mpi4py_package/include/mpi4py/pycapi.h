/* pyopenib's pycapi.h: mpi4py's C API header, inside a pyopenib job.
 *
 * pyopenib's MPI is a simulation written in Python: no libmpi, no mpi4py C API. */
#error "pyopenib simulates MPI in Python: its mpi4py has no C API to compile against (build against a real mpi4py and run under mpirun)"
