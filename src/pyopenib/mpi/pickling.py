"""``MPI.Pickle`` and ``MPI.pickle``: how the lowercase (object) calls serialize.

mpi4py sends a Python object as the bytes of ``pickle.dumps(obj, HIGHEST_PROTOCOL)`` and
lets a program swap the serializer (``MPI.pickle.__init__(dumps, loads, protocol)``);
``mpi4py.util.pkl5`` uses the out-of-band form (protocol 5), where buffers at least
``THRESHOLD`` bytes long travel as separate messages instead of inside the stream.
"""

from __future__ import annotations

import pickle as _pickle

from . import context
from .memory import buffer
from .surface import MpiClass

__all__ = ["PICKLE", "Pickle", "RankPickle"]

DEFAULT_THRESHOLD = 1024**2 // 4
"""mpi4py's out-of-band threshold: 0.25 MiB."""


class Pickle(metaclass=MpiClass):
    """A serializer: ``dumps``/``loads`` callables, a protocol, an out-of-band threshold."""

    __slots__ = ("_dumps", "_loads", "_protocol", "_threshold")

    def __init__(self, dumps=None, loads=None, protocol=None, threshold=None):
        self._dumps = _pickle.dumps if dumps is None else dumps
        self._loads = _pickle.loads if loads is None else loads
        if protocol is None and self._dumps is _pickle.dumps:
            protocol = _pickle.HIGHEST_PROTOCOL
        self._protocol = protocol
        self._threshold = DEFAULT_THRESHOLD if threshold is None else threshold

    def dumps(self, obj) -> bytes:
        """Serialize an object to bytes."""
        if self._protocol is None:
            return self._dumps(obj)
        return self._dumps(obj, self._protocol)

    def loads(self, data):
        """Deserialize an object from bytes."""
        return self._loads(data)

    def dumps_oob(self, obj) -> tuple[bytes, list[buffer]]:
        """The pickle stream and its out-of-band buffers (protocol 5 or higher)."""
        protocol = max(self._protocol or _pickle.HIGHEST_PROTOCOL, 5)
        buffers: list[buffer] = []
        threshold = self._threshold

        def keep_out_of_band(pickled: _pickle.PickleBuffer) -> bool:
            view = pickled.raw()
            if view.nbytes >= threshold:
                buffers.append(buffer.frombuffer(view, readonly=view.readonly))
                return False
            return True

        data = self._dumps(obj, protocol, buffer_callback=keep_out_of_band)
        return data, buffers

    def loads_oob(self, data, buffers):
        """Deserialize an object from bytes and out-of-band buffers."""
        return self._loads(data, buffers=buffers)

    @property
    def PROTOCOL(self):
        return self._protocol

    @PROTOCOL.setter
    def PROTOCOL(self, protocol) -> None:
        if protocol is None and self._dumps is _pickle.dumps:
            protocol = _pickle.HIGHEST_PROTOCOL
        self._protocol = protocol

    @property
    def THRESHOLD(self) -> int:
        return self._threshold

    @THRESHOLD.setter
    def THRESHOLD(self, threshold) -> None:
        self._threshold = DEFAULT_THRESHOLD if threshold is None else threshold


class RankPickle(Pickle):
    """``MPI.pickle``: one object for the ``MPI`` module every rank shares, each rank's
    own serializer behind it.

    Ranks are processes: a program that swaps its serializer (mpi4py's test_pickle does
    ``MPI.pickle.__init__(json.dumps, json.loads)`` per test) swaps its own rank's only,
    however far apart the ranks run. The state is a plain ``Pickle`` in the calling
    rank's context, made on first use; outside a rank (the launcher) a process one."""

    __slots__ = ()

    def __init__(self, dumps=None, loads=None, protocol=None, threshold=None):
        Pickle.__init__(_own(), dumps, loads, protocol, threshold)

    def dumps(self, obj) -> bytes:
        return _own().dumps(obj)

    def loads(self, data):
        return _own().loads(data)

    def dumps_oob(self, obj):
        return _own().dumps_oob(obj)

    def loads_oob(self, data, buffers):
        return _own().loads_oob(data, buffers)

    @property
    def PROTOCOL(self):
        return _own().PROTOCOL

    @PROTOCOL.setter
    def PROTOCOL(self, protocol) -> None:
        _own().PROTOCOL = protocol

    @property
    def THRESHOLD(self) -> int:
        return _own().THRESHOLD

    @THRESHOLD.setter
    def THRESHOLD(self, threshold) -> None:
        _own().THRESHOLD = threshold


_PROCESS = Pickle()
"""The serializer of code outside any rank."""


def _own() -> Pickle:
    ctx = context.lookup()
    if ctx is None:
        return _PROCESS
    own = ctx.pickle
    if own is None:
        own = ctx.pickle = Pickle()
    return own


PICKLE = RankPickle()
"""``MPI.pickle``: the serializer every lowercase call uses (the calling rank's)."""
