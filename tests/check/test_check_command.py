"""`pyopenib check` as a user meets it: labels it cannot explore are refused, a verdict says
what was covered, a counterexample's token replays through `check`, `scenario` and
`run` (and is refused under other settings), an unmodified mpi4py program is checked
like a scenario, and a time budget cuts the search honestly."""

import re
from pathlib import Path

from click.testing import CliRunner

from pyopenib.cli import main

PROGRAM = str(Path(__file__).parent / "programs" / "bidir_window.py")
QUEUES = "P,128,8,6,4,4:P,65536,8,6,4,4"


def _invoke(*argv):
    return CliRunner().invoke(main, [str(a) for a in argv])


def _token(output: str) -> str:
    return re.search(r"^replay token: (\S+)$", output, re.M).group(1)


def test_a_label_the_run_never_meets_is_an_input_error_not_a_proof():
    typo = _invoke(
        "check",
        "bibw",
        "--credits-qp",
        "own",
        "--exhaustive",
        "--iterations",
        8,
        "--labels",
        "nic.recv_wqe,nic.recvwqe",
        "--jobs",
        1,
    )
    assert typo.exit_code == 2, typo.output
    assert "labelled nic.recvwqe" in typo.output and "PROVED" not in typo.output
    # T3 has one work queue per QP: the split devices' recv_usable point never happens
    split_only = _invoke(
        "check",
        "bibw",
        "--exhaustive",
        "--iterations",
        8,
        "--labels",
        "nic.recv_usable",
        "--jobs",
        1,
    )
    assert split_only.exit_code == 2 and "nic.recv_usable" in split_only.output


def test_the_proof_names_its_space_and_the_per_label_coverage():
    r = _invoke(
        "check",
        "bibw",
        "--credits-qp",
        "own",
        "--exhaustive",
        "--iterations",
        8,
        "--labels",
        "nic.recv_wqe",
        "--jobs",
        1,
    )
    assert r.exit_code == 0, r.output
    assert "PROVED for this configuration" in r.output and "levels 0..1 complete" in r.output
    assert re.search(r"nic\.recv_wqe +\d+ met +\d+ branching +explored", r.output)
    assert re.search(r"wire\.link +\d+ met +\d+ branching +nominal only", r.output)
    assert "not covered" in r.output


def test_a_counterexample_token_replays_in_check_and_scenario_and_is_refused_elsewhere():
    found = _invoke(
        "check", "bibw", "--credits-qp", "smallest", "--exhaustive", "--iterations", 12, "--jobs", 1
    )
    assert found.exit_code == 1, found.output
    assert "critical transition: credit_msg qp=1" in found.output
    token = _token(found.output)
    again = _invoke(
        "check", "bibw", "--credits-qp", "smallest", "--iterations", 12, "--replay", token
    )
    assert again.exit_code == 1 and "QP_FATAL on QP 1" in again.output
    scenario = _invoke(
        "scenario",
        "bibw",
        "--mca",
        "btl_openib_receive_queues",
        QUEUES,
        "--mca",
        "btl_openib_credits_qp",
        "smallest",
        "--iterations",
        12,
        "--replay",
        token,
    )
    assert scenario.exit_code == 3, scenario.output
    other = _invoke("check", "bibw", "--credits-qp", "own", "--iterations", 12, "--replay", token)
    assert other.exit_code == 2
    assert "btl_openib_credits_qp: token 'smallest', this command 'own'" in other.output
    fewer = _invoke(
        "scenario",
        "bibw",
        "--mca",
        "btl_openib_receive_queues",
        QUEUES,
        "--mca",
        "btl_openib_credits_qp",
        "smallest",
        "--replay",
        token,
    )
    assert fewer.exit_code == 2 and "iterations: token 12" in fewer.output


def test_a_users_program_finds_the_t3_race_with_smallest_and_replays_through_run():
    found = _invoke(
        "check",
        PROGRAM,
        "1",
        "16",
        "-n",
        2,
        "--credits-qp",
        "smallest",
        "--exhaustive",
        "--labels",
        "nic.recv_wqe",
        "--jobs",
        1,
    )
    assert found.exit_code == 1, found.output
    assert "TERMINATE sent" in found.output and "credit_msg qp=1" in found.output
    assert "pyopenib run -n 2 --device chelsio-t3" in found.output
    token = _token(found.output)
    replay = _invoke(
        "run",
        "-n",
        2,
        "--device",
        "chelsio-t3",
        "--mca",
        "btl_openib_receive_queues",
        QUEUES,
        "--mca",
        "btl_openib_credits_qp",
        "smallest",
        "--replay",
        token,
        PROGRAM,
        "1",
        "16",
    )
    assert replay.exit_code == 3, replay.output
    changed = _invoke(
        "run",
        "-n",
        2,
        "--device",
        "chelsio-t3",
        "--mca",
        "btl_openib_receive_queues",
        QUEUES,
        "--mca",
        "btl_openib_credits_qp",
        "smallest",
        "--replay",
        token,
        PROGRAM,
        "1",
        "8",
    )
    assert changed.exit_code == 2 and "program args" in changed.output


def test_a_users_program_is_proved_with_own_within_the_bound():
    r = _invoke(
        "check",
        PROGRAM,
        "1",
        "4",
        "--credits-qp",
        "own",
        "--exhaustive",
        "--labels",
        "nic.recv_wqe",
        "--jobs",
        1,
    )
    assert r.exit_code == 0, r.output
    assert "PROVED for this configuration" in r.output
    assert "messages each way: ok" not in r.output  # the program's output stays captured


def test_a_time_budget_cuts_the_search_and_the_verdict_says_so():
    r = _invoke(
        "check",
        "bibw",
        "--credits-qp",
        "own",
        "--exhaustive",
        "--iterations",
        8,
        "--time-budget",
        "0.001",
        "--jobs",
        1,
    )
    assert r.exit_code == 2, r.output
    assert "INCOMPLETE (--time-budget 0.001 s reached)" in r.output
    assert "This is not a proof" in r.output and "PROVED" not in r.output


def test_the_verdict_is_the_same_with_one_or_two_worker_processes():
    argv = [
        "check",
        "bibw",
        "--credits-qp",
        "own",
        "--exhaustive",
        "--iterations",
        4,
        "--labels",
        "nic.send_wqe",
    ]
    one = _invoke(*argv, "--jobs", 1)
    two = _invoke(*argv, "--jobs", 2)
    assert one.exit_code == two.exit_code == 0
    assert one.output == two.output


def test_a_cut_search_says_how_far_into_level_one_it_got():
    r = _invoke(
        "check",
        "bibw",
        "--credits-qp",
        "own",
        "--exhaustive",
        "--iterations",
        4,
        "--labels",
        "nic.send_wqe",
        "--max-executions",
        3,
        "--jobs",
        1,
    )
    assert r.exit_code == 2, r.output
    m = re.search(r"level 0 complete; level 1: 2 of (\d+) \(\d+%\)", r.output)
    assert m and int(m.group(1)) > 2, r.output
    assert "INCOMPLETE (--max-executions 3 reached)" in r.output
