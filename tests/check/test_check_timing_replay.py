"""A counterexample of a timing-mode search (`--timing`) is reported like any other: its
token carries the mode, replays with the same tie choice points through `check` and
`scenario`, and its verdict names the mode."""

import re

from click.testing import CliRunner

from pyopenib.check.replay import ReplayToken
from pyopenib.cli import main

QUEUES = "P,128,8,6,4,4:P,65536,8,6,4,4"


def _invoke(*argv):
    return CliRunner().invoke(main, [str(a) for a in argv])


def test_an_untimed_counterexample_replays_with_its_mode():
    found = _invoke(
        "check",
        "bibw",
        "--credits-qp",
        "smallest",
        "--exhaustive",
        "--timing",
        "untimed",
        "--iterations",
        12,
        "--jobs",
        1,
    )
    assert found.exit_code == 1, found.output
    assert "COUNTEREXAMPLE (timing untimed" in found.output
    text = re.search(r"^replay token: (\S+)$", found.output, re.M).group(1)
    token = ReplayToken.decode(text)
    assert token.timing == "untimed" and token.oracle().ties is not None
    again = _invoke(
        "check", "bibw", "--credits-qp", "smallest", "--iterations", 12, "--replay", text
    )
    assert again.exit_code == 1 and "TERMINATE" in again.output
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
        text,
    )
    assert scenario.exit_code == 3, scenario.output


def test_a_timing_proof_names_its_mode_and_its_classes():
    r = _invoke(
        "check",
        "bibw",
        "--credits-qp",
        "own",
        "--exhaustive",
        "--timing",
        "nominal",
        "--iterations",
        4,
        "--jobs",
        1,
    )
    assert r.exit_code == 0, r.output
    assert re.search(r"PROVED for this configuration: every execution of timing nominal", r.output)
    assert re.search(r"\d+ equivalence classes", r.output) and "levels 0..1 complete" in r.output
