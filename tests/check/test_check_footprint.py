"""The per-queue dependence relation (``check/footprint.py``) on the real device models:
the tie reduction it drives loses no outcome of the unreduced search, and it is finer than
the host (two QPs of one NIC, a rank and its NIC's work queues, commute)."""

from __future__ import annotations

from model_runs import SMALL_QUEUES, t3_bibw

from pyopenib.check.footprint import ANY, host_projection
from pyopenib.check.scenario_runs import RACE_LABELS
from pyopenib.check.search import SearchOracle, explore
from pyopenib.check.timing import Timing
from pyopenib.sim.ties import TIE_LABEL

QUEUES = SMALL_QUEUES


def _run(policy="own", fragments=4):
    return t3_bibw(fragments, QUEUES, policy)


class _Outcomes:
    """A run that remembers every outcome (final time and verdict) it produced."""

    def __init__(self, run):
        self.run = run
        self.seen: set[tuple[bool, str]] = set()

    def __call__(self, oracle):
        ok, text = self.run(oracle)
        self.seen.add((ok, text))
        return ok, text


def test_reduced_tie_search_reaches_every_outcome_of_the_full_one():
    full, reduced = _Outcomes(_run()), _Outcomes(_run())
    r_full = explore(full, Timing.NOMINAL, 1, {TIE_LABEL}, stop_at_first=False, reduce=False)
    r_red = explore(reduced, Timing.NOMINAL, 1, {TIE_LABEL}, stop_at_first=False, reduce=True)
    assert r_full.complete and r_red.complete
    assert reduced.seen == full.seen
    assert r_red.executions < r_full.executions
    assert r_red.classes == r_full.classes


class _Pending(SearchOracle):
    """Records the footprint of every event the nominal run executes, by callback."""

    def __init__(self):
        super().__init__((), Timing.NOMINAL, {TIE_LABEL})
        self.footprints: list[tuple[str, frozenset]] = []

    def before(self, sim, entry, obj, heads):
        super().before(sim, entry, obj, heads)
        fn = entry[2]
        name = getattr(fn, "__name__", type(fn).__name__)
        self.footprints.append((name, frozenset(self._steps[-1].fp)))


def test_the_relation_is_per_queue_not_per_host():
    oracle = _Pending()
    _run()(oracle)
    by_name: dict[str, list[frozenset]] = {}
    for name, fp in oracle.footprints:
        by_name.setdefault(name, []).append(fp)
    doorbells = by_name["_doorbell_recv"]
    qp_of = {fp: next(e for e in fp if e[0] == "qp") for fp in doorbells}
    assert len(set(qp_of.values())) >= 4  # two queues, both ranks
    arrivals = [fp for fp in by_name["receive_packet"] if ANY not in fp]
    qp = next(q for q in qp_of.values() if any(q in fp for fp in arrivals))
    first = next(fp for fp in doorbells if qp in fp)
    other = next(
        fp for fp in doorbells if qp not in fp and host_projection(fp) == host_projection(first)
    )
    assert not first & other  # receive doorbells of two QPs of one NIC commute
    rank_steps = [fp for fp in by_name["switch"] if ANY not in fp]
    # statically a rank's step is its host's software: the host and all its CQs
    assert rank_steps and all({e[0] for e in fp} == {"host", "cqs"} for fp in rank_steps)
    own_rank = next(fp for fp in rank_steps if host_projection(fp) == host_projection(first))
    assert not first & own_rank  # a rank's step commutes with its NIC's doorbells
    assert all(fp & first for fp in arrivals if qp in fp)  # an arrival on the QP races it


class _Classes:
    """A run that remembers the equivalence class of every execution it ran."""

    def __init__(self, run):
        self.run = run
        self.seen: set[str] = set()

    def __call__(self, oracle):
        ok, text = self.run(oracle)
        self.seen.add((ok, oracle.signature()))
        return ok, text


def test_bounds_reduction_reaches_every_class_of_the_unreduced_search():
    """T3 ``own``, bounds K = 1 over the race's labels and ties, 18 fragments: the search
    that prunes ties and duration values (their moved event's causal future,
    ``check/causal.py``) meets the same classes, and verdicts, as the one without."""
    labels = RACE_LABELS | {TIE_LABEL}
    full, reduced = _Classes(_run(fragments=18)), _Classes(_run(fragments=18))
    r_full = explore(full, Timing.BOUNDS, 1, labels, stop_at_first=False, reduce=False)
    r_red = explore(reduced, Timing.BOUNDS, 1, labels, stop_at_first=False, reduce=True)
    assert r_full.complete and r_red.complete
    assert reduced.seen == full.seen and len(full.seen) > 1
    assert r_red.pruned_values > 0 and r_red.executions < r_full.executions
