"""The MPI-layer benchmarks run end to end on tiny sizes (no timing is asserted)."""

import importlib.util
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(
        f"pyopenib_bench_{name}", BENCHMARKS / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pingpong_benchmark_moves_every_message_in_each_idiom(tmp_path):
    bench = _load("mpi_pingpong")
    bench.REPEATS = 1
    bench.WARMUP = 2
    for style in bench.STYLES:
        row = bench.measure(style, 10)
        assert row["msgs"] == 20 and row["loop_rate"] > 0
        # ConnectX, eager: a round trip is two one-way latencies of about a microsecond
        assert 0.5 < row["sim_us"] < 10


def test_alltoall_benchmark_checks_every_value_on_a_small_job():
    row = _load("alltoall").measure(4)
    assert row["ranks"] == 4 and row["peak_rss_mb"] > 0 and row["sim_us"] > 0
