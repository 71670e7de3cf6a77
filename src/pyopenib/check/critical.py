"""The critical transition of a failing execution, in the simulator's terms and in the
protocol's.

*Choice level*: the failing run is a sequence of answers at choice points. Fix the
first ``p`` of them and let the rest vary: when every continuation fails, the failure
was decided by step ``p - 1`` at the latest. The critical choice point is the first step
after which every continuation fails. "Every" is sampled, and said so: the nominal
continuation and ``samples - 1`` seeded random ones over the device intervals. When even
``p = 0`` fails under every sample, no choice point decides it: the protocol fails at
every sampled timing (a rule, not a race).

*Protocol level*: a TERMINATE or RNR NAK means a SEND arrived with no usable receive
buffer although the sender held a credit for it. The trace says where that credit came
from: the last credit message for the failing QP before the failure, the QP it travelled
on, and how many of the failing QP's receive WQEs were still queued in the NIC (posted,
not yet usable) and behind how many sends of that QP still leaving when it left.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..sim import NominalOracle, Oracle, RandomOracle
from .replay import Answer

__all__ = [
    "CriticalChoice",
    "PrefixOracle",
    "critical_choice",
    "credit_story",
    "first_deciding_prefix",
]


class PrefixOracle(Oracle):
    """The recorded answers at the first ``prefix`` choice points, then ``then``'s.
    ``ties``: the tie control when the run's ties were choice points (a search's run)."""

    def __init__(self, answers: list[Answer], prefix: int, then: Oracle, ties=None):
        self.answers = answers
        self.prefix = prefix
        self.then = then
        self.position = 0
        self.ties = ties

    def _take(self) -> Answer | None:
        pos = self.position
        self.position += 1
        return self.answers[pos] if pos < self.prefix else None

    def choose(self, label: str, n: int) -> int:
        a = self._take()
        return a.value if a is not None and a.value < n else self.then.choose(label, n)

    def duration(self, label: str, lo: int, nominal: int, hi: int) -> int:
        a = self._take()
        if a is not None and a.label == label:
            return a.value
        return self.then.duration(label, lo, nominal, hi)


@dataclass
class CriticalChoice:
    answer: Answer | None
    """The critical choice point, or None: every sampled timing fails from the start."""
    samples: int
    tests: int
    passing: str = ""
    """Which continuation still passed one step earlier (what the step decided)."""

    def describe(self) -> list[str]:
        if self.answer is None:
            return [
                f"no choice point decides it: all {self.samples} sampled timings (nominal "
                f"and {self.samples - 1} random) fail from the first step on"
            ]
        a = self.answer
        return [
            f"choice point #{a.position}: {a.describe()}",
            f"  after it every sampled continuation fails ({self.samples}: nominal and "
            f"{self.samples - 1} random); fixed only up to the step before it, the "
            f"{self.passing} continuation passes",
        ]


def _continuations(samples: int, seed: int):
    yield "nominal", NominalOracle
    for i in range(samples - 1):
        yield f"random seed {seed + i}", (lambda s=seed + i: RandomOracle(s))


def critical_choice(
    run, answers: list[Answer], samples: int = 6, seed: int = 0, ties=None
) -> CriticalChoice:
    """Binary search for the first prefix length whose every sampled continuation fails
    (fixing more of a failing run can only narrow what may still pass)."""
    tests = 0
    passed_by: dict[int, str] = {}

    def all_fail(p: int) -> bool:
        nonlocal tests
        for name, make in _continuations(samples, seed):
            tests += 1
            ok, _ = run(PrefixOracle(answers, p, make(), ties() if ties else None))
            if ok:
                passed_by[p] = name
                return False
        return True

    p = first_deciding_prefix(all_fail, len(answers))
    if p is None:
        return CriticalChoice(None, samples, tests)
    return CriticalChoice(answers[p - 1], samples, tests, passed_by.get(p - 1, "nominal"))


def first_deciding_prefix(all_fail, n: int) -> int | None:
    """The shortest prefix length p (1..n) with ``all_fail(p)``, by binary search, given
    that ``all_fail(n)`` holds (the failing run itself) and fixing more of a failing run
    can only narrow what may still pass; None when ``all_fail(0)`` already holds."""
    if all_fail(0):
        return None
    lo, hi = 0, n  # all_fail(lo) is False; all_fail(hi) holds
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if all_fail(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _field(event, name):
    for k, v in event[4]:
        if k == name:
            return v
    return None


def _receiver(hw_actor: str, fatal_actor: str) -> str:
    """The BTL endpoint (``rankR->P``) on the side that had no receive buffer. The NIC
    actor names its node (``node001/chelsio-t3/qp65``; check runs one rank per node, so
    node N is rank N); the first ``fatal`` may be either side's (a TERMINATE fails the
    receiver at once, RNR retries exhausted fail the sender later)."""
    a, b = (int(x) for x in fatal_actor.removeprefix("rank").split("->"))
    node = hw_actor.split("/", 1)[0]
    rank = int(node.removeprefix("node")) if node.startswith("node") else a
    return f"rank{rank}->{b if rank == a else a}"


def credit_story(events) -> list[str]:
    """The credit message behind a TERMINATE / RNR NAK, from a trace (empty when the
    failure is of another kind or the trace lacks the events)."""
    fail = next(
        (i for i, e in enumerate(events) if e[2] in ("terminate_sent", "rnr_nak_sent")), None
    )
    if fail is None:
        return []
    t_fail, _, kind, hw_actor, _ = events[fail]
    fatal = next((e for e in events[fail:] if e[1] == "btl" and e[2] == "fatal"), None)
    if fatal is None:
        return []
    btl_actor, qp = _receiver(hw_actor, fatal[3]), _field(fatal, "qp")
    lines = [
        f"{kind} at {t_fail / 1e6:.3f} us on {hw_actor} ({btl_actor} qp {qp}): "
        f"{_field(events[fail], 'posted')} receive WQEs posted, "
        f"{_field(events[fail], 'usable')} usable"
    ]
    grant = None
    for i in range(fail - 1, -1, -1):
        e = events[i]
        if e[2] == "credit_msg" and e[3] == btl_actor and _field(e, "qp") == qp:
            grant = i
            break
    if grant is None:
        lines.append(f"no credit message for qp {qp} precedes it: the credits were piggybacked")
        return lines
    t = events[grant][0]
    counts = Counter()
    for e in events[:grant]:
        if e[3] == btl_actor and e[2] == "post_rr" and _field(e, "qp") == qp:
            counts["posted"] += _field(e, "posted") or 0
        elif e[3] == hw_actor:
            counts[e[2]] += 1
    waiting = counts["posted"] - counts["recv_usable"]
    leaving = counts["send_emit"] - counts["send_left"]
    on_qp = _field(events[grant], "on_qp")
    lines.append(
        f"critical transition: credit_msg qp={qp} ({_field(events[grant], 'credits')} "
        f"credits) sent on qp {on_qp} at {t / 1e6:.3f} us while {waiting} receive WQE(s) "
        f"of qp {qp} were still queued in the NIC, not yet usable"
        + (f", behind {leaving} send(s) of that QP still leaving" if leaving > 0 else "")
        + ("" if on_qp == qp else f"; on qp {on_qp} nothing orders it behind them")
    )
    return lines
