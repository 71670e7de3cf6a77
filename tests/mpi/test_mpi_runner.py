"""The job runner: how a job ends (ok, crash, Abort, sys.exit, deadlock, timeout), what
each rank sees (argv, __main__, its own globals) and what the namespace refuses."""

import io
import sys
import textwrap

from pyopenib.mpi import EXIT_DEADLOCK, EXIT_TIMEOUT, run_job
from pyopenib.mpi.runner import JobResult

from .loopback_btl import make_loopback_btls


def _run(tmp_path, source, nprocs=2, argv=(), **kw) -> tuple[JobResult, str, str]:
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(source))
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(prog), nprocs, make_loopback_btls, argv, stdout=out, stderr=err, **kw)
    return result, out.getvalue(), err.getvalue()


def test_each_rank_runs_as_main_with_its_own_globals_and_argv(tmp_path):
    result, out, _ = _run(
        tmp_path,
        """
        import sys
        from mpi4py import MPI
        import mpi4py.MPI as M
        counter = globals().get("counter", 0) + 1
        if __name__ == "__main__":
            print(MPI.COMM_WORLD.rank, counter, sys.argv[1:], M is MPI)
        """,
        nprocs=3,
        argv=("a", "-x"),
        tag_output=True,
    )
    assert result.exit_code == 0 and result.reason == "ok"
    assert sorted(out.splitlines()) == [f"[1,{r}]<stdout>:{r} 1 ['a', '-x'] True" for r in range(3)]


def test_the_job_restores_sys_and_hides_pyopenibs_mpi4py_afterwards(tmp_path):
    before = (sys.stdout, sys.argv, sys.modules.get("mpi4py"))
    _run(tmp_path, "from mpi4py import MPI\n")
    assert (sys.stdout, sys.argv, sys.modules.get("mpi4py")) == before


def test_a_rank_that_raises_aborts_the_job_with_its_traceback(tmp_path):
    result, _, err = _run(
        tmp_path,
        """
        from mpi4py import MPI
        if MPI.COMM_WORLD.rank == 1:
            raise ValueError("boom")
        MPI.COMM_WORLD.recv(source=1)
        """,
        tag_output=True,
    )
    assert (result.exit_code, result.reason, result.rank) == (1, "failed", 1)
    assert "[1,1]<stderr>:ValueError: boom" in err
    assert "Process name: [[1,1],1]" in err and "Exit code:    1" in err


def test_abort_exits_with_its_errorcode_and_mpiruns_message(tmp_path):
    result, _, err = _run(
        tmp_path,
        """
        from mpi4py import MPI
        try:
            MPI.COMM_WORLD.Abort(7) if MPI.COMM_WORLD.rank == 0 else MPI.COMM_WORLD.barrier()
        except Exception:
            print("Abort must not be catchable as an Exception")
        """,
    )
    assert (result.exit_code, result.reason, result.rank) == (7, "abort", 0)
    assert "MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD" in err
    assert "errorcode 7" in err


def test_sys_exit_with_nonzero_status_fails_the_job(tmp_path):
    result, _, _ = _run(tmp_path, "import sys\nsys.exit(3)\n")
    assert (result.exit_code, result.reason) == (3, "failed")
    result, _, _ = _run(tmp_path, "import sys\nsys.exit(0)\n")
    assert result.exit_code == 0


def test_deadlock_names_each_ranks_blocking_call_and_pending_requests(tmp_path):
    result, _, err = _run(
        tmp_path,
        """
        import numpy as np
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        if comm.rank == 0:
            comm.Irecv(np.zeros(3, "i"), source=1, tag=9)
            comm.Recv(np.zeros(2), source=1, tag=5)
        """,
    )
    assert (result.exit_code, result.reason) == (EXIT_DEADLOCK, "deadlock")
    assert "deadlock" in err
    assert "rank 0: blocked in MPI_Recv(count=2, datatype=MPI_DOUBLE, source=1, tag=5" in err
    assert "pending request: MPI_Irecv(count=3, datatype=MPI_INT, source=1, tag=9" in err
    assert "rank 1: blocked in MPI_Finalize" in err


def test_timeout_stops_a_spinning_job(tmp_path):
    result, _, err = _run(
        tmp_path,
        """
        from mpi4py import MPI
        while not MPI.COMM_WORLD.Iprobe(source=0, tag=1):
            pass
        """,
        nprocs=1,
        timeout=0.001,
    )
    assert (result.exit_code, result.reason) == (EXIT_TIMEOUT, "timeout")
    assert "--timeout 0.001" in err


def test_names_outside_the_subset_raise_not_implemented_naming_them(tmp_path):
    result, out, _ = _run(
        tmp_path,
        """
        from mpi4py import MPI
        for what in (lambda: MPI.Register_datarep, lambda: MPI.SESSION_NULL.Get_num_psets):
            try:
                what()
            except NotImplementedError as exc:
                print(exc)
        print(hasattr(MPI, "Register_datarep"))
        """,
        nprocs=1,
    )
    assert out.splitlines() == [
        "mpi4py.MPI.Register_datarep is not implemented by pyopenib's MPI",
        "mpi4py.MPI.Session.Get_num_psets is not implemented by pyopenib's MPI",
        "False",
    ]


def test_wtime_is_simulated_seconds(tmp_path):
    _, out, _ = _run(
        tmp_path,
        """
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        t0 = MPI.Wtime()
        if comm.rank == 0:
            comm.send(None, dest=1)
            comm.recv(source=1)
            print(round((MPI.Wtime() - t0) * 1e6, 3), MPI.Wtick())
        else:
            comm.send(comm.recv(source=0), dest=0)
        """,
    )
    # Two 1 us small-class hops of the loopback BTL plus the pickled bytes on the wire.
    rtt_us, tick = out.split()
    assert 2.0 < float(rtt_us) < 2.1 and float(tick) == 1e-12


def test_output_lines_appear_in_simulated_time_order(tmp_path):
    _, out, _ = _run(
        tmp_path,
        """
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        if comm.rank == 0:
            print("a", end="")
            comm.send(1, dest=1)
            comm.recv(source=1)
            print("c")
        else:
            comm.recv(source=0)
            print("b")
            comm.send(2, dest=0)
        """,
    )
    assert out == "b\nac\n"
