"""MPI error classes, error codes and ``MPI.Exception``, with Open MPI 4.1's numbers and strings.

mpi4py installs ``MPI_ERRORS_RETURN`` and turns every error code into ``MPI.Exception``;
programs that print ``Get_error_class()`` or ``str(exc)`` must see what Open MPI prints.
Open MPI 4.1 numbers its classes 0..73 (54..67 and 72..73 are the MPI_T classes) and sets
``MPI_ERR_LASTCODE`` to 92; mpi4py 4.1 names a few MPI-4 classes Open MPI 4.1 lacks
(``ERR_PROC_ABORTED``..``ERR_VALUE_TOO_LARGE``, ``ERR_ABI``, ``ERR_ERRHANDLER``): their
numbers are codes Open MPI reports as ``MPI_ERR_UNKNOWN``, as the real pair does.

Codes a program adds (``Add_error_class``/``Add_error_code``/``Add_error_string``) belong to
the rank that added them, as they belong to a process: ``ErrorCodes`` is one rank's table.
"""

from __future__ import annotations

import weakref

from . import context
from .surface import MpiClass

__all__ = [
    "ERROR_CLASSES",
    "ERROR_FUNCTIONS",
    "ERR_LASTCODE",
    "ErrorCodes",
    "Exception",
    "error_class",
    "error_string",
]

_UNKNOWN_TEXT = "Unknown error (this should not happen!)"

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
    # one-sided, MPI-IO, info, keyval and dynamic-process classes
    "ERR_ACCESS": (20, "MPI_ERR_ACCESS: invalid access mode"),
    "ERR_AMODE": (21, "MPI_ERR_AMODE: invalid amode argument"),
    "ERR_ASSERT": (22, "MPI_ERR_ASSERT: invalid assert argument"),
    "ERR_BAD_FILE": (23, "MPI_ERR_BAD_FILE: bad file"),
    "ERR_BASE": (24, "MPI_ERR_BASE: invalid base"),
    "ERR_CONVERSION": (25, "MPI_ERR_CONVERSION: error in data conversion"),
    "ERR_DISP": (26, "MPI_ERR_DISP: invalid displacement"),
    "ERR_DUP_DATAREP": (27, "MPI_ERR_DUP_DATAREP: error duplicating data representation"),
    "ERR_FILE_EXISTS": (28, "MPI_ERR_FILE_EXISTS: file exists alreay"),  # sic, Open MPI's text
    "ERR_FILE_IN_USE": (29, "MPI_ERR_FILE_IN_USE: file already in use"),
    "ERR_FILE": (30, "MPI_ERR_FILE: invalid file"),
    "ERR_INFO_KEY": (31, "MPI_ERR_INFO_KEY: invalid key argument for info object"),
    "ERR_INFO_NOKEY": (32, "MPI_ERR_INFO_NOKEY: unknown key for given info object"),
    "ERR_INFO_VALUE": (33, "MPI_ERR_INFO_VALUE: invalid value argument for info object"),
    "ERR_INFO": (34, "MPI_ERR_INFO: invalid info object"),
    "ERR_IO": (35, "MPI_ERR_IO: input/output error"),
    "ERR_KEYVAL": (36, "MPI_ERR_KEYVAL: invalid key value"),
    "ERR_LOCKTYPE": (37, "MPI_ERR_LOCKTYPE: invalid lock"),
    "ERR_NAME": (38, "MPI_ERR_NAME: invalid name argument"),
    "ERR_NO_MEM": (39, "MPI_ERR_NO_MEM: out of memory"),
    "ERR_NOT_SAME": (40, "MPI_ERR_NOT_SAME: objects are not identical"),
    "ERR_NO_SPACE": (41, "MPI_ERR_NO_SPACE: no space left on device"),
    "ERR_NO_SUCH_FILE": (42, "MPI_ERR_NO_SUCH_FILE: no such file or directory"),
    "ERR_PORT": (43, "MPI_ERR_PORT: invalid port"),
    "ERR_QUOTA": (44, "MPI_ERR_QUOTA: out of quota"),
    "ERR_READ_ONLY": (45, "MPI_ERR_READ_ONLY: file is read only"),
    "ERR_RMA_CONFLICT": (46, "MPI_ERR_RMA_CONFLICT: rma conflict during operation"),
    "ERR_RMA_SYNC": (47, "MPI_ERR_RMA_SYNC: error executing rma sync"),
    "ERR_SERVICE": (48, "MPI_ERR_SERVICE: unknown service name"),
    "ERR_SIZE": (49, "MPI_ERR_SIZE: invalid size"),
    "ERR_SPAWN": (50, "MPI_ERR_SPAWN: could not spawn processes"),
    "ERR_UNSUPPORTED_DATAREP": (
        51,
        "MPI_ERR_UNSUPPORTED_DATAREP: data representation not supported",
    ),
    "ERR_UNSUPPORTED_OPERATION": (52, "MPI_ERR_UNSUPPORTED_OPERATION: operation not supported"),
    "ERR_WIN": (53, "MPI_ERR_WIN: invalid window"),
    "ERR_RMA_RANGE": (68, "MPI_ERR_RMA_RANGE: invalid RMA address range"),
    "ERR_RMA_ATTACH": (69, "MPI_ERR_RMA_ATTACH: Could not attach RMA segment"),
    "ERR_RMA_FLAVOR": (70, "MPI_ERR_RMA_FLAVOR: Invalid type of window"),
    "ERR_RMA_SHARED": (71, "MPI_ERR_RMA_SHARED: Memory cannot be shared"),
    # mpi4py's MPI-4 names that Open MPI 4.1 does not define: codes it calls unknown
    "ERR_PROC_ABORTED": (74, _UNKNOWN_TEXT),
    "ERR_PROC_FAILED": (75, _UNKNOWN_TEXT),
    "ERR_PROC_FAILED_PENDING": (76, _UNKNOWN_TEXT),
    "ERR_REVOKED": (77, _UNKNOWN_TEXT),
    "ERR_SESSION": (78, _UNKNOWN_TEXT),
    "ERR_VALUE_TOO_LARGE": (79, _UNKNOWN_TEXT),
    "ERR_ABI": (92, _UNKNOWN_TEXT),
    "ERR_ERRHANDLER": (92, _UNKNOWN_TEXT),
}
ERR_LASTCODE = 92

