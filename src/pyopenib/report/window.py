"""Which part of a trace a reader wants to see: by default the last few interesting
events before the first failure and the failure itself (the ``race_excerpt`` of
``pyopenib scenario``), or an explicit time window."""

from __future__ import annotations

from ..errors import PyopenibError, register_topics

__all__ = ["INTERESTING_KINDS", "FAILURE_KINDS", "first_failure", "default_window", "in_window"]

INTERESTING_KINDS = (
    "credit_msg",
    "post_rr",
    "recv_usable",
    "terminate_sent",
    "rnr_nak_sent",
    "credits_in",
    "terminate_received",
    "qp_error",
)
"""The events that tell the credit-race story (the same set ``race_excerpt`` prints)."""

FAILURE_KINDS = ("terminate_sent", "rnr_nak_sent", "fatal")

_ANCHORS = tuple(k for k in INTERESTING_KINDS if k != "recv_usable")
"""What a default window counts back over: the NIC's receive readiness comes in bursts
(one per buffer) that would crowd out the BTL's posts and credit messages."""

register_topics(
    {
        "report-window-empty": "no trace events between {t0} us and {t1} us (the trace "
        "spans {first} us to {last} us)",
        "report-window-order": "--window-us {t0} {t1}: the start must not be after the end",
        "report-trace-empty": "trace {path} has no events",
    }
)


def first_failure(events) -> int | None:
    """Index of the first TERMINATE, RNR NAK or fatal BTL error, or None."""
    return next((i for i, e in enumerate(events) if e[2] in FAILURE_KINDS), None)


def default_window(
    events, last: int = 8, budget: int | None = None, skip: tuple[str, ...] = ()
) -> tuple[int, int]:
    """(start, end) in ps: from the ``last``-th interesting event (receive readiness aside)
    before the first failure to the failure; with no failure, the same at the trace's end.

    ``budget`` caps how many events (other than kinds in ``skip``) the window may hold:
    in busy traffic the start moves later, keeping the events nearest the failure."""
    fail = first_failure(events)
    upto = events if fail is None else events[: fail + 1]
    picked = [e for e in upto if e[2] in _ANCHORS][-last:] or upto[-last:]
    start, end = picked[0][0], upto[-1][0]
    if budget is not None:
        shown = [e[0] for e in upto if e[2] not in skip and e[0] >= start]
        if len(shown) > budget:
            start = shown[-budget]
    return start, end


def in_window(events, window: tuple[int, int]) -> list[int]:
    """Indices of the events inside ``window`` (inclusive); a clean error when none are."""
    t0, t1 = window
    if t0 > t1:
        raise PyopenibError("report-window-order", t0=_us(t0), t1=_us(t1))
    idxs = [i for i, e in enumerate(events) if t0 <= e[0] <= t1]
    if not idxs:
        raise PyopenibError(
            "report-window-empty",
            t0=_us(t0),
            t1=_us(t1),
            first=_us(events[0][0]),
            last=_us(events[-1][0]),
        )
    return idxs


def _us(t_ps: int) -> str:
    return f"{t_ps / 1e6:.3f}"
