"""What an exploration covered, and the verdict that says exactly that and no more.

Coverage comes from the nominal run, recorded answer by answer: per label, how many
choice points it met and how many of them *branch* (a duration whose interval has
another value, a choice of several options). A ``--labels`` entry that the run never
meets, or meets only where nothing can branch, would make the exhaustive search explore
one execution and call it all of them: that is an input error (exit 2), never a proof.

The bounded-exhaustive search (``explore_exhaustive``) runs level 0 (nominal), then
level 1 (one deviation at each branching point, each to every other option), level 2...;
the nominal run's coverage gives level 1's size exactly, so a cut search can say which
levels it completed and how far it got into the next.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..errors import PyopenibError, register_topics
from ..sim.choice import duration_options
from .replay import Answer

__all__ = [
    "Coverage",
    "EXIT_INPUT",
    "search_verdict_lines",
    "untimed_verdict_lines",
    "verdict_lines",
]

EXIT_INPUT = 2

register_topics(
    {
        "check-label-never-met": (
            "--labels: the nominal run of {target} meets no choice point labelled "
            "{labels}, so an exhaustive search over them would explore one execution and "
            "prove nothing; its labels: {known}"
        ),
        "check-label-no-branch": (
            "--labels: the nominal run of {target} meets {labels} only where the interval "
            "allows a single value (lo = nominal = hi), so nothing can branch there; labels "
            "with branching points: {known}"
        ),
    }
)


def _alternatives(a: Answer) -> int:
    """Options an exhaustive search tries at this point besides the nominal one."""
    if a.kind == "duration":
        return len(duration_options(a.lo, a.nominal, a.hi)) - 1
    return a.options - 1


@dataclass
class Coverage:
    """Per-label counts of the nominal run's choice points."""

    met: Counter
    branching: Counter
    alternatives: Counter
    """Per label: executions of level 1 (one deviation) that label contributes."""

    @classmethod
    def of(cls, answers: list[Answer]) -> Coverage:
        met, branching, alternatives = Counter(), Counter(), Counter()
        for a in answers:
            met[a.label] += 1
            alt = _alternatives(a)
            if alt > 0:
                branching[a.label] += 1
                alternatives[a.label] += alt
        return cls(met, branching, alternatives)

    def require(self, labels: frozenset[str] | None, target: str) -> None:
        """Refuse labels that the run never meets, or meets with nothing to branch."""
        if labels is None:
            if not self.branching:
                raise PyopenibError(
                    "check-label-no-branch",
                    exit_code=EXIT_INPUT,
                    target=target,
                    labels="every label",
                    known="none",
                )
            return
        never = sorted(x for x in labels if not self.met[x])
        if never:
            raise PyopenibError(
                "check-label-never-met",
                exit_code=EXIT_INPUT,
                target=target,
                labels=", ".join(never),
                known=", ".join(sorted(self.met)) or "none",
            )
        flat = sorted(x for x in labels if not self.branching[x])
        if flat:
            raise PyopenibError(
                "check-label-no-branch",
                exit_code=EXIT_INPUT,
                target=target,
                labels=", ".join(flat),
                known=", ".join(sorted(self.branching)) or "none",
            )

    def table(self, labels: frozenset[str] | None) -> list[str]:
        """One line per label of the nominal run: met, branching, explored or not."""
        lines = []
        for label in sorted(self.met):
            used = labels is None or label in labels
            lines.append(
                f"  {label:18} {self.met[label]:6} met {self.branching[label]:6} branching"
                + ("  explored" if used else "  nominal only")
            )
        return lines

    def level_one(self, labels: frozenset[str] | None) -> int:
        return sum(n for label, n in self.alternatives.items() if labels is None or label in labels)

    def branching_points(self, labels: frozenset[str] | None) -> int:
        return sum(n for label, n in self.branching.items() if labels is None or label in labels)


