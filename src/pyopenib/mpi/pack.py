"""Moving data between a user's memory layout and a contiguous stream (Open MPI's convertor).

Everything here works on flat uint8 views of memory and on a datatype's typemap (see
``typemap``): ``gather`` packs ``count`` instances into a stream, ``scatter`` unpacks a
stream into place, ``to_external32``/``from_external32`` convert a packed stream to and
from the big-endian external32 representation (Open MPI 4.1 gives each basic type its
native x86-64 size there). Memory is reached through the buffer protocol; ``BOTTOM``
messages (absolute addresses from ``Get_address``) through ``absolute_memory``.
"""

from __future__ import annotations

import ctypes
import warnings
import weakref

import numpy as np

__all__ = [
    "absolute_memory",
    "buffer_format",
    "from_external32",
    "gather",
    "raw_bytes",
    "scatter",
    "span",
    "to_external32",
]

_U8 = np.dtype(np.uint8)
_I64 = np.int64


# -- DLPack (dlpack.h) and CUDA array interface objects on host memory ------------------
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


class _DLManagedTensorVersioned(ctypes.Structure):
    pass


_DLManagedTensor._fields_ = [
    ("dl_tensor", _DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))),
]
_DLManagedTensorVersioned._fields_ = [
    ("version", ctypes.c_uint32 * 2),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensorVersioned))),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", _DLTensor),
]
_DL_READ_ONLY = 1
_capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get.restype = ctypes.c_void_p
_capsule_get.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_rename = ctypes.pythonapi.PyCapsule_SetName
_capsule_rename.argtypes = [ctypes.py_object, ctypes.c_char_p]
_DL_KINDS = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}


def _contiguous(shape, strides, itemsize: int) -> bool:
    """C or Fortran contiguity of a layout (strides in bytes; None: C-contiguous)."""
    if strides is None:
        return True
    dims = list(zip(shape, strides, strict=True))
    for order in (dims[::-1], dims):
        step, ok = itemsize, True
        for n, st in order:
            if n > 1 and st != step:
                ok = False
                break
            step *= n
        if ok:
            return True
    return False


def _host_view(addr: int, nbytes: int, dtype: np.dtype, readonly: bool) -> np.ndarray:
    if nbytes == 0:
        view = np.empty(0, np.uint8)
    else:
        view = np.ctypeslib.as_array((ctypes.c_ubyte * nbytes).from_address(addr))
    view = view.view(dtype)
    if readonly:
        view.flags.writeable = False
    return view


def _from_dlpack(obj) -> np.ndarray:
    """A DLPack tensor as a numpy array over its memory; the producer's deleter runs when
    the array is garbage. The simulated job has no device memory: a tensor that says it
    lives on a GPU is read at its address, as a CUDA-aware MPI with unified addressing
    would (the test suite's fake GPU tensors are host memory)."""
    cpu = obj.__dlpack_device__()[0] == 1
    stream = None if cpu else -1  # "synchronise with the legacy default stream"
    try:
        capsule = obj.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:  # a producer of DLPack before 1.0
        capsule = obj.__dlpack__(stream=stream)
    versioned = bool(_capsule_valid(capsule, b"dltensor_versioned"))
    name = b"dltensor_versioned" if versioned else b"dltensor"
    ptr = _capsule_get(capsule, name)
    struct = _DLManagedTensorVersioned if versioned else _DLManagedTensor
    managed = struct.from_address(ptr)
    readonly = versioned and bool(managed.flags & _DL_READ_ONLY)
    t = managed.dl_tensor
    kind = _DL_KINDS.get(t.dtype.code)
    bits, lanes = t.dtype.bits, t.dtype.lanes
    itemsize = (bits * lanes + 7) // 8
    if kind == "f" and lanes == 2:
        kind = "c"  # a complex number as two float lanes
    elif kind is None or lanes != 1 or kind == "b" and bits != 8:
        kind = None  # an element type without a format code: plain bytes, as mpi4py
    shape = [t.shape[i] for i in range(t.ndim)]
    strides = None if not t.strides else [t.strides[i] * itemsize for i in range(t.ndim)]
    if not _contiguous(shape, strides, itemsize):
        raise BufferError("dlpack: buffer is not contiguous")
    if kind is None:
        dtype = np.dtype(np.uint8)
    else:
        dtype = np.dtype("?" if kind == "b" else f"{kind}{itemsize}")
    nbytes = int(np.prod(shape)) * itemsize
    view = _host_view((t.data or 0) + t.byte_offset, nbytes, np.dtype(np.uint8), readonly)
    view = view.view(dtype)
    _capsule_rename(capsule, b"used_" + name)
    owner = view.base if view.base is not None else view
    weakref.finalize(owner, _release_dlpack, capsule, managed.deleter, ctypes.pointer(managed))
    return view


