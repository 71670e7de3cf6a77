"""Every integer constant of ``mpi4py.MPI`` (mpi4py 4.1.2's names, Open MPI 4.1.4's values).

Programs test these against each other (``APPNUM != KEYVAL_INVALID``), pass them to calls
and print them, so each has the value ``mpirun`` + mpi4py shows on x86-64 Linux; a name
mpi4py exports for a feature Open MPI 4.1 lacks has mpi4py's fallback value (for instance
``COMM_TYPE_RESOURCE_GUIDED`` is ``UNDEFINED``). Error classes live in ``errors``.
Modules that implement a family import the constants they need from here, so a value is
written once.
"""

from __future__ import annotations

__all__ = ["CONSTANTS"]

UNDEFINED = -32766
ANY_SOURCE = -1
ANY_TAG = -1
PROC_NULL = -2
ROOT = -4
KEYVAL_INVALID = -1
BSEND_OVERHEAD = 128  # sizeof(mca_pml_base_bsend_hdr) rounded as Open MPI reports it

VERSION, SUBVERSION = 3, 1
"""The MPI standard Open MPI 4.1 implements (``MPI_VERSION``, ``MPI_SUBVERSION``)."""

THREAD_SINGLE, THREAD_FUNNELED, THREAD_SERIALIZED, THREAD_MULTIPLE = 0, 1, 2, 3

# Predefined attribute keyvals. Open MPI numbers them in this order; MPI_HOST (1) is
# deprecated and mpi4py 4 no longer exports it. Window keyvals follow the communicator ones.
TAG_UB, IO, WTIME_IS_GLOBAL, APPNUM, LASTUSEDCODE, UNIVERSE_SIZE = 0, 2, 3, 4, 5, 6
WIN_BASE, WIN_SIZE, WIN_DISP_UNIT, WIN_CREATE_FLAVOR, WIN_MODEL = 7, 8, 9, 10, 11
FIRST_USER_KEYVAL = 12
"""Open MPI gives out user keyvals from here up, one counter for every object kind."""

COMM_KEYVALS = {
    "TAG_UB": TAG_UB,
    "IO": IO,
    "WTIME_IS_GLOBAL": WTIME_IS_GLOBAL,
    "APPNUM": APPNUM,
    "LASTUSEDCODE": LASTUSEDCODE,
    "UNIVERSE_SIZE": UNIVERSE_SIZE,
}
WIN_KEYVALS = {
    "WIN_BASE": WIN_BASE,
    "WIN_SIZE": WIN_SIZE,
    "WIN_DISP_UNIT": WIN_DISP_UNIT,
    "WIN_CREATE_FLAVOR": WIN_CREATE_FLAVOR,
    "WIN_FLAVOR": WIN_CREATE_FLAVOR,
    "WIN_MODEL": WIN_MODEL,
}

MAX_LENGTHS = {
    "MAX_PROCESSOR_NAME": 256,
    "MAX_ERROR_STRING": 256,
    "MAX_PORT_NAME": 1024,
    "MAX_INFO_KEY": 36,
    "MAX_INFO_VAL": 256,
    "MAX_OBJECT_NAME": 64,
    "MAX_DATAREP_STRING": 128,
    "MAX_LIBRARY_VERSION_STRING": 256,
    "MAX_PSET_NAME_LEN": 512,
    "MAX_STRINGTAG_LEN": 1024,
}

COMPARISONS = {"IDENT": 0, "CONGRUENT": 1, "SIMILAR": 2, "UNEQUAL": 3}

TOPOLOGIES = {"CART": 1, "GRAPH": 2, "DIST_GRAPH": 3, "UNWEIGHTED": 2, "WEIGHTS_EMPTY": 3}

COMM_TYPES = {
    "COMM_TYPE_SHARED": 0,
    "COMM_TYPE_HW_UNGUIDED": 12,
    "COMM_TYPE_HW_GUIDED": 13,
    "COMM_TYPE_RESOURCE_GUIDED": UNDEFINED,  # MPI-4.1, absent in Open MPI 4.1
}

