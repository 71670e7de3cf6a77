"""Delta debugging of a failing execution: the fewest deviations from nominal timing
that still fail (Zeller and Hildebrandt's ddmin, TSE 2002).

A counterexample found by random timing leaves nominal at nearly every choice point;
the reader needs the few that matter. ``minimize`` tries subsets and complements of the
deviations, each as a replay that answers nominal elsewhere, and keeps any candidate
that still fails (re-recorded: a deviation whose choice point moved away in the
candidate is dropped, so the kept set is always one that really ran). The result is
*1-minimal* when the test budget sufficed: removing any single deviation makes the run
pass (or fail differently is still a failure: any failure counts).
"""

from __future__ import annotations

from dataclasses import dataclass

from .replay import Answer, RecordingOracle, ReplayOracle

__all__ = ["Minimized", "minimize"]


@dataclass
class Minimized:
    deviations: list[Answer]
    outcome: str
    tests: int
    """Executions the reduction ran."""
    one_minimal: bool
    """False when the test budget ran out before 1-minimality was shown."""


def _key(answers) -> tuple:
    return tuple((a.position, a.kind, a.label, a.value) for a in answers)


def minimize(
    run, deviations: list[Answer], outcome: str, budget: int = 300, timing: str | None = None
) -> Minimized:
    """``run(oracle) -> (ok, outcome)``; ``deviations`` of an execution that fails with
    ``outcome`` (under ``timing``'s choice points, see ``ReplayOracle``). Returns the
    reduced deviations (sorted by position) and their outcome."""
    tests = 0
    seen: dict[tuple, tuple[bool, list[Answer], str]] = {}

    def fails(candidate: list[Answer]):
        nonlocal tests
        key = _key(candidate)
        if key not in seen:
            tests += 1
            rec = RecordingOracle(ReplayOracle(key, strict=False, timing=timing))
            ok, out = run(rec)
            seen[key] = (not ok, rec.deviations, out)
        return seen[key]

    current, current_outcome = list(deviations), outcome
    bad, kept, out = fails([])
    if bad:
        return Minimized([], out, tests, True)
    n = 2
    while len(current) >= 2:
        if tests >= budget:
            return Minimized(current, current_outcome, tests, False)
        size = -(-len(current) // n)
        chunks = [current[i : i + size] for i in range(0, len(current), size)]
        reduced = False
        for candidate in chunks + [
            [a for a in current if a not in chunk] for chunk in chunks if len(chunks) > 2
        ]:
            if tests >= budget:
                break
            bad, kept, out = fails(candidate)
            if bad and len(kept) < len(current):
                current, current_outcome = kept, out
                n = 2 if candidate in chunks else max(n - 1, 2)
                reduced = True
                break
        if reduced:
            continue
        if n >= len(current):
            break
        n = min(len(current), 2 * n)
    # ddmin stops when every single-deviation complement was tried without a reduction:
    # the set is 1-minimal (the check below reads those results back from ``seen``)
    one_minimal = True
    for d in current:
        if tests >= budget and _key([a for a in current if a is not d]) not in seen:
            one_minimal = False
            break
        if fails([a for a in current if a is not d])[0]:
            one_minimal = False
    return Minimized(current, current_outcome, tests, one_minimal)
