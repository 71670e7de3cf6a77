"""``mpi4py.futures`` as real mpi4py 4.1.2 has it, each checked against real mpirun:
``MPIPoolExecutor`` spawning its workers in a plain program, ``python -m mpi4py.futures``
(rank 0 runs the program, the other ranks serve it), ``MPICommExecutor``, ``collect``/
``compose``, a task's ``RemoteTraceback``, initializers, and the rank's exit joining an
executor left running."""

import io
import textwrap
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
    # a spawning run takes ~1.3 s on a quiet machine; one that has not finished in two
    # minutes is real Open MPI's occasional spawn hang (seen once in a loaded fresh-clone
    # suite on 2026-12-03): three short tries, not two of five minutes
    proc = real_mpirun(nprocs, args, mca_btl=None, tries=3, guard_s=120)
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


def _run_program(tmp_path, source: str, nprocs: int = 1) -> list[str]:
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(source))
    return _ours([str(prog)], nprocs)[0]


def test_a_futures_timeout_expires_while_the_worker_sleeps_in_simulated_time(tmp_path):
    lines = _run_program(
        tmp_path,
        """
        import time
        from mpi4py import MPI
        from mpi4py.futures import MPIPoolExecutor, TimeoutError, wait, FIRST_COMPLETED
        if __name__ == "__main__":  # workers import this file as __worker__
            with MPIPoolExecutor(2) as executor:
                executor.bootup()
                start = MPI.Wtime()
                slow = executor.submit(time.sleep, 0.5)
                try:
                    slow.result(timeout=0.2)
                except TimeoutError:
                    print("timeout", slow.running(), 0.2 <= MPI.Wtime() - start < 0.5)
                fast = executor.submit(pow, 2, 10)
                done, not_done = wait([slow, fast], return_when=FIRST_COMPLETED)
                print(done == {fast}, not_done == {slow})
                slow.result()
                print("slept", MPI.Wtime() - start >= 0.5)
        """,
    )
    assert lines == ["timeout True True", "True True", "slept True"]


def test_wait_does_not_count_a_cancelled_future_not_yet_notified_as_done(tmp_path):
    lines = _run_program(
        tmp_path,
        """
        from concurrent.futures import Future as Plain
        from mpi4py.futures import MPIPoolExecutor, wait, FIRST_COMPLETED
        if __name__ == "__main__":  # workers import this file as __worker__
            cancelled = Plain()
            cancelled.cancel()  # CANCELLED: concurrent.futures.wait does not count it done
            with MPIPoolExecutor(1) as executor:
                f = executor.submit(abs, -4)
                done, not_done = wait([cancelled, f], return_when=FIRST_COMPLETED)
                print(done == {f}, not_done == {cancelled})
        """,
    )
    assert lines == ["True True"]


def test_an_executors_pool_has_mpi4pys_thread_queue_event_cancel_and_join(tmp_path):
    lines = _run_program(
        tmp_path,
        """
        import time
        from mpi4py.futures import MPIPoolExecutor, wait
        if __name__ == "__main__":  # workers import this file as __worker__
            executor = MPIPoolExecutor(1)
            print(executor._pool is None)
            executor.bootup(wait=False)
            pool = executor._pool
            print(pool.event.is_set(), pool.thread.is_alive())
            first = executor.submit(time.sleep, 0.1)
            held = [executor.submit(time.sleep, 0.1) for _ in range(3)]
            print(len(pool.queue))
            executor.bootup()
            print(pool.event.is_set(), len(pool.queue))
            pool.cancel()
            executor.shutdown(wait=False)
            done, not_done = wait([first, *held])
            print(first.cancelled(), [f.cancelled() for f in held], not_done == set())
            del executor
            pool.thread.join()
            print(pool.thread.is_alive())
            try:
                pool.queue.pop()
            except LookupError:
                print("empty")
        """,
    )
    assert lines == [
        "True",
        "False True",
        "4",
        "True 0",
        "False [True, True, True] True",
        "False",
        "empty",
    ]


def test_use_pkl5_from_the_environment_warns_on_an_unexpected_value(tmp_path):
    lines = _run_program(
        tmp_path,
        """
        import os, warnings
        from mpi4py.futures import MPIPoolExecutor
        if __name__ == "__main__":  # workers import this file as __worker__
            os.environ["MPI4PY_FUTURES_USE_PKL5"] = "foobar"
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with MPIPoolExecutor(1) as executor:
                    print(executor.submit(abs, -1).result())
            del os.environ["MPI4PY_FUTURES_USE_PKL5"]
            print([str(w.message) for w in caught if w.category is RuntimeWarning])
        """,
    )
    assert lines == [
        "1",
        "[\"environment variable MPI4PY_FUTURES_USE_PKL5: unexpected value 'foobar'\"]",
    ]


def test_a_single_rank_pool_runs_its_tasks_in_a_thread_so_a_timed_wait_expires(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        textwrap.dedent(
            """
            import time
            from mpi4py import MPI
            from mpi4py.futures import MPICommExecutor, MPIPoolExecutor, TimeoutError
            if __name__ == "__main__":
                for make in (lambda: MPIPoolExecutor(), lambda: MPICommExecutor(MPI.COMM_SELF)):
                    with make() as executor:
                        start = MPI.Wtime()
                        slow = executor.submit(time.sleep, 0.5)
                        try:
                            slow.result(timeout=0.1)
                        except TimeoutError:
                            print("timeout", slow.running(), round(MPI.Wtime() - start, 3))
                        print(slow.result(), MPI.Wtime() - start >= 0.5)
            """
        )
    )
    # under python -m mpi4py.futures on one rank, the shared pool has no other rank
    lines = _ours(["-m", "mpi4py.futures", str(prog)], 1)[0]
    assert lines == ["timeout True 0.1", "None True"] * 2
