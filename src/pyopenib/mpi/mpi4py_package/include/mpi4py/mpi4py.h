/* pyopenib's mpi4py.h: what mpi4py.get_include() points at inside a pyopenib job.
 *
 * pyopenib's MPI is a simulation written in Python: there is no libmpi to link against and
 * no mpi4py C API (PyMPIComm_New, PyMPIComm_Get, ...) to call. An extension module built
 * against this header would meet another MPI, or none, at run time; stop here instead. */
#error "pyopenib simulates MPI in Python: its mpi4py has no C API to compile against (build against a real mpi4py and run under mpirun)"
