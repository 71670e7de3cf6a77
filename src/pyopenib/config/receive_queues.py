"""``btl_openib_receive_queues``: the per-connection queue pairs and their buffers.

A value is ``:``-separated entries, each ``P,size,rd_num[,rd_low[,rd_win[,rd_rsv]]]``
(per-peer QP with credit flow control) or ``S,size,rd_num[,rd_low[,sd_max[,rd_init
[,srq_limit]]]]`` (shared receive queue). Missing trailing fields take Open MPI's
derived defaults (``btl_openib_mca.c``: each from the fields resolved before it, and a
default that computes to 0 becomes 1). Validation follows Open MPI's order and adds what
Open MPI leaves to luck: numbers must be numbers (C ``atoi`` turns junk into 0), sizes
must strictly increase (Open MPI's INI comments require it; its code silently picks the
wrong QP otherwise), an empty field or entry is an error (Open MPI gives an empty field its
default and drops an empty entry; docs/compatibility.md lists the difference), and every field fits Open MPI's ``int``. XRC (``X``) is not supported by pyopenib.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import PyopenibError, register_topics
from . import topics  # noqa: F401  (registers the messages)

__all__ = [
    "QueueSpec",
    "credits_qp_index",
    "default_receive_queues",
    "format_receive_queues",
    "parse_receive_queues",
    "qp_inline_sizes",
    "stalled_credits",
]

_P_FIELDS = ("size", "rd_num", "rd_low", "rd_win", "rd_rsv")
_S_FIELDS = ("size", "rd_num", "rd_low", "sd_max", "rd_init", "srq_limit")
_NUMBER = re.compile(r"[0-9]+")
FIELD_MAX = 2**31 - 1
"""Open MPI reads each field with ``atoi`` into an ``int``: anything larger wraps."""

register_topics(
    {
        "rq-credit-window": (
            "btl_openib_receive_queues {value!r} (from {source}): entry {entry!r} can "
            "deadlock the credit flow (rule rd_credits >= rd_win): buffers are re-posted "
            "{batch} at a time (rd_num {rd_num} - rd_low {rd_low}), so a sender that has "
            "used its credits is owed exactly {owed}, fewer than rd_win {rd_win}; the "
            "receiver never sends them in a credit message and one-way traffic stops after "
            "{rd_num} fragments. Open MPI 4.1 accepts this entry and hangs the same way; "
            "pyopenib refuses it: make rd_win at most {owed}"
        ),
        "rq-credit-reserve": (
            "btl_openib_receive_queues {value!r} (from {source}): entry {entry!r} can "
            "deadlock the credit flow (rule cm_sent <= rd_rsv - 1): rd_rsv {rd_rsv} "
            "allows rd_rsv - 1 = {cap} unacknowledged credit messages, so credits can only "
            "ride on data going the other way and one-way traffic stops after {rd_num} "
            "fragments. Open MPI 4.1 accepts this entry and hangs the same way; pyopenib "
            "refuses it: give rd_rsv >= 2"
        ),
    }
)


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """One receive queue. Fields that do not apply to the kind are 0.

    ``size``: buffer bytes; ``rd_num``: buffers posted; ``rd_low``: re-post when fewer
    remain; P only: ``rd_win`` (credits returned in a batch once this many are owed),
    ``rd_rsv`` (buffers reserved for explicit credit messages); S only: ``sd_max``
    (outstanding sends per peer), ``rd_init`` (buffers posted at start), ``srq_limit``
    (SRQ-limit event watermark).
    """

    kind: str
    size: int
    rd_num: int
    rd_low: int
    rd_win: int = 0
    rd_rsv: int = 0
    sd_max: int = 0
    rd_init: int = 0
    srq_limit: int = 0

    def spec(self) -> str:
        """The entry written out with every field explicit."""
        if self.kind == "P":
            fields = (self.size, self.rd_num, self.rd_low, self.rd_win, self.rd_rsv)
        else:
            fields = (self.size, self.rd_num, self.rd_low, self.sd_max, self.rd_init)
            fields += (self.srq_limit,)
        return ",".join([self.kind, *map(str, fields)])


def format_receive_queues(queues: tuple[QueueSpec, ...]) -> str:
    """The fully explicit receive_queues string for ``queues``."""
    return ":".join(q.spec() for q in queues)


def parse_receive_queues(value: str, source: str = "value") -> tuple[QueueSpec, ...]:
    """Parse and validate a receive_queues string; ``source`` names where it came from
    (an MCA source label or ``file:line``) for error messages."""
    if not isinstance(value, str):
        raise PyopenibError("rq-empty", value=str(value), source=source)
    if not value.strip():
        raise PyopenibError("rq-empty", value=value, source=source)
    entries = value.split(":")
    for index, entry in enumerate(entries):
        if not entry.strip():
            raise PyopenibError("rq-empty-entry", value=value, source=source, index=index)
    queues = tuple(_parse_entry(value, source, entry) for entry in entries)
    for index in range(1, len(queues)):
        if queues[index].size <= queues[index - 1].size:
            raise PyopenibError(
                "rq-not-increasing",
                value=value,
                source=source,
                index=index,
                size=queues[index].size,
                previous=queues[index - 1].size,
            )
    return queues


def _parse_entry(value: str, source: str, entry: str) -> QueueSpec:
    facts = {"value": value, "source": source, "entry": entry}
    kind = entry[:2]
    if kind == "X,":
        raise PyopenibError("rq-xrc", **facts)
    if kind not in ("P,", "S,"):
        raise PyopenibError("rq-bad-type", **facts)
    kind = kind[0]
    names = _P_FIELDS if kind == "P" else _S_FIELDS
    fields = entry.split(",")[1:]
    if not 2 <= len(fields) <= len(names):
        raise PyopenibError(
            "rq-bad-field-count",
            **facts,
            count=len(fields) + 1,
            kind=kind,
            low=3,
            high=len(names) + 1,
            layout=",".join([kind, *names]),
        )
    raw: dict[str, int | None] = {}
    for position, (name, text) in enumerate(zip(names, fields, strict=False), start=2):
        text = text.strip()
        if not text:
            # Open MPI gives an empty field its default (atoi_param); pyopenib refuses
            # it (issue 11): ``P,128,,32`` is more often a typo than a wish, and leaving
            # out trailing fields still takes the defaults.
            raise PyopenibError("rq-empty-field", **facts, position=position, field=name)
        if not _NUMBER.fullmatch(text):
            raise PyopenibError(
                "rq-bad-number", **facts, position=position, field=name, field_value=text
            )
        number = int(text)
        if number > FIELD_MAX:
            raise PyopenibError(
                "rq-number-too-big",
                **facts,
                position=position,
                field=name,
                field_value=text,
                limit=FIELD_MAX,
            )
        raw[name] = number

    def pick(name: str, default: int) -> int:
        # Open MPI's atoi_param: an absent field takes the default, and a default of 0
        # becomes 1.
        given = raw.get(name)
        if given is not None:
            return given
        return default if default != 0 else 1

    size = pick("size", 0)
    rd_num = pick("rd_num", 256)
    rd_low = pick("rd_low", rd_num - rd_num // 4)
    for name, number in (("size", size), ("rd_num", rd_num)):
        if number == 0:
            raise PyopenibError("rq-zero-size", **facts, field=name)
    if kind == "P":
        rd_win = pick("rd_win", (rd_num - rd_low) * 2)
        if rd_win <= 0:
            raise PyopenibError("rq-bad-window", **facts, rd_win=rd_win)
        rd_rsv = pick("rd_rsv", (rd_num * 2) // rd_win)
        if rd_num <= rd_low:
            raise PyopenibError("rq-num-le-low", **facts, rd_num=rd_num, rd_low=rd_low)
        queue = QueueSpec("P", size, rd_num, rd_low, rd_win=rd_win, rd_rsv=rd_rsv)
        _check_credit_progress(queue, facts)
        return queue
    sd_max = pick("sd_max", rd_low // 4)
    rd_init = pick("rd_init", rd_num // 4)
    srq_limit = pick("srq_limit", (rd_init - rd_init // 4) // 4)
    if raw.get("srq_limit") is None and srq_limit == 0 and rd_num > 1:
        srq_limit = 1
    if rd_num < rd_init:
        raise PyopenibError("rq-num-lt-init", **facts, rd_num=rd_num, rd_init=rd_init)
    if rd_num < srq_limit:
        raise PyopenibError("rq-num-lt-srq-limit", **facts, rd_num=rd_num, srq_limit=srq_limit)
    if rd_num <= rd_low:
        raise PyopenibError("rq-num-le-low", **facts, rd_num=rd_num, rd_low=rd_low)
    return QueueSpec("S", size, rd_num, rd_low, sd_max=sd_max, rd_init=rd_init, srq_limit=srq_limit)


def stalled_credits(queue: QueueSpec) -> int:
    """The credits a P queue's receiver owes a sender that has run out of them, once
    everything in flight has arrived (pyopenib's CTS takes no credit, so this holds from
    the first fragment on).

    Credits are conserved: the sender's ``sd_credits`` + fragments in flight + buffers
    consumed and not yet re-posted (``rd_num - rd_posted``) + the receiver's
    ``rd_credits`` + credits on their way back = ``rd_num``. With the sender stopped and
    nothing in flight, ``rd_credits == rd_posted``. ``post_rr`` re-posts exactly when
    ``rd_posted`` falls to ``rd_low`` (one buffer per fragment), so every batch is
    ``rd_num - rd_low`` credits and ``rd_credits`` is always a multiple of it (a
    piggyback returns all of them at once). ``rd_posted`` lies in ``rd_low + 1 ..
    rd_num``, ``rd_num - rd_low`` values, which hold exactly one such multiple: the
    answer."""
    batch = queue.rd_num - queue.rd_low
    return batch * (queue.rd_num // batch)


def _check_credit_progress(queue: QueueSpec, facts: dict) -> None:
    """Refuse a P queue whose credits can stop for good when data flows one way (no
    fragment comes back to carry them), by either rule of Open MPI's credit protocol:

    * explicit credits are sent once ``rd_credits >= rd_win``; if a stopped sender is
      owed only ``stalled_credits`` < rd_win, the receiver never sends them;
    * ``send_credit_msg`` allows at most ``rd_rsv - 1`` unacknowledged credit messages
      (the reserve keeps one buffer spare); with ``rd_rsv <= 1`` it allows none. Only
      an explicit rd_rsv can break this one: once the first rule holds, rd_win <= rd_num
      and the default ``(rd_num * 2) // rd_win`` is at least 2.

    Open MPI 4.1 checks neither (it warns only when ``rd_num - rd_low > rd_win``) and
    such a job hangs there the same way: docs/compatibility.md says why pyopenib
    refuses instead. Both rules are exact for pyopenib: tests/btl/test_deadlock_specs.py
    shows every refused queue stops a one-way stream and accepted ones complete."""
    owed = stalled_credits(queue)
    if owed < queue.rd_win:
        raise PyopenibError(
            "rq-credit-window",
            **facts,
            rd_num=queue.rd_num,
            rd_low=queue.rd_low,
            rd_win=queue.rd_win,
            batch=queue.rd_num - queue.rd_low,
            owed=owed,
        )
    if queue.rd_rsv < 2:
        raise PyopenibError(
            "rq-credit-reserve",
            **facts,
            rd_rsv=queue.rd_rsv,
            cap=queue.rd_rsv - 1,
            rd_num=queue.rd_num,
        )


def default_receive_queues(eager_limit: int, max_send_size: int) -> str:
    """Open MPI's built-in default, computed from btl_openib_eager_limit and
    btl_openib_max_send_size as registered (stock: 12288 and 65536)."""
    mid = (1 << (eager_limit // 4).bit_length()) >> 1
    if mid <= 128:
        mid = 1024
    return (
        f"S,128,256,192,128:S,{mid},1024,1008,64:"
        f"S,{eager_limit},1024,1008,64:S,{max_send_size},1024,1008,64"
    )


def credits_qp_index(queues: tuple[QueueSpec, ...]) -> int:
    """Open MPI's ``credits_qp``: the first P queue (meant to be the smallest), or the
    last queue when there is no P queue. With the legacy policy it carries the explicit
    credit messages of every P queue."""
    for index, queue in enumerate(queues):
        if queue.kind == "P":
            return index
    return len(queues) - 1


def qp_inline_sizes(queues, max_inline: int) -> list[int]:
    """Each QP's inline size for ``max_inline`` bytes of max_inline_data (Open MPI's
    ``max_inline_size()``, what the connection managers ask ``ibv_create_qp`` for): the
    queue's fragment size when that fits; otherwise ``max_inline`` on the first QP and
    on the last (the RDMA QP) only, and 0 - nothing inline - on the queues between."""
    last = len(queues) - 1
    return [
        q.size if q.size <= max_inline else (max_inline if i in (0, last) else 0)
        for i, q in enumerate(queues)
    ]
