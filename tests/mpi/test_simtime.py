"""A rank's ``time`` module (``simtime``): ``sleep`` blocks that rank in simulated time
while the others run on, and its clocks read the simulated clock, as SimGrid's SMPI
answers ``sleep`` and ``gettimeofday``."""

import io
import sys
import textwrap
import time

from pyopenib.mpi import run_job, simtime

from .loopback_btl import make_loopback_btls


def _run(tmp_path, source, nprocs=2) -> str:
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(source))
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(prog), nprocs, make_loopback_btls, (), stdout=out, stderr=err)
    assert result.exit_code == 0, err.getvalue()
    return out.getvalue()


_PAIR_AND_A_SLEEPER = """
import time
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
if rank == 2:
    time.sleep(SLEEP)
    print("sleeper", repr(MPI.Wtime()))
else:
    for _ in range(20):
        if rank == 0:
            comm.send(b"ping", dest=1)
            comm.recv(source=1)
        else:
            comm.send(comm.recv(source=0), dest=0)
    print("pair", rank, repr(MPI.Wtime()))
"""


def _pair_lines(out: str) -> list[str]:
    return sorted(line for line in out.splitlines() if line.startswith("pair"))


def test_a_sleeping_rank_does_not_delay_a_pair_that_does_not_sleep(tmp_path):
    slept = _run(tmp_path, _PAIR_AND_A_SLEEPER.replace("SLEEP", "2.5"), nprocs=3)
    awake = _run(tmp_path, _PAIR_AND_A_SLEEPER.replace("SLEEP", "0"), nprocs=3)
    assert _pair_lines(slept) == _pair_lines(awake)
    assert "sleeper 2.5\n" in slept
    assert float(_pair_lines(slept)[0].split()[-1]) < 0.01  # the pair ran while it slept


def test_the_same_program_prints_the_same_bytes_twice(tmp_path):
    source = _PAIR_AND_A_SLEEPER.replace("SLEEP", "0.125")
    assert _run(tmp_path, source, nprocs=3) == _run(tmp_path, source, nprocs=3)


def test_a_ranks_clocks_read_simulated_time_from_the_start_of_the_run(tmp_path):
    out = _run(
        tmp_path,
        """
        import time
        from time import monotonic, sleep
        from mpi4py import MPI
        start = (time.time(), monotonic(), time.perf_counter_ns())
        sleep(0.75)
        now = MPI.Wtime()
        print(time.time() == now, time.monotonic() == now, time.perf_counter() == now)
        print(time.monotonic_ns() == time.time_ns() == round(now * 1e9))
        print(time.time() - start[0], monotonic() - start[1] >= 0.75)
        print(time.gmtime().tm_year, time.strftime("%Y") == time.strftime("%Y", time.localtime()))
        print(time.sleep.__module__, time.process_time is __import__("time").process_time)
        """,
        nprocs=1,
    )
    lines = out.splitlines()
    assert lines[:2] == ["True True True", "True"]
    assert lines[2].split()[1] == "True" and float(lines[2].split()[0]) >= 0.75
    assert lines[3] == "1970 True"
    assert lines[4] == "time True"


def test_sleep_refuses_what_the_real_sleep_refuses(tmp_path):
    out = _run(
        tmp_path,
        """
        import time
        for bad in (-1, float("nan"), "1", None):
            try:
                time.sleep(bad)
            except (TypeError, ValueError) as exc:
                print(type(exc).__name__)
        time.sleep(0)
        time.sleep(True)
        print("slept", time.monotonic())
        """,
        nprocs=1,
    )
    assert out.splitlines() == ["ValueError", "ValueError", "TypeError", "TypeError", "slept 1.0"]


def test_the_job_gives_the_real_time_module_back_and_the_proxy_is_real_outside_ranks(tmp_path):
    _run(tmp_path, "import time\ntime.sleep(5)\n", nprocs=1)
    assert sys.modules["time"] is time
    proxy = simtime.RANK_TIME  # what the rank imported
    assert proxy is not time and proxy.time() > 1e9  # the real epoch, not the run's
    start = time.monotonic()
    proxy.sleep(0.01)
    assert time.monotonic() - start >= 0.01
