"""Typemaps: where the data bytes of one datatype instance lie, as flat numpy arrays.

The MPI standard describes a datatype by its typemap, the sequence of (basic type,
displacement) pairs of its elements in order. Open MPI's convertor walks that sequence
to pack data into a contiguous stream and to unpack it again; here the walk is done
once per datatype and kept as numpy arrays, so packing ``count`` instances is one
fancy-indexing gather and unpacking one scatter, never a Python loop per element.

A *basic kind* is what one typemap entry stores: its data bytes relative to the
entry's displacement (pair types such as ``MPI_SHORT_INT`` have a hole between the
value and the index) and the byte-swap units of its packed bytes (external32 is
big-endian per basic value: a complex swaps each half, a pair each member).
"""

from __future__ import annotations

import numpy as np

__all__ = ["KINDS", "Typemap", "copies_at"]

_I64 = np.int64


class _KindTable:
    """Every basic kind, and the concatenated arrays the vectorised walks index into."""

    __slots__ = ("_specs", "_index", "_arrays")

    def __init__(self):
        self._specs: list[tuple[tuple[tuple[int, int], ...], tuple[int, ...]]] = []
        self._index: dict = {}
        self._arrays = None

    def add(self, segments: tuple[tuple[int, int], ...], units: tuple[int, ...]) -> int:
        """The kind id of an element with these (offset, length) data segments and
        these swap units (their sum is the element's data size)."""
        key = (tuple(segments), tuple(units))
        kind = self._index.get(key)
        if kind is None:
            kind = len(self._specs)
            self._specs.append(key)
            self._index[key] = kind
            self._arrays = None
        return kind

    def nbytes(self, kind: int) -> int:
        return sum(n for _, n in self._specs[kind][0])

    def arrays(self):
        """(size per kind, start per kind, relative byte offsets, external32 permutation)."""
        if self._arrays is None:
            sizes, starts, rel, perm = [], [], [], []
            pos = 0
            for segments, units in self._specs:
                size = sum(n for _, n in segments)
                sizes.append(size)
                starts.append(pos)
                for off, n in segments:
                    rel.extend(range(off, off + n))
                p = 0
                for u in units:
                    perm.extend(range(p + u - 1, p - 1, -1))
                    p += u
                pos += size
            self._arrays = (
                np.array(sizes, _I64),
                np.array(starts, _I64),
                np.array(rel, _I64),
                np.array(perm, _I64),
            )
        return self._arrays


KINDS = _KindTable()
"""The basic kinds of every predefined datatype (registered by ``datatypes``)."""


class Typemap:
    """``offsets[i]``: byte displacement of entry i; ``kinds[i]``: its basic kind.

    Built once per datatype (lazily: most datatypes of a test suite are only measured,
    never used to move data) and shared by every message that uses the datatype.
    """

    __slots__ = ("offsets", "kinds", "_bytes", "_perm", "_ends")

    def __init__(self, offsets: np.ndarray, kinds: np.ndarray):
        self.offsets = offsets
        self.kinds = kinds
        self._bytes = None
        self._perm = None
        self._ends = None

    @classmethod
    def basic(cls, kind: int) -> Typemap:
        return cls(np.zeros(1, _I64), np.full(1, kind, np.int32))

    @classmethod
    def empty(cls) -> Typemap:
        return cls(np.zeros(0, _I64), np.zeros(0, np.int32))

    def __len__(self) -> int:
        return len(self.offsets)

    def _lengths(self) -> np.ndarray:
        return KINDS.arrays()[0][self.kinds]

    def _within(self, lengths: np.ndarray, starts: np.ndarray):
        """Per data byte: the kind-table position of that byte (entry start + j)."""
        total = int(lengths.sum())
        first = np.cumsum(lengths) - lengths
        j = np.arange(total, dtype=_I64) - np.repeat(first, lengths)
        return np.repeat(starts[self.kinds], lengths) + j, lengths

    def byte_index(self) -> np.ndarray:
        """Byte offset of every data byte, in typemap (= packed) order."""
        if self._bytes is None:
            sizes, starts, rel, _ = KINDS.arrays()
            lengths = sizes[self.kinds]
            pos, lengths = self._within(lengths, starts)
            self._bytes = np.repeat(self.offsets, lengths) + rel[pos]
        return self._bytes

    def ext32_perm(self) -> np.ndarray:
        """``packed[perm]`` is the external32 (big-endian) form of one packed instance."""
        if self._perm is None:
            sizes, starts, _, perm = KINDS.arrays()
            lengths = sizes[self.kinds]
            pos, lengths = self._within(lengths, starts)
            first = np.cumsum(lengths) - lengths
            self._perm = np.repeat(first, lengths) + perm[pos]
        return self._perm

    def element_ends(self) -> np.ndarray:
        """Packed end position of each entry (for ``Get_elements`` of partial data)."""
        if self._ends is None:
            self._ends = np.cumsum(self._lengths())
        return self._ends


def copies_at(child: Typemap, shifts: np.ndarray) -> Typemap:
    """The typemap of ``child`` repeated at each byte shift, in the order given."""
    shifts = np.asarray(shifts, _I64)
    n = len(child)
    if n == 0 or len(shifts) == 0:
        return Typemap.empty()
    offsets = (shifts[:, None] + child.offsets[None, :]).reshape(-1)
    return Typemap(offsets, np.tile(child.kinds, len(shifts)))


def concat(maps: list[Typemap]) -> Typemap:
    """Typemaps one after the other (a struct's blocks)."""
    maps = [m for m in maps if len(m)]
    if not maps:
        return Typemap.empty()
    if len(maps) == 1:
        return maps[0]
    return Typemap(
        np.concatenate([m.offsets for m in maps]), np.concatenate([m.kinds for m in maps])
    )
