"""mpi4py's own unit tests, run on real Open MPI and on pyopenib, compared test by test.

The measuring stick of issue 9: the ``test/`` folder of the source distribution of the
mpi4py release installed next to this interpreter (fetched once with ``pip download``
into the cache), every file run unmodified on both sides for each ``-n``:

* real: ``mpirun -n N python mpi4py_suite_driver.py test_x.py OUT`` (Open MPI + mpi4py);
* ours: ``pyopenib run -n N mpi4py_suite_driver.py test_x.py OUT``.

``mpi4py_suite_driver.py`` is the program every rank runs: it imports the test file, runs
its ``unittest`` suite and appends one JSON line per finished test to a per-rank file, so
concurrent ranks never garble each other's results and a job that crashes or hangs still
reports the tests it finished. A test *passes* when it passes (or fails as expected) on
every rank. A file's *ratio* is the share of the tests real MPI passes that pyopenib also
passes; the overall figure sums over files. A file that runs no test on our side while
real MPI passes some scores 0 and is marked as failing, so nothing passes by running 0
tests. Each job has a wall-clock timeout (a hung file is a result: its finished tests
count, the rest do not), and jobs run in parallel over the cores.

``--unmodified`` also runs each file itself as the program (``mpirun ... python test_x.py``,
``pyopenib run ... test_x.py``) and compares each rank's ``Ran N tests``: it shows whether
``unittest.main()`` finds the tests when a user runs the file (a rank that runs none while
real MPI's ranks run some fails the file too).

Real Open MPI's results depend only on the installed versions (mpi4py, Open MPI, Python,
NumPy), the test file and the driver: ``--cache-real`` keeps them in the cache keyed by all
of those.

Run: ``.venv/bin/python benchmarks/mpi4py_suite.py [--files test_p2p_buf.py ...] [-n 2]
[--jobs 2] [--timeout 240] [--only pyopenib|openmpi] [--cache-real] [--unmodified] [--failing]
[--json out.json] [--md out.md]``; ``make mpi4py-suite`` runs every file at -n 1, 2, 4.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DRIVER = HERE / "mpi4py_suite_driver.py"
DEFAULT_CACHE = ROOT / "build" / "cache" / "mpi4py-suite"
SIDES = ("openmpi", "pyopenib")
NPROCS = (1, 2, 4)
TIMEOUT_S = 240.0

PASSING = frozenset({"pass", "xfail"})
SEVERITY = ("pass", "xfail", "skip", "xpass", "fail", "error", "missing")
"""Outcomes from best to worst: a test's outcome over several records or ranks is the
worst one (``missing``: a rank never reported the test, because it crashed or hung)."""


class SuiteUnavailable(RuntimeError):
    """The comparison cannot run here: no mpirun, or the sdist cannot be obtained."""


# -- the test folder ------------------------------------------------------------------------


def mpi4py_version() -> str:
    """The installed mpi4py release: the reference side runs it, and its tests are used."""
    try:
        return metadata.version("mpi4py")
    except metadata.PackageNotFoundError:
        raise SuiteUnavailable("mpi4py is not installed next to this interpreter") from None


def openmpi_version() -> str:
    """``mpirun --version``'s release number (``4.1.4``)."""
    if shutil.which("mpirun") is None:
        raise SuiteUnavailable("mpirun (Open MPI) is not installed")
    out = subprocess.run(["mpirun", "--version"], capture_output=True, text=True, check=False)
    first = (out.stdout or out.stderr).splitlines()[:1]
    if not first or "Open MPI" not in first[0]:
        raise SuiteUnavailable(f"mpirun is not Open MPI's: {first[0] if first else out}")
    return first[0].split()[-1]


