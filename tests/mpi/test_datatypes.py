"""Derived datatypes move the bytes their typemap names, checked against an independent
pure-numpy walk of the same construction: Pack/Unpack on random datatypes, Send/Recv of
random datatypes through pyopenib at eager and rendezvous sizes (received layout and
packed order), and a fixed set of them under real mpirun for the same digests.

The reference walk takes each sub-datatype's extent from the library (extents and bounds
are pinned against real Open MPI by test_datatypes_differential.py); the displacements
and their order it computes on its own, from the constructor's arguments.
"""

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyopenib.mpi import run_job
from pyopenib.mpi.datatypes import DATATYPES, ORDER_FORTRAN, Datatype

from .loopback_btl import make_loopback_btls

PROGRAM = Path(__file__).parent / "programs" / "datatypes_roundtrip.py"
# leaves: contiguous basic types, and two pair types (DOUBLE_INT: padding after the int;
# SHORT_INT: a hole between the short and the int)
LEAVES = {
    "BYTE": [(0, 1)],
    "SHORT": [(0, 2)],
    "INT": [(0, 4)],
    "DOUBLE": [(0, 8)],
    "DOUBLE_INT": [(0, 8), (8, 4)],
    "SHORT_INT": [(0, 2), (4, 4)],
}
RENDEZVOUS_BYTES = 200_000  # well above every BTL's eager limit


def build(recipe) -> Datatype:
    kind, *args = recipe
    if kind == "named":
        return DATATYPES[args[0]]
    if kind == "struct":
        lengths, displs, children = args
        return Datatype.Create_struct(lengths, displs, [build(c) for c in children])
    *params, child = args
    old = build(child)
    if kind == "resized":
        return old.Create_resized(*params)
    return getattr(old, f"Create_{kind}")(*params)


def walk(recipe) -> np.ndarray:
    """Byte offsets of one instance's data, in typemap order (the MPI standard's
    definitions of each constructor, written out with numpy)."""
    kind, *args = recipe
    if kind == "named":
        return np.concatenate([np.arange(o, o + n) for o, n in LEAVES[args[0]]])

    def copies(child, shifts):
        inner = walk(child)
        return (np.asarray(shifts, np.int64)[:, None] + inner[None, :]).reshape(-1)

    if kind == "struct":
        lengths, displs, children = args
        parts = [
            copies(c, [d + j * build(c).extent for j in range(b)])
            for b, d, c in zip(lengths, displs, children, strict=True)
        ]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)
    *params, child = args
    ext = build(child).extent
    if kind == "contiguous":
        (count,) = params
        return copies(child, [i * ext for i in range(count)])
    if kind in ("vector", "hvector"):
        count, blocklength, stride = params
        step = stride * ext if kind == "vector" else stride
        return copies(child, [i * step + j * ext for i in range(count) for j in range(blocklength)])
    if kind in ("indexed", "hindexed"):
        lengths, displs = params
        unit = ext if kind == "indexed" else 1
        return copies(
            child,
            [d * unit + j * ext for b, d in zip(lengths, displs, strict=True) for j in range(b)],
        )
    if kind == "indexed_block":
        blocklength, displs = params
        return copies(child, [(d + j) * ext for d in displs for j in range(blocklength)])
    if kind == "subarray":
        sizes, subsizes, starts, order = params
        if order == ORDER_FORTRAN:
            sizes, subsizes, starts = sizes[::-1], subsizes[::-1], starts[::-1]
        index = np.zeros(1, np.int64)
        for size, sub, start in zip(sizes, subsizes, starts, strict=True):
            index = (index[:, None] * size + np.arange(start, start + sub)[None, :]).reshape(-1)
        return copies(child, index * ext)
    if kind == "resized":
        return walk(child)
    raise AssertionError(kind)


def instances(recipe, count) -> np.ndarray:
    one = walk(recipe)
    ext = build(recipe).extent
    return (np.arange(count)[:, None] * ext + one[None, :]).reshape(-1)


# -- random recipes: non-negative displacements, every block non-empty ---------------------
small = st.integers(1, 3)
leaf = st.sampled_from(sorted(LEAVES)).map(lambda n: ["named", n])


