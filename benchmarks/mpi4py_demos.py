"""mpi4py's ``demo/`` programs on real Open MPI and on pyopenib: does each run, print the
same, and how long does it take.

The demos come from the ``demo/`` folder of the mpi4py release's source distribution (the
archive ``mpi4py_suite.py`` caches). Each entry of ``DEMOS`` is run as its makefile runs
it, on both sides:

* real: ``mpirun --oversubscribe --tag-output -n N python [-m MOD] demo.py ARGS``;
* ours: ``pyopenib run --tag-output -n N python [-m MOD] demo.py ARGS``,

with the makefile's standard input (``echo 100 | ...``) given to both. A side is *ok* when
it exits 0 within its timeout. The outputs are *the same* when the two sets of tagged
lines are equal after normalisation: lines sorted (ranks interleave differently), host
names replaced, and for a demo that prints times (``timed``) every number that is not
an integer replaced, since simulated and real seconds differ by design. The OSU demos'
wall times are what ``docs/PERFORMANCE.md`` records.

Demos that build C/C++/Fortran code or a CFFI/Cython/SWIG module against ``mpi.h``
(``cython``, ``embedding``, ``libmpi-cffi``, ``profiling``, ``wrap-*``, the Fortran
mandelbrot worker, ``spawning``'s compiled workers), the CUDA demos and ``test-run``
(it calls ``mpiexec`` itself) are not in the list: pyopenib has no C API to build them
against (see docs/compatibility.md).

Run: ``.venv/bin/python benchmarks/mpi4py_demos.py [--demos NAME ...] [--only
openmpi|pyopenib] [--jobs 2] [--md out.md] [--json out.json]``; ``make bench`` runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import mpi4py_suite as suite  # noqa: E402 - the sibling harness: sdist cache, job control

SIDES = ("openmpi", "pyopenib")
REAL_TIMEOUT_S = 120.0
OURS_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Demo:
    """One demo run: ``path`` under ``demo/``, on ``nprocs`` ranks, with ``args``, the
    interpreter options before the file (``python``: ``-m mpi4py.futures``) and
    ``stdin``; ``timed``: it prints measured times."""

    path: str
    nprocs: int
    args: tuple[str, ...] = ()
    python: tuple[str, ...] = ()
    stdin: str = ""
    timed: bool = False

    @property
    def name(self) -> str:
        extra = " ".join((*self.python, self.path, *self.args))
        return f"{extra} -n{self.nprocs}"


def _mpi_ref() -> list[Demo]:
    """The MPI-1 reference manual's examples: chapter 2 (point to point) on 2 ranks,
    chapter 3 (collectives) on 4 (their makefile runs each with the default -n)."""
    return [
        Demo(f"mpi-ref-v1/ex-{ex}.py", 2 if ex.startswith("2.") else 4)
        for ex in (
            "2.01 2.08 2.16 2.29 2.32 2.34 2.35 "
            "3.01 3.02 3.03 3.04 3.05 3.06 3.07 3.08 3.09 3.11 3.12 3.13"
        ).split()
    ]


def _init_fini() -> list[Demo]:
    rc = [
        f"{key}={value}"
        for key, values in (
            ("threads", ("true", "false")),
            ("thread_level", ("single", "funneled", "serialized", "multiple")),
            ("fast_reduce", ("true", "false")),
            ("recv_mprobe", ("true", "false")),
            ("errors", ("default", "exception", "abort", "fatal")),
        )
        for value in values
    ]
    demos = [Demo("init-fini/test_0.py", 2, (arg,)) for arg in rc]
    return demos + [Demo(f"init-fini/test_{i}.py", 2) for i in range(1, 7)]


OSU = [
    Demo("osu_latency.py", 2, timed=True),
    Demo("osu_bw.py", 2, timed=True),
    Demo("osu_bibw.py", 2, timed=True),
    Demo("osu_multi_lat.py", 2, timed=True),
    Demo("osu_barrier.py", 4, timed=True),
    Demo("osu_bcast.py", 4, timed=True),
    Demo("osu_gather.py", 4, timed=True),
    Demo("osu_scatter.py", 4, timed=True),
    Demo("osu_allgather.py", 4, timed=True),
    Demo("osu_alltoall.py", 4, timed=True),
    Demo("osu_alltoallv.py", 4, timed=True),
]

DEMOS: list[Demo] = [
    Demo("helloworld.py", 4),
    Demo("compute-pi/cpi-cco.py", 4, stdin="100\n"),
    Demo("compute-pi/cpi-rma.py", 4, stdin="100\n"),
    Demo("compute-pi/cpi-dpm.py", 1, ("4",), stdin="100\n", timed=True),
    Demo("mandelbrot/mandelbrot.py", 7, timed=True),
    Demo("mandelbrot/mandelbrot-seq.py", 1, timed=True),
    Demo("nxtval/nxtval-threads.py", 4),
    Demo("nxtval/nxtval-dynproc.py", 4),
    Demo("nxtval/nxtval-onesided.py", 4),
    Demo("nxtval/nxtval-scalable.py", 4),
    Demo("nxtval/nxtval-mpi3.py", 4),
    Demo("reductions/test_reductions.py", 4, ("-q",)),
    Demo("sequential/test_seq.py", 4),
    Demo("threads/sendrecv.py", 1),
    Demo("futures/run_julia.py", 5, timed=True),
    Demo("futures/run_mandelbrot.py", 5, timed=True),
    Demo("futures/run_hello.py", 1),
    Demo("futures/run_cpi.py", 1),
    Demo("futures/run_primes.py", 1),
    Demo("futures/run_hello.py", 5, python=("-m", "mpi4py.futures")),
    Demo("futures/run_cpi.py", 5, python=("-m", "mpi4py.futures")),
    Demo("futures/run_primes.py", 5, python=("-m", "mpi4py.futures")),
    # the makefile's run-unittest: plain and under python -m mpi4py.futures, -n 1 and 2
    Demo("futures/test_futures.py", 1),
    Demo("futures/test_futures.py", 2),
    Demo("futures/test_futures.py", 1, python=("-m", "mpi4py.futures")),
    Demo("futures/test_futures.py", 2, python=("-m", "mpi4py.futures")),
    *_mpi_ref(),
    *_init_fini(),
    *OSU,
]


def obtain_demos(cache: Path) -> Path:
    """The ``demo/`` folder of the installed mpi4py's sdist, unpacked once next to its
    ``test/`` folder (the sdist itself is ``mpi4py_suite``'s download)."""
    version = suite.mpi4py_version()
    tests = suite.obtain_tests(version, cache)
    demos = tests.parent / "demo"
    if (demos / "helloworld.py").is_file():
        return demos
    archive = cache / "sdist" / f"mpi4py-{version}.tar.gz"
    prefix = f"mpi4py-{version}/demo/"
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
        tar.extractall(tests.parent.parent, members=members, filter="data")
    return demos


@dataclass
class Result:
    """One demo on one side: exit status (None: timed out), wall seconds, its output."""

    demo: str
    side: str
    status: str
    exit_code: int | None
    wall_s: float
    output: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _command(side: str, demo: Demo) -> list[str]:
    program = [*demo.python, Path(demo.path).name, *demo.args]
    if side == "openmpi":
        cmd = ["mpirun"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += ["--oversubscribe", "--tag-output", "-n", str(demo.nprocs)]
        return [*cmd, sys.executable, *program]
    pyopenib = Path(sys.executable).with_name("pyopenib")
    return [str(pyopenib), "run", "--tag-output", "-n", str(demo.nprocs), "python", *program]


def run_demo(side: str, demo: Demo, demos_dir: Path, timeout: float) -> Result:
    """Run one demo in its folder; stdout and stderr kept apart (stdout is compared)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONUNBUFFERED", None)  # whole lines per write, so mpirun tags each once
    start = time.monotonic()
    proc = subprocess.Popen(
        _command(side, demo),
        cwd=demos_dir / Path(demo.path).parent,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    suite.JOBS.add(proc)
    try:
        out, _ = proc.communicate(demo.stdin, timeout=timeout)
        exit_code, status = proc.returncode, "ok" if proc.returncode == 0 else "failed"
    except subprocess.TimeoutExpired:
        suite.end_job(proc)
        out, _ = proc.communicate()  # what it printed before it was stopped
        exit_code, status = None, "timeout"
    finally:
        suite.JOBS.discard(proc)
    wall = round(time.monotonic() - start, 2)
    return Result(demo.name, side, status, exit_code, wall, out.splitlines())


_INNER_TAG = re.compile(r"(?<=.)\[\d+,\d+\]<std(?:out|err)>:")
_HOST = re.compile(rf"\b(?:{re.escape(socket.gethostname())}|node\d{{3}})\b")
_SPACES = re.compile(r"\s+")
_REAL_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][-+]?\d+)?")


def normalised(lines: list[str], timed: bool) -> list[str]:
    """The output as compared: real mpirun's tags inside lines (a line written in pieces
    reaches orted apart) dropped, host names masked, and the NUL padding a fixed-size
    buffer leaves after one (``futures/run_hello.py``: its length is the host name's)
    dropped, (``timed``) measured numbers masked,
    with the padding a fixed-width number field gives them, lines sorted."""
    out = []
    for line in lines:
        line = _HOST.sub("<host>", _INNER_TAG.sub("", line)).rstrip().rstrip("\x00")
        if timed:
            line = _SPACES.sub(" ", _REAL_NUMBER.sub("<t>", line))
        out.append(line.rstrip())
    return sorted(out)


@dataclass
class Row:
    demo: str
    nprocs: int
    real: Result | None
    ours: Result | None

    def same(self, timed: bool) -> bool | None:
        if self.real is None or self.ours is None or not (self.real.ok and self.ours.ok):
            return None
        return normalised(self.real.output, timed) == normalised(self.ours.output, timed)


def _mark(result: Result | None) -> str:
    if result is None:
        return "-"
    if result.ok:
        return f"ok ({result.wall_s:.1f} s)"
    return f"{result.status} ({result.wall_s:.1f} s)"


def markdown(rows: list[Row], demos: dict[str, Demo]) -> str:
    lines = [
        "| demo | -n | real ok | ours ok | same output |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        same = row.same(demos[row.demo].timed)
        text = "-" if same is None else ("yes" if same else "**no**")
        name = row.demo.rsplit(" -n", 1)[0]
        lines.append(
            f"| `{name}` | {row.nprocs} | {_mark(row.real)} | {_mark(row.ours)} | {text} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--demos", nargs="+", default=[], help="substrings of demo names to run")
    p.add_argument("--only", choices=SIDES, help="run one side only")
    p.add_argument("--jobs", type=int, default=2, help="jobs at once")
    p.add_argument("--cache-dir", type=Path, default=suite.DEFAULT_CACHE)
    p.add_argument("--real-timeout", type=float, default=REAL_TIMEOUT_S, help="wall s, real")
    p.add_argument("--ours-timeout", type=float, default=OURS_TIMEOUT_S, help="wall s, ours")
    p.add_argument("--md", type=Path, help="write the table as markdown")
    p.add_argument("--json", type=Path, help="write every result as JSON")
    p.add_argument("--diff", action="store_true", help="show differing outputs")
    p.add_argument("--rescore", type=Path, help="compare the results of an earlier --json")
    args = p.parse_args(argv)
    try:
        demos_dir = obtain_demos(args.cache_dir)
    except suite.SuiteUnavailable as exc:
        print(f"mpi4py_demos: skipped: {exc}")
        return
    chosen = [d for d in DEMOS if not args.demos or any(s in d.name for s in args.demos)]
    sides = [args.only] if args.only else list(SIDES)
    if args.rescore:
        earlier = [Result(**r) for r in json.loads(args.rescore.read_text(encoding="utf-8"))]
        results = {(r.side, r.demo): r for r in earlier}
    else:
        timeouts = {"openmpi": args.real_timeout, "pyopenib": args.ours_timeout}
        jobs = [(side, d) for d in chosen for side in sides]
        results = _run_all(jobs, demos_dir, args.jobs, timeouts)
    report(chosen, results, args)


def _run_all(jobs, demos_dir: Path, workers: int, timeouts) -> dict[tuple[str, str], Result]:
    results: dict[tuple[str, str], Result] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {
            pool.submit(run_demo, side, d, demos_dir, timeouts[side]): (side, d) for side, d in jobs
        }
        try:
            for future in futures:
                side, d = futures[future]
                res = future.result()
                results[(side, d.name)] = res
                print(f"  {side:8s} {d.name:50s} {res.status:8s} {res.wall_s:7.1f} s", flush=True)
        except KeyboardInterrupt:
            suite.JOBS.end_all()
            raise
    return results


def report(chosen: list[Demo], results: dict[tuple[str, str], Result], args) -> None:
    """The table (and with ``--diff`` the lines that differ) on stdout, ``--md``/``--json``."""
    by_name = {d.name: d for d in chosen}
    rows = [
        Row(d.name, d.nprocs, results.get(("openmpi", d.name)), results.get(("pyopenib", d.name)))
        for d in chosen
    ]
    table = markdown(rows, by_name)
    print(table)
    if args.diff:
        for row in rows:
            if row.same(by_name[row.demo].timed) is False:
                real = normalised(row.real.output, by_name[row.demo].timed)
                ours = normalised(row.ours.output, by_name[row.demo].timed)
                print(f"--- {row.demo}: real only {sorted(set(real) - set(ours))[:8]}")
                print(f"+++ {row.demo}: ours only {sorted(set(ours) - set(real))[:8]}")
    if args.md:
        args.md.write_text(table, encoding="utf-8")
    if args.json:
        args.json.write_text(
            json.dumps([asdict(r) for r in results.values()], indent=1), encoding="utf-8"
        )


if __name__ == "__main__":
    main()
