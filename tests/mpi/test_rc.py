"""``mpi4py.rc``, ``MPI4PY_RC_*`` and initialisation, per rank, checked against real mpirun:
what ``import mpi4py.MPI`` reads (warnings for bad values), whether MPI is initialised
(``rc.initialize``), the thread level asked for, the error handlers ``rc.errors`` gives
``COMM_WORLD``, ``COMM_SELF``, a new communicator and a file, ``MPI.pickle`` from the
environment, and mpirun's failure when a rank exits with MPI still active."""

import io
import textwrap
from pathlib import Path

import pytest

from pyopenib.mpi import run_job

from .loopback_btl import make_loopback_btls
from .test_mpi_differential import _split_tagged, real_mpirun

PROGRAM = Path(__file__).parent / "programs" / "rc_init.py"

CASES = {
    "defaults": [],
    "errors-default": ["errors=default"],
    "errors-fatal": ["errors=fatal"],
    "threads-false": ["threads=false"],
    "thread-level-single": ["thread_level=single", "finalize=true"],
    "bad-values": ["initialize=bad", "errors=bad", "thread_level=bad", "irecv_bufsz=bad"],
    "environment": [
        "env:MPI4PY_RC_ERRORS=default",
        "env:MPI4PY_RC_THREAD_LEVEL=funneled",
        "env:MPI4PY_PICKLE_PROTOCOL=3",
        "env:MPI4PY_PICKLE_THRESHOLD=1024",
    ],
    "not-initialized": ["initialize=false"],  # Init_thread, no Finalize: exits improperly
    "environment-not-initialized": ["env:MPI4PY_RC_INITIALIZE=no", "finalize=true"],
}


def _ours(path: Path, nprocs: int, args):
    out, err = io.StringIO(), io.StringIO()
    result = run_job(
        str(path), nprocs, make_loopback_btls, list(args), tag_output=True, stdout=out, stderr=err
    )
    return result.exit_code, _split_tagged(out.getvalue(), nprocs), err.getvalue()


def _real(path: Path, nprocs: int, args):
    proc = real_mpirun(nprocs, [str(path), *args])
    stdout = "\n".join(line for line in proc.stdout.splitlines() if "]<stdout>:" in line)
    return proc.returncode, _split_tagged(stdout, nprocs), proc.stderr


@pytest.mark.parametrize("case", list(CASES))
def test_rc_and_environment_at_import_behave_as_real_mpi4py(case):
    ours, real = _ours(PROGRAM, 2, CASES[case]), _real(PROGRAM, 2, CASES[case])
    assert ours[:2] == real[:2], ours[2]
    if ours[0]:
        assert "exiting improperly" in ours[2] and "exiting improperly" in real[2]


def test_init_fini_demos_of_mpi4py_pass(tmp_path):
    """mpi4py's demo/init-fini checks, in one program per rank: rc.initialize false,
    Init and Finalize by hand, Init_thread, rc removed before the import."""
    prog = tmp_path / "prog.py"
    prog.write_text(
        textwrap.dedent(
            """
            import sys
            import mpi4py
            del mpi4py.rc
            del sys.modules["mpi4py.rc"]
            from mpi4py import MPI
            assert MPI.Is_initialized() and not MPI.Is_finalized()
            MPI.Finalize()
            assert MPI.Is_initialized() and MPI.Is_finalized()
            print("ok", MPI.COMM_WORLD.Get_rank() if False else "")
            """
        )
    )
    code, out, err = _ours(prog, 2, [])
    assert code == 0, err
    assert out == {0: ["ok "], 1: ["ok "]}


def test_a_second_init_ends_the_rank_as_open_mpi(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text("from mpi4py import MPI\nMPI.Init()\n")
    code, _, err = _ours(prog, 1, [])
    assert code == 1
    assert "MPI (via MPI_INIT or MPI_INIT_THREAD) more than once" in err


def test_each_rank_reads_its_own_rc(tmp_path):
    """Ranks are processes: rank 1's rc change is not rank 0's."""
    prog = tmp_path / "prog.py"
    prog.write_text(
        textwrap.dedent(
            """
            from mpi4py import rc
            first = rc.errors
            rc.errors = "fatal"
            from mpi4py import MPI
            eh = MPI.COMM_WORLD.Get_errhandler()
            print(first, eh == MPI.ERRORS_ARE_FATAL)
            """
        )
    )
    code, out, err = _ours(prog, 2, [])
    assert code == 0, err
    assert out == {0: ["exception True"], 1: ["exception True"]}


_BEFORE_INIT = {
    "rank": "print(MPI.COMM_WORLD.Get_rank())",
    "size-property": "print(MPI.COMM_SELF.size)",
    "barrier": "MPI.COMM_WORLD.Barrier()",
    "send-object": "MPI.COMM_WORLD.send(1, dest=0)",
    "finalize": "MPI.Finalize()",
}


@pytest.mark.parametrize("case", list(_BEFORE_INIT))
def test_a_call_before_mpi_init_ends_the_rank_with_open_mpis_message(tmp_path, case):
    prog = tmp_path / "prog.py"
    prog.write_text(
        textwrap.dedent(
            """
            import mpi4py
            mpi4py.rc.initialize = False
            from mpi4py import MPI
            print("initialized", MPI.Is_initialized(), MPI.Wtime() >= 0, flush=True)
            try:
                CALL
            except Exception as exc:  # Open MPI aborts the process: nothing to catch
                print("caught", type(exc).__name__)
            """
        ).replace("CALL", _BEFORE_INIT[case])
    )

    def stars(err: str) -> list[str]:
        return [line.split(">:")[-1] for line in err.splitlines() if "*** " in line]

    ours, real = _ours(prog, 1, []), _real(prog, 1, [])
    assert ours[:2] == real[:2] == (1, {0: ["initialized False True"]})
    assert stars(ours[2]) == stars(real[2]) and len(stars(ours[2])) == 3
