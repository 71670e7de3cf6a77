"""Simulated messages per second, pyopenib against SimGrid SMPI, side by side in one run.

Issue 13's speed target is a ratio, not an absolute rate (absolute rates do not hold
across machines): the same 8-byte ping-pong of ``ROUND_TRIPS`` round trips, as a whole
process each —

* **SMPI**: ``benchmarks/smpi/pingpong.c`` built with ``smpicc`` (Debian's
  ``libsimgrid-dev``; ``make simgrid`` installs it when root) and run with ``smpirun -np 2``
  on ``benchmarks/smpi/platform.xml``;
* **pyopenib**: ``pyopenib run -n 2 --device mellanox-hermon benchmarks/smpi/pingpong.py``,
  the same loop written with mpi4py.

The runs alternate (SMPI, pyopenib, SMPI, pyopenib, ...) so that load from other work on
the machine falls on both sides alike. Each side's figure is the median over ``REPEATS``
runs of messages per wall second of the whole process, and of messages per CPU second
(user + system time of the process and its children, steadier when the machine is shared).
Each run's own output line is checked (``messages 40000 simulated_s ...``) so that a run
that did less work cannot look fast.

Both sides run compiled code, as a user's would: SMPI's binary is built by ``smpicc``
before any timing, and pyopenib's modules run from bytecode compiled once before the
timed runs (``PYTHONPYCACHEPREFIX=build/pycache``, and ``PYTHONDONTWRITEBYTECODE``
dropped from the runs' environment: an installed package has its ``.pyc`` files, and
compiling ~40,000 lines of source on every start-up costs ~0.3 s of CPU, which is not the
simulator's speed). One untimed run of each side comes first for that reason and to warm
the file cache.

Where each side's CPU goes: every repeat also runs each side for one round trip, the
*start-up* (process, imports, platform or device set-up, connection, tear-down), so
the second table splits a whole run into its start-up and the CPU per message after it,
and prints the two ceilings they put on the ratio: with a message path that cost
nothing, pyopenib's whole run would still cost its start-up; with a start-up that cost
nothing, its messages would still cost what they cost now.

Run: ``.venv/bin/python benchmarks/smpi_ratio.py [round_trips] [repeats]``.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SMPI_DIR = HERE / "smpi"
BUILD = ROOT / "build" / "smpi"
PYOPENIB = str(Path(sys.executable).with_name("pyopenib"))
DEVICE = "mellanox-hermon"
ROUND_TRIPS = 20_000
REPEATS = 3
TARGET = 0.5
OUTPUT = re.compile(r"^messages (\d+) simulated_s ([0-9.]+)$", re.MULTILINE)


@dataclass(frozen=True)
class Sample:
    """One whole-process run: its wall and CPU seconds and the simulated time it reported."""

    wall_s: float
    cpu_s: float
    simulated_s: float


def smpi_binary() -> Path | None:
    """Build pingpong.c with smpicc once into build/smpi/; None when SMPI is not installed."""
    if shutil.which("smpicc") is None or shutil.which("smpirun") is None:
        return None
    BUILD.mkdir(parents=True, exist_ok=True)
    binary = BUILD / "pingpong"
    source = SMPI_DIR / "pingpong.c"
    if not binary.exists() or binary.stat().st_mtime < source.stat().st_mtime:
        subprocess.run(["smpicc", "-O2", "-o", str(binary), str(source)], check=True)
    return binary


def timed(cmd: list[str], messages: int) -> Sample:
    """Run ``cmd`` to completion; its wall time, its CPU time, and the checked output line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    match = OUTPUT.search(done.stdout)
    if done.returncode != 0 or match is None or int(match.group(1)) != messages:
        raise SystemExit(
            f"smpi_ratio: {' '.join(cmd)} exited {done.returncode} without reporting "
            f"{messages} messages:\n{done.stdout}{done.stderr}"
        )
    return Sample(wall, cpu, float(match.group(2)))


PYCACHE = ROOT / "build" / "pycache"