def obtain_tests(version: str, cache: Path) -> Path:
    """The ``test/`` folder of mpi4py ``version``'s sdist, downloaded and unpacked once.

    ``pip download --no-binary :all: --no-deps`` fetches the release's source archive from
    the package index (the archive ``make test``'s ``pip install`` resolved); only its
    ``test/`` folder is unpacked, under ``cache/mpi4py-<version>/test``.
    """
    tests = cache / f"mpi4py-{version}" / "test"
    if (tests / "mpiunittest.py").is_file():
        return tests
    sdist_dir = cache / "sdist"
    sdist_dir.mkdir(parents=True, exist_ok=True)
    archive = sdist_dir / f"mpi4py-{version}.tar.gz"
    if not archive.is_file():
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:"]
        cmd += ["--no-deps", "--dest", str(sdist_dir), f"mpi4py=={version}"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
        except subprocess.TimeoutExpired:
            raise SuiteUnavailable("pip download of the mpi4py sdist timed out") from None
        if done.returncode != 0 or not archive.is_file():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise SuiteUnavailable(f"cannot download the mpi4py {version} sdist: {last}")
    prefix = f"mpi4py-{version}/test/"
    staging = cache / f"mpi4py-{version}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
        tar.extractall(staging, members=members, filter="data")
    shutil.rmtree(tests.parent, ignore_errors=True)
    (staging / f"mpi4py-{version}").rename(tests.parent)
    shutil.rmtree(staging, ignore_errors=True)
    return tests


def test_files(tests: Path, names: Sequence[str] = ()) -> list[str]:
    """The ``test_*.py`` files of the folder (all, or the ``names`` asked for, checked)."""
    available = sorted(p.name for p in tests.glob("test_*.py"))
    if not names:
        return available
    wanted = [n if n.endswith(".py") else f"{n}.py" for n in names]
    wanted = [n if n.startswith("test_") else f"test_{n}" for n in wanted]
    unknown = [n for n in wanted if n not in available]
    if unknown:
        raise SystemExit(f"not in mpi4py's test folder: {', '.join(unknown)}")
    return wanted


# -- one job --------------------------------------------------------------------------------


@dataclass
class Run:
    """One test file on one side at one ``-n``: how the job ended and each test's outcome.

    ``status``: ``ok`` (every rank finished the suite), ``import-error`` (the file did not
    import), ``crashed`` (a rank stopped before the end, or the job exited non-zero: a
    deadlock, an abort), ``timeout`` (killed after the wall-clock limit).
    """

    file: str
    side: str
    nprocs: int
    status: str
    exit_code: int | None
    wall_s: float
    outcomes: dict[str, str] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)
    mode: str = "driver"
    ran: list[int] = field(default_factory=list)
    """``plain`` runs only: each rank's ``Ran N tests``."""

    @property
    def passes(self) -> set[str]:
        return {t for t, o in self.outcomes.items() if o in PASSING}


def _worse(a: str, b: str) -> str:
    return a if SEVERITY.index(a) >= SEVERITY.index(b) else b


def fold(per_rank: list[list[dict]], nprocs: int) -> tuple[dict[str, str], dict[str, str], bool]:
    """Each test's outcome over all ranks' records, the first non-pass detail, and whether
    every rank finished its suite."""
    outcomes: dict[str, str] = {}
    details: dict[str, str] = {}
    seen: list[set[str]] = []
    done = len(per_rank) == nprocs
    for records in per_rank:
        names = set()
        finished = False
        for rec in records:
            if rec.get("done"):
                finished = True
                continue
            test, outcome = rec["test"], rec["outcome"]
            names.add(test)
            outcomes[test] = _worse(outcomes.get(test, "pass"), outcome)
            if outcome not in PASSING and rec.get("detail") and test not in details:
                details[test] = rec["detail"]
        seen.append(names)
        done = done and finished
    for test in outcomes:
        if len(seen) < nprocs or any(test not in names for names in seen):
            outcomes[test] = _worse(outcomes[test], "missing")
    return outcomes, details, done


