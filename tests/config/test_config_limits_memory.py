"""The memory estimate before any rank starts (``config.limits.check_job_memory``), for
``run``, ``scenario -n`` and ``check`` alike: a job that cannot fit is refused with what
it needs, and an eager RDMA ring larger than memory and swap names its variable."""

import pytest
from click.testing import CliRunner

from pyopenib.cli import main
from pyopenib.config import limits


@pytest.fixture
def small_machine(monkeypatch):
    """A machine with 64 MiB available and 1 GiB of memory and swap in all."""
    monkeypatch.setattr(limits, "_memory", lambda: (64 << 20, 1 << 30))


@pytest.mark.parametrize(
    "args",
    [
        ["scenario", "incast", "-n", "64", "--iterations", "1"],
        ["check", "incast", "--jobs", "16", "--runs", "1"],
        ["run", "-n", "64", "examples/osu_latency.py"],
    ],
)
def test_a_job_that_cannot_fit_is_refused_before_any_rank_starts(small_machine, args):
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0
    assert "of memory" in result.output and "64.0 MiB available" in result.output
    assert "run fewer ranks" in result.output


def test_an_eager_rdma_ring_above_memory_and_swap_names_the_variable(small_machine):
    result = CliRunner().invoke(
        main,
        [
            "scenario",
            "pingpong",
            "--device",
            "mellanox-hermon",
            "--iterations",
            "1",
            "--mca",
            "btl_openib_use_eager_rdma",
            "1",
            "--mca",
            "btl_openib_eager_rdma_num",
            "200000",
        ],
    )
    assert result.exit_code != 0
    assert "btl_openib_eager_rdma_num = 200000 (source: command line)" in result.output


def test_a_job_that_fits_runs(small_machine):
    result = CliRunner().invoke(main, ["scenario", "pingpong", "--iterations", "2"])
    assert result.exit_code == 0, result.output