# The MPI_T classes: Open MPI numbers them among the others (no module-level names).
_MPI_T_STRINGS = {
    54: "MPI_T_ERR_MEMORY: out of memory",
    55: "MPI_T_ERR_NOT_INITIALIZED: interface not initialized",
    56: "MPI_T_ERR_CANNOT_INIT: interface not in the state to be initialized",
    57: "MPI_T_ERR_INVALID_INDEX: invalid index",
    58: "MPI_T_ERR_INVALID_ITEM: the item index queried is out of range",
    59: "MPI_T_ERR_INVALID_HANDLE: the handle is invalid",
    60: "MPI_T_ERR_OUT_OF_HANDLES: no more handles available",
    61: "MPI_T_ERR_OUT_OF_SESSIONS: no more sessions available",
    62: "MPI_T_ERR_INVALID_SESSION: session argument is not a valid session",
    63: "MPI_T_ERR_CVAR_SET_NOT_NOW: variable cannot be set at this moment",
    64: "MPI_T_ERR_CVAR_SET_NEVER: variable cannot be set until end of execution",
    65: "MPI_T_ERR_PVAR_NO_STARTSTOP: variable cannot be started or stopped",
    66: "MPI_T_ERR_PVAR_NO_WRITE: variable cannot be written or reset",
    67: "MPI_T_ERR_PVAR_NO_ATOMIC: variable cannot be read and written atomically",
    72: "MPI_T_ERR_INVALID: Invalid use of the interface or bad parameter value(s)",
    73: "MPI_T_ERR_INVALID_NAME: The variable or category name is invalid",
}
_LAST_CLASS = 73  # Open MPI 4.1's highest class; 74..ERR_LASTCODE are unknown codes
_ERR_UNKNOWN = 14
_ERR_ARG = 13
_STRINGS = {code: text for code, text in ERROR_CLASSES.values() if code <= _LAST_CLASS}
_STRINGS.update(_MPI_T_STRINGS)


class ErrorCodes:
    """One rank's user-defined error classes and codes (``MPI_Add_error_class``...).

    Open MPI numbers them from ``MPI_ERR_LASTCODE + 1`` up (``LASTUSEDCODE`` is the last
    one given out); a new class or code starts with an empty string.
    """

    __slots__ = ("lastused", "class_of", "strings")

    def __init__(self):
        self.lastused = ERR_LASTCODE
        self.class_of: dict[int, int] = {}  # user code -> its class (a class maps to itself)
        self.strings: dict[int, str] = {}

    def add_class(self) -> int:
        self.lastused += 1
        self.class_of[self.lastused] = self.lastused
        self.strings[self.lastused] = ""
        return self.lastused

    def add_code(self, errorclass: int) -> int:
        if not (0 <= errorclass <= _LAST_CLASS or self.class_of.get(errorclass) == errorclass):
            raise Exception(_ERR_ARG)
        self.lastused += 1
        self.class_of[self.lastused] = errorclass
        self.strings[self.lastused] = ""
        return self.lastused

    def add_string(self, errorcode: int, string: str) -> None:
        if errorcode not in self.class_of:
            raise Exception(_ERR_ARG)
        self.strings[errorcode] = str(string)