def _command(side: str, mode: str, nprocs: int, test_file: str, out: Path) -> list[str]:
    program = [str(DRIVER), test_file, str(out)] if mode == "driver" else [test_file]
    if side == "openmpi":
        cmd = ["mpirun"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += ["--oversubscribe", "--tag-output", "-n", str(nprocs)]
        return [*cmd, sys.executable, *program]
    pyopenib = Path(sys.executable).with_name("pyopenib")
    return [str(pyopenib), "run", "--tag-output", "-n", str(nprocs), *program]


_RAN = re.compile(r"^\[1,(\d+)\]<std(?:out|err)>:Ran (\d+) tests? in ", re.MULTILINE)


def ran_counts(log: str, nprocs: int) -> list[int]:
    """Each rank's ``Ran N tests`` from unittest's summary in a ``--tag-output`` log (0 for
    a rank that printed none)."""
    counts = [0] * nprocs
    for rank, count in _RAN.findall(log):
        if int(rank) < nprocs:
            counts[int(rank)] = int(count)
    return counts


class Jobs:
    """The jobs running now, so that an interrupted harness ends them (each job is its own
    session, out of reach of the harness's own process group)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.running: set[subprocess.Popen] = set()

    def add(self, proc: subprocess.Popen) -> None:
        with self.lock:
            self.running.add(proc)

    def discard(self, proc: subprocess.Popen) -> None:
        with self.lock:
            self.running.discard(proc)

    def end_all(self) -> None:
        with self.lock:
            for proc in list(self.running):
                end_job(proc)


def end_job(proc: subprocess.Popen) -> None:
    """SIGTERM first (mpirun then ends its ranks, which live in process groups of their
    own), SIGKILL to the job's group if it is still there after 5 s."""
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


JOBS = Jobs()


def run_file(
    side: str, mode: str, nprocs: int, test_file: str, tests: Path, work: Path, timeout: float
) -> Run:
    """Run one job; its log and per-rank records go to ``work/<side>-n<N>/<file>/``.

    ``mode`` ``driver``: each rank runs the driver, which records every test. ``plain``:
    the file itself is the program, as a user runs it; only each rank's ``Ran N tests``
    summary is read (it shows whether ``unittest.main()`` found the tests at all).
    """
    suffix = "" if mode == "driver" else "-plain"
    out = work / f"{side}-n{nprocs}{suffix}" / Path(test_file).stem
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    # Open MPI as installed, with the component selection of its system-wide params file.
    # That selection has no one-sided component that works (Win.Create fails, so real
    # test_rma*.py skip every test; enabling btl/ofi makes osc/rdma segfault in
    # Compare_and_swap), and its tcp BTL is what the processes Spawn creates need.
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    start = time.monotonic()
    with open(out / "log.txt", "w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            _command(side, mode, nprocs, test_file, out / "records"),
            cwd=tests,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: a timeout ends every rank
        )
        JOBS.add(proc)
        try:
            exit_code: int | None = proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            end_job(proc)
            exit_code, timed_out = None, True
        finally:
            JOBS.discard(proc)
    wall = round(time.monotonic() - start, 2)
    if mode == "plain":
        ran = ran_counts((out / "log.txt").read_text(encoding="utf-8", errors="replace"), nprocs)
        status = "timeout" if timed_out else ("ok" if exit_code == 0 else "crashed")
        return Run(test_file, side, nprocs, status, exit_code, wall, mode=mode, ran=ran)
    per_rank = []
    for rank in range(nprocs):
        path = out / "records" / f"rank-{rank}.jsonl"
        if path.is_file():
            lines = path.read_text(encoding="utf-8").splitlines()
            per_rank.append([json.loads(line) for line in lines if line.strip()])
    outcomes, details, done = fold(per_rank, nprocs)
    if timed_out:
        status = "timeout"
    elif outcomes.get("<import>") in ("error", "missing"):
        status = "import-error"
    elif not done or exit_code != 0:  # the driver exits 0: anything else ended the job
        status = "crashed"
    else:
        status = "ok"
    return Run(test_file, side, nprocs, status, exit_code, wall, outcomes, details)


# -- real Open MPI's results, cached --------------------------------------------------------


def versions() -> dict[str, str]:
    """What real Open MPI's results depend on."""
    try:
        numpy = metadata.version("numpy")
    except metadata.PackageNotFoundError:
        numpy = "none"
    return {
        "mpi4py": mpi4py_version(),
        "openmpi": openmpi_version(),
        "python": platform.python_version(),
        "numpy": numpy,
    }


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


class RealCache:
    """Real Open MPI's runs on disk, one JSON file per set of versions, entries keyed by
    file, ``-n`` and the digests of the test file and the driver. A timeout is not kept:
    on a loaded machine real jobs time out that finish in seconds on an idle one (real
    ``test_spawn.py`` hangs at ``-n 2`` and so is measured again on every run)."""

    def __init__(self, cache: Path, vers: dict[str, str], tests: Path):
        key = "-".join(f"{k}{v}" for k, v in sorted(vers.items()))
        self.path = cache / "openmpi-results" / f"{key}.json"
        self.tests = tests
        self.driver = _digest(DRIVER)
        self.entries = json.loads(self.path.read_text()) if self.path.is_file() else {}

    def _key(self, test_file: str, nprocs: int, mode: str) -> str:
        digests = f"{_digest(self.tests / test_file)}:{self.driver}"
        return f"{test_file}:{nprocs}:{mode}:{digests}"

    def get(self, test_file: str, nprocs: int, mode: str) -> Run | None:
        entry = self.entries.get(self._key(test_file, nprocs, mode))
        return Run(**entry) if entry else None

    def put(self, run: Run) -> None:
        if run.status != "timeout":
            self.entries[self._key(run.file, run.nprocs, run.mode)] = asdict(run)

    def save(self) -> None:
        """Merge into the file as it is now (another harness may have added entries)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        on_disk = json.loads(self.path.read_text()) if self.path.is_file() else {}
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({**on_disk, **self.entries}, indent=1, sort_keys=True))
        tmp.replace(self.path)


# -- comparison -----------------------------------------------------------------------------


@dataclass
class Row:
    """One file at one ``-n``: real's passes, how many of them we pass, and what fails."""

    file: str
    nprocs: int
    real: Run | None
    ours: Run | None
    real_plain: Run | None = None
    ours_plain: Run | None = None
    """The file run unmodified (``--unmodified``): each rank's ``Ran N tests``."""

    @property
    def real_passes(self) -> int:
        return len(self.real.passes) if self.real else 0

    @property
    def matched(self) -> int:
        if not (self.real and self.ours):
            return 0
        return len(self.real.passes & self.ours.passes)

    @property
    def ratio(self) -> float | None:
        """Share of real's passes we pass; ``None`` when real passes none."""
        return self.matched / self.real_passes if self.real_passes else None

    @property
    def ran_nothing(self) -> bool:
        """Real ran tests, ours ran none (under the driver, or on some rank of the file run
        unmodified): the file fails, whatever else is true."""
        ran = {t for t, o in self.ours.outcomes.items() if t != "<import>"} if self.ours else ()
        if self.real_plain and self.ours_plain and max(self.real_plain.ran, default=0) > 0:
            if min(self.ours_plain.ran, default=0) == 0:
                return True
        return self.real_passes > 0 and not ran

    def failing(self) -> list[tuple[str, str, str]]:
        """Tests real passes and we do not: (test, our outcome, detail), sorted."""
        if not (self.real and self.ours):
            return []
        lost = sorted(self.real.passes - self.ours.passes)
        return [
            (t, self.ours.outcomes.get(t, "not run"), self.ours.details.get(t, "")) for t in lost
        ]

    def note(self) -> str:
        notes = []
        for label, run in (("real", self.real), ("ours", self.ours)):
            if run is not None and run.status == "crashed":
                notes.append(f"{label} crashed (exit {run.exit_code})")
            elif run is not None and run.status != "ok":
                notes.append(f"{label} {run.status}")
        if self.ours is not None and self.ran_nothing:
            notes.append("ours ran 0 tests")
        if self.real_plain and self.ours_plain and self.real_plain.ran != self.ours_plain.ran:
            notes.append(f"unmodified: ours ran {self.ours_plain.ran}, real {self.real_plain.ran}")
        if self.ours and self.real and not self.real_passes and self.ours.passes:
            notes.append(f"ours passes {len(self.ours.passes)}, real none")
        if self.ours and self.ours.status == "import-error":
            detail = self.ours.details.get("<import>", "")
            notes.append(detail.rsplit(": ", 1)[-1][:60] if detail else "")
        return "; ".join(n for n in notes if n)

    def as_json(self) -> dict:
        return {
            "real_passes": self.real_passes,
            "our_passes": len(self.ours.passes) if self.ours else None,
            "matched": self.matched,
            "ratio": self.ratio,
            "note": self.note(),
            "real": asdict(self.real) if self.real else None,
            "ours": asdict(self.ours) if self.ours else None,
            "real_unmodified": asdict(self.real_plain) if self.real_plain else None,
            "ours_unmodified": asdict(self.ours_plain) if self.ours_plain else None,
            "failing": [{"test": t, "outcome": o, "detail": d} for t, o, d in self.failing()],
        }


def totals(rows: Sequence[Row]) -> tuple[int, int]:
    """(real passes, of them ours) over rows, the overall percentage's terms."""
    return sum(r.real_passes for r in rows), sum(r.matched for r in rows)


def _pct(num: int, den: int) -> str:
    return f"{100 * num / den:.1f}%" if den else "-"


def _cell(row: Row | None) -> tuple[str, str, str]:
    if row is None:
        return ("", "", "")
    real = str(row.real_passes) if row.real else "-"
    ours = str(row.matched) if row.ours else "-"
    pct = _pct(row.matched, row.real_passes) if (row.real and row.ours) else "-"
    return (real, ours, pct)


def _by_file(rows: Sequence[Row]) -> dict[str, dict[int, Row]]:
    table: dict[str, dict[int, Row]] = {}
    for row in rows:
        table.setdefault(row.file, {})[row.nprocs] = row
    return table


def rich_table(rows: Sequence[Row], nprocs: Sequence[int]) -> Table:
    table = Table(title="mpi4py's test suite: tests real Open MPI passes that pyopenib passes")
    table.add_column("file")
    for n in nprocs:
        table.add_column(f"-n {n} real", justify="right")
        table.add_column("ours", justify="right")
        table.add_column("%", justify="right")
    table.add_column("notes")
    for file, by_n in _by_file(rows).items():
        cells = [c for n in nprocs for c in _cell(by_n.get(n))]
        notes = "; ".join(f"n{n}: {by_n[n].note()}" for n in nprocs if n in by_n and by_n[n].note())
        table.add_row(file, *cells, notes)
    overall = []
    for n in nprocs:
        real, matched = totals([r for r in rows if r.nprocs == n])
        overall += [str(real), str(matched), _pct(matched, real)]
    table.add_row("[bold]all files[/bold]", *overall, "", end_section=True)
    return table


def markdown(rows: Sequence[Row], nprocs: Sequence[int], header: str = "") -> str:
    head = ["file"] + [c for n in nprocs for c in (f"-n {n} real", "ours", "%")] + ["notes"]
    lines = [header] if header else []
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for file, by_n in _by_file(rows).items():
        cells = [c for n in nprocs for c in _cell(by_n.get(n))]
        notes = "; ".join(f"n{n}: {by_n[n].note()}" for n in nprocs if n in by_n and by_n[n].note())
        lines.append("| " + " | ".join([f"`{file}`", *cells, notes.replace("|", "/")]) + " |")
    overall = []
    for n in nprocs:
        real, matched = totals([r for r in rows if r.nprocs == n])
        overall += [f"**{real}**", f"**{matched}**", f"**{_pct(matched, real)}**"]
    lines.append("| " + " | ".join(["**all files**", *overall, ""]) + " |")
    return "\n".join(lines) + "\n"


def _git_head() -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head} + uncommitted changes" if dirty else head


