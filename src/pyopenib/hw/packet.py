"""Packets on the wire. One class with slots for every kind keeps the hot path free of
isinstance chains; ``kind`` says what it is.

A message (one SEND / RDMA WRITE / READ response) is cut into MTU-sized packets; only the
last packet carries the message's bytes (the model copies them once), every packet
carries its own wire size for serialization. ``wire_bytes`` includes the transport's
header overhead (see ``nic.HEADER_BYTES``), ``nbytes`` the payload bytes it carries (what
the receiver's DMA writes to host memory as it arrives), and ``ready`` when its payload has
been read from host memory (cut-through: a packet may be cut before the later packets'
bytes have crossed PCIe; the transmit port does not start it earlier).

``msn`` numbers messages and ``psn`` packets, as IB's BTH/AETH do: a requester's packets
carry consecutive PSNs per QP, so a responder tells a duplicate (PSN below the expected
one) from a gap (PSN above it) after a loss. READ_RESP packets number their position in
the response instead, so the requester sees a gap inside a response.
"""

from __future__ import annotations

__all__ = ["Packet", "DATA", "ACK", "NAK_RNR", "NAK_ACCESS", "NAK_INVALID", "READ_REQ"]
__all__ += ["READ_RESP", "TERMINATE", "NAK_SEQ", "KIND_NAMES"]

DATA = 0  # SEND / SEND_WITH_IMM / RDMA_WRITE(_WITH_IMM) payload packet
ACK = 1
NAK_RNR = 2  # InfiniBand receiver-not-ready NAK
NAK_ACCESS = 3  # remote access error (bad rkey, bounds, permissions)
NAK_INVALID = 4  # remote invalid request / operational error (e.g. length)
READ_REQ = 5
READ_RESP = 6
TERMINATE = 7  # iWARP TERMINATE message (RDMAP/DDP layer), connection torn down
NAK_SEQ = 8  # PSN sequence error NAK: the responder saw a gap, the requester goes back

KIND_NAMES = ("DATA", "ACK", "NAK_RNR", "NAK_ACCESS", "NAK_INVALID", "READ_REQ")
KIND_NAMES += ("READ_RESP", "TERMINATE", "NAK_SEQ")


class Packet:
    __slots__ = (
        "kind",
        "src_lid",
        "dst_lid",
        "src_qpn",
        "dst_qpn",
        "msn",
        "psn",
        "first",
        "last",
        "wire_bytes",
        "nbytes",
        "ready",
        "opcode",
        "payload",
        "msg_len",
        "imm_data",
        "remote_addr",
        "rkey",
        "reason",
    )

    def __init__(self, kind, src_lid, dst_lid, src_qpn, dst_qpn, msn, wire_bytes):
        self.kind = kind
        self.src_lid = src_lid
        self.dst_lid = dst_lid
        self.src_qpn = src_qpn
        self.dst_qpn = dst_qpn
        self.msn = msn
        self.psn = 0
        self.wire_bytes = wire_bytes
        self.nbytes = 0
        self.ready = 0
        self.first = True
        self.last = True
        self.opcode = 0
        self.payload = None
        self.msg_len = 0
        self.imm_data = 0
        self.remote_addr = 0
        self.rkey = 0
        self.reason = ""

    def __repr__(self) -> str:
        return (
            f"<Packet {KIND_NAMES[self.kind]} {self.src_lid}:{self.src_qpn}->"
            f"{self.dst_lid}:{self.dst_qpn} msn={self.msn} psn={self.psn} {self.wire_bytes}B>"
        )
