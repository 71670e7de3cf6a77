"""Property: random collective calls (call, datatype, op, counts, root, in place,
blocking or not) give every rank what a pure-numpy reference computes; a fixed set of
the same calls gives what real Open MPI + mpi4py gives (skipped without mpirun).

A silent wrong result is the worst defect a collective can have: hypothesis draws a few
hundred calls per run (in batches, one simulated job per batch, to stay fast).
"""

import io
import json

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from pyopenib.mpi import run_job

from .loopback_btl import make_loopback_btls
from .test_mpi_differential import PROGRAMS, _real_output, _split_tagged

PROGRAM = PROGRAMS / "coll_cases.py"
INTS = ["b", "B", "h", "i", "l", "I"]
FLOATS = ["f", "d"]
INT_OPS = ["SUM", "PROD", "MAX", "MIN", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR"]
FLOAT_OPS = ["SUM", "PROD", "MAX", "MIN"]
REDUCTIONS = ["Allreduce", "Reduce", "Scan", "Exscan", "Reduce_scatter_block", "Reduce_scatter"]
MOVES = ["Bcast", "Allgather", "Gather", "Allgatherv", "Gatherv", "Scatter", "Scatterv"]
MOVES += ["Alltoall"]
IN_PLACE_OK = {"Allreduce", "Reduce", "Scan", "Exscan", "Reduce_scatter_block"}
IN_PLACE_OK |= {"Allgather", "Gather"}
NONBLOCKING_OK = set(REDUCTIONS + MOVES)


def blank(n: int, dtype: str) -> np.ndarray:
    """What a receive buffer holds before the call: -1 (wrapped for unsigned types)."""
    return np.full(n, -1, np.int64).astype(dtype)


def values(case: int, who: int, n: int, dtype: str) -> np.ndarray:
    i = np.arange(n, dtype=np.int64)
    return (((i * 7 + who * 3 + case) % 11) + 1).astype(dtype)


_NUMPY_OPS = {
    "SUM": np.add,
    "PROD": np.multiply,
    "MAX": np.maximum,
    "MIN": np.minimum,
    "LAND": lambda a, b: np.logical_and(a, b).astype(np.int64),
    "LOR": lambda a, b: np.logical_or(a, b).astype(np.int64),
    "LXOR": lambda a, b: np.logical_xor(a, b).astype(np.int64),
    "BAND": np.bitwise_and,
    "BOR": np.bitwise_or,
    "BXOR": np.bitwise_xor,
}


def _fold(arrays, opname: str, dtype: str) -> np.ndarray:
    """The reduction of ``arrays`` (rank order), computed in 64 bits and wrapped to the
    dtype as C arithmetic wraps."""
    wide = np.float64 if dtype in FLOATS else np.int64
    acc = arrays[0].astype(wide)
    for a in arrays[1:]:
        acc = _NUMPY_OPS[opname](acc, a.astype(wide))
    return acc.astype(dtype)


def reference(k: int, c: dict, size: int) -> list[list]:
    """What each rank's buffer holds after call ``k`` (``-1`` where MPI leaves it)."""
    name, dt, n, root, op = c["call"], c["dtype"], c["count"], c["root"], c["op"]
    counts = c["counts"]
    mine = [values(k, r, n, dt) for r in range(size)]
    untouched = blank(n, dt)
    out = []
    for r in range(size):
        if name == "Allreduce":
            res = _fold(mine, op, dt)
        elif name == "Reduce":
            if r == root:
                res = _fold(mine, op, dt)
            else:
                res = untouched
        elif name == "Scan":
            res = _fold(mine[: r + 1], op, dt)
        elif name == "Exscan":
            res = _fold(mine[:r], op, dt) if r else (mine[0] if c["inplace"] else untouched)
        elif name == "Bcast":
            res = mine[root]
        elif name == "Reduce_scatter_block":
            full = [values(k, q, n * size, dt) for q in range(size)]
            res = _fold(full, op, dt)[r * n : (r + 1) * n]
        elif name == "Reduce_scatter":
            full = [values(k, q, sum(counts), dt) for q in range(size)]
            lo = sum(counts[:r])
            res = _fold(full, op, dt)[lo : lo + counts[r]]
        elif name == "Allgather" or (name == "Gather" and r == root):
            res = np.concatenate(mine)
        elif name == "Gather":
            res = blank(n * size, dt)  # a non-root's receive buffer is not touched
        elif name == "Allgatherv" or (name == "Gatherv" and r == root):
            res = np.concatenate([values(k, q, counts[q], dt) for q in range(size)])
        elif name == "Gatherv":
            res = blank(sum(counts), dt)
        elif name == "Scatter":
            res = values(k, root, n * size, dt)[r * n : (r + 1) * n]
        elif name == "Scatterv":
            lo = sum(counts[:r])
            res = values(k, root, sum(counts), dt)[lo : lo + counts[r]]
        elif name == "Alltoall":
            res = np.concatenate(
                [values(k, q, n * size, dt)[r * n : (r + 1) * n] for q in range(size)]
            )
        else:
            raise ValueError(name)
        out.append(res.tolist())
    return out


@st.composite
def calls(draw, size: int):
    name = draw(st.sampled_from(REDUCTIONS + MOVES))
    dtype = draw(st.sampled_from(INTS + FLOATS))
    op = None
    if name in REDUCTIONS:
        op = draw(st.sampled_from(FLOAT_OPS if dtype in FLOATS else INT_OPS))
    count = draw(st.integers(0, 6) | st.sampled_from([700, 3000]))
    return {
        "call": name,
        "dtype": dtype,
        "op": op,
        "count": count,
        "root": draw(st.integers(0, size - 1)),
        "inplace": name in IN_PLACE_OK and draw(st.booleans()),
        "nonblocking": draw(st.booleans()),
        "counts": draw(st.lists(st.integers(0, 5), min_size=size, max_size=size)),
    }


@st.composite
def batches(draw):
    size = draw(st.integers(1, 6))
    return size, draw(st.lists(calls(size), min_size=20, max_size=20))


def _ours(tmp_path, size: int, cases) -> dict[int, list[str]]:
    spec = tmp_path / "cases.json"
    spec.write_text(json.dumps(cases))
    out, err = io.StringIO(), io.StringIO()
    result = run_job(
        str(PROGRAM), size, make_loopback_btls, [str(spec)], tag_output=True, stdout=out, stderr=err
    )
    assert result.exit_code == 0, err.getvalue()
    return _split_tagged(out.getvalue(), size)


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a batch is one job: no shrinking
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batches())
def test_random_collective_calls_give_what_numpy_computes(tmp_path, batch):
    size, cases = batch
    lines = _ours(tmp_path, size, cases)
    for k, case in enumerate(cases):
        expected = reference(k, case, size)
        for r in range(size):
            assert lines[r][k] == f"{k} {expected[r]}", (case, r)