def _env() -> dict[str, str]:
    """The runs' environment: bytecode written once and reused (see the module docstring)."""
    env = dict(os.environ)
    env.pop("PYTHONUNBUFFERED", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return env


def main(round_trips: int = ROUND_TRIPS, repeats: int = REPEATS) -> dict | None:
    binary = smpi_binary()
    if binary is None:
        print("smpi_ratio: skipped: smpicc/smpirun not found (run `make simgrid` as root)")
        return None
    messages = 2 * round_trips
    smpi_cmd = ["smpirun", "-np", "2", "-platform", str(SMPI_DIR / "platform.xml")]
    smpi_cmd += ["-hostfile", str(SMPI_DIR / "hostfile"), "--cfg=smpi/host-speed:1Gf"]
    smpi_cmd += ["--log=root.thres:critical", str(binary), str(round_trips)]
    ours_cmd = [PYOPENIB, "run", "-n", "2", "--device", DEVICE]
    ours_cmd += [str(SMPI_DIR / "pingpong.py"), str(round_trips)]
    commands = {"SMPI": smpi_cmd, "pyopenib": ours_cmd}
    samples: dict[str, list[Sample]] = {name: [] for name in commands}
    startups: dict[str, list[Sample]] = {name: [] for name in commands}
    for cmd in commands.values():  # one untimed round trip each: the file cache, and
        timed(cmd[:-1] + ["1"], 2)  # pyopenib's bytecode
    for _ in range(repeats):
        for name, cmd in commands.items():
            samples[name].append(timed(cmd, messages))
            startups[name].append(timed(cmd[:-1] + ["1"], 2))

    rates = {}
    table = Table(title=f"8-byte ping-pong, {round_trips:,} round trips, whole process each")
    for col in ("simulator", "msgs/s (wall)", "msgs/CPU s", "simulated us/msg", "runs"):
        table.add_column(col, justify="left" if col == "simulator" else "right")
    for name, runs in samples.items():
        wall = statistics.median(messages / s.wall_s for s in runs)
        cpu = statistics.median(messages / s.cpu_s for s in runs)
        sim_us = runs[0].simulated_s / messages * 1e6
        rates[name] = (wall, cpu)
        table.add_row(name, f"{wall:,.0f}", f"{cpu:,.0f}", f"{sim_us:.3f}", str(len(runs)))
    Console(width=120).print(table)
    wall_ratio = rates["pyopenib"][0] / rates["SMPI"][0]
    cpu_ratio = rates["pyopenib"][1] / rates["SMPI"][1]
    print(
        f"pyopenib / SMPI: {wall_ratio:.2f}x per wall second, {cpu_ratio:.2f}x per CPU "
        f"second (issue 13 target >= {TARGET}x; moonshot 1x)"
    )
    split = cpu_split(samples, startups, messages)
    return {"wall_ratio": wall_ratio, "cpu_ratio": cpu_ratio, "rates": rates, "split": split}


def cpu_split(samples, startups, messages: int) -> dict:
    """Print and return each side's start-up CPU (a one-round-trip run) and CPU per message
    after it (median whole run less median start-up, over the other ``messages - 2``),
    and the ceilings those put on the CPU ratio (module docstring)."""
    split = {}
    table = Table(title="Where the CPU goes (medians): start-up and each message after it")
    for col in ("simulator", "whole run CPU s", "start-up CPU s", "CPU us/msg after it"):
        table.add_column(col, justify="left" if col == "simulator" else "right")
    for name in samples:
        whole = statistics.median(s.cpu_s for s in samples[name])
        start = statistics.median(s.cpu_s for s in startups[name])
        per_msg = max(whole - start, 0.0) / (messages - 2)
        split[name] = (whole, start, per_msg)
        table.add_row(name, f"{whole:.3f}", f"{start:.3f}", f"{per_msg * 1e6:.2f}")
    Console(width=120).print(table)
    smpi_whole = split["SMPI"][0]
    _, start, per_msg = split["pyopenib"]
    free_path = smpi_whole / start if start > 0 else float("inf")
    free_start = smpi_whole / (per_msg * messages) if per_msg > 0 else float("inf")
    print(
        f"ceilings on the CPU ratio: {free_path:.2f}x if every message cost nothing "
        f"(start-up alone), {free_start:.2f}x if the start-up cost nothing (messages alone)"
    )
    return split


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
