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
    """Communication context.

    ``Comm(comm)`` is another object for the same communicator; the point-to-point
    methods come from ``p2p``, the collectives and constructors from ``coll_methods`` and
    ``coll_comms``."""

    __slots__ = ("_s", "__weakref__")

    def __new__(cls, comm: Comm | None = None):
        """Make another object for ``comm``'s communicator (``None``: the null one).

        As in mpi4py the work is done here, not in ``__init__``, so a program's subclass
        can define ``__new__`` (dup the argument first, say) and call ``super().__new__``."""
        if comm is not None and not isinstance(comm, Comm):
            raise TypeError(f"expected Comm or None, got {type(comm).__name__}")
        new = object.__new__(cls)
        new._s = None if comm is None else comm._s
        if new._s is not None:
            cls._check_kind(new)
        return new

    @classmethod
    def _of(cls, state: CommState | str | None):
        """Make a ``cls`` object for ``state`` (a name for COMM_WORLD/COMM_SELF).

        It is made as mpi4py makes ``Dup``'s result: ``cls.__new__(cls)`` (a subclass's
        ``__new__`` runs), then the handle is set."""
        new = cls.__new__(cls)
        new._s = state
        return new

    @classmethod
    def _check_kind(cls, comm: Comm) -> None:
        """Raise ``TypeError`` unless ``comm`` (not null) is of this class's kind."""

    def _st(self) -> CommState:
        s = self._s
        if s.__class__ is CommState:
            return s
        if s is None:
            raise Exception(_ERR["ERR_COMM"])
        return getattr(current(), s)

    # -- identity -----------------------------------------------------------------------
    def Get_rank(self) -> int:
        """Return the rank of this process in the communicator."""
        return self._st().rank

    def Get_size(self) -> int:
        """Return the number of processes in the communicator."""
        return len(self._st().group)

    @property
    def rank(self) -> int:
        return self._st().rank

    @property
    def size(self) -> int:
        return len(self._st().group)

    def Get_name(self) -> str:
        """Return the print name of the communicator."""
        if self._s is None:
            return "MPI_COMM_NULL"
        return self._st().name

    def Set_name(self, name: str) -> None:
        """Set the print name of the communicator."""
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

    __hash__ = None  # mpi4py's handles are unhashable

    def __bool__(self) -> bool:
        return self._s is not None

    def __repr__(self) -> str:
        return f"<pyopenib.MPI.{type(self).__name__} {self._s if isinstance(self._s, str) else ''}>"

    def Abort(self, errorcode: int = 0):
        """Terminate the MPI job, with ``errorcode`` as its exit status."""
        st = self._st()
        raise JobAborted(current().rank, errorcode, st.name or "communicator")


class Intracomm(IntraCollectives, IntraConstructors, DynamicIntracomm, Comm):
    """Intracommunicator.

    A communicator within one group: prefix reductions, topologies and
    intercommunicators are built from it."""

    __slots__ = ()

    @classmethod
    def _check_kind(cls, comm: Comm) -> None:
        if comm._st().inter:
            raise TypeError("expecting an intracommunicator")