_RANK_CODES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def codes_of(rc) -> ErrorCodes:
    """The rank ``rc``'s table of added error codes (made on first use)."""
    codes = _RANK_CODES.get(rc)
    if codes is None:
        codes = _RANK_CODES[rc] = ErrorCodes()
    return codes


def _user_codes() -> ErrorCodes | None:
    rc = context.lookup()
    return None if rc is None else _RANK_CODES.get(rc)


def error_class(errorcode: int) -> int:
    """``MPI_Error_class``: a class maps to itself; an invalid code is ``MPI_ERR_ARG``."""
    if 0 <= errorcode <= _LAST_CLASS:
        return errorcode
    if _LAST_CLASS < errorcode <= ERR_LASTCODE:
        return _ERR_UNKNOWN
    codes = _user_codes()
    if codes is not None and errorcode in codes.class_of:
        return codes.class_of[errorcode]
    raise Exception(_ERR_ARG)


def error_string(errorcode: int) -> str:
    """``MPI_Error_string``: Open MPI's text, or the string a program added."""
    text = _STRINGS.get(errorcode)
    if text is not None:
        return text
    if _LAST_CLASS < errorcode <= ERR_LASTCODE:
        return _UNKNOWN_TEXT
    codes = _user_codes()
    if codes is not None and errorcode in codes.strings:
        return codes.strings[errorcode]
    raise Exception(_ERR_ARG)


class Exception(RuntimeError, metaclass=MpiClass):  # noqa: A001 - mpi4py's name
    """Exception class: an MPI error code; ``str()`` is Open MPI's error string.

    Compares, hashes and converts as the int code (mpi4py's semantics); a negative code
    becomes ``MPI_ERR_UNKNOWN``."""

    def __init__(self, ierr: int = 0, /):
        ierr = int(ierr)
        super().__init__(ierr if ierr >= 0 else _ERR_UNKNOWN)

    def __int__(self) -> int:
        return self.args[0]

    def __index__(self) -> int:
        return self.args[0]

    def __bool__(self) -> bool:
        return self.args[0] != 0

    def __hash__(self) -> int:
        return hash(self.args[0])

    def __eq__(self, other) -> bool:
        return self.args[0] == other

    def __ne__(self, other) -> bool:
        return self.args[0] != other

    def __lt__(self, other) -> bool:
        return self.args[0] < other

    def __le__(self, other) -> bool:
        return self.args[0] <= other

    def __gt__(self, other) -> bool:
        return self.args[0] > other

    def __ge__(self, other) -> bool:
        return self.args[0] >= other

    def __repr__(self) -> str:
        return f"MPI.Exception({self.args[0]})"

    def __str__(self) -> str:
        return self.Get_error_string()

    def Get_error_code(self) -> int:
        """Return the error code."""
        return self.args[0]

    def Get_error_class(self) -> int:
        """Return the error class of the error code."""
        return error_class(self.args[0])

    def Get_error_string(self) -> str:
        """Return the error string of the error code."""
        return error_string(self.args[0])

    @property
    def error_code(self) -> int:
        return self.Get_error_code()

    @property
    def error_class(self) -> int:
        return self.Get_error_class()

    @property
    def error_string(self) -> str:
        return self.Get_error_string()


Exception.__module__ = "mpi4py.MPI"


def _rank_codes() -> ErrorCodes:
    return codes_of(context.current())


def Get_error_class(errorcode: int) -> int:
    """Error class of an error code."""
    return error_class(errorcode)


def Get_error_string(errorcode: int) -> str:
    """Error string of an error class or code."""
    return error_string(errorcode)


def Add_error_class() -> int:
    """A new error class (this rank's), with an empty string."""
    return _rank_codes().add_class()


def Add_error_code(errorclass: int) -> int:
    """A new error code in ``errorclass`` (this rank's), with an empty string."""
    return _rank_codes().add_code(errorclass)


def Add_error_string(errorcode: int, string: str) -> None:
    """Set the string of an added error class or code."""
    _rank_codes().add_string(errorcode, string)


def _mpi41(name: str):
    def missing(*args, **kwargs):
        raise NotImplementedError(
            f"mpi4py.MPI.{name} is MPI-4.1; Open MPI 4.1 (MPI 3.1) does not provide it"
        )

    missing.__name__ = name
    missing.__doc__ = f"Raise ``NotImplementedError``: MPI_{name} is MPI-4.1, not in Open MPI 4.1."
    return missing


ERROR_FUNCTIONS = {
    "Get_error_class": Get_error_class,
    "Get_error_string": Get_error_string,
    "Add_error_class": Add_error_class,
    "Add_error_code": Add_error_code,
    "Add_error_string": Add_error_string,
    "Remove_error_class": _mpi41("Remove_error_class"),
    "Remove_error_code": _mpi41("Remove_error_code"),
    "Remove_error_string": _mpi41("Remove_error_string"),
}
"""The module-level error-code functions ``mpi4py.MPI`` exports."""