def _release_dlpack(capsule, deleter, ptr) -> None:
    """The consumer's side of DLPack: call the producer's deleter once the memory is no
    longer viewed. The capsule is held until then (its destructor may own the struct)."""
    if deleter:
        deleter(ptr)
    del capsule


def _from_cai(obj) -> np.ndarray:
    """A ``__cuda_array_interface__`` object's memory (host memory, as the test suite's
    fake GPU arrays use) as a numpy array, with mpi4py's checks and messages."""
    cai = obj.__cuda_array_interface__
    address, readonly = cai["data"]
    typestr, shape = cai["typestr"], tuple(cai["shape"])
    strides, descr, mask = cai.get("strides"), cai.get("descr"), cai.get("mask")
    what = "__cuda_array_interface__"
    if typestr[0] not in "<|":
        order = "non-native" if typestr[0] == ">" else "unrecognized"
        raise BufferError(f"{what}: typestr {typestr!r} with {order} byte order")
    if mask is not None:
        raise BufferError(f"{what}: cannot handle masked arrays")
    itemsize = int(typestr[2:])
    size = int(np.prod(shape))
    if size < 0:
        raise BufferError(f"{what}: buffer with negative size (shape:{shape}, size:{size})")
    if not _contiguous(shape, strides, itemsize):
        raise BufferError(
            f"{what}: buffer is not contiguous "
            f"(shape:{shape}, strides:{strides}, itemsize:{itemsize})"
        )
    if descr is not None and (len(descr) != 1 or tuple(descr[0]) != ("", typestr)):
        warnings.warn(f"{what}: ignoring 'descr' key", RuntimeWarning, stacklevel=4)
    dtype = np.dtype(typestr) if typestr[1] in "biufc" else np.dtype(f"V{itemsize}")
    view = _host_view(address or 0, int(np.prod(shape)) * itemsize, np.dtype(np.uint8), readonly)
    return view if dtype.kind == "V" else view.view(dtype)


def _foreign(buf) -> np.ndarray | None:
    """The numpy view of a DLPack or CUDA-array-interface object (None otherwise)."""
    if hasattr(buf, "__dlpack__") and hasattr(buf, "__dlpack_device__"):
        return _from_dlpack(buf)
    if hasattr(buf, "__cuda_array_interface__"):
        return _from_cai(buf)
    return None


def raw_bytes(buf, writable: bool = False) -> np.ndarray:
    """The whole buffer as a 1-D uint8 array, without copying it."""
    if type(buf) is np.ndarray:
        if buf.dtype is _U8 and buf.ndim == 1 and buf.flags.c_contiguous:
            data = buf  # the common case (osu-style byte buffers): nothing to reshape
        elif buf.flags.c_contiguous:
            data = buf.reshape(-1).view(_U8)
        elif buf.flags.f_contiguous:  # mpi4py takes any contiguous buffer, in memory order
            data = buf.T.reshape(-1).view(_U8)
        else:
            raise BufferError("ndarray is not contiguous")
    elif isinstance(buf, np.ndarray):
        return raw_bytes(np.asarray(buf), writable)
    else:
        try:
            mv = memoryview(buf)
        except TypeError:
            foreign = _foreign(buf)
            if foreign is None:
                raise TypeError(
                    f"a bytes-like object is required, not '{type(buf).__name__}'"
                ) from None
            if writable and not foreign.flags.writeable:
                raise BufferError("Object is not writable.") from None
            return foreign.reshape(-1).view(_U8)
        if not mv.c_contiguous:
            raise BufferError("memoryview is not C-contiguous")
        data = np.frombuffer(mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv, _U8)
    if writable and not data.flags.writeable:
        raise BufferError("Object is not writable.")
    return data


