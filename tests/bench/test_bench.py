"""pyopenib bench: the sweep is deterministic whichever executor runs it, the policy grid
shows the T3 race, results survive JSON, plots are written, the CLI behaves."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner
from rich.console import Console

from pyopenib.bench import figures, plan_points, read_json, run_sweep, write_json
from pyopenib.bench.commands import parse_sizes
from pyopenib.cli import main
from pyopenib.errors import PyopenibError
from pyopenib.report.bench_plots import write_bench_plots
from pyopenib.report.bench_tables import osu_table, policy_table

TINY = dict(
    tests=["latency", "bw"],
    devices=["mellanox-connectx5"],
    policies=["smallest", "own"],
    sizes=[8, 4096],
    iterations=4,
)


def _text(table) -> str:
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(table)
    return console.export_text()


@pytest.fixture(scope="module")
def tiny_inline():
    return run_sweep(plan_points(**TINY), jobs=1)


@pytest.fixture(scope="module")
def t3_policy():
    points = plan_points(["policy"], ["chelsio-t3"], ["smallest", "own"], [], iterations=500)
    return run_sweep(points, jobs=1)


def test_tiny_grid_gives_identical_results_with_one_and_two_workers(tiny_inline):
    two = run_sweep(plan_points(**TINY), jobs=2)
    assert two == tiny_inline
    assert len(tiny_inline) == 8
    assert all(r.failure is None and r.sim_time_ps > 0 for r in tiny_inline)
    assert all(r.wall_s > 0 for r in two)


def test_bw_and_msgrate_share_one_simulation_per_size():
    points = plan_points(["bw", "msgrate"], ["chelsio-t3"], ["own"], [0, 64], iterations=2)
    assert [p.workload for p in points] == ["osu_bw"]
    assert points[0].size == 64


def test_latency_figures_are_half_round_trips_and_larger_messages_take_longer(tiny_inline):
    lat = {(f.policy, f.key): f.value for f in figures("latency", tiny_inline)}
    assert 0.5 < lat[("smallest", 8)] < lat[("smallest", 4096)] < 20
    text = _text(osu_table("latency", figures("latency", tiny_inline), "Latency (us)"))
    assert "# Size" in text and "mellanox-connectx5" in text and "own" in text


def test_policy_test_reports_t3_bibw_failure_with_smallest(t3_policy):
    cells = {(f.key, f.policy): f for f in figures("policy", t3_policy)}
    assert cells[("bibw", "smallest")].value is None
    assert cells[("bibw", "smallest")].failure
    assert cells[("bibw", "own")].value is not None
    assert all(
        cells[(s, p)].value for s in ("pingpong", "stream", "incast") for p in ("smallest", "own")
    )
    text = _text(policy_table(figures("policy", t3_policy)))
    assert "FAILS" in text and "own / smallest" in text


def test_json_round_trip_keeps_every_result_and_wall_time(tiny_inline, tmp_path):
    path = str(tmp_path / "bench.json")
    write_json(path, {"devices": ["mellanox-connectx5"]}, tiny_inline)
    settings, back = read_json(path)
    assert settings == {"devices": ["mellanox-connectx5"]}
    assert back == tiny_inline
    assert [r.wall_s for r in back] == [r.wall_s for r in tiny_inline]


def test_reading_a_file_that_is_not_bench_json_is_a_clear_error(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(PyopenibError, match="not a pyopenib-bench/1 file"):
        read_json(str(path))


def test_plot_writes_a_png_per_osu_test(tiny_inline, tmp_path):
    by_test = {t: figures(t, tiny_inline) for t in ("latency", "bw")}
    units = {"latency": "Latency (us)", "bw": "Bandwidth (MB/s)"}
    paths = write_bench_plots(str(tmp_path), by_test, units)
    assert [p.rsplit("/", 1)[-1] for p in paths] == ["latency.png", "bw.png"]
    for p in paths:
        with open(p, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_sizes_accept_k_and_m_suffixes():
    assert parse_sizes("64,1K,8,1M,8") == [8, 64, 1024, 1 << 20]
    with pytest.raises(PyopenibError, match="not a size"):
        parse_sizes("8,big")


def _bench(*args):
    return CliRunner().invoke(main, ["bench", *args])


def test_cli_prints_osu_table_and_writes_json(tmp_path):
    path = tmp_path / "r.json"
    r = _bench(
        "--device",
        "mellanox-connectx5",
        "--credits-qp",
        "own",
        "--test",
        "latency",
        "--sizes",
        "0,8",
        "--iterations",
        "3",
        "--jobs",
        "1",
        "--json",
        str(path),
    )
    assert r.exit_code == 0, r.output
    assert "# Size" in r.output and "Latency (us)" in r.output
    assert len(json.loads(path.read_text())["results"]) == 2


def test_cli_without_dask_installed_exits_1_with_a_clear_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    r = _bench(
        "--device",
        "mellanox-connectx5",
        "--test",
        "latency",
        "--sizes",
        "8",
        "--iterations",
        "2",
        "--dask",
        "local",
    )
    assert r.exit_code == 1
    assert "pip install 'pyopenib[dask]'" in r.output
    assert "Traceback" not in r.output


def test_cli_rejects_an_unknown_device_before_running_anything():
    r = _bench("--device", "no-such-nic", "--test", "latency", "--sizes", "8")
    assert r.exit_code == 2  # click's usage error: --device is checked when parsed
    assert "no-such-nic" in r.output


def test_cli_rejects_sizes_with_max_size():
    r = _bench("--sizes", "8", "--max-size", "64")
    assert r.exit_code == 1 and "not both" in r.output
