"""The untimed scheduler and its search: every order the channels allow, each
Mazurkiewicz class once (property test against unreduced enumeration on toy models)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from greenlet import greenlet
from hypothesis import given, settings
from model_runs import t3_bibw
from toy_models import StoppingToyRun, models, orders, search_untimed

from pyopenib.check.channels import channel_name, channel_of, is_timeout
from pyopenib.check.fingerprint import state_fingerprint
from pyopenib.check.footprint import ANY
from pyopenib.check.replay import ReplayToken, untimed_script, untimed_token
from pyopenib.check.untimed import UntimedOracle
from pyopenib.cli import main
from pyopenib.sim import NominalOracle, Simulator
from pyopenib.sim.untimed import UntimedControl


@settings(max_examples=200, deadline=None)
@given(models(max_steps=3, max_total=6))
def test_reduced_search_reaches_every_final_state_full_enumeration_reaches(model):
    """Models bounded by their number of orders (``toy_models.models``): many cheap
    examples find more than a few factorial ones."""
    full, res_full = search_untimed(model, reduce=False)
    reduced, res_red = search_untimed(model, reduce=True)
    assert res_full.executions == orders(model)
    assert reduced == full
    assert res_red.executions <= res_full.executions


@pytest.mark.parametrize("ending", ["hook", "raise"])
@settings(max_examples=150, deadline=None)
@given(models(max_steps=3, max_total=6))
def test_a_run_that_ends_with_events_pending_loses_no_final_state(ending, model):
    """A run that ends right after worker 0's last step (``StoppingToyRun``: a scenario
    stops once its ranks are done, a program's job by raising) leaves events unrun: the
    step that ends it commutes with nothing, so the reduced search also runs each of
    them before it, as the enumeration of every order does."""

    def run(m):
        return StoppingToyRun(m, 3, ending)

    full, _ = search_untimed(model, run=run, reduce=False)
    reduced, _ = search_untimed(model, run=run, reduce=True)
    assert reduced == full


def test_independent_channels_need_one_execution():
    """Three channels on three registers: every interleaving commutes."""
    model = [[(0, None)], [(1, None)], [(2, None)]]
    _, full = search_untimed(model, reduce=False)
    _, red = search_untimed(model, reduce=True)
    assert full.executions == 6  # 3! interleavings
    assert red.executions == 1 and red.pruned == 0


def test_a_race_on_one_register_keeps_both_orders_each_once():
    outcomes, res = search_untimed([[(0, None)], [(0, None)]], reduce=True)
    assert res.executions == 2 and len(outcomes) == 2


def test_events_of_one_channel_keep_their_order_and_a_later_event_may_run_first():
    seen = []

    class Obj:
        def __init__(self, name):
            self.name = name

        def act(self, k):
            seen.append((self.name, k))

    picks = iter([1, 1, 0, 0])  # run b's head first twice, then what is left
    control = UntimedControl(lambda sim, entries, channels: min(next(picks), len(entries) - 1))

    class Steer(NominalOracle):
        ties = control

    sim = Simulator(oracle=Steer())
    a, b = Obj("a"), Obj("b")
    sim.schedule(0, a.act, 0)
    sim.schedule(5, a.act, 1)
    sim.schedule(9, b.act, 0)
    sim.schedule(20, b.act, 1)
    sim.run()
    # b's events ran before a's although due later; each channel kept its own order
    assert seen == [("b", 0), ("b", 1), ("a", 0), ("a", 1)]
    assert sim.now == 5  # each event runs at its own instant: the last one ran was a's 2nd


def _invoke(*argv):
    return CliRunner().invoke(main, [str(a) for a in argv])


def test_untimed_check_prints_the_t3_credit_race_with_smallest():
    r = _invoke("check", "bibw", "--credits-qp", "smallest", "--timing", "untimed", "--exhaustive")
    assert r.exit_code == 1, r.output
    assert "COUNTEREXAMPLE (timing untimed" in r.output
    assert "TERMINATE sent" in r.output
    assert "critical transition: credit_msg qp=1" in r.output


def test_a_cut_untimed_search_is_incomplete_with_its_counts_never_proved():
    argv = ["check", "bibw", "--credits-qp", "own", "--iterations", 1]
    r = _invoke(*argv, "--timing", "untimed", "--exhaustive", "--max-executions", 3)
    assert r.exit_code == 2, r.output
    # the budget counts the executions run to their end and those stopped asleep
    assert (
        "INCOMPLETE (--max-executions 3 reached): 2 executions (one per equivalence class), "
        "1 stopped where every enabled event was asleep" in r.output
    )
    assert "PROVED" not in r.output


def test_untimed_takes_no_deviation_bound():
    r = _invoke("check", "bibw", "--timing", "untimed", "--exhaustive", "--deviations", 2)
    assert r.exit_code == 2
    assert "--deviations does not apply" in r.output


def test_untimed_walks_show_the_connectx_hole_under_both_policies():
    """On a split device a posted receive becomes usable through its own path, and
    nothing in the hardware orders that before a peer's send arrives: untimed, both
    credit policies can take an RNR NAK on a per-peer QP (rnr_retry 0)."""
    for policy in ("smallest", "own"):
        argv = ["check", "bibw", "--device", "connectx", "--credits-qp", policy]
        r = _invoke(*argv, "--iterations", 8, "--timing", "untimed", "--runs", 30)
        assert r.exit_code == 1, r.output
        assert "COUNTEREXAMPLE: untimed walk" in r.output
        assert "RNR_RETRY_EXC_ERR" in r.output and "ran before recv_path" in r.output


def test_an_untimed_token_carries_the_schedule_and_gives_it_back():
    script = [(0, ()), (2, ()), (0, ()), (1, ())]
    token = untimed_token({"workload": "x"}, script)
    again = ReplayToken.decode(token.encode())
    assert again.timing == "untimed"
    assert untimed_script(again) == [(0, ()), (2, ()), (0, ()), (1, ())]
    assert isinstance(again.oracle().ties, UntimedControl)


def test_the_t3_channels_keep_the_hardware_fifos_and_a_nic_writes_to_the_host_in_order():
    run = t3_bibw(2)
    oracle = UntimedOracle()
    ok, _ = run(oracle)
    assert ok and oracle.frames
    kinds = {channel_name(c).split()[0] for f in oracle.frames for c in f.names}
    # T3: receives go through the QP's one work queue (no split receive path); CQE writes
    # and WRITE payloads share the NIC's to-host channel
    assert {"doorbell", "engine", "emit", "port", "arrival", "to_host"} <= kinds
    assert "recv_path" not in kinds


class _Stop(BaseException):
    pass


class _OrderThenFingerprint(UntimedOracle):
    """Replays ``script`` (indices), then runs the heap entries ``seqs`` in that order,
    then records the state's fingerprint and stops the run."""

    def __init__(self, script, seqs):
        super().__init__([(c, ()) for c in script], reduce=False)
        self.then = list(seqs)
        self.digest = None

    def _pick(self, sim, entries, channels):
        k = len(self.frames)
        if k < len(self.prefix):
            return super()._pick(sim, entries, channels)
        if self.then:
            seq = self.then.pop(0)
            index = [e[1] for e in entries].index(seq)
            self.frames.append(self.frames[-1])  # a placeholder: the path's length only
            return index
        self.digest = state_fingerprint(sim, channel_of, is_timeout)[0]
        raise _Stop


