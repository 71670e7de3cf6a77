"""MPI error classes and ``MPI.Exception``, with Open MPI 4.1's numbers and strings.

mpi4py installs ``MPI_ERRORS_RETURN`` and turns every error code into ``MPI.Exception``;
programs that print ``Get_error_class()`` or ``str(exc)`` must see what Open MPI prints.
"""

from __future__ import annotations

import builtins

__all__ = ["ERROR_CLASSES", "Exception", "error_string"]

ERROR_CLASSES: dict[str, tuple[int, str]] = {
    "SUCCESS": (0, "MPI_SUCCESS: no errors"),
    "ERR_BUFFER": (1, "MPI_ERR_BUFFER: invalid buffer pointer"),
    "ERR_COUNT": (2, "MPI_ERR_COUNT: invalid count argument"),
    "ERR_TYPE": (3, "MPI_ERR_TYPE: invalid datatype"),
    "ERR_TAG": (4, "MPI_ERR_TAG: invalid tag"),
    "ERR_COMM": (5, "MPI_ERR_COMM: invalid communicator"),
    "ERR_RANK": (6, "MPI_ERR_RANK: invalid rank"),
    "ERR_REQUEST": (7, "MPI_ERR_REQUEST: invalid request"),
    "ERR_ROOT": (8, "MPI_ERR_ROOT: invalid root"),
    "ERR_GROUP": (9, "MPI_ERR_GROUP: invalid group"),
    "ERR_OP": (10, "MPI_ERR_OP: invalid reduce operation"),
    "ERR_TOPOLOGY": (11, "MPI_ERR_TOPOLOGY: invalid communicator topology"),
    "ERR_DIMS": (12, "MPI_ERR_DIMS: invalid topology dimension"),
    "ERR_ARG": (13, "MPI_ERR_ARG: invalid argument of some other kind"),
    "ERR_UNKNOWN": (14, "MPI_ERR_UNKNOWN: unknown error"),
    "ERR_TRUNCATE": (15, "MPI_ERR_TRUNCATE: message truncated"),
    "ERR_OTHER": (16, "MPI_ERR_OTHER: known error not in list"),
    "ERR_INTERN": (17, "MPI_ERR_INTERN: internal error"),
    "ERR_IN_STATUS": (18, "MPI_ERR_IN_STATUS: error code in status"),
    "ERR_PENDING": (19, "MPI_ERR_PENDING: pending request"),
}
ERR_LASTCODE = 92

_STRINGS = {code: text for code, text in ERROR_CLASSES.values()}


def error_string(code: int) -> str:
    return _STRINGS.get(code, f"MPI_ERR_UNKNOWN: unknown error (code {code})")


class Exception(builtins.Exception):  # noqa: A001 - mpi4py's name
    """``MPI.Exception``: carries an MPI error class; ``str()`` is Open MPI's error string."""

    def __init__(self, ierr: int = 0):
        super().__init__(ierr)
        self.error_class = self.error_code = ierr

    def Get_error_class(self) -> int:
        return self.error_class

    def Get_error_code(self) -> int:
        return self.error_code

    def Get_error_string(self) -> str:
        return error_string(self.error_code)

    def __str__(self) -> str:
        return error_string(self.error_code)

    def __repr__(self) -> str:
        return f"MPI.Exception({self.error_code})"

    def __eq__(self, other) -> bool:
        return self.error_class == getattr(other, "error_class", other)

    def __hash__(self) -> int:
        return hash(self.error_class)

    def __int__(self) -> int:
        return self.error_class