FIXED = [
    {
        "call": "Allreduce",
        "dtype": "i",
        "op": "SUM",
        "count": 5,
        "root": 0,
        "inplace": False,
        "nonblocking": False,
        "counts": [1, 2, 3],
    },
    {
        "call": "Allreduce",
        "dtype": "d",
        "op": "PROD",
        "count": 3000,
        "root": 0,
        "inplace": True,
        "nonblocking": True,
        "counts": [1, 2, 3],
    },
    {
        "call": "Reduce",
        "dtype": "b",
        "op": "BXOR",
        "count": 7,
        "root": 2,
        "inplace": True,
        "nonblocking": False,
        "counts": [1, 2, 3],
    },
    {
        "call": "Scan",
        "dtype": "l",
        "op": "MAX",
        "count": 4,
        "root": 0,
        "inplace": False,
        "nonblocking": True,
        "counts": [1, 2, 3],
    },
    {
        "call": "Exscan",
        "dtype": "h",
        "op": "SUM",
        "count": 4,
        "root": 0,
        "inplace": False,
        "nonblocking": False,
        "counts": [1, 2, 3],
    },
    {
        "call": "Reduce_scatter",
        "dtype": "f",
        "op": "MIN",
        "count": 0,
        "root": 0,
        "inplace": False,
        "nonblocking": False,
        "counts": [2, 0, 3],
    },
    {
        "call": "Reduce_scatter_block",
        "dtype": "I",
        "op": "LOR",
        "count": 2,
        "root": 0,
        "inplace": True,
        "nonblocking": True,
        "counts": [1, 2, 3],
    },
    {
        "call": "Gatherv",
        "dtype": "d",
        "op": None,
        "count": 0,
        "root": 1,
        "inplace": False,
        "nonblocking": True,
        "counts": [3, 0, 2],
    },
    {
        "call": "Scatterv",
        "dtype": "i",
        "op": None,
        "count": 0,
        "root": 2,
        "inplace": False,
        "nonblocking": False,
        "counts": [1, 4, 0],
    },
    {
        "call": "Alltoall",
        "dtype": "B",
        "op": None,
        "count": 1200,
        "root": 0,
        "inplace": False,
        "nonblocking": False,
        "counts": [1, 2, 3],
    },
    {
        "call": "Allgather",
        "dtype": "l",
        "op": None,
        "count": 3,
        "root": 0,
        "inplace": True,
        "nonblocking": False,
        "counts": [1, 2, 3],
    },
    {
        "call": "Bcast",
        "dtype": "d",
        "op": None,
        "count": 9000,
        "root": 1,
        "inplace": False,
        "nonblocking": True,
        "counts": [1, 2, 3],
    },
]


def test_fixed_collective_calls_give_what_real_open_mpi_gives(tmp_path):
    # the program reads this file when run without arguments, as real mpirun runs it
    assert json.loads((PROGRAMS / "coll_cases_fixed.json").read_text()) == FIXED
    ours = _ours(tmp_path, 3, FIXED)
    assert ours == _real_output(PROGRAM, 3)
    for k, case in enumerate(FIXED):
        expected = reference(k, case, 3)
        assert [ours[r][k] for r in range(3)] == [f"{k} {expected[r]}" for r in range(3)]
