"""Names mpi4py 4.1.2 has and pyopenib does not: ``NotImplementedError`` naming them.

A program that reaches for a name of mpi4py's API that pyopenib lacks (``MPI.Foo`` or
``MPI.Comm.Foo``, on the class or an instance) gets a ``NotImplementedError`` naming it
(also an ``AttributeError``, so ``hasattr`` and ``getattr(obj, name, default)`` keep
working); a name mpi4py does not have either is a plain ``AttributeError``, as with real
mpi4py, so a typo is not reported as a missing feature. The tables below are mpi4py
4.1.2's ``dir(mpi4py.MPI)`` and each class's ``dir()`` (dunder names left out), as the
real module on Open MPI 4.1.4 lists them; ``tests/mpi/test_namespace.py`` compares them
with the real module and with ours.

Classes take part by naming ``MpiClass`` as their metaclass: it answers missing names on
the class, and gives instances the same answer unless the class defines ``__getattr__``.
"""

from __future__ import annotations

import inspect
import types

__all__ = [
    "CLASS_NAMES",
    "MODULE_NAMES",
    "MpiClass",
    "NotInSubset",
    "embed_signature",
    "missing_module_name",
]


class NotInSubset(NotImplementedError, AttributeError):
    """Outside pyopenib's mpi4py subset (an AttributeError too, so ``hasattr`` works)."""


def _owner(cls: type, name: str) -> str | None:
    """The mpi4py class that defines ``name`` for ``cls``: the most basic one in its MRO
    whose table has it (``Comm`` for ``Intracomm.Ack_failed``, as mpi4py defines it)."""
    for klass in reversed(cls.__mro__):
        if klass.__dict__.get("_mpi4py_class") and name in CLASS_NAMES[klass.__name__]:
            return klass.__name__
    return None


def missing_class_name(cls: type, name: str) -> AttributeError:
    """The error for ``cls.name`` (or an instance's) when ``cls`` does not have it."""
    owner = _owner(cls, name)
    if owner is not None:
        return NotInSubset(f"mpi4py.MPI.{owner}.{name} is not implemented by pyopenib's MPI")
    return AttributeError(f"type object '{cls.__name__}' has no attribute '{name}'")


def missing_module_name(name: str) -> AttributeError:
    """The error for ``mpi4py.MPI.name`` when the module does not have it."""
    if name in MODULE_NAMES:
        return NotInSubset(f"mpi4py.MPI.{name} is not implemented by pyopenib's MPI")
    return AttributeError(f"module 'mpi4py.MPI' has no attribute '{name}'")