def test_a_cqe_write_commutes_with_a_rank_step_that_did_not_touch_its_cq():
    """The untimed search's footprint of a rank step names the CQs it really polled or
    armed (``check/cq_access.py``); a CQE write to another CQ (or to one the step never
    looked at) is independent of it. Both orders of every such pair of the plain T3 run
    reach one state (fingerprint)."""
    run = t3_bibw(1)
    plain = UntimedOracle()
    assert run(plain)[0]
    script = [f.chosen for f in plain.frames]
    pairs = []
    for k, f in enumerate(plain.frames):
        taken = f.fps[f.chosen]
        if f.names[f.chosen].__class__ is not greenlet or ANY in taken:
            continue
        assert not any(e[0] == "cqs" for e in taken)  # the CQs it touched, by name
        for i, fp in enumerate(f.fps):
            if channel_name(f.names[i]).startswith("to_host") and not (fp & taken):
                pairs.append((k, f.seqs[f.chosen], f.seqs[i]))
    assert pairs  # the plain run has such pairs: the refinement is not vacuous
    for k, rank_step, cqe_write in pairs:
        digests = set()
        for order in ((rank_step, cqe_write), (cqe_write, rank_step)):
            oracle = _OrderThenFingerprint(script[:k], order)
            try:
                run(oracle)
            except _Stop:
                pass
            digests.add(oracle.digest)
        assert len(digests) == 1 and None not in digests, (k, digests)
