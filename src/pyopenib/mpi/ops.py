"""Predefined reduction operations: on typed numpy buffers (uppercase collectives) and on
Python objects (lowercase collectives, with mpi4py's own definitions of each op)."""

from __future__ import annotations

import numpy as np

__all__ = ["OPS", "Op"]


def _loc(better):
    """MAXLOC/MINLOC on (value, index) pairs: the better value, the lower index on ties."""

    def buffers(a, b):
        out = b.copy()
        take_a = better(a["v"], b["v"]) | ((a["v"] == b["v"]) & (a["i"] < b["i"]))
        out[take_a] = a[take_a]
        return out

    def objects(x, y):
        (u, i), (v, j) = x, y
        if better(u, v):
            return x
        if better(v, u):
            return y
        return (u, min(i, j))

    return buffers, objects


def _logical(fn):
    return lambda a, b: fn(a, b).astype(a.dtype)


class Op:
    """``MPI.Op``: ``apply(a, b)`` combines two typed arrays; ``apply_obj`` two objects."""

    __slots__ = ("name", "apply", "apply_obj")

    def __init__(self, name, apply, apply_obj):
        self.name = name
        self.apply = apply
        self.apply_obj = apply_obj

    def Is_commutative(self) -> bool:
        return True

    @property
    def is_commutative(self) -> bool:
        return True

    def __call__(self, x, y):
        return self.apply_obj(x, y)

    def __repr__(self) -> str:
        return f"<pyopenib.MPI.Op {self.name}>"


_maxloc = _loc(np.greater)
_minloc = _loc(np.less)

OPS: dict[str, Op] = {
    "SUM": Op("MPI_SUM", np.add, lambda x, y: x + y),
    "PROD": Op("MPI_PROD", np.multiply, lambda x, y: x * y),
    "MAX": Op("MPI_MAX", np.maximum, lambda x, y: y if y > x else x),
    "MIN": Op("MPI_MIN", np.minimum, lambda x, y: y if y < x else x),
    "LAND": Op("MPI_LAND", _logical(np.logical_and), lambda x, y: x and y),
    "LOR": Op("MPI_LOR", _logical(np.logical_or), lambda x, y: x or y),
    "LXOR": Op("MPI_LXOR", _logical(np.logical_xor), lambda x, y: bool(x) != bool(y)),
    "BAND": Op("MPI_BAND", np.bitwise_and, lambda x, y: x & y),
    "BOR": Op("MPI_BOR", np.bitwise_or, lambda x, y: x | y),
    "BXOR": Op("MPI_BXOR", np.bitwise_xor, lambda x, y: x ^ y),
    "MAXLOC": Op("MPI_MAXLOC", _maxloc[0], _maxloc[1]),
    "MINLOC": Op("MPI_MINLOC", _minloc[0], _minloc[1]),
}
