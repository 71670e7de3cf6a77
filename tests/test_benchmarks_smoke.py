"""The kernel benchmark runs end to end on a tiny model (no timing is asserted)."""

import importlib.util
import io
from pathlib import Path

from rich.console import Console

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _run_all():
    spec = importlib.util.spec_from_file_location(
        "pyopenib_bench_run_all", BENCHMARKS / "run_all.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_kernel_benchmark_reports_every_implementation_on_the_same_model():
    kernel = _run_all().load("kernel")
    out = io.StringIO()
    results = kernel.main(round_trips=20, repeats=1, console=Console(file=out, width=120))
    keys = {r.key for r in results}
    expected = {"kernel-callbacks", "kernel-processes", "heapq"}
    if importlib.util.find_spec("simpy") is not None:
        expected |= {"simpy", "simpy-callbacks"}
    assert keys == expected
    for r in results:
        assert r.label in out.getvalue()
        assert r.end_ps == 2 * 20 * kernel.DELAY_PS
        assert r.events >= 2 * 20 and r.best_s > 0
    assert [name for name, _, _ in kernel.ratios(results)] == [
        "kernel-callbacks / simpy",
        "kernel-callbacks / heapq",
    ]


def test_run_all_lists_the_kernel_benchmark_first():
    run_all = _run_all()
    assert run_all.BENCHMARKS[0] == "kernel"
    for name in run_all.BENCHMARKS:
        assert (BENCHMARKS / f"{name}.py").is_file()


def test_smpi_ratio_pyopenib_twin_reports_the_line_the_benchmark_checks():
    """The pyopenib side of the SMPI ratio prints what ``smpi_ratio.timed`` requires."""
    import subprocess

    ratio = _run_all().load("smpi_ratio")
    cmd = [ratio.PYOPENIB, "run", "-n", "2", "--device", ratio.DEVICE]
    cmd += [str(BENCHMARKS / "smpi" / "pingpong.py"), "25"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    match = ratio.OUTPUT.search(done.stdout)
    assert match and int(match.group(1)) == 50 and float(match.group(2)) > 0


def test_message_cost_counts_every_layer_of_one_message():
    """``message_cost`` attributes a ping-pong message's calls to every layer it crosses,
    and every heap entry it counts is one callback run (no timing is asserted)."""
    cost = _run_all().load("message_cost")
    m = cost.measure(round_trips=20)
    assert m["messages"] == 40
    assert m["pushed"] == m["ran"] > 0
    assert m["switches"] > 0
    assert {"mpi", "pml", "btl", "verbs", "hw", "sim"} <= set(m["layers"])
    assert m["calls"] == sum(n for n, _ in m["layers"].values())


def test_smpi_ratio_splits_a_run_into_its_start_up_and_its_messages(capsys):
    """The second table: start-up is the one-round-trip run, the rest is per message, and
    the ceilings are SMPI's whole run over each of pyopenib's two parts."""
    ratio = _run_all().load("smpi_ratio")
    runs = {"SMPI": [ratio.Sample(1.0, 0.3, 1.0)], "pyopenib": [ratio.Sample(3.0, 3.0, 1.0)]}
    starts = {"SMPI": [ratio.Sample(0.1, 0.1, 0.0)], "pyopenib": [ratio.Sample(0.5, 1.0, 0.0)]}
    split = ratio.cpu_split(runs, starts, 1002)
    assert split["pyopenib"] == (3.0, 1.0, 2.0 / 1000)
    out = capsys.readouterr().out
    assert "0.30x if every message cost nothing" in out
    assert "0.15x if the start-up cost nothing" in out