# -- the whole comparison -------------------------------------------------------------------


@dataclass
class Suite:
    """What to run and where; ``compare`` runs it and returns one ``Row`` per file and -n."""

    files: Sequence[str] = ()
    nprocs: Sequence[int] = (2,)
    jobs: int = os.cpu_count() or 1
    timeout: float = TIMEOUT_S
    only: str | None = None
    cache_real: bool = False
    unmodified: bool = False
    """Also run each file itself as the program and compare the ``Ran N tests`` counts."""
    cache: Path = DEFAULT_CACHE
    logs: Path | None = None
    """Where each job's log and records stay (``<side>-n<N>/<file>/``); by default a
    private temporary folder, removed afterwards, so harnesses may run side by side."""

    def prepare(self) -> tuple[Path, list[str], dict[str, str]]:
        vers = versions()
        tests = obtain_tests(vers["mpi4py"], self.cache)
        return tests, test_files(tests, self.files), vers

    def compare(self, progress=None) -> tuple[list[Row], dict[str, str]]:
        tests, files, vers = self.prepare()
        if self.logs is not None:
            return self._compare(tests, files, vers, self.logs, progress)
        with tempfile.TemporaryDirectory(prefix="mpi4py-suite-") as work:
            return self._compare(tests, files, vers, Path(work), progress)

    def _compare(self, tests, files, vers, work: Path, progress):
        real_cache = RealCache(self.cache, vers, tests) if self.cache_real else None
        runs: dict[tuple[str, str, str, int], Run] = {}
        todo = []
        sides = [s for s in SIDES if self.only in (None, s)]
        modes = ("driver", "plain") if self.unmodified else ("driver",)
        for n in self.nprocs:
            for f in files:
                for side in sides:
                    for mode in modes:
                        cached = None
                        if real_cache is not None and side == "openmpi":
                            cached = real_cache.get(f, n, mode)
                        if cached is not None:
                            runs[(side, mode, f, n)] = cached
                        else:
                            todo.append((side, mode, n, f))
        # Bigger files first, more ranks first: the long jobs start early, the tail is short.
        todo.sort(key=lambda t: (-(tests / t[3]).stat().st_size * t[2], t))
        pool = ThreadPoolExecutor(max_workers=max(1, self.jobs))
        try:
            futures = {
                pool.submit(run_file, side, mode, n, f, tests, work, self.timeout): (
                    side,
                    mode,
                    f,
                    n,
                )
                for side, mode, n, f in todo
            }
            for future in as_completed(futures):
                key = futures[future]
                run = future.result()
                runs[key] = run
                if real_cache is not None and run.side == "openmpi":
                    real_cache.put(run)
                if progress is not None:
                    progress(run)
        except BaseException:  # interrupted (Ctrl-C, a test runner's timeout): end the jobs
            pool.shutdown(wait=False, cancel_futures=True)
            JOBS.end_all()
            raise
        pool.shutdown()
        if real_cache is not None:
            real_cache.save()
        rows = [
            Row(
                f,
                n,
                runs.get(("openmpi", "driver", f, n)),
                runs.get(("pyopenib", "driver", f, n)),
                runs.get(("openmpi", "plain", f, n)),
                runs.get(("pyopenib", "plain", f, n)),
            )
            for f in files
            for n in self.nprocs
        ]
        return rows, vers


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mpi4py_suite.py",
        description="Run mpi4py's test suite on real Open MPI and on pyopenib; compare per test.",
    )
    p.add_argument("--files", nargs="+", default=[], help="test files (default: all)")
    p.add_argument(
        "-n",
        "--nprocs",
        type=int,
        nargs="+",
        default=list(NPROCS),
        help="rank counts (default: 1 2 4)",
    )
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="jobs at once")
    p.add_argument("--timeout", type=float, default=TIMEOUT_S, help="wall seconds per job")
    p.add_argument("--only", choices=SIDES, help="run one side only")
    p.add_argument("--cache-real", action="store_true", help="reuse real Open MPI's results")
    p.add_argument(
        "--unmodified",
        action="store_true",
        help="also run each file itself as the program and compare its 'Ran N tests'",
    )
    p.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE, help="sdist, real results")
    p.add_argument("--logs", type=Path, help="keep each job's log and records here")
    p.add_argument("--failing", action="store_true", help="list the tests we fail, per file")
    p.add_argument("--json", type=Path, help="write every result as JSON")
    p.add_argument("--md", type=Path, help="write the table as markdown")
    p.add_argument("--quiet", action="store_true", help="no per-job progress lines")
    return p