def buffer_format(buf) -> str:
    """The buffer's struct format string (mpi4py infers the datatype from it). A native
    numeric numpy array's type character is the same code, without a memoryview."""
    if isinstance(buf, np.ndarray):
        dt = buf.dtype
        if dt.kind in "biufc" and dt.isnative:
            return dt.char
    try:
        return memoryview(buf).format
    except TypeError:
        foreign = _foreign(buf)
        if foreign is None:
            raise
        return foreign.dtype.char


def absolute_memory(lo: int, hi: int, writable: bool) -> np.ndarray:
    """Bytes ``[lo, hi)`` of the process's address space (``MPI_BOTTOM`` + absolute
    displacements, as C MPI reads them): the caller took the addresses from live buffers."""
    n = max(hi - lo, 0)
    if n == 0:
        return np.empty(0, _U8)
    view = np.ctypeslib.as_array((ctypes.c_ubyte * n).from_address(lo))
    if not writable:
        view.flags.writeable = False
    return view


def span(h, count: int) -> tuple[int, int]:
    """[first, last) byte, relative to the buffer start, that ``count`` instances touch."""
    if count <= 0 or h.size == 0:
        return 0, 0
    reach = (count - 1) * h.extent
    return h.tlb + min(0, reach), h.tub + max(0, reach)


def _index(h, base: int, count: int) -> np.ndarray:
    idx = h.typemap().byte_index()
    if count == 1:
        return idx + base if base else idx
    shifts = base + np.arange(count, dtype=_I64) * h.extent
    return (shifts[:, None] + idx[None, :]).reshape(-1)


def _check(mem: np.ndarray, h, base: int, count: int) -> None:
    lo, hi = span(h, count)
    if base + lo < 0 or base + hi > len(mem):
        raise ValueError(
            f"message: {count} x datatype (lb:{h.lb}, ub:{h.ub}, true lb:{h.tlb}, "
            f"true ub:{h.tub}) at byte {base} does not fit a {len(mem)}-byte buffer"
        )


def gather(mem: np.ndarray, base: int, count: int, h) -> np.ndarray:
    """``count`` instances of the datatype starting at byte ``base`` of ``mem``, packed."""
    if count <= 0 or h.size == 0:
        return np.empty(0, _U8)
    _check(mem, h, base, count)
    if h.dense:
        start = base + h.tlb
        return mem[start : start + count * h.size]
    return mem[_index(h, base, count)]


def scatter(mem: np.ndarray, base: int, count: int, h, packed: np.ndarray) -> None:
    """Unpack the first ``len(packed)`` bytes of a stream of ``count`` instances into place
    (a short message fills the leading part of the typemap, as a receive does)."""
    n = len(packed)
    if n == 0 or count <= 0 or h.size == 0:
        return
    _check(mem, h, base, count)
    if h.dense:
        start = base + h.tlb
        mem[start : start + n] = packed
        return
    idx = _index(h, base, count)
    mem[idx[:n] if n < len(idx) else idx] = packed


def _perm(h, count: int) -> np.ndarray:
    perm = h.typemap().ext32_perm()
    if count == 1:
        return perm
    return ((np.arange(count, dtype=_I64) * h.size)[:, None] + perm[None, :]).reshape(-1)


def to_external32(packed: np.ndarray, count: int, h) -> np.ndarray:
    """A native packed stream of ``count`` instances in external32 byte order."""
    if len(packed) == 0:
        return packed
    return packed[_perm(h, count)]


def from_external32(ext: np.ndarray, count: int, h) -> np.ndarray:
    """The native packed stream of ``count`` instances read from external32 bytes."""
    if len(ext) == 0:
        return ext
    perm = _perm(h, count)
    native = np.empty(len(perm), _U8)
    native[perm] = ext
    return native
