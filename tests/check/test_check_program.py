"""A user's program explored like a scenario: each execution a fresh job, its output kept
out of the way, credit conservation checked at every progress() (a broken one fails the
execution in protocol terms)."""

from pathlib import Path

from pyopenib.btl import OpenibModule
from pyopenib.check.program import ProgramRun
from pyopenib.check.scenario_runs import scenario_runner
from pyopenib.sim import NominalOracle

PROGRAM = str(Path(__file__).parent / "programs" / "bidir_window.py")
PAIRS = [("btl_openib_receive_queues", "P,128,8,6,4,4:P,65536,8,6,4,4")]


def _violation(rank: int, peer: int) -> Exception:
    """What the BTL raises for a broken invariant: ``InvariantViolation`` once the BTL has
    it (issue 12), a bare AssertionError before."""
    import pyopenib.errors as errors

    kind = getattr(errors, "InvariantViolation", None)
    detail = f"credits of QP 0 from rank {rank} not conserved"
    return AssertionError(detail) if kind is None else kind("conservation", rank, peer, 0, detail)


def _run(policy, args=("1", "4")):
    pairs = [*PAIRS, ("btl_openib_credits_qp", policy)]
    return ProgramRun(PROGRAM, 2, ["chelsio-t3"] * 2, pairs, args)


def test_a_passing_execution_keeps_the_programs_output():
    out = _run("own").execute(NominalOracle())
    assert out.ok and "1 rounds of 4 messages each way: ok" in out.output


def test_the_t3_race_is_a_transport_failure_of_the_execution():
    ok, text = _run("smallest", ("1", "16"))(NominalOracle())
    assert not ok and text.startswith("transport failure on rank 1") and "TERMINATE" in text


def test_broken_conservation_fails_the_execution_at_the_next_progress(monkeypatch):
    calls = []

    def broken(self, peer):
        calls.append(self.rank)
        raise _violation(self.rank, peer.rank)

    monkeypatch.setattr(OpenibModule, "assert_conservation", broken)
    ok, text = _run("own")(NominalOracle())
    assert not ok and "not conserved" in text
    assert calls  # checked at progress(), not only when the job ends
    ok, text = scenario_runner("bibw", credits_qp="own", iterations=4, mca_pairs=PAIRS)(
        NominalOracle()
    )
    assert not ok and "invariant broken" in text


def test_a_deadlocked_program_is_a_counterexample_that_says_where_ranks_wait():
    from click.testing import CliRunner

    from pyopenib.cli import main

    program = str(Path(__file__).parent / "programs" / "recv_first.py")
    r = CliRunner().invoke(main, ["check", program, "--runs", "2", "--jobs", "1"])
    assert r.exit_code == 1, r.output
    assert "deadlock: every rank blocked, no event pending" in r.output
    assert "no choice point decides it" in r.output
    assert "rank 0: blocked in MPI_Recv" in r.output
