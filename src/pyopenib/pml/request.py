"""PML requests: what a send or a receive is waiting for, and its completion status.

A request is complete when ``complete`` is true; the MPI layer polls it while it drives
progress. ``label`` names the MPI call that created it, for deadlock reports only: a
string, or a tuple ``(render, *args)`` that ``describe`` turns into one — so the hot path
never formats text that nobody reads.
"""

from __future__ import annotations

__all__ = ["ANY_SOURCE", "ANY_TAG", "PmlRequest", "RecvRequest", "SendRequest", "describe"]

ANY_SOURCE = -1
ANY_TAG = -1


def describe(label) -> str:
    """The text of a label: itself, or ``render(*args)`` of a ``(render, *args)`` tuple."""
    if type(label) is tuple:
        return label[0](*label[1:])
    return label


class PmlRequest:
    __slots__ = ("id", "complete", "cancelled", "label")

    def describe(self) -> str:
        return describe(self.label)


class SendRequest(PmlRequest):
    """A send: eager ones complete at once (the BTL copied the bytes); rendezvous ones
    (every synchronous send is one) when the receiver's ACK says all data is there or the
    last RDMA write completed."""

    __slots__ = ("peer", "data", "puts_left", "recv_id", "pending", "copy", "_handle")

    def __init__(self, req_id, label, peer: int, data, complete: bool = False):
        self.id = req_id
        self.complete = complete
        self.cancelled = False
        self.label = label
        self.peer = peer
        self.data = data
        self.puts_left = 0
        self.recv_id = 0
        self.pending = 0
        """Bytes after the RTS not yet delivered by copy in/out or the RDMA pipeline."""
        self.copy = None
        """The copy-in/out range once the ACK asked for one (``pipeline.CopyInOut``)."""
        self._handle = None


class RecvRequest(PmlRequest):
    """A receive; after completion ``source``/``tag`` are the matched sender's (communicator
    rank, tag), ``count`` the bytes stored, ``sent`` the bytes the message carried and
    ``truncated`` whether more were sent than the buffer holds. ``buffer`` None means "allocate at match time" (pickle receives):
    ``data`` is then the whole message (a read-only uint8 array)."""

    __slots__ = (
        "ctx",
        "want_source",
        "want_tag",
        "buffer",
        "source",
        "tag",
        "count",
        "sent",
        "truncated",
        "data",
        "pending",
        "pipeline",
        "_target",
        "_handle",
    )

    def __init__(self, req_id, label, ctx: int, source: int, tag: int, buffer):
        self.id = req_id
        self.complete = False
        self.cancelled = False
        self.label = label
        self.ctx = ctx
        self.want_source = source
        self.want_tag = tag
        self.buffer = buffer
        self.source = source
        self.tag = tag
        self.count = 0
        self.sent = 0
        self.truncated = False
        self.data = None
        self.pending = 0
        """Bytes still expected by copy in/out or the RDMA pipeline."""
        self.pipeline = None
        """The RDMA-pipeline schedule while one runs (``pipeline.RdmaPipeline``)."""
        self._target = None
        self._handle = None

    def matches(self, source: int, tag: int) -> bool:
        ws = self.want_source
        wt = self.want_tag
        return (ws == source or ws == ANY_SOURCE) and (wt == tag or (wt == ANY_TAG and tag >= 0))


EAGER_SENT = SendRequest(0, "eager send", -1, None, complete=True)
"""What every eager send returns: complete at once, nothing to remember (MPI lets the
user reuse the buffer because the BTL copied it), so one shared, immutable instance."""