def _terminated(signum, frame):
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] = ("--cache-real",)) -> int:
    """The command line; without arguments (``make bench``): every file at -n 1, 2, 4 with
    real Open MPI's results cached."""
    args = _parser().parse_args(list(argv))
    signal.signal(signal.SIGTERM, _terminated)  # a SIGTERM ends the running jobs too
    console = Console(width=160)
    suite = Suite(
        files=args.files,
        nprocs=args.nprocs,
        jobs=args.jobs,
        timeout=args.timeout,
        only=args.only,
        cache_real=args.cache_real,
        unmodified=args.unmodified,
        cache=args.cache_dir,
        logs=args.logs,
    )

    def progress(run: Run) -> None:
        if not args.quiet:
            what = f"ran {run.ran}" if run.mode == "plain" else f"{len(run.passes):4} passed"
            console.print(
                f"  {run.side:8} -n {run.nprocs} {run.file:28} {run.mode:6} {run.status:12} "
                f"{what}  {run.wall_s:6.1f} s",
                highlight=False,
            )

    started, commit = datetime.now(UTC), _git_head()
    try:
        rows, vers = suite.compare(progress)
    except SuiteUnavailable as exc:
        console.print(f"mpi4py suite unavailable: {exc}")
        return 2
    console.print(rich_table(rows, suite.nprocs))
    for n in suite.nprocs:
        real, matched = totals([r for r in rows if r.nprocs == n])
        console.print(
            f"-n {n}: pyopenib passes {matched} of the {real} tests real Open MPI "
            f"passes ({_pct(matched, real)})",
            highlight=False,
        )
    if args.failing:
        for row in rows:
            for test, outcome, detail in row.failing():
                console.print(
                    f"[{row.file} -n {row.nprocs}] {test}: {outcome} {detail}",
                    highlight=False,
                    markup=False,
                )
    header = (
        f"Measured {started:%Y-%m-%d %H:%M}-{datetime.now(UTC):%H:%M} UTC, working tree at "
        f"commit {commit} when it started; " + ", ".join(f"{k} {v}" for k, v in vers.items()) + "\n"
    )
    if args.md:
        args.md.parent.mkdir(parents=True, exist_ok=True)
        args.md.write_text(markdown(rows, suite.nprocs, header))
    if args.json:
        overall = {}
        for n in suite.nprocs:
            real, matched = totals([r for r in rows if r.nprocs == n])
            overall[str(n)] = {"real_passes": real, "matched": matched}
        doc = {
            "measured_at": f"{started:%Y-%m-%dT%H:%M:%SZ}",
            "commit": commit,
            "versions": vers,
            "nprocs": list(suite.nprocs),
            "overall": overall,
            "files": {
                f: {str(n): row.as_json() for n, row in by_n.items()}
                for f, by_n in _by_file(rows).items()
            },
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
