"""``mpi4py.futures`` as real mpi4py 4.1.2 has it, each checked against real mpirun:
``MPIPoolExecutor`` spawning its workers in a plain program, ``python -m mpi4py.futures``
(rank 0 runs the program, the other ranks serve it), ``MPICommExecutor``, ``collect``/
``compose``, a task's ``RemoteTraceback``, initializers, and the rank's exit joining an
executor left running."""

import io
from pathlib import Path

import pytest

from pyopenib.apps.run_command import openib_btls
from pyopenib.mpi import run_job
from pyopenib.mpi.package import program_command

from .loopback_btl import make_loopback_btls
from .test_mpi_differential import _our_output, _real_output, _split_tagged, real_mpirun
from .test_package import _INNER_TAG

PROGRAMS = Path(__file__).parent / "programs"


def _ours(args: list[str], nprocs: int) -> dict[int, list[str]]:
    """``pyopenib run -n N python ARGS`` in process, over openib ranks that may spawn."""
    path, argv = program_command("python", args)
    out, err = io.StringIO(), io.StringIO()
    result = run_job(
        path,
        nprocs,
        openib_btls("mellanox-hermon", (), 1),
        argv,
        tag_output=True,
        stdout=out,
        stderr=err,
        add_btls=lambda btls, count: btls.add_processes(count),
    )
    assert result.exit_code == 0, err.getvalue()
    return _split_tagged(out.getvalue(), nprocs)


def _real(args: list[str], nprocs: int) -> dict[int, list[str]]:
    proc = real_mpirun(nprocs, args, mca_btl=None, tries=2)
    assert proc.returncode == 0, proc.stderr
    return _split_tagged(_INNER_TAG.sub("", proc.stdout), nprocs)


def test_mpipoolexecutor_in_a_plain_program_spawns_its_workers_as_real_mpi4py():
    args = [str(PROGRAMS / "futures_spawn.py")]
    ours = _ours(args, 1)
    assert ours == _real(args, 1)
    assert ours[0][1:3] == ["workers 3", "[(0, 3, True), (1, 3, True), (2, 3, True)]"]


@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_python_m_mpi4py_futures_serves_rank_0s_executors_as_real_mpi4py(nprocs):
    args = ["-m", "mpi4py.futures", str(PROGRAMS / "futures_pool.py")]
    assert _ours(args, nprocs) == _real(args, nprocs)


@pytest.mark.parametrize("nprocs", [1, 3])
def test_mpicommexecutor_prints_what_real_open_mpi_prints(nprocs):
    program = PROGRAMS / "futures_comm.py"
    assert _our_output(program, nprocs, make_loopback_btls) == _real_output(program, nprocs)


def test_python_m_mpi4py_futures_usage_errors_as_real():
    path, argv = program_command("python", ["-m", "mpi4py.futures", "no-such-file.py"])
    out, err = io.StringIO(), io.StringIO()
    result = run_job(path, 2, make_loopback_btls, argv, stdout=out, stderr=err)
    assert result.exit_code == 1
    assert "Path does not exist: no-such-file.py" in err.getvalue()
    assert "usage: python" in err.getvalue() and "-m mpi4py.futures <pyfile>" in err.getvalue()