def verdict_lines(res, coverage: Coverage, labels, bound: int, cut_by: str | None) -> list[str]:
    """The exhaustive verdict without a counterexample: proved within the stated space,
    or incomplete with the levels completed."""
    names = "every label" if labels is None else ", ".join(sorted(labels))
    points = coverage.branching_points(labels)
    level1 = coverage.level_one(labels)
    space = (
        f"every execution that leaves nominal timing at no more than {bound} of the "
        f"{points} branching choice points labelled {names} (each deviation to the "
        f"interval's low or high end)"
    )
    if res.complete:
        return [
            f"PROVED for this configuration: {space} was run: {res.executions} executions, "
            f"levels 0..{bound} complete, no failure",
            "  not covered: values inside the intervals, other labels (nominal only), and "
            "the orders of same-instant events (scheduling order)",
        ]
    done = res.executions
    if bound == 0 or done < 1:
        levels = "no level complete"
    elif done < 1 + level1:
        levels = f"level 0 complete; level 1: {done - 1} of {level1} ({(done - 1) / level1:.0%})"
    else:
        levels = f"levels 0..1 complete; level 2 partly ({done - 1 - level1} executions)"
    return [
        f"INCOMPLETE ({cut_by}): {res.executions} executions of {space}; {levels}; no "
        "failure among them. This is not a proof."
    ]


def search_verdict_lines(res, labels, cut_by: str | None) -> list[str]:
    """The verdict of a timing-mode search (``check/search.py``) without a violation."""
    mode = res.timing.value
    names = "every label" if labels is None else ", ".join(sorted(labels))
    space = (
        f"every execution of timing {mode} that deviates from its first execution at no "
        f"more than {res.bound} of the {res.choice_points} branching choice points "
        f"({res.ties} same-instant ties; labels: {names})"
    )
    rejoined = (
        f" ({res.rejoined} of them ended where they rejoined their parent's run: the same "
        "state at the same instant, so the same rest and verdict)"
        if res.rejoined
        else ""
    )
    reduced = (
        f"{res.executions} executions{rejoined}, {res.classes} equivalence classes, "
        f"{res.pruned} tie alternatives pruned as commuting, {res.pruned_values} duration "
        "values pruned as reordering nothing"
    )
    levels = (
        f"levels 0..{res.levels_complete} complete"
        if res.levels_complete >= 0
        else "no level complete"
    )
    if res.complete:
        return [
            f"PROVED for this configuration: {space} was covered: {reduced}, {levels}, no failure",
            f"  timing {mode}: {_MODE_MEANS[mode]}",
        ]
    return [
        f"INCOMPLETE ({cut_by}): {reduced} of {space}; {levels}; no failure among them. "
        "This is not a proof."
    ]


_MODE_MEANS = {
    "nominal": "every duration nominal; only the order of same-instant events of different "
    "objects varies",
    "bounds": "every duration anywhere in its device interval, one value per distinct order "
    "against the pending events",
    "untimed": "hardware durations free; only the hardware's ordering rules hold (FIFO work "
    "queues, PCIe posted writes in order, in-order RC delivery, causality)",
}


def untimed_verdict_lines(res) -> list[str]:
    """The verdict of the unbounded untimed search (``check/untimed.py``) without a
    violation: "every order" only when the search completed."""
    counts = (
        f"{res.executions} executions (one per equivalence class), {res.pruned} stopped "
        f"where every enabled event was asleep, {res.states} states, {res.steps} events run"
    )
    if res.complete:
        return [
            "PROVED for this configuration: every order of the model's events that the "
            f"hardware's FIFO channels allow was covered, without a bound: {counts}; no failure",
            "  timing untimed: the enabled events of a state are the heads of the hardware's "
            "FIFO channels (a QP's doorbells, its work-queue engine, a split device's receive "
            "path, a link, a port, CQE writes per QP and side) and each rank's next step; "
            "timeouts fire only at quiescence; a model's decisions inside one event that "
            "compare its own timestamps (port arbitration, PCIe bus occupancy) follow the "
            "nominal timestamps",
        ]
    return [
        f"INCOMPLETE ({res.cut_by}): {counts}, depth-first over every order the hardware's "
        "FIFO channels allow (unbounded); no failure among them. This is not a proof."
    ]
