"""Ctrl-C at a few moments of ``run``, ``check --jobs 2`` and ``bench`` (issue 11): the
command exits promptly with 130 (what a shell reports for SIGINT), no process of its
group is left, and a trace being written is either complete or absent, never half.

SIGINT goes to the whole process group, as a terminal sends it. The only time limit is
the generous one a user would notice (5 s to exit); nothing else depends on timing.
CI interrupts at two moments; ``PYOPENIB_CTRL_C_MOMENTS=0,0.1,0.2,...`` (seconds after
the command started working) runs the same checks at as many moments as you like.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PYOPENIB = [str(Path(sys.executable).with_name("pyopenib"))]
EXIT_WITHIN_S = 5
START_WITHIN_S = 60
MOMENTS = [float(x) for x in os.environ.get("PYOPENIB_CTRL_C_MOMENTS", "0,0.5").split(",")]

LOOP = """\
from mpi4py import MPI
comm = MPI.COMM_WORLD
if comm.rank == 0:
    print("started", flush=True)
while True:
    if comm.rank == 0:
        comm.send(b"x" * 100, dest=1)
        comm.recv(source=1)
    else:
        comm.recv(source=0)
        comm.send(b"y", dest=0)
"""


def _start(argv, cwd: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPI_MCA_")}
    env.update(PYTHONUNBUFFERED="1", HOME=str(cwd))
    return subprocess.Popen(
        [*PYOPENIB, *argv],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _wait_for(proc: subprocess.Popen, marker: bytes) -> bytes:
    """Read the output until ``marker`` (the command is doing its work by then)."""
    seen = b""
    deadline = time.monotonic() + START_WITHIN_S
    while marker not in seen:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([proc.stdout], [], [], max(left, 0))
        if not ready:
            _kill(proc)
            pytest.fail(f"{marker!r} never appeared: {seen.decode(errors='replace')}")
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            pytest.fail(f"exited before {marker!r}: {seen.decode(errors='replace')}")
        seen += chunk
    return seen


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _interrupt(proc: subprocess.Popen, after_s: float) -> tuple[int, str]:
    time.sleep(after_s)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=EXIT_WITHIN_S)
    except subprocess.TimeoutExpired:
        _kill(proc)
        pytest.fail(f"still running {EXIT_WITHIN_S} s after Ctrl-C")
    # the group's other members (workers) must be gone too; give the kernel a moment
    # to reap them (terminated children of a dead parent are adopted by init)
    deadline = time.monotonic() + EXIT_WITHIN_S
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_alive(proc.pid), "a worker process outlived the command"
    return proc.returncode, out.decode(errors="replace")


def _trace_is_whole_or_absent(path: Path) -> None:
    assert not [p for p in path.parent.iterdir() if p.name.startswith(f".{path.name}.")]
    if path.exists():
        for line in path.read_text().splitlines():
            json.loads(line)  # every line a whole event: no half-written file


@pytest.mark.parametrize("after_s", MOMENTS)
def test_ctrl_c_during_run_exits_130_and_leaves_a_whole_trace(tmp_path, after_s):
    (tmp_path / "loop.py").write_text(LOOP)
    trace = tmp_path / "t.jsonl"
    proc = _start(["run", "-n", "2", "--trace", str(trace), "loop.py"], tmp_path)
    _wait_for(proc, b"started")
    code, out = _interrupt(proc, after_s)
    assert code == 130, out
    assert "Traceback" not in out
    _trace_is_whole_or_absent(trace)
    assert trace.exists()  # the trace up to the interrupt is written


@pytest.mark.parametrize("after_s", MOMENTS)
def test_ctrl_c_during_check_with_two_workers_exits_130_with_no_worker_left(tmp_path, after_s):
    argv = ["check", "bibw", "--credits-qp", "own", "--runs", "100000", "--jobs", "2"]
    proc = _start(argv, tmp_path)
    _wait_for(proc, b"fragments per rank")
    code, out = _interrupt(proc, after_s)
    assert code == 130, out
    assert "interrupted" in out and "Traceback" not in out


@pytest.mark.parametrize("after_s", MOMENTS)
def test_ctrl_c_during_bench_with_workers_exits_130_and_writes_no_json(tmp_path, after_s):
    result = tmp_path / "r.json"
    argv = ["bench", "--test", "bw", "--max-size", "1048576", "--jobs", "2", "--json", "r.json"]
    proc = _start(argv, tmp_path)
    _wait_for(proc, b"points on 2 processes")
    code, out = _interrupt(proc, after_s)
    assert code == 130, out
    assert "Traceback" not in out
    assert not result.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".r.json.")]


def test_a_ctrl_c_swallowed_by_a_finalizer_is_raised_again_without_a_traceback(capsys):
    """Python reports a ``KeyboardInterrupt`` raised in a weakref callback or ``__del__``
    as "Exception ignored" and carries on: the simulated job would run forever (seen as
    a lost Ctrl-C in `run`'s ping-pong loop). The CLI raises it again in ordinary code."""
    from pyopenib.cli import keeping_ctrl_c

    class InterruptedWhileDropped:
        def __del__(self):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), keeping_ctrl_c():
        InterruptedWhileDropped()
        for _ in range(1000):  # it lands in ordinary code, as soon as it can
            time.sleep(0.01)
        pytest.fail("the interrupt was lost")
    assert capsys.readouterr().err == ""
