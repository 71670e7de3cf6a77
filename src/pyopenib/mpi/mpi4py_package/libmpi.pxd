# pyopenib's libmpi.pxd: mpi4py's Cython declarations, inside a pyopenib job.
#
# pyopenib's MPI is a simulation written in Python, with no libmpi and no mpi4py C API to
# cimport. Cython compiles a module that cimports this file into C that includes the
# header below, and the header's #error stops the C build with the reason.

cdef extern from "mpi4py/mpi4py.h":
    pass
