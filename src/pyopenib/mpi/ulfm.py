"""Fault-tolerance calls (MPI-5's ULFM) as mpi4py provides them over Open MPI 4.1.

Open MPI 4.1 is built without ULFM, so mpi4py 4.1 answers with its own fallbacks
(``lib-mpi/mpiulfm.h``), which these functions (``Comm``'s methods, declared in its body)
reproduce on top of the rest of the API: no process ever fails, so ``Get_failed`` is an empty group, ``Ack_failed`` acknowledges none,
``Is_revoked`` is false, ``Agree`` is an ``Allreduce`` of the flag with ``BAND``,
``Shrink``/``Ishrink`` are ``Dup``/``Idup``; ``Revoke`` cannot be emulated and raises
``NotImplementedError``, as with the real pair.
"""

from __future__ import annotations

import numpy as np

from .datatypes import DATATYPES
from .group import GROUP_EMPTY, Group
from .ops import OPS

__all__ = [
    "Ack_failed",
    "Agree",
    "Get_failed",
    "Iagree",
    "Is_revoked",
    "Ishrink",
    "Revoke",
    "Shrink",
]

_INT = DATATYPES["INT"]
_BAND = OPS["BAND"]


def Revoke(self) -> None:
    """Revoke a communicator (not available without ULFM, as in mpi4py on Open MPI 4.1)."""
    raise NotImplementedError("MPI_Comm_revoke is not available in Open MPI 4.1 (no ULFM)")


def Is_revoked(self) -> bool:
    """Indicate whether the communicator has been revoked (never, without ULFM)."""
    self.Is_inter()  # a null communicator is an error, as MPI_Comm_test_inter's
    return False


def Get_failed(self) -> Group:
    """Extract the group of failed processes (none fail: an empty group)."""
    self.Is_inter()
    return Group.Union(GROUP_EMPTY, GROUP_EMPTY)


def Ack_failed(self, num_to_ack: int | None = None) -> int:
    """Acknowledge failures on a communicator (none to acknowledge: 0)."""
    if num_to_ack is None:
        self.Get_size()
    self.Is_inter()
    return 0


def Agree(self, flag: int) -> int:
    """Blocking agreement: the bitwise AND of every process's ``flag``."""
    value = np.array([int(flag)], np.intc)
    result = np.empty(1, np.intc)
    self.Allreduce([value, _INT], [result, _INT], _BAND)
    return int(result[0])


def Iagree(self, flag):
    """Nonblocking agreement on a one-int buffer ``flag`` (AND of every process's)."""
    view = np.frombuffer(memoryview(flag).cast("B"), np.intc)
    if len(view) != 1:
        raise ValueError("flag: expecting int buffer of length one")
    value = view.copy()  # the flag as it is now: the result lands in ``flag``
    return self.Iallreduce([value, _INT], [flag, _INT], _BAND)


def Shrink(self):
    """Shrink a communicator to remove all failed processes (none: a duplicate)."""
    return self.Dup()


def Ishrink(self):
    """Nonblocking ``Shrink``: ``(communicator, request)`` as ``Idup`` gives them."""
    return self.Idup()
