"""pml — the matching engine (after Open MPI's ob1): tags, sources, per-peer sequence
numbers, eager / rendezvous / synchronous protocols and request objects, over one
``BtlModule`` per process. Knows nothing of QPs; the MPI layer drives its progress."""

from .ob1 import Pml
from .request import ANY_SOURCE, ANY_TAG, PmlRequest, RecvRequest, SendRequest, describe

__all__ = ["ANY_SOURCE", "ANY_TAG", "Pml", "PmlRequest", "RecvRequest", "SendRequest", "describe"]
