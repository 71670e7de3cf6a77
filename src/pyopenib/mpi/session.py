"""``MPI.Session`` and ``SESSION_NULL``: MPI-4 sessions, which Open MPI 4.1 does not have.

mpi4py 4.1 built against Open MPI 4.1 exports the class and its null handle, and
``Session.Init`` raises ``NotImplementedError`` (the MPI-4 call is absent); programs and
mpi4py's tests check for exactly that to skip the sessions model, so pyopenib does the same.
"""

from __future__ import annotations

from .handles import HandleObject

__all__ = ["NAMES", "SESSION_NULL", "Session"]


class Session(HandleObject):
    """Session context (MPI-4; absent in Open MPI 4.1)."""

    __slots__ = ()
    __module__ = "mpi4py.MPI"
    _constants: dict = {}
    _null_name = "SESSION_NULL"
    _null_fint = -1

    @classmethod
    def Init(cls, info=None, errhandler=None):
        """Raise ``NotImplementedError``: sessions are MPI-4, not in Open MPI 4.1."""
        raise NotImplementedError(
            "mpi4py.MPI.Session.Init is MPI-4; Open MPI 4.1 (MPI 3.1) does not provide it"
        )

    def __repr__(self) -> str:
        return "<mpi4py.MPI.Session SESSION_NULL>" if not self else "<mpi4py.MPI.Session>"


SESSION_NULL = Session._predefine("SESSION_NULL", None)

NAMES = {"Session": Session, "SESSION_NULL": SESSION_NULL}
"""The names ``mpi4py.MPI`` exports from this module."""
