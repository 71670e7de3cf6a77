"""The datatype engine's fast paths give what its general paths and mpi4py's own code give.

``datatypes`` sums the bounds of a few blocks in plain Python and of many with numpy, and
``util_dtlib`` walks the handles' decoding with a cached alignment test; both are there for
speed (mpi4py's ``test_util_dtlib.py`` makes hundreds of thousands of small types), so the
results must not move. Two references:

* the numpy path of the same type: padding a type with zero-length blocks changes no
  bound but takes it past the few-blocks limit;
* mpi4py 4.1's own ``mpi4py/util/dtlib.py`` (the real one installed next to the tests),
  its module code run unmodified over pyopenib's ``Datatype``: its ``to_numpy_dtype``,
  ``from_numpy_dtype`` and ``_is_aligned`` must agree with ours on random records.
"""

import importlib.util
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyopenib.mpi import datatypes, util_dtlib
from pyopenib.mpi.datatypes import DATATYPES, Datatype

PADDING = 40
"""Zero-length blocks added to take a type past ``datatypes._FEW_BLOCKS``."""
assert datatypes._FEW_BLOCKS < PADDING

BASES = ["INT", "DOUBLE", "SHORT", "CHAR", "SHORT_INT", "LONG_DOUBLE"]
CODES = list("?bhilqBHILQfdgFDG") + ["i1", "u2", "f4", "c8"]


def _bounds(dt: Datatype) -> tuple:
    return dt.size, dt.lb, dt.ub, dt.true_lb, dt.true_ub


def _layout(dt: Datatype) -> list[int]:
    """Byte offsets of the data of one instance, in packed order."""
    return dt._h.typemap().byte_index().tolist()


blocks = st.lists(st.tuples(st.integers(0, 3), st.integers(-24, 24)), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from(BASES), spec=blocks)
def test_few_blocks_have_the_bounds_and_layout_of_the_numpy_path(base, spec):
    old = DATATYPES[base]
    lengths = [n for n, _ in spec]
    displs = [d for _, d in spec]
    few = old.Create_hindexed(lengths, displs)
    many = old.Create_hindexed(lengths + [0] * PADDING, displs + [0] * PADDING)
    assert _bounds(few) == _bounds(many)
    assert _layout(few) == _layout(many)
    idx_few = old.Create_indexed(lengths, displs)
    idx_many = old.Create_indexed(lengths + [0] * PADDING, displs + [0] * PADDING)
    assert _bounds(idx_few) == _bounds(idx_many)
    assert _layout(idx_few) == _layout(idx_many)
    # a struct member and a contiguous type are one block each: the same bounds again
    if len(spec) == 1:
        one = Datatype.Create_struct(lengths, displs, [old])
        assert _bounds(one) == _bounds(many)
        assert _layout(one) == _layout(many)
        if displs == [0]:
            assert _bounds(old.Create_contiguous(lengths[0])) == _bounds(many)


@settings(max_examples=60, deadline=None)
@given(
    base=st.sampled_from(BASES),
    count=st.integers(0, 2 * PADDING),
    blocklength=st.integers(0, 3),
    stride=st.integers(-5, 5),
)
def test_vectors_either_side_of_the_few_blocks_limit_follow_one_rule(
    base, count, blocklength, stride
):
    """A vector's bounds and layout, few blocks or many, are its blocks' (as an hindexed
    type of the same blocks, taken through the numpy path)."""
    old = DATATYPES[base]
    vec = old.Create_vector(count, blocklength, stride)
    displs = [i * stride * old.extent for i in range(count)]
    ref = old.Create_hindexed([blocklength] * count + [0] * PADDING, displs + [0] * PADDING)
    assert _bounds(vec) == _bounds(ref)
    assert _layout(vec) == _layout(ref)


# -- mpi4py's own dtlib over our datatypes ----------------------------------------------------
def _real_dtlib():
    """mpi4py 4.1's ``util/dtlib.py`` as a module whose ``MPI`` is pyopenib's datatypes."""
    spec = importlib.util.find_spec("mpi4py")
    if spec is None or spec.origin is None:
        pytest.skip("mpi4py is not installed")
    path = Path(spec.origin).parent / "util" / "dtlib.py"
    source = path.read_text()
    if "from .. import MPI" not in source:
        pytest.skip(f"{path}: not mpi4py 4.1's layout")
    mpi = types.SimpleNamespace(**datatypes.NAMES)
    module = types.ModuleType("real_dtlib")
    module.__dict__["MPI"] = mpi
    code = compile(source.replace("from .. import MPI", "", 1), str(path), "exec")
    exec(code, module.__dict__)
    return module


REAL = None


def _real():
    global REAL
    if REAL is None:
        REAL = _real_dtlib()
    return REAL


def records(depth: int = 2):
    scalar = st.sampled_from(CODES).map(np.dtype)
    sub = st.tuples(scalar, st.sampled_from([(2,), (3,), (2, 3)])).map(np.dtype)
    leaf = st.one_of(scalar, sub)
    if depth == 0:
        return leaf
    field = st.one_of(leaf, records(depth - 1))
    return st.tuples(st.lists(field, min_size=1, max_size=4), st.booleans()).map(
        lambda spec: np.dtype([(f"f{i}", t) for i, t in enumerate(spec[0])], align=spec[1])
    )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dtype=records())
def test_dtlib_converts_records_as_mpi4pys_own_dtlib(dtype):
    real = _real()
    ours_mt = util_dtlib.from_numpy_dtype(dtype)
    real_mt = real.from_numpy_dtype(dtype)
    assert _bounds(ours_mt) == _bounds(real_mt)
    assert _layout(ours_mt) == _layout(real_mt)
    assert ours_mt.combiner == real_mt.combiner
    assert util_dtlib.to_numpy_dtype(ours_mt) == real.to_numpy_dtype(ours_mt) == dtype
    assert util_dtlib._aligned(ours_mt._h) == real._is_aligned(ours_mt)


derived_steps = st.lists(
    st.sampled_from(["dup", "resized", "hvector", "hindexed", "struct", "vector"]),
    min_size=1,
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(
    base=st.sampled_from(BASES + ["LONG", "FLOAT"]), steps=derived_steps, shift=st.integers(0, 9)
)
def test_the_alignment_test_answers_as_mpi4pys(base, steps, shift):
    """Our cached (displacement, alignment) pairs against mpi4py's recursion through
    ``decode()``, on types built by random steps, at every offset up to 16."""
    real = _real()
    dt = DATATYPES[base]
    for step in steps:
        if step == "dup":
            dt = dt.Dup()
        elif step == "resized":
            dt = dt.Create_resized(0, dt.extent + shift)
        elif step == "hvector":
            dt = dt.Create_hvector(2, 1, dt.extent + shift)
        elif step == "hindexed":
            dt = dt.Create_hindexed([1, 1], [0, dt.extent + shift])
        elif step == "struct":
            dt = Datatype.Create_struct([1, 1], [shift, 32 + shift], [dt, DATATYPES["INT"]])
        else:
            dt = dt.Create_vector(2, 1, 3)
    for offset in range(17):
        assert util_dtlib._aligned(dt._h, offset) == real._is_aligned(dt, offset), offset
    try:
        expected = real.to_numpy_dtype(dt)
    except ValueError as exc:
        with pytest.raises(ValueError, match=str(exc)):
            util_dtlib.to_numpy_dtype(dt)
    else:
        assert util_dtlib.to_numpy_dtype(dt) == expected
