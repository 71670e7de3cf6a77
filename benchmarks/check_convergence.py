"""How many of a bounds search's last-level executions reach a state of the nominal run.

The measurement behind ``check/convergence.py`` (issue 10's "10x cheaper in
executions"), without its limits: a level-1 execution deviates at one choice point and then
runs nominally, so once its state equals the nominal run's state at the same instant, the
rest of it *is* the nominal run's rest and need not run. This script runs T3 ``bibw``
``own`` (40 fragments, check's queues) nominally, fingerprints its state every
``STEP_PS`` of simulated time, then runs each last-level child of ``explore``'s bounds
search (race labels and ties, causal pruning as ``benchmarks/check.py``) and compares its
state with the nominal one at every checkpoint after its deviation (a cheap signature of
the pending events first, the full fingerprint only where that agrees).

The fingerprint is the timed one the search compares (``state_fingerprint(sim, ...,
at)``: pending events' times, FIFO clamps in the past as one token, the registration cache
without host addresses), compared at every checkpoint past the deviation (not limited to
three comparisons as ``check/convergence.py`` is): the per-label breakdown of what the
search's rejoining reaches.

Usage: ``PYTHONPATH=src python benchmarks/check_convergence.py`` (a few CPU minutes).
"""

from __future__ import annotations

import time

from pyopenib.check.channels import channel_of, is_timeout
from pyopenib.check.fingerprint import state_fingerprint
from pyopenib.check.scenario_runs import RACE_LABELS, scenario_runner
from pyopenib.check.search import SearchOracle
from pyopenib.check.timing import Timing
from pyopenib.sim.ties import TIE_LABEL

QUEUES = "P,128,8,6,4,4:P,65536,8,6,4,4"
STEP_PS = 2_000_000
LABELS = frozenset(RACE_LABELS | {TIE_LABEL})


def _cheap(sim) -> tuple:
    return tuple(sorted((e[0], getattr(e[2], "__qualname__", "")) for e in sim.pending()))


class Checkpoints(SearchOracle):
    """A bounds-search oracle that fingerprints the state every ``STEP_PS``: recording
    them (``reference`` None) or comparing with the reference's after ``after_ps``."""

    def __init__(self, script, reference=None, after_ps=0):
        super().__init__(script, Timing.BOUNDS, LABELS, True, leaf_children=reference is None)
        self.reference = reference
        self.after_ps = after_ps
        self.digests: dict[int, bytes] = {}
        self.cheap: dict[int, tuple] = {}
        self.times: list[int] = []
        self.match = None
        self.fingerprints = 0
        self._next = STEP_PS

    def choose(self, label, n):
        pick = super().choose(label, n)
        while len(self.times) < len(self.trail):
            self.times.append(self.sim.now if self.sim is not None else 0)
        return pick

    def _digest(self, sim, at) -> bytes:
        self.fingerprints += 1
        return state_fingerprint(sim, channel_of, is_timeout, at)[0]

    def before(self, sim, entry, obj, heads):
        while entry[0] > self._next and self.match is None:
            at, self._next = self._next, self._next + STEP_PS
            if self.reference is None:
                self.cheap[at] = _cheap(sim)
                self.digests[at] = self._digest(sim, at)
            elif at > self.after_ps and at in self.reference.digests:
                if _cheap(sim) == self.reference.cheap[at]:
                    if self._digest(sim, at) == self.reference.digests[at]:
                        self.match = at
        super().before(sim, entry, obj, heads)


def main() -> None:
    run = scenario_runner(
        "bibw",
        device="chelsio-t3",
        credits_qp="own",
        iterations=40,
        mca_pairs=[("btl_openib_receive_queues", QUEUES)],
    )
    cpu = time.process_time()
    nominal = Checkpoints(())
    ok, outcome = run(nominal)
    nominal.finish()
    end = max(nominal.digests)
    children = [
        (j, alt, c.label, nominal.times[j])
        for j, c in enumerate(nominal.trail)
        for alt in c.alternatives_or_all()
    ]
    met: dict[str, list[int]] = {}
    lags = []
    fingerprints = nominal.fingerprints
    for j, alt, label, deviation_ps in children:
        child = Checkpoints([0] * j + [alt], nominal, deviation_ps)
        run(child)
        fingerprints += child.fingerprints
        counts = met.setdefault(label, [0, 0])
        counts[0] += 1
        if child.match is not None:
            counts[1] += 1
            lags.append((child.match - deviation_ps) / end)
    lags.sort()
    reached = sum(c[1] for c in met.values())
    print(f"nominal: {outcome}; {len(nominal.digests)} checkpoints")
    print(f"last-level children: {len(children)}; reach a nominal state: {reached}")
    for label, (n, k) in sorted(met.items()):
        print(f"  {label}: {k} of {n}")
    if lags:
        print(
            f"  after their deviation, median {lags[len(lags) // 2]:.3f} of the run, max {lags[-1]:.3f}"
        )
    print(f"run to the end: {1 + len(children) - reached} executions; fingerprints {fingerprints}")
    print(f"CPU {time.process_time() - cpu:.1f} s")


if __name__ == "__main__":
    main()
