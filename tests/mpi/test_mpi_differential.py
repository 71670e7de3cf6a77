"""Our mpi4py programs print the same, rank by rank, under real Open MPI + mpi4py and
under pyopenib's runner (over the loopback test BTL and over the openib BTL)."""

import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pyopenib.mpi import run_job

from .loopback_btl import make_loopback_btls

PROGRAMS = Path(__file__).parent / "programs"
CASES = [
    ("p2p_basic.py", 2),
    ("p2p_basic.py", 3),
    ("any_source.py", 4),
    ("ordering_sizes.py", 2),
    ("collectives.py", 3),
    ("collectives.py", 4),
    ("collectives.py", 5),
    ("probe_and_status.py", 2),
    ("requests.py", 3),
    ("errors_and_comms.py", 4),
]


def _reference_missing() -> str | None:
    if shutil.which("mpirun") is None:
        return "mpirun (Debian openmpi-bin) is not installed"
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install -e '.[test]' after `make openmpi`)"
    return None


REAL_HANG_GUARD_S = 300
"""How long a real mpirun may take before it counts as hung: its ranks busy-poll, and on
a loaded 2-core machine a few messages once took over a minute (a slow run, not a hang)."""


def real_mpirun(
    nprocs: int,
    args: list[str],
    *,
    mca_btl: str | None = "self,vader",
    tries=1,
    guard_s: float = REAL_HANG_GUARD_S,
):
    """``mpirun --tag-output -n N python ARGS`` on real Open MPI + mpi4py, the completed
    process (skipped where they are missing, a failure in CI). ``mca_btl``: the BTLs real
    MPI may use (None: the machine's own, which a spawned job needs: vader cannot reach
    it); ``tries``: a run that does not finish within ``guard_s`` is tried again (real Open
    MPI 4.1's spawn now and then hangs under load and never finishes)."""
    missing = _reference_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"differential reference unavailable in CI: {missing}")
        pytest.skip(missing)
    cmd = ["mpirun", "--oversubscribe", "--tag-output", "-n", str(nprocs)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    env = dict(os.environ) if mca_btl is None else dict(os.environ, OMPI_MCA_btl=mca_btl)
    env.pop("PYTHONUNBUFFERED", None)  # whole lines per write, so mpirun tags each once
    for attempt in range(1, tries + 1):
        try:
            return subprocess.run(
                [*cmd, sys.executable, *args],
                env=env,
                capture_output=True,
                text=True,
                timeout=guard_s,
            )
        except subprocess.TimeoutExpired:
            if attempt == tries:
                raise
    raise AssertionError("unreachable: tries >= 1")


def _real_output(program: Path, nprocs: int) -> dict[int, list[str]]:
    missing = _reference_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"differential reference unavailable in CI: {missing}")
        pytest.skip(missing)
    env = dict(os.environ, OMPI_MCA_btl="self,vader", OMPI_MCA_rmaps_base_oversubscribe="1")
    env.pop("PYTHONUNBUFFERED", None)  # whole lines per write, so mpirun tags each once
    with tempfile.TemporaryDirectory() as outdir:
        cmd = ["mpirun", "--oversubscribe", "--output-filename", outdir, "-n", str(nprocs)]
        if os.geteuid() == 0:
            cmd.insert(1, "--allow-run-as-root")
        cmd += [sys.executable, str(program)]
        proc = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=REAL_HANG_GUARD_S
        )
        assert proc.returncode == 0, proc.stderr
        return {
            r: (Path(outdir) / "1" / f"rank.{r}" / "stdout").read_text().splitlines()
            for r in range(nprocs)
        }


def _split_tagged(text: str, nprocs: int) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {r: [] for r in range(nprocs)}
    for line in text.splitlines():
        tag, _, rest = line.partition("]<stdout>:")
        out[int(tag.split(",")[1])].append(rest)
    return out


def _our_output(program: Path, nprocs: int, make_btls) -> dict[int, list[str]]:
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(program), nprocs, make_btls, tag_output=True, stdout=out, stderr=err)
    assert result.exit_code == 0, err.getvalue()
    return _split_tagged(out.getvalue(), nprocs)


def _openib_btls():
    from pyopenib.apps.run_command import openib_btls

    return openib_btls("mellanox-hermon", (), 1)


@pytest.mark.parametrize("program,nprocs", CASES, ids=[f"{p}-n{n}" for p, n in CASES])
def test_program_prints_the_same_as_under_real_mpirun(program, nprocs):
    path = PROGRAMS / program
    ours = _our_output(path, nprocs, make_loopback_btls)
    assert ours == _real_output(path, nprocs)


@pytest.mark.parametrize("program,nprocs", CASES[::2], ids=[f"{p}-n{n}" for p, n in CASES[::2]])
def test_program_over_openib_prints_the_same_as_over_loopback(program, nprocs):
    path = PROGRAMS / program
    assert _our_output(path, nprocs, _openib_btls()) == _our_output(
        path, nprocs, make_loopback_btls
    )
