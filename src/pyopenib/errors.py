"""The catalogue of user-facing errors: one topic per situation, filled with the facts.

Like Open MPI's help files (``help-mpi-btl-openib.txt``), the wording of every message a
user can see lives here, keyed by a topic, so tests assert on topics and the texts stay
consistent. ``PyopenibError`` is the one exception type the CLI turns into a clean
message and a non-zero exit (no traceback unless ``--debug``).
"""

from __future__ import annotations

__all__ = ["InvariantViolation", "PyopenibError", "TOPICS", "TransportError", "register_topics"]

TOPICS: dict[str, str] = {}


def register_topics(topics: dict[str, str]) -> None:
    """Add a layer's topics to the catalogue (each topic name must be new)."""
    for name, text in topics.items():
        if name in TOPICS and TOPICS[name] != text:
            raise ValueError(f"help topic {name!r} registered twice")
        TOPICS[name] = text


class PyopenibError(Exception):
    """A user-facing error: ``topic`` names the situation, ``facts`` fill its text.

    ``exit_code`` is what the CLI exits with (1 = bad input; 3 = transport failure).
    """

    exit_code = 1

    def __init__(self, topic: str, exit_code: int | None = None, **facts):
        self.topic = topic
        self.facts = facts
        if exit_code is not None:
            self.exit_code = exit_code
        template = TOPICS.get(topic)
        if template is None:
            text = f"{topic}: " + ", ".join(f"{k}={v!r}" for k, v in facts.items())
        else:
            text = template.format(**facts)
        super().__init__(text)


class TransportError(Exception):
    """A fatal transport failure (iWARP TERMINATE, RNR/transport retries exceeded, flush).

    Raised by a BTL out of ``progress()``/``send()`` once it has marked the endpoint
    FAILED, and caught by whoever runs the ranks (the job runner, a scenario), so it lives
    with the floors: every layer may name it. ``report`` is the multi-line text Open MPI
    would print; the facts it is made of are fields, so no reader parses the text back:
    ``status`` (the work-completion status or async event), ``peer``, ``qp_index``,
    ``time_ps`` (simulated) and ``detail`` (what the hardware said, one line).
    """

    def __init__(
        self, report: str, *, status: str, peer: int, qp_index: int, time_ps: int, detail: str
    ):
        super().__init__(report)
        self.report = report
        self.status = status
        self.peer = peer
        self.qp_index = qp_index
        self.time_ps = time_ps
        self.detail = detail


class InvariantViolation(Exception):
    """A protocol invariant broke: a bug in the simulated protocol, never bad input.

    Raised by the state that owns the rule (an endpoint's QP, an SRQ, a pair of
    endpoints) when a checked run finds it false. Its own type, so a caller that reports
    invariant failures catches exactly these and a real bug elsewhere (an
    ``AssertionError`` of Python's) stays a traceback. ``rule`` names the invariant
    (``sd_credits``, ``conservation``, ...), ``rank``/``peer``/``qp`` where it broke
    (``peer`` -1 for module-wide state), ``detail`` the numbers.
    """

    def __init__(self, rule: str, rank: int, peer: int, qp: int, detail: str):
        where = f"rank {rank} qp {qp}" if peer < 0 else f"rank {rank} peer {peer} qp {qp}"
        super().__init__(f"{where}: {detail}")
        self.rule = rule
        self.rank = rank
        self.peer = peer
        self.qp = qp
        self.detail = detail
