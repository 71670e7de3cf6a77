"""``MPI.Comm`` / ``MPI.Intracomm``: point-to-point, communicator management, collectives.

A communicator object holds its ``CommState`` — except the predefined ``COMM_WORLD`` and
``COMM_SELF``, which hold a name and look the current rank's state up on every call: the
one ``mpi4py.MPI`` module serves every rank of the job (see ``context``).
"""

from __future__ import annotations

from .attributes import CommAttributes
from .coll_comms import CommConstructors, CommState, IntraConstructors
from .coll_methods import Collectives, IntraCollectives
from .context import JobAborted, current
from .dynproc import DynamicComm, DynamicIntracomm
from .errhandler import CommErrhandlers
from .errors import ERROR_CLASSES, Exception
from .p2p import PointToPoint
from .surface import MpiClass
from .ulfm import FaultTolerance

__all__ = ["Comm", "CommState", "Intracomm"]

_ERR = {name: code for name, (code, _) in ERROR_CLASSES.items()}


class Comm(
    PointToPoint,
    CommConstructors,
    Collectives,
    CommAttributes,
    CommErrhandlers,
    DynamicComm,
    FaultTolerance,
    metaclass=MpiClass,
):
    """``MPI.Comm``. ``Comm(comm)`` is another object for the same communicator; the
    point-to-point methods come from ``p2p``, the collectives and constructors from
    ``coll_methods`` and ``coll_comms``."""

    __slots__ = ("_s", "__weakref__")

    def __init__(self, state: Comm | CommState | str | None = None):
        if isinstance(state, Comm):
            state = state._s
        elif state is not None and not isinstance(state, CommState | str):
            raise TypeError(f"expected Comm, got {type(state).__name__}")
        self._s = state

    def _st(self) -> CommState:
        s = self._s
        if s.__class__ is CommState:
            return s
        if s is None:
            raise Exception(_ERR["ERR_COMM"])
        return getattr(current(), s)

    # -- identity -----------------------------------------------------------------------
    def Get_rank(self) -> int:
        return self._st().rank

    def Get_size(self) -> int:
        return len(self._st().group)

    @property
    def rank(self) -> int:
        return self._st().rank

    @property
    def size(self) -> int:
        return len(self._st().group)

    def Get_name(self) -> str:
        if self._s is None:
            return "MPI_COMM_NULL"
        return self._st().name

    def Set_name(self, name: str) -> None:
        self._st().name = name

    @property
    def name(self) -> str:
        return self.Get_name()

    @name.setter
    def name(self, value: str) -> None:
        self.Set_name(value)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Comm):
            return NotImplemented
        a = None if self._s is None else self._st()
        b = None if other._s is None else other._st()
        return a is b

    def __hash__(self) -> int:
        return id(self._s)

    def __bool__(self) -> bool:
        return self._s is not None

    def __repr__(self) -> str:
        return f"<pyopenib.MPI.{type(self).__name__} {self._s if isinstance(self._s, str) else ''}>"

    def Abort(self, errorcode: int = 0):
        st = self._st()
        raise JobAborted(current().rank, errorcode, st.name or "communicator")


class Intracomm(IntraCollectives, IntraConstructors, DynamicIntracomm, Comm):
    """``MPI.Intracomm``: a communicator within one group (prefix reductions,
    topologies and intercommunicators are built from it)."""

    __slots__ = ()

    def __init__(self, comm=None):
        super().__init__(comm)
        if isinstance(comm, Comm) and comm and self._st().inter:
            raise TypeError("expecting an intracommunicator")