COMBINERS = {
    "COMBINER_NAMED": 0,
    "COMBINER_DUP": 1,
    "COMBINER_CONTIGUOUS": 2,
    "COMBINER_VECTOR": 3,
    "COMBINER_HVECTOR": 5,
    "COMBINER_INDEXED": 6,
    "COMBINER_HINDEXED": 8,
    "COMBINER_INDEXED_BLOCK": 9,
    "COMBINER_STRUCT": 11,
    "COMBINER_SUBARRAY": 12,
    "COMBINER_DARRAY": 13,
    "COMBINER_F90_REAL": 14,
    "COMBINER_F90_COMPLEX": 15,
    "COMBINER_F90_INTEGER": 16,
    "COMBINER_RESIZED": 17,
    "COMBINER_HINDEXED_BLOCK": 18,
    "COMBINER_VALUE_INDEX": 0,  # MPI-4.1, absent in Open MPI 4.1: mpi4py's fallback
}

LAYOUTS = {
    "ORDER_C": 0,
    "ORDER_F": 1,
    "ORDER_FORTRAN": 1,
    "DISTRIBUTE_BLOCK": 0,
    "DISTRIBUTE_CYCLIC": 1,
    "DISTRIBUTE_NONE": 2,
    "DISTRIBUTE_DFLT_DARG": -1,
    "TYPECLASS_INTEGER": 1,
    "TYPECLASS_REAL": 2,
    "TYPECLASS_COMPLEX": 3,
    "TYPECLASS_LOGICAL": 4,
}

# One-sided: assertion modes, lock types, flavors and memory models.
RMA = {
    "MODE_NOCHECK": 1,
    "MODE_NOPRECEDE": 2,
    "MODE_NOPUT": 4,
    "MODE_NOSTORE": 8,
    "MODE_NOSUCCEED": 16,
    "LOCK_EXCLUSIVE": 1,
    "LOCK_SHARED": 2,
    "WIN_FLAVOR_CREATE": 1,
    "WIN_FLAVOR_ALLOCATE": 2,
    "WIN_FLAVOR_DYNAMIC": 3,
    "WIN_FLAVOR_SHARED": 4,
    "WIN_SEPARATE": 1,
    "WIN_UNIFIED": 0,
}

# MPI-IO: access modes, seek whences, the current-view displacement.
IO_MODES = {
    "MODE_CREATE": 1,
    "MODE_RDONLY": 2,
    "MODE_WRONLY": 4,
    "MODE_RDWR": 8,
    "MODE_DELETE_ON_CLOSE": 16,
    "MODE_UNIQUE_OPEN": 32,
    "MODE_EXCL": 64,
    "MODE_APPEND": 128,
    "MODE_SEQUENTIAL": 256,
    "SEEK_SET": 600,
    "SEEK_CUR": 602,
    "SEEK_END": 604,
    "DISPLACEMENT_CURRENT": -54278278,
    "DISP_CUR": -54278278,
}

# Fortran status layout (MPI_F_STATUS_SIZE and the index of each field).
FORTRAN_STATUS = {"F_SOURCE": 0, "F_TAG": 1, "F_ERROR": 2, "F_STATUS_SIZE": 6}

CONSTANTS: dict[str, int] = {
    "UNDEFINED": UNDEFINED,
    "ANY_SOURCE": ANY_SOURCE,
    "ANY_TAG": ANY_TAG,
    "PROC_NULL": PROC_NULL,
    "ROOT": ROOT,
    "KEYVAL_INVALID": KEYVAL_INVALID,
    "BSEND_OVERHEAD": BSEND_OVERHEAD,
    "VERSION": VERSION,
    "SUBVERSION": SUBVERSION,
    "THREAD_SINGLE": THREAD_SINGLE,
    "THREAD_FUNNELED": THREAD_FUNNELED,
    "THREAD_SERIALIZED": THREAD_SERIALIZED,
    "THREAD_MULTIPLE": THREAD_MULTIPLE,
    **COMM_KEYVALS,
    **WIN_KEYVALS,
    **MAX_LENGTHS,
    **COMPARISONS,
    **TOPOLOGIES,
    **COMM_TYPES,
    **COMBINERS,
    **LAYOUTS,
    **RMA,
    **IO_MODES,
    **FORTRAN_STATUS,
}
"""Every integer constant of the module but the error classes, by mpi4py name."""