def _instance_getattr(self, name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    err = missing_class_name(type(self), name)
    if not isinstance(err, NotInSubset):
        err = AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
    raise err


class _Annotation(str):
    """An annotation written as a string (``from __future__ import annotations``), shown
    bare in a signature line as Cython shows mpi4py's (``int``, not ``'int'``)."""

    def __repr__(self) -> str:
        return str(self)


def _bare(annotation):
    return _Annotation(annotation) if isinstance(annotation, str) else annotation


def signature_line(name: str, attr) -> str | None:
    """The first line Cython's ``embedsignature`` gives mpi4py's docstrings, for ``attr``
    (a function, classmethod, staticmethod or property) named ``name``: ``Get_rank(self)
    -> int``, ``Create(cls, items=None) -> Info``, ``rank: int``. ``None`` for anything
    else, or a callable whose signature Python cannot tell."""
    if isinstance(attr, property):
        fget = attr.fget
        if fget is None:
            return name
        if _plain(fget):
            result = fget.__annotations__.get("return")
            return name if result is None else f"{name}: {result}"
        result = inspect.signature(fget).return_annotation
        if result in (None, inspect.Signature.empty):
            return name
        return f"{name}: {_bare(result)!r}"
    fn = attr.__func__ if isinstance(attr, classmethod | staticmethod) else attr
    if not isinstance(fn, types.FunctionType):
        return None
    line = _plain_signature_line(name, fn)
    return line if line is not None else _inspect_signature_line(name, fn)


def _inspect_signature_line(name: str, fn: types.FunctionType) -> str:
    """``signature_line`` of a function through ``inspect.signature``: the reference."""
    sig = inspect.signature(fn)
    sig = sig.replace(
        parameters=[p.replace(annotation=_bare(p.annotation)) for p in sig.parameters.values()],
        return_annotation=_bare(sig.return_annotation),
    )
    return f"{name}{sig}"


def _plain(fn) -> bool:
    """Whether ``inspect.signature(fn)`` is what ``fn``'s code object and string
    annotations say (no ``__wrapped__`` or ``__signature__`` to follow)."""
    if type(fn) is not types.FunctionType:
        return False
    if "__wrapped__" in fn.__dict__ or "__signature__" in fn.__dict__:
        return False
    return all(type(value) is str for value in fn.__annotations__.values())


def _plain_signature_line(name: str, fn: types.FunctionType) -> str | None:
    """``signature_line`` of a plain function read off its code object, as
    ``inspect.Signature`` would print it (``/`` and ``*`` separators, ``a: T = d``
    against ``a=d``): every public method of the MPI classes gets one at import, and
    ``inspect.signature`` costs ~60 us each (a tenth of ``pyopenib run``'s start-up).
    ``None`` when ``inspect`` would look further than the code object (``__wrapped__``,
    ``__signature__``) or an annotation is not a string (``formatannotation`` then
    decides): the caller asks ``inspect``. ``tests/mpi/test_signature_lines.py`` holds
    the two equal over every class and function of the namespace."""
    if not _plain(fn):
        return None
    annotations = fn.__annotations__
    code = fn.__code__
    names = code.co_varnames
    npos = code.co_argcount
    nposonly = code.co_posonlyargcount
    nkw = code.co_kwonlyargcount
    defaults = fn.__defaults__ or ()
    kwdefaults = fn.__kwdefaults__ or {}
    first_default = npos - len(defaults)
    parts = []

    def param(pname: str, has_default: bool, default) -> str:
        text = pname
        annotation = annotations.get(pname)
        if annotation is not None:
            text = f"{text}: {annotation}"
            if has_default:
                text = f"{text} = {default!r}"
        elif has_default:
            text = f"{text}={default!r}"
        return text

    for i in range(npos):
        has = i >= first_default
        parts.append(param(names[i], has, defaults[i - first_default] if has else None))
        if i == nposonly - 1:
            parts.append("/")
    at = npos + nkw
    if code.co_flags & inspect.CO_VARARGS:
        parts.append("*" + param(names[at], False, None))
        at += 1
    elif nkw:
        parts.append("*")
    for i in range(npos, npos + nkw):
        pname = names[i]
        parts.append(param(pname, pname in kwdefaults, kwdefaults.get(pname)))
    if code.co_flags & inspect.CO_VARKEYWORDS:
        parts.append("**" + param(names[at], False, None))
    line = f"{name}({', '.join(parts)})"
    result = annotations.get("return")
    return line if result is None else f"{line} -> {result}"


def embed_signature(name: str, attr) -> None:
    """Make ``attr``'s docstring read as mpi4py's do in ``help()``: the signature line,
    a blank line, then the docstring (its own indentation removed). Done once per
    function or property, however many names or jobs it is reached by."""
    target = attr.__func__ if isinstance(attr, classmethod | staticmethod) else attr
    doc = attr.__doc__
    if not doc or not isinstance(target, types.FunctionType | property) or target in _EMBEDDED:
        return
    line = signature_line(name, attr)
    if line is None:
        return
    target.__doc__ = f"{line}\n\n{inspect.cleandoc(doc)}"
    _EMBEDDED.add(target)  # an alias (``cancel = Cancel``) keeps the first name's line


def embed_wrapper_signature(name: str, wrapper, wrapped) -> None:
    """``embed_signature`` for a ``functools.wraps`` wrapper of ``wrapped``: its copied
    docstring already has the line when ``wrapped``'s had."""
    if wrapped in _EMBEDDED:
        _EMBEDDED.add(wrapper)
    else:
        embed_signature(name, wrapper)


_EMBEDDED: set = set()
"""Functions and properties given their line (they live as long as their classes)."""


class MpiClass(type):
    """Metaclass of the ``mpi4py.MPI`` classes (see the module docstring); the public
    methods and properties of pyopenib's own classes get mpi4py's signature lines."""

    def __new__(mcs, name, bases, ns, **kwds):
        if name in CLASS_NAMES and ns.get("__module__", "").startswith(("pyopenib.", "mpi4py")):
            ns["_mpi4py_class"] = True  # pyopenib's MPI.<name>, not a program's subclass
            for attr_name, attr in ns.items():
                embed_signature(attr_name, attr)
        inherited = any("__getattr__" in k.__dict__ for b in bases for k in b.__mro__)
        if "__getattr__" not in ns and not inherited:
            ns["__getattr__"] = _instance_getattr
        return super().__new__(mcs, name, bases, ns, **kwds)

    def __getattr__(cls, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise missing_class_name(cls, name)


MODULE_NAMES = frozenset(
    """
    AINT ANY_SOURCE ANY_TAG APPNUM Add_error_class Add_error_code Add_error_string Aint_add
    Aint_diff Alloc_mem Attach_buffer BAND BFLOAT16_T BOOL BOR BOTTOM BSEND_OVERHEAD
    BUFFER_AUTOMATIC BXOR BYTE BottomType BufferAutomaticType CART CHAR CHARACTER
    COMBINER_CONTIGUOUS COMBINER_DARRAY COMBINER_DUP COMBINER_F90_COMPLEX COMBINER_F90_INTEGER
    COMBINER_F90_REAL COMBINER_HINDEXED COMBINER_HINDEXED_BLOCK COMBINER_HVECTOR
    COMBINER_INDEXED COMBINER_INDEXED_BLOCK COMBINER_NAMED COMBINER_RESIZED COMBINER_STRUCT
    COMBINER_SUBARRAY COMBINER_VALUE_INDEX COMBINER_VECTOR COMM_NULL COMM_SELF
    COMM_TYPE_HW_GUIDED COMM_TYPE_HW_UNGUIDED COMM_TYPE_RESOURCE_GUIDED COMM_TYPE_SHARED
    COMM_WORLD COMPLEX COMPLEX16 COMPLEX32 COMPLEX4 COMPLEX8 CONGRUENT COUNT CXX_BOOL
    CXX_DOUBLE_COMPLEX CXX_FLOAT_COMPLEX CXX_LONG_DOUBLE_COMPLEX C_BOOL C_COMPLEX
    C_DOUBLE_COMPLEX C_FLOAT_COMPLEX C_LONG_DOUBLE_COMPLEX Cartcomm Close_port Comm Compute_dims
    DATATYPE_NULL DISPLACEMENT_CURRENT DISP_CUR DISTRIBUTE_BLOCK DISTRIBUTE_CYCLIC
    DISTRIBUTE_DFLT_DARG DISTRIBUTE_NONE DIST_GRAPH DOUBLE DOUBLE_COMPLEX DOUBLE_INT
    DOUBLE_PRECISION Datatype Detach_buffer Distgraphcomm ERRHANDLER_NULL ERRORS_ABORT
    ERRORS_ARE_FATAL ERRORS_RETURN ERR_ABI ERR_ACCESS ERR_AMODE ERR_ARG ERR_ASSERT ERR_BAD_FILE
    ERR_BASE ERR_BUFFER ERR_COMM ERR_CONVERSION ERR_COUNT ERR_DIMS ERR_DISP ERR_DUP_DATAREP
    ERR_ERRHANDLER ERR_FILE ERR_FILE_EXISTS ERR_FILE_IN_USE ERR_GROUP ERR_INFO ERR_INFO_KEY
    ERR_INFO_NOKEY ERR_INFO_VALUE ERR_INTERN ERR_IN_STATUS ERR_IO ERR_KEYVAL ERR_LASTCODE
    ERR_LOCKTYPE ERR_NAME ERR_NOT_SAME ERR_NO_MEM ERR_NO_SPACE ERR_NO_SUCH_FILE ERR_OP ERR_OTHER
    ERR_PENDING ERR_PORT ERR_PROC_ABORTED ERR_PROC_FAILED ERR_PROC_FAILED_PENDING ERR_QUOTA
    ERR_RANK ERR_READ_ONLY ERR_REQUEST ERR_REVOKED ERR_RMA_ATTACH ERR_RMA_CONFLICT
    ERR_RMA_FLAVOR ERR_RMA_RANGE ERR_RMA_SHARED ERR_RMA_SYNC ERR_ROOT ERR_SERVICE ERR_SESSION
    ERR_SIZE ERR_SPAWN ERR_TAG ERR_TOPOLOGY ERR_TRUNCATE ERR_TYPE ERR_UNKNOWN
    ERR_UNSUPPORTED_DATAREP ERR_UNSUPPORTED_OPERATION ERR_VALUE_TOO_LARGE ERR_WIN Errhandler
    Exception FILE_NULL FLOAT FLOAT16_T FLOAT32_T FLOAT64_T FLOAT_INT F_BOOL F_COMPLEX F_DOUBLE
    F_DOUBLE_COMPLEX F_ERROR F_FLOAT F_FLOAT_COMPLEX F_INT F_SOURCE F_STATUS_SIZE F_TAG File
    Finalize Flush_buffer Free_mem GRAPH GROUP_EMPTY GROUP_NULL Get_abi_fortran_info
    Get_abi_info Get_abi_version Get_address Get_error_class Get_error_string
    Get_hw_resource_info Get_library_version Get_processor_name Get_version Graphcomm Grequest
    Group IDENT INFO_ENV INFO_NULL INT INT16_T INT32_T INT64_T INT8_T INTEGER INTEGER1 INTEGER16
    INTEGER2 INTEGER4 INTEGER8 INT_INT IN_PLACE IO Iflush_buffer InPlaceType Info Init
    Init_thread Intercomm Intracomm Is_finalized Is_initialized Is_thread_main KEYVAL_INVALID
    LAND LASTUSEDCODE LOCK_EXCLUSIVE LOCK_SHARED LOGICAL LOGICAL1 LOGICAL16 LOGICAL2 LOGICAL4
    LOGICAL8 LONG LONG_DOUBLE LONG_DOUBLE_INT LONG_INT LONG_LONG LOR LXOR Lookup_name MAX MAXLOC
    MAX_DATAREP_STRING MAX_ERROR_STRING MAX_INFO_KEY MAX_INFO_VAL MAX_LIBRARY_VERSION_STRING
    MAX_OBJECT_NAME MAX_PORT_NAME MAX_PROCESSOR_NAME MAX_PSET_NAME_LEN MAX_STRINGTAG_LEN
    MESSAGE_NO_PROC MESSAGE_NULL MIN MINLOC MODE_APPEND MODE_CREATE MODE_DELETE_ON_CLOSE
    MODE_EXCL MODE_NOCHECK MODE_NOPRECEDE MODE_NOPUT MODE_NOSTORE MODE_NOSUCCEED MODE_RDONLY
    MODE_RDWR MODE_SEQUENTIAL MODE_UNIQUE_OPEN MODE_WRONLY Message NO_OP OFFSET OP_NULL ORDER_C
    ORDER_F ORDER_FORTRAN Op Open_port PACKED PROC_NULL PROD Pcontrol Pickle Prequest
    Publish_name Query_thread REAL REAL16 REAL2 REAL4 REAL8 REPLACE REQUEST_NULL ROOT
    Register_datarep Remove_error_class Remove_error_code Remove_error_string Request SEEK_CUR
    SEEK_END SEEK_SET SESSION_NULL SHORT SHORT_INT SIGNED_CHAR SIGNED_INT SIGNED_LONG
    SIGNED_LONG_LONG SIGNED_SHORT SIMILAR SINT16_T SINT32_T SINT64_T SINT8_T SUBVERSION SUCCESS
    SUM Session Status TAG_UB THREAD_FUNNELED THREAD_MULTIPLE THREAD_SERIALIZED THREAD_SINGLE
    TWOINT TYPECLASS_COMPLEX TYPECLASS_INTEGER TYPECLASS_LOGICAL TYPECLASS_REAL Topocomm
    UINT16_T UINT32_T UINT64_T UINT8_T UNDEFINED UNEQUAL UNIVERSE_SIZE UNSIGNED UNSIGNED_CHAR
    UNSIGNED_INT UNSIGNED_LONG UNSIGNED_LONG_LONG UNSIGNED_SHORT UNWEIGHTED Unpublish_name
    VERSION WCHAR WEIGHTS_EMPTY WIN_BASE WIN_CREATE_FLAVOR WIN_DISP_UNIT WIN_FLAVOR
    WIN_FLAVOR_ALLOCATE WIN_FLAVOR_CREATE WIN_FLAVOR_DYNAMIC WIN_FLAVOR_SHARED WIN_MODEL
    WIN_NULL WIN_SEPARATE WIN_SIZE WIN_UNIFIED WTIME_IS_GLOBAL Win Wtick Wtime _addressof
    _comm_lock _comm_lock_table _commctx_inter _commctx_intra _datatype_create _datatype_decode
    _handleof _keyval_registry _set_abort_status _sizeof _typealign _typecode _typedict
    _typedict_c _typedict_f buffer get_vendor memory pickle
    """.split()
)

CLASS_NAMES: dict[str, frozenset[str]] = {
    "BottomType": frozenset(
        """
        """.split()
    ),
    "BufferAutomaticType": frozenset(
        """
        """.split()
    ),
    "Cartcomm": frozenset(
        """
        Abort Accept Ack_failed Agree Allgather Allgather_init Allgatherv Allgatherv_init
        Allreduce Allreduce_init Alltoall Alltoall_init Alltoallv Alltoallv_init Alltoallw
        Alltoallw_init Attach_buffer Barrier Barrier_init Bcast Bcast_init Bsend Bsend_init
        Call_errhandler Cart_map Clone Compare Connect Create Create_cart Create_dist_graph
        Create_dist_graph_adjacent Create_errhandler Create_from_group Create_graph Create_group
        Create_intercomm Create_keyval Delete_attr Detach_buffer Disconnect Dup Dup_with_info
        Exscan Exscan_init Flush_buffer Free Free_keyval Gather Gather_init Gatherv Gatherv_init
        Get_attr Get_cart_rank Get_coords Get_dim Get_errhandler Get_failed Get_group Get_info
        Get_name Get_parent Get_rank Get_size Get_topo Get_topology Graph_map Iagree Iallgather
        Iallgatherv Iallreduce Ialltoall Ialltoallv Ialltoallw Ibarrier Ibcast Ibsend Idup
        Idup_with_info Iexscan Iflush_buffer Igather Igatherv Improbe Ineighbor_allgather
        Ineighbor_allgatherv Ineighbor_alltoall Ineighbor_alltoallv Ineighbor_alltoallw Iprobe
        Irecv Ireduce Ireduce_scatter Ireduce_scatter_block Irsend Is_inter Is_intra Is_revoked
        Iscan Iscatter Iscatterv Isend Isendrecv Isendrecv_replace Ishrink Issend Join Mprobe
        Neighbor_allgather Neighbor_allgather_init Neighbor_allgatherv Neighbor_allgatherv_init
        Neighbor_alltoall Neighbor_alltoall_init Neighbor_alltoallv Neighbor_alltoallv_init
        Neighbor_alltoallw Neighbor_alltoallw_init Precv_init Probe Psend_init Recv Recv_init
        Reduce Reduce_init Reduce_scatter Reduce_scatter_block Reduce_scatter_block_init
        Reduce_scatter_init Revoke Rsend Rsend_init Scan Scan_init Scatter Scatter_init Scatterv
        Scatterv_init Send Send_init Sendrecv Sendrecv_replace Set_attr Set_errhandler Set_info
        Set_name Shift Shrink Spawn Spawn_multiple Split Split_type Ssend Ssend_init Sub
        allgather allreduce alltoall barrier bcast bsend coords degrees dim dims exscan f2py
        free fromhandle fromint gather group handle ibsend improbe indegree inedges info
        inoutedges iprobe irecv is_inter is_intra is_topo isend issend mprobe name ndim
        neighbor_allgather neighbor_alltoall outdegree outedges periods probe py2f rank recv
        reduce scan scatter send sendrecv size ssend toint topo topology
        """.split()
    ),
    "Comm": frozenset(
        """
        Abort Ack_failed Agree Allgather Allgather_init Allgatherv Allgatherv_init Allreduce
        Allreduce_init Alltoall Alltoall_init Alltoallv Alltoallv_init Alltoallw Alltoallw_init
        Attach_buffer Barrier Barrier_init Bcast Bcast_init Bsend Bsend_init Call_errhandler
        Clone Compare Create Create_errhandler Create_keyval Delete_attr Detach_buffer
        Disconnect Dup Dup_with_info Flush_buffer Free Free_keyval Gather Gather_init Gatherv
        Gatherv_init Get_attr Get_errhandler Get_failed Get_group Get_info Get_name Get_parent
        Get_rank Get_size Get_topology Iagree Iallgather Iallgatherv Iallreduce Ialltoall
        Ialltoallv Ialltoallw Ibarrier Ibcast Ibsend Idup Idup_with_info Iflush_buffer Igather
        Igatherv Improbe Iprobe Irecv Ireduce Ireduce_scatter Ireduce_scatter_block Irsend
        Is_inter Is_intra Is_revoked Iscatter Iscatterv Isend Isendrecv Isendrecv_replace
        Ishrink Issend Join Mprobe Precv_init Probe Psend_init Recv Recv_init Reduce Reduce_init
        Reduce_scatter Reduce_scatter_block Reduce_scatter_block_init Reduce_scatter_init Revoke
        Rsend Rsend_init Scatter Scatter_init Scatterv Scatterv_init Send Send_init Sendrecv
        Sendrecv_replace Set_attr Set_errhandler Set_info Set_name Shrink Split Split_type Ssend
        Ssend_init allgather allreduce alltoall barrier bcast bsend f2py free fromhandle fromint
        gather group handle ibsend improbe info iprobe irecv is_inter is_intra is_topo isend
        issend mprobe name probe py2f rank recv reduce scatter send sendrecv size ssend toint
        topology
        """.split()
    ),
    "Datatype": frozenset(
        """
        Commit Create_contiguous Create_darray Create_dup Create_f90_complex Create_f90_integer
        Create_f90_real Create_hindexed Create_hindexed_block Create_hvector Create_indexed
        Create_indexed_block Create_keyval Create_resized Create_struct Create_subarray
        Create_vector Delete_attr Dup Free Free_keyval Get_attr Get_contents Get_envelope
        Get_extent Get_name Get_size Get_true_extent Get_value_index Match_size Pack
        Pack_external Pack_external_size Pack_size Resized Set_attr Set_name Unpack
        Unpack_external combiner contents decode envelope extent f2py free fromcode fromhandle
        fromint handle is_named is_predefined lb name py2f size tocode toint true_extent true_lb
        true_ub typechar typestr ub
        """.split()
    ),
    "Distgraphcomm": frozenset(
        """
        Abort Accept Ack_failed Agree Allgather Allgather_init Allgatherv Allgatherv_init
        Allreduce Allreduce_init Alltoall Alltoall_init Alltoallv Alltoallv_init Alltoallw
        Alltoallw_init Attach_buffer Barrier Barrier_init Bcast Bcast_init Bsend Bsend_init
        Call_errhandler Cart_map Clone Compare Connect Create Create_cart Create_dist_graph
        Create_dist_graph_adjacent Create_errhandler Create_from_group Create_graph Create_group
        Create_intercomm Create_keyval Delete_attr Detach_buffer Disconnect Dup Dup_with_info
        Exscan Exscan_init Flush_buffer Free Free_keyval Gather Gather_init Gatherv Gatherv_init
        Get_attr Get_dist_neighbors Get_dist_neighbors_count Get_errhandler Get_failed Get_group
        Get_info Get_name Get_parent Get_rank Get_size Get_topology Graph_map Iagree Iallgather
        Iallgatherv Iallreduce Ialltoall Ialltoallv Ialltoallw Ibarrier Ibcast Ibsend Idup
        Idup_with_info Iexscan Iflush_buffer Igather Igatherv Improbe Ineighbor_allgather
        Ineighbor_allgatherv Ineighbor_alltoall Ineighbor_alltoallv Ineighbor_alltoallw Iprobe
        Irecv Ireduce Ireduce_scatter Ireduce_scatter_block Irsend Is_inter Is_intra Is_revoked
        Iscan Iscatter Iscatterv Isend Isendrecv Isendrecv_replace Ishrink Issend Join Mprobe
        Neighbor_allgather Neighbor_allgather_init Neighbor_allgatherv Neighbor_allgatherv_init
        Neighbor_alltoall Neighbor_alltoall_init Neighbor_alltoallv Neighbor_alltoallv_init
        Neighbor_alltoallw Neighbor_alltoallw_init Precv_init Probe Psend_init Recv Recv_init
        Reduce Reduce_init Reduce_scatter Reduce_scatter_block Reduce_scatter_block_init
        Reduce_scatter_init Revoke Rsend Rsend_init Scan Scan_init Scatter Scatter_init Scatterv
        Scatterv_init Send Send_init Sendrecv Sendrecv_replace Set_attr Set_errhandler Set_info
        Set_name Shrink Spawn Spawn_multiple Split Split_type Ssend Ssend_init allgather
        allreduce alltoall barrier bcast bsend degrees exscan f2py free fromhandle fromint
        gather group handle ibsend improbe indegree inedges info inoutedges iprobe irecv
        is_inter is_intra is_topo isend issend mprobe name neighbor_allgather neighbor_alltoall
        outdegree outedges probe py2f rank recv reduce scan scatter send sendrecv size ssend
        toint topology
        """.split()
    ),
    "Errhandler": frozenset(
        """
        Free f2py free fromhandle fromint handle py2f toint
        """.split()
    ),
    "Exception": frozenset(
        """
        Get_error_class Get_error_code Get_error_string add_note args error_class error_code
        error_string with_traceback
        """.split()
    ),
    "File": frozenset(
        """
        Call_errhandler Close Create_errhandler Delete Get_amode Get_atomicity Get_byte_offset
        Get_errhandler Get_group Get_info Get_position Get_position_shared Get_size
        Get_type_extent Get_view Iread Iread_all Iread_at Iread_at_all Iread_shared Iwrite
        Iwrite_all Iwrite_at Iwrite_at_all Iwrite_shared Open Preallocate Read Read_all
        Read_all_begin Read_all_end Read_at Read_at_all Read_at_all_begin Read_at_all_end
        Read_ordered Read_ordered_begin Read_ordered_end Read_shared Seek Seek_shared
        Set_atomicity Set_errhandler Set_info Set_size Set_view Sync Write Write_all
        Write_all_begin Write_all_end Write_at Write_at_all Write_at_all_begin Write_at_all_end
        Write_ordered Write_ordered_begin Write_ordered_end Write_shared amode atomicity f2py
        free fromhandle fromint group group_rank group_size handle info py2f size toint
        """.split()
    ),
    "Graphcomm": frozenset(
        """
        Abort Accept Ack_failed Agree Allgather Allgather_init Allgatherv Allgatherv_init
        Allreduce Allreduce_init Alltoall Alltoall_init Alltoallv Alltoallv_init Alltoallw
        Alltoallw_init Attach_buffer Barrier Barrier_init Bcast Bcast_init Bsend Bsend_init
        Call_errhandler Cart_map Clone Compare Connect Create Create_cart Create_dist_graph
        Create_dist_graph_adjacent Create_errhandler Create_from_group Create_graph Create_group
        Create_intercomm Create_keyval Delete_attr Detach_buffer Disconnect Dup Dup_with_info
        Exscan Exscan_init Flush_buffer Free Free_keyval Gather Gather_init Gatherv Gatherv_init
        Get_attr Get_dims Get_errhandler Get_failed Get_group Get_info Get_name Get_neighbors
        Get_neighbors_count Get_parent Get_rank Get_size Get_topo Get_topology Graph_map Iagree
        Iallgather Iallgatherv Iallreduce Ialltoall Ialltoallv Ialltoallw Ibarrier Ibcast Ibsend
        Idup Idup_with_info Iexscan Iflush_buffer Igather Igatherv Improbe Ineighbor_allgather
        Ineighbor_allgatherv Ineighbor_alltoall Ineighbor_alltoallv Ineighbor_alltoallw Iprobe
        Irecv Ireduce Ireduce_scatter Ireduce_scatter_block Irsend Is_inter Is_intra Is_revoked
        Iscan Iscatter Iscatterv Isend Isendrecv Isendrecv_replace Ishrink Issend Join Mprobe
        Neighbor_allgather Neighbor_allgather_init Neighbor_allgatherv Neighbor_allgatherv_init
        Neighbor_alltoall Neighbor_alltoall_init Neighbor_alltoallv Neighbor_alltoallv_init
        Neighbor_alltoallw Neighbor_alltoallw_init Precv_init Probe Psend_init Recv Recv_init
        Reduce Reduce_init Reduce_scatter Reduce_scatter_block Reduce_scatter_block_init
        Reduce_scatter_init Revoke Rsend Rsend_init Scan Scan_init Scatter Scatter_init Scatterv
        Scatterv_init Send Send_init Sendrecv Sendrecv_replace Set_attr Set_errhandler Set_info
        Set_name Shrink Spawn Spawn_multiple Split Split_type Ssend Ssend_init allgather
        allreduce alltoall barrier bcast bsend degrees dims edges exscan f2py free fromhandle
        fromint gather group handle ibsend improbe indegree index inedges info inoutedges iprobe
        irecv is_inter is_intra is_topo isend issend mprobe name nedges neighbor_allgather
        neighbor_alltoall neighbors nneighbors nnodes outdegree outedges probe py2f rank recv
        reduce scan scatter send sendrecv size ssend toint topo topology
        """.split()
    ),
    "Grequest": frozenset(
        """
        Cancel Complete Free Get_status Get_status_all Get_status_any Get_status_some Start Test
        Testall Testany Testsome Wait Waitall Waitany Waitsome cancel complete f2py free
        fromhandle fromint get_status get_status_all get_status_any get_status_some handle py2f
        test testall testany testsome toint wait waitall waitany waitsome
        """.split()
    ),
    "Group": frozenset(
        """
        Compare Create_from_session_pset Difference Dup Excl Free Get_rank Get_size Incl
        Intersect Intersection Range_excl Range_incl Translate_ranks Union f2py free fromhandle
        fromint handle py2f rank size toint
        """.split()
    ),
    "InPlaceType": frozenset(
        """
        """.split()
    ),
    "Info": frozenset(
        """
        Create Create_env Delete Dup Free Get Get_nkeys Get_nthkey Set clear copy f2py free
        fromhandle fromint get handle items keys pop popitem py2f toint update values
        """.split()
    ),
    "Intercomm": frozenset(
        """
        Abort Ack_failed Agree Allgather Allgather_init Allgatherv Allgatherv_init Allreduce
        Allreduce_init Alltoall Alltoall_init Alltoallv Alltoallv_init Alltoallw Alltoallw_init
        Attach_buffer Barrier Barrier_init Bcast Bcast_init Bsend Bsend_init Call_errhandler
        Clone Compare Create Create_errhandler Create_from_groups Create_keyval Delete_attr
        Detach_buffer Disconnect Dup Dup_with_info Flush_buffer Free Free_keyval Gather
        Gather_init Gatherv Gatherv_init Get_attr Get_errhandler Get_failed Get_group Get_info
        Get_name Get_parent Get_rank Get_remote_group Get_remote_size Get_size Get_topology
        Iagree Iallgather Iallgatherv Iallreduce Ialltoall Ialltoallv Ialltoallw Ibarrier Ibcast
        Ibsend Idup Idup_with_info Iflush_buffer Igather Igatherv Improbe Iprobe Irecv Ireduce
        Ireduce_scatter Ireduce_scatter_block Irsend Is_inter Is_intra Is_revoked Iscatter
        Iscatterv Isend Isendrecv Isendrecv_replace Ishrink Issend Join Merge Mprobe Precv_init
        Probe Psend_init Recv Recv_init Reduce Reduce_init Reduce_scatter Reduce_scatter_block
        Reduce_scatter_block_init Reduce_scatter_init Revoke Rsend Rsend_init Scatter
        Scatter_init Scatterv Scatterv_init Send Send_init Sendrecv Sendrecv_replace Set_attr
        Set_errhandler Set_info Set_name Shrink Split Split_type Ssend Ssend_init allgather
        allreduce alltoall barrier bcast bsend f2py free fromhandle fromint gather group handle
        ibsend improbe info iprobe irecv is_inter is_intra is_topo isend issend mprobe name
        probe py2f rank recv reduce remote_group remote_size scatter send sendrecv size ssend
        toint topology
        """.split()
    ),
    "Intracomm": frozenset(
        """
        Abort Accept Ack_failed Agree Allgather Allgather_init Allgatherv Allgatherv_init
        Allreduce Allreduce_init Alltoall Alltoall_init Alltoallv Alltoallv_init Alltoallw
        Alltoallw_init Attach_buffer Barrier Barrier_init Bcast Bcast_init Bsend Bsend_init
        Call_errhandler Cart_map Clone Compare Connect Create Create_cart Create_dist_graph
        Create_dist_graph_adjacent Create_errhandler Create_from_group Create_graph Create_group
        Create_intercomm Create_keyval Delete_attr Detach_buffer Disconnect Dup Dup_with_info
        Exscan Exscan_init Flush_buffer Free Free_keyval Gather Gather_init Gatherv Gatherv_init
        Get_attr Get_errhandler Get_failed Get_group Get_info Get_name Get_parent Get_rank
        Get_size Get_topology Graph_map Iagree Iallgather Iallgatherv Iallreduce Ialltoall
        Ialltoallv Ialltoallw Ibarrier Ibcast Ibsend Idup Idup_with_info Iexscan Iflush_buffer
        Igather Igatherv Improbe Iprobe Irecv Ireduce Ireduce_scatter Ireduce_scatter_block
        Irsend Is_inter Is_intra Is_revoked Iscan Iscatter Iscatterv Isend Isendrecv
        Isendrecv_replace Ishrink Issend Join Mprobe Precv_init Probe Psend_init Recv Recv_init
        Reduce Reduce_init Reduce_scatter Reduce_scatter_block Reduce_scatter_block_init
        Reduce_scatter_init Revoke Rsend Rsend_init Scan Scan_init Scatter Scatter_init Scatterv
        Scatterv_init Send Send_init Sendrecv Sendrecv_replace Set_attr Set_errhandler Set_info
        Set_name Shrink Spawn Spawn_multiple Split Split_type Ssend Ssend_init allgather
        allreduce alltoall barrier bcast bsend exscan f2py free fromhandle fromint gather group
        handle ibsend improbe info iprobe irecv is_inter is_intra is_topo isend issend mprobe
        name probe py2f rank recv reduce scan scatter send sendrecv size ssend toint topology
        """.split()
    ),
    "Message": frozenset(
        """
        Iprobe Irecv Probe Recv f2py free fromhandle fromint handle iprobe irecv probe py2f recv
        toint
        """.split()
    ),
    "Op": frozenset(
        """
        Create Free Is_commutative Reduce_local f2py free fromhandle fromint handle
        is_commutative is_predefined py2f toint
        """.split()
    ),
    "Pickle": frozenset(
        """
        PROTOCOL THRESHOLD dumps dumps_oob loads loads_oob
        """.split()
    ),
    "Prequest": frozenset(
        """
        Cancel Free Get_status Get_status_all Get_status_any Get_status_some Parrived Pready
        Pready_list Pready_range Start Startall Test Testall Testany Testsome Wait Waitall
        Waitany Waitsome cancel f2py free fromhandle fromint get_status get_status_all
        get_status_any get_status_some handle py2f test testall testany testsome toint wait
        waitall waitany waitsome
        """.split()
    ),
    "Request": frozenset(
        """
        Cancel Free Get_status Get_status_all Get_status_any Get_status_some Test Testall
        Testany Testsome Wait Waitall Waitany Waitsome cancel f2py free fromhandle fromint
        get_status get_status_all get_status_any get_status_some handle py2f test testall
        testany testsome toint wait waitall waitany waitsome
        """.split()
    ),
    "Session": frozenset(
        """
        Attach_buffer Call_errhandler Create_errhandler Create_group Detach_buffer Finalize
        Flush_buffer Get_errhandler Get_info Get_nth_pset Get_num_psets Get_pset_info
        Iflush_buffer Init Set_errhandler f2py free fromhandle fromint handle py2f toint
        """.split()
    ),
    "Status": frozenset(
        """
        Get_count Get_elements Get_error Get_source Get_tag Is_cancelled Set_cancelled
        Set_elements Set_error Set_source Set_tag cancelled count error f2py py2f source tag
        tomemory
        """.split()
    ),
    "Topocomm": frozenset(
        """
        Abort Accept Ack_failed Agree Allgather Allgather_init Allgatherv Allgatherv_init
        Allreduce Allreduce_init Alltoall Alltoall_init Alltoallv Alltoallv_init Alltoallw
        Alltoallw_init Attach_buffer Barrier Barrier_init Bcast Bcast_init Bsend Bsend_init
        Call_errhandler Cart_map Clone Compare Connect Create Create_cart Create_dist_graph
        Create_dist_graph_adjacent Create_errhandler Create_from_group Create_graph Create_group
        Create_intercomm Create_keyval Delete_attr Detach_buffer Disconnect Dup Dup_with_info
        Exscan Exscan_init Flush_buffer Free Free_keyval Gather Gather_init Gatherv Gatherv_init
        Get_attr Get_errhandler Get_failed Get_group Get_info Get_name Get_parent Get_rank
        Get_size Get_topology Graph_map Iagree Iallgather Iallgatherv Iallreduce Ialltoall
        Ialltoallv Ialltoallw Ibarrier Ibcast Ibsend Idup Idup_with_info Iexscan Iflush_buffer
        Igather Igatherv Improbe Ineighbor_allgather Ineighbor_allgatherv Ineighbor_alltoall
        Ineighbor_alltoallv Ineighbor_alltoallw Iprobe Irecv Ireduce Ireduce_scatter
        Ireduce_scatter_block Irsend Is_inter Is_intra Is_revoked Iscan Iscatter Iscatterv Isend
        Isendrecv Isendrecv_replace Ishrink Issend Join Mprobe Neighbor_allgather
        Neighbor_allgather_init Neighbor_allgatherv Neighbor_allgatherv_init Neighbor_alltoall
        Neighbor_alltoall_init Neighbor_alltoallv Neighbor_alltoallv_init Neighbor_alltoallw
        Neighbor_alltoallw_init Precv_init Probe Psend_init Recv Recv_init Reduce Reduce_init
        Reduce_scatter Reduce_scatter_block Reduce_scatter_block_init Reduce_scatter_init Revoke
        Rsend Rsend_init Scan Scan_init Scatter Scatter_init Scatterv Scatterv_init Send
        Send_init Sendrecv Sendrecv_replace Set_attr Set_errhandler Set_info Set_name Shrink
        Spawn Spawn_multiple Split Split_type Ssend Ssend_init allgather allreduce alltoall
        barrier bcast bsend degrees exscan f2py free fromhandle fromint gather group handle
        ibsend improbe indegree inedges info inoutedges iprobe irecv is_inter is_intra is_topo
        isend issend mprobe name neighbor_allgather neighbor_alltoall outdegree outedges probe
        py2f rank recv reduce scan scatter send sendrecv size ssend toint topology
        """.split()
    ),
    "Win": frozenset(
        """
        Accumulate Allocate Allocate_shared Attach Call_errhandler Compare_and_swap Complete
        Create Create_dynamic Create_errhandler Create_keyval Delete_attr Detach Fence
        Fetch_and_op Flush Flush_all Flush_local Flush_local_all Free Free_keyval Get
        Get_accumulate Get_attr Get_errhandler Get_group Get_info Get_name Lock Lock_all Post
        Put Raccumulate Rget Rget_accumulate Rput Set_attr Set_errhandler Set_info Set_name
        Shared_query Start Sync Test Unlock Unlock_all Wait attrs f2py flavor free fromhandle
        fromint group group_rank group_size handle info model name py2f toint tomemory
        """.split()
    ),
    "buffer": frozenset(
        """
        address allocate cast format fromaddress frombuffer itemsize nbytes obj readonly release
        tobytes toreadonly
        """.split()
    ),
    "memory": frozenset(
        """
        address allocate cast format fromaddress frombuffer itemsize nbytes obj readonly release
        tobytes toreadonly
        """.split()
    ),
}
