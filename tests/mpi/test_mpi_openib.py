"""An mpi4py program over the openib BTL reproduces the seed's credit race on the Chelsio
T3 (two per-peer queues) with ``credits_qp=smallest`` and completes with ``own``."""

import io
from pathlib import Path

import pytest

from pyopenib.apps.run_command import openib_btls
from pyopenib.mpi import EXIT_TRANSPORT, run_job

PROGRAM = Path(__file__).parent / "programs" / "bidir_credit_race.py"
QUEUES = ("btl_openib_receive_queues", "P,128,256,192,128:P,65536,256,192,128")


@pytest.mark.parametrize(
    "policy,exit_code,reason", [("smallest", EXIT_TRANSPORT, "transport"), ("own", 0, "ok")]
)
def test_bidirectional_mixed_sizes_on_t3_fail_only_with_credits_on_qp0(policy, exit_code, reason):
    make_btls = openib_btls("chelsio-t3", [QUEUES, ("btl_openib_credits_qp", policy)], 1)
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(PROGRAM), 2, make_btls, stdout=out, stderr=err)
    assert (result.exit_code, result.reason) == (exit_code, reason), err.getvalue()
    if policy == "smallest":
        assert (
            "iWARP TERMINATE" in err.getvalue() and "Credits policy:    smallest" in err.getvalue()
        )
    else:
        assert out.getvalue().count("exchanged 2000 messages") == 2


def test_issue_command_on_t3_with_the_shipped_ini_and_no_queue_override():
    """`pyopenib run -n 2 --device chelsio-t3 --mca btl_openib_credits_qp smallest prog.py`:
    our INI gives T3 two per-peer queues, so the race shows without any other setting."""
    from click.testing import CliRunner

    from pyopenib.cli import main

    args = ["run", "-n", "2", "--device", "chelsio-t3"]
    bad = CliRunner().invoke(
        main, [*args, "--mca", "btl_openib_credits_qp", "smallest", str(PROGRAM)]
    )
    assert bad.exit_code == EXIT_TRANSPORT
    assert "iWARP TERMINATE" in bad.output
    good = CliRunner().invoke(main, [*args, str(PROGRAM)])  # auto: the INI says own for T3
    assert good.exit_code == 0, good.output


def test_stats_show_one_send_completion_per_batch_of_sendi_sends():
    """``pyopenib run --stats``: per rank and QP, the small messages of a ping-pong go
    out mostly unsignaled; every fragment is accounted as unsignaled or completed."""
    import io

    from pyopenib.apps.run_command import _keeping, openib_btls
    from pyopenib.apps.stats import job_stats
    from pyopenib.mpi import run_job

    btls: list = []
    prog = Path(__file__).resolve().parents[2] / "examples" / "osu_latency.py"
    result = run_job(
        str(prog),
        2,
        _keeping(openib_btls("mellanox-hermon", [], 1), btls),
        ["-m", "8"],
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert result.exit_code == 0
    small = [row for row in job_stats(btls) if row.qp == 0]
    assert len(small) == 2
    for row in small:
        assert row.frags > 500 and row.credit_msgs == 0
        assert row.completions + row.unsignaled == row.frags
        assert row.unsignaled > 30 * row.completions  # about 63 of every 64


def test_run_stats_flag_prints_the_table_on_stderr():
    from click.testing import CliRunner

    from pyopenib.cli import main

    prog = Path(__file__).resolve().parents[2] / "examples" / "osu_latency.py"
    r = CliRunner().invoke(main, ["run", "-n", "2", "--stats", str(prog), "-m", "8"])
    assert r.exit_code == 0, r.output
    assert "send CQEs" in r.output and "unsignaled" in r.output
