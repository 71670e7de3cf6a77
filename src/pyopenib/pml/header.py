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
    "FLAG_CONTIG",
    "FLAG_NORDMA",
    "FLAG_PIN",
    "FRAG",
    "FRAG_HDR",
    "ID_HDR",
    "LARGEST_CONTROL_HEADER",
    "MATCH",
    "MATCH_HDR",
    "PUT",
    "PUT_FIN",
    "PUT_FIN_HDR",
    "PUT_HDR",
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
"""Receiver matched a RNDV: its request id, and how the rest travels. A key: RDMA-write
everything from offset into it; no key (0): send from offset to the end by copy in/out
(FRAG), throttled when the flags say ``FLAG_NORDMA``; an offset equal to the total length
means the RTS carried everything."""
FIN = 4
"""Sender's RDMA writes have all completed: the receive request can complete."""
FRAG = 5
"""A copy-in/out fragment of a rendezvous message (ob1's FRAG): the receiver's request
id and the fragment's offset in the message; its bytes follow the header."""
PUT = 6
"""Receiver to sender, RDMA pipeline (ob1's PUT): RDMA-write ``length`` bytes of the
message from ``offset`` into the registered piece ``key``."""
PUT_FIN = 7
"""Sender to receiver: the RDMA write of the piece at ``offset`` completed; the receiver
releases the piece's registration (ob1's FIN of an RDMA fragment)."""

FLAG_PIN = 0x04
"""RNDV: the sender registered its buffer (``MCA_PML_OB1_HDR_FLAGS_PIN``): the receiver
may take the RDMA protocol for the whole rest."""
FLAG_CONTIG = 0x08
"""RNDV: the sender's data is contiguous (``MCA_PML_OB1_HDR_FLAGS_CONTIG``)."""
FLAG_NORDMA = 0x10
"""ACK: everything after the RTS travels by copy in/out; the sender throttles its
fragments (``MCA_PML_OB1_HDR_FLAGS_NORDMA``)."""

# type, ctx, src (communicator rank), tag, seq
MATCH_HDR = struct.Struct("<BxxxiiiI")
# type, flags, ctx, src, tag, seq, total length, sender request id (the flags byte is
# MATCH's first pad byte: MATCH_HDR reads a RNDV's matching fields unchanged)
RNDV_HDR = struct.Struct("<BBxxiiiIQQ")
# type, flags, sender request id, receiver request id, remote key, offset
ACK_HDR = struct.Struct("<BBxxQQQQ")
# type, receiver's request id
ID_HDR = struct.Struct("<BxxxQ")
# type, receiver's request id, offset in the message (FRAG: the bytes follow)
FRAG_HDR = struct.Struct("<BxxxQQ")
# type, sender request id, receiver request id, remote key, offset, length
PUT_HDR = struct.Struct("<BxxxQQQQQ")
# type, receiver's request id, offset of the piece
PUT_FIN_HDR = struct.Struct("<BxxxQQ")

LARGEST_CONTROL_HEADER = max(h.size for h in (ACK_HDR, ID_HDR, PUT_HDR, PUT_FIN_HDR, RNDV_HDR))
"""The largest header the PML sends in one fragment with no payload behind it: the
biggest receive buffer must hold it, or no message can leave."""
