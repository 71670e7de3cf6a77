"""The PML's wire headers (ob1's ``mca_pml_ob1_hdr_t`` family), packed with ``struct``.

Every PML message is one BTL active message with ``BTL_TAG_PML``; its first byte names the
header type. Matching headers (MATCH, RNDV) carry a per-(communicator, peer) sequence
number; control headers (ACK, FIN) name the request they concern and need none.

As in ob1, a synchronous send always uses the rendezvous header, even when its data fits
in the RTS: the receiver's ACK is then the proof of the match that completes ``Ssend``.
"""

from __future__ import annotations

import struct

__all__ = [
    "ACK",
    "ACK_HDR",
    "BTL_TAG_PML",
    "FIN",
    "ID_HDR",
    "MATCH",
    "MATCH_HDR",
    "RNDV",
    "RNDV_HDR",
]

BTL_TAG_PML = 1
"""The BTL active-message tag all PML traffic uses (Open MPI: ``MCA_PML_BASE_BTL_TAG``)."""

MATCH = 1
"""Eager message: the whole payload follows the header."""
RNDV = 2
"""Rendezvous request-to-send: total length, sender's request id, first fragment."""
ACK = 3
"""Receiver matched a RNDV: where to RDMA-write the rest (key, offset) and its request id;
an offset equal to the total length means the RTS carried everything."""
FIN = 4
"""Sender's RDMA writes have all completed: the receive request can complete."""

# type, ctx, src (communicator rank), tag, seq
MATCH_HDR = struct.Struct("<BxxxiiiI")
# ... + total length, sender request id
RNDV_HDR = struct.Struct("<BxxxiiiIQQ")
# type, sender request id, receiver request id, remote key, offset already delivered
ACK_HDR = struct.Struct("<BxxxQQQQ")
# type, receiver's request id
ID_HDR = struct.Struct("<BxxxQ")
