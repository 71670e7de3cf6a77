"""mpi4py's object model on every handle class, against real Open MPI + mpi4py, plus the
in-process rules of ``mpi.handles.HandleObject`` that need no job."""

import copy
import ctypes
import io
import json

import pytest

from pyopenib.mpi import run_job
from pyopenib.mpi.group import GROUP_EMPTY, GROUP_NULL, Group
from pyopenib.mpi.info import INFO_ENV, INFO_NULL, Info
from pyopenib.mpi.message import MESSAGE_NO_PROC, MESSAGE_NULL, Message
from pyopenib.mpi.namespace import build_mpi_module
from pyopenib.mpi.win import WIN_NULL, Win

from .loopback_btl import make_loopback_btls
from .test_mpi_differential import PROGRAMS, _real_output

MODEL = PROGRAMS / "handle_model.py"


def _records(lines) -> dict[int, dict]:
    records = [json.loads(line) for line in lines if line.startswith("{")]
    return {r["rank"]: r for r in records}


def test_every_handle_class_behaves_as_real_mpi4py_over_open_mpi():
    real = _real_output(MODEL, 2)
    real = _records(real[0] + real[1])
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(MODEL), 2, make_loopback_btls, stdout=out, stderr=err)
    assert result.exit_code == 0, err.getvalue()
    ours = _records(out.getvalue().splitlines())
    assert sorted(ours) == sorted(real) == [0, 1]
    for rank in (0, 1):
        for key, value in real[rank].items():
            assert ours[rank].get(key) == value, key


class MyGroup(Group):
    """A program's subclass that does its own work in ``__new__``, as mpi4py allows."""

    made = 0

    def __new__(cls, group=None):
        cls.made += 1
        return super().__new__(cls, group)


def test_subclass_new_runs_for_results_and_copies_keep_the_subclass():
    before = MyGroup.made
    empty = MyGroup(GROUP_EMPTY)
    assert MyGroup.made == before + 1 and empty == GROUP_EMPTY and type(empty) is MyGroup
    dup = empty._wrap(GROUP_EMPTY._obj)  # how Dup-like results are made: cls.__new__(cls)
    assert MyGroup.made == before + 2 and type(dup) is MyGroup
    for copier in (copy.copy, copy.deepcopy):  # pickling needs a job's mpi4py.MPI: above
        again = copier(empty)
        assert type(again) is MyGroup and again == GROUP_EMPTY and again is not GROUP_EMPTY


@pytest.mark.parametrize(
    "null, constant",
    [(GROUP_NULL, GROUP_EMPTY), (INFO_NULL, INFO_ENV), (MESSAGE_NULL, MESSAGE_NO_PROC)],
)
def test_constants_survive_free_and_copies_of_them_do_not(null, constant):
    klass = type(constant)
    for obj in (null, constant):
        assert copy.copy(obj) is obj and copy.deepcopy(obj) is obj
        with pytest.raises(TypeError):
            hash(obj)
        with pytest.raises(TypeError):
            _ = obj < obj
    constant.free()
    assert constant
    other = klass(constant)
    assert other == constant and other is not constant
    other.free()
    assert not other and other == null


def test_handles_of_different_classes_never_compare_equal():
    nulls = [GROUP_NULL, INFO_NULL, MESSAGE_NULL, WIN_NULL]
    for a in nulls:
        for b in nulls:
            assert (a == b) is (a is b)
            assert (a != b) is (a is not b)
    with pytest.raises(TypeError):
        Win(INFO_NULL)
    with pytest.raises(TypeError):
        Info("abc")
    assert Message.fromhandle(MESSAGE_NO_PROC.handle) == MESSAGE_NO_PROC
    assert Group.fromhandle(0) == GROUP_NULL


def _capsule_function(capsule, signature: str, functype):
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return functype(get_pointer(capsule, signature.encode()))


def test_c_api_capsules_convert_objects_and_handles_both_ways():
    mpi = build_mpi_module()
    capi = mpi.__pyx_capi__
    for obj in (mpi.INT, mpi.SUM, mpi.GROUP_EMPTY, mpi.INFO_NULL, mpi.ERRORS_RETURN):
        name = type(obj).__name__
        new = _capsule_function(
            capi[f"PyMPI{name}_New"],
            f"PyObject *(MPI_{name})",
            ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_uint64),
        )
        get = _capsule_function(
            capi[f"PyMPI{name}_Get"],
            f"MPI_{name} *(PyObject *)",
            ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object),
        )
        address = get(obj)
        assert address == mpi._addressof(obj)
        handle = ctypes.c_uint64.from_address(address).value
        assert handle == mpi._handleof(obj) == obj.handle
        again = new(handle)
        assert type(again) is type(obj) and again == obj
    status = mpi.Status()
    status.source, status.tag = 3, 7
    address = mpi._addressof(status)
    assert ctypes.c_int.from_address(address).value == 3  # MPI_SOURCE, Open MPI's layout
    copy_new = _capsule_function(
        capi["PyMPIStatus_New"],
        "PyObject *(MPI_Status *)",
        ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p),
    )
    assert copy_new(address) == status and copy_new(address) is not status