def _grow(children):
    displs = st.lists(st.integers(0, 6), min_size=1, max_size=3, unique=True)
    return st.one_of(
        st.tuples(small, children).map(lambda a: ["contiguous", a[0], a[1]]),
        st.tuples(small, small, st.integers(0, 4), children).map(
            lambda a: ["vector", a[0], a[1], a[1] + a[2], a[3]]
        ),
        st.tuples(small, small, st.integers(0, 24), children).map(
            lambda a: ["hvector", a[0], a[1], a[2], a[3]]
        ),
        st.tuples(displs, children).map(
            lambda a: ["indexed", [1 + d % 2 for d in a[0]], sorted(a[0]), a[1]]
        ),
        st.tuples(displs, children).map(
            lambda a: ["hindexed", [1] * len(a[0]), [5 * d for d in a[0]], a[1]]
        ),
        st.tuples(small, displs, children).map(lambda a: ["indexed_block", a[0], a[1], a[2]]),
        st.tuples(st.lists(children, min_size=1, max_size=3), displs).map(
            lambda a: [
                "struct",
                [1] * len(a[0]),
                [7 * d for d in a[1][: len(a[0])]]
                + [7 * (10 + k) for k in range(len(a[0]) - len(a[1]))],
                a[0],
            ]
        ),
        st.tuples(st.integers(0, 3), st.integers(0, 9), children).map(
            lambda a: ["resized", a[0], build(a[2]).extent + a[1], a[2]]
        ),
        st.tuples(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data(), children).map(
            lambda a: _subarray(a[0], a[2])
        ),
    )


def _subarray(sizes, child):
    subsizes = [max(1, s - 1) for s in sizes]
    starts = [s - sub for s, sub in zip(sizes, subsizes, strict=True)]
    return ["subarray", sizes, subsizes, starts, len(sizes) % 2, child]


recipes = st.recursive(leaf, _grow, max_leaves=4)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recipe=recipes, count=st.integers(1, 3))
def test_pack_and_unpack_follow_the_typemap_of_random_derived_datatypes(recipe, count):
    t = build(recipe).Commit()
    assert t.size == len(walk(recipe))
    if t.true_ub > t.extent:
        return  # data past the last extent: Pack's count (buffer length // extent) differs
    offsets = instances(recipe, count)
    src = (np.arange(count * t.extent) * 7 % 251 + 1).astype(np.uint8)
    packed = bytearray(t.Pack_size(count, None))
    assert t.Pack(src, packed, 0, None) == count * t.size
    assert bytes(packed) == src[offsets].tobytes()
    out = np.zeros(count * t.extent, np.uint8)
    t.Unpack(packed, 0, out, None)
    expected = np.zeros_like(out)
    expected[offsets] = src[offsets]
    assert out.tobytes() == expected.tobytes()


def _expected_digests(recipe, count):
    t = build(recipe)
    offsets = instances(recipe, count)
    nbytes = t.true_ub + (count - 1) * t.extent
    src = (np.arange(nbytes, dtype=np.int64) * 7 % 251 + 1).astype(np.uint8)
    dst = np.full(nbytes, 0xEE, np.uint8)
    dst[offsets] = src[offsets]
    digest = [hashlib.sha256(a.tobytes()).hexdigest()[:16] for a in (dst, src[offsets])]
    return [str(t.size), str(t.extent), str(count), *digest]


def _run(cases, runner) -> list[list[str]]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cases, f)
    try:
        return [line.split()[1:] for line in runner(f.name)]
    finally:
        os.unlink(f.name)


def _pyopenib(path: str) -> list[str]:
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(PROGRAM), 2, make_loopback_btls, [path], stdout=out, stderr=err)
    assert result.exit_code == 0, err.getvalue()
    return out.getvalue().splitlines()


def _mpirun(path: str) -> list[str]:
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun (Debian openmpi-bin) is not installed")
    pytest.importorskip("mpi4py")
    cmd = ["mpirun", "--oversubscribe", "-n", "2", sys.executable, str(PROGRAM), path]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    env = dict(os.environ, OMPI_MCA_btl="self,vader")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def _sized(recipe, big: bool) -> list:
    size = build(recipe).size
    return [recipe, -(-RENDEZVOUS_BYTES // size) if big else 2]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(recipes, st.booleans()), min_size=1, max_size=3))
def test_random_derived_datatypes_arrive_through_the_pml_as_their_typemap_says(cases):
    cases = [_sized(r, big) for r, big in cases]
    got = _run(cases, _pyopenib)
    assert got == [_expected_digests(r, c) for r, c in cases]


FIXED = [
    ["vector", 3, 2, 4, ["named", "INT"]],
    ["hvector", 2, 1, 12, ["named", "DOUBLE"]],
    ["indexed", [2, 1], [3, 0], ["named", "SHORT_INT"]],
    ["struct", [1, 2], [0, 9], [["named", "DOUBLE_INT"], ["named", "BYTE"]]],
    ["subarray", [4, 5], [2, 3], [1, 2], 1, ["named", "SHORT"]],
    ["resized", 0, 20, ["vector", 2, 1, 2, ["named", "INT"]]],
    ["contiguous", 2, ["struct", [1, 1], [0, 8], [["named", "DOUBLE"], ["named", "SHORT"]]]],
]


def test_fixed_derived_datatypes_arrive_as_under_real_mpirun():
    cases = [_sized(r, big) for r in FIXED for big in (False, True)]
    assert _run(cases, _pyopenib) == _run(cases, _mpirun)
