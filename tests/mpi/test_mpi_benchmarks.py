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


def test_alltoall_census_names_what_a_connection_holds_after_the_job_and_at_its_peak():
    held = _load("alltoall").measure(6, "--census-child")
    assert held["pairs"] == 30 and held["events"] > 0
    assert held["frag_buffers"] > 0 and held["traced_mb"] > 0 and held["by_site"]
    # the peak snapshot is the sampler's when it caught one, else the after-job one
    assert held["at_peak"] and held["sampled_peak_mb"] >= 0
