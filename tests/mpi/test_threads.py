"""A rank's Python threads call MPI (MPI_THREAD_MULTIPLE, issue 9): they are simulator
processes of the rank, their locks and queues wait in simulated time, runs are
deterministic, and the thread level the job reports is the truth."""

import io
import re
import textwrap
from pathlib import Path

import pytest

from pyopenib.mpi import run_job
from pyopenib.mpi.runner import EXIT_DEADLOCK

from .loopback_btl import make_loopback_btls
from .test_mpi_differential import _openib_btls, _our_output, _real_output

PROGRAMS = Path(__file__).parent / "programs"


def _run(tmp_path, source: str, nprocs=2, make_btls=make_loopback_btls, **kw):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(source))
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(prog), nprocs, make_btls, stdout=out, stderr=err, **kw)
    return result, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("nprocs", [2, 3])
def test_threads_calling_mpi_print_what_real_open_mpi_prints(nprocs):
    path = PROGRAMS / "threads_mpi.py"
    assert _our_output(path, nprocs, make_loopback_btls) == _real_output(path, nprocs)


def test_threads_over_the_openib_btl_print_what_they_print_over_loopback():
    path = PROGRAMS / "threads_mpi.py"
    assert _our_output(path, 3, _openib_btls()) == _our_output(path, 3, make_loopback_btls)


INTERLEAVED = """
    import threading
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    peer = 1 - comm.rank
    lock = threading.Lock()

    def chatter(k):
        for i in range(3):
            comm.send((k, i), dest=peer, tag=k)
            msg = comm.recv(source=peer, tag=k)
            with lock:
                print(threading.current_thread().name, threading.get_ident(), msg, MPI.Wtime())

    threads = [threading.Thread(target=chatter, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
"""


def test_a_threaded_run_is_the_same_bytes_every_time(tmp_path):
    """Threads interleave as the simulator schedules them: the order of their lines
    depends on it, and two runs print the same bytes at the same simulated time."""
    runs = [_run(tmp_path, INTERLEAVED, make_btls=_openib_btls()) for _ in range(2)]
    (first, out1, err1), (second, out2, _) = runs
    assert first.exit_code == 0, err1
    assert out1 == out2 and first.sim_time_ps == second.sim_time_ps
    lines = out1.splitlines()
    assert len(lines) == 24
    # each rank counts its threads from 1, as a process does, whatever ran before
    assert {line.split()[0] for line in lines} == {f"Thread-{k}" for k in range(1, 5)}


def test_the_level_is_multiple_and_is_thread_main_is_true_only_in_the_main_thread(tmp_path):
    result, out, err = _run(
        tmp_path,
        """
        import threading
        from mpi4py import MPI

        seen = []
        t = threading.Thread(target=lambda: seen.append(MPI.Is_thread_main()))
        t.start()
        t.join()
        print(MPI.Query_thread() == MPI.THREAD_MULTIPLE, MPI.Is_thread_main(), seen,
              threading.current_thread() is threading.main_thread())
        """,
        nprocs=1,
    )
    assert (result.exit_code, out) == (0, "True True [False] True\n"), err


@pytest.mark.parametrize(
    ("setting", "level"),
    [
        ("", "THREAD_MULTIPLE"),
        ("rc.thread_level = 'single'", "THREAD_SINGLE"),
        ("rc.threads = False", "THREAD_SINGLE"),
        ("rc.thread_level = 'funneled'", "THREAD_FUNNELED"),
        ("rc.thread_level = 'serialized'", "THREAD_SERIALIZED"),
        ("rc.thread_level = 'multiple'", "THREAD_MULTIPLE"),
    ],
)
def test_query_thread_reports_the_level_rc_asked_for(tmp_path, setting, level):
    _, out, _ = _run(
        tmp_path,
        f"""
        from mpi4py import rc
        {setting}
        from mpi4py import MPI
        print(MPI.Query_thread() == MPI.{level}, MPI.Is_thread_main())
        """,
        nprocs=1,
    )
    assert out == "True True\n"


def test_an_os_thread_calling_mpi_gets_an_mpi_exception_naming_the_call(tmp_path):
    """A thread outside the simulation (``_thread.start_new_thread``) must not touch a
    rank's state: the call raises before it does; Query_thread/Is_thread_main work. A
    lock it holds, the rank waits for in simulated time."""
    result, out, err = _run(
        tmp_path,
        """
        import _thread
        import threading
        import numpy as np
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        seen = []
        held = _thread.allocate_lock()  # a real lock: the simulation waits for the thread
        held.acquire()
        shared = threading.Lock()  # made in the job: a rank's lock

        def worker():
            shared.acquire()
            held.release()
            seen.append((MPI.Query_thread(), MPI.Is_thread_main()))
            for name, call in (
                ("send", lambda: comm.send(1, dest=0)),
                ("Isend", lambda: comm.Isend(np.zeros(1), dest=0)),
                ("Barrier", comm.Barrier),
            ):
                try:
                    call()
                    seen.append(f"{name}: no error")
                except MPI.Exception as exc:
                    seen.append(f"{name}: {exc.Get_error_class() == MPI.ERR_OTHER} {exc}")
            shared.release()

        _thread.start_new_thread(worker, ())
        held.acquire()  # the worker holds ``shared`` now
        shared.acquire()  # polled in simulated time until the worker lets it go
        comm.Barrier()
        if comm.rank == 0:
            print(*seen, sep="\\n")
        """,
    )
    assert result.exit_code == 0, err
    tail = (
        " called from thread 'Dummy-N', but MPI provides MPI_THREAD_MULTIPLE to a rank's "
        "threads only: this is an OS thread outside the simulation (start it with "
        "threading.Thread in the rank)"
    )
    assert re.sub(r"Dummy-\d+", "Dummy-N", out).splitlines() == [
        "(3, False)",
        f"send: True MPI.Comm.send{tail}",
        f"Isend: True MPI.Comm.Isend{tail}",
        f"Barrier: True MPI.Comm.Barrier{tail}",
    ]


def test_a_deadlock_report_names_what_each_thread_waits_in(tmp_path):
    result, _, err = _run(
        tmp_path,
        """
        import threading
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        if comm.rank == 0:
            t = threading.Thread(target=comm.recv, kwargs={"source": 1, "tag": 5}, name="rx")
            t.start()
            t.join()
        """,
    )
    assert result.exit_code == EXIT_DEADLOCK
    assert "rank 0: blocked in threading.Thread.join (a thread's wait)" in err
    assert "    thread 'rx': blocked in MPI_Mprobe(source=1, tag=5, comm=MPI_COMM_WORLD)" in err
    assert "rank 1: blocked in MPI_Finalize" in err


def test_a_rank_joins_its_non_daemon_threads_before_it_finalizes(tmp_path):
    """The main thread returns while its thread still waits in MPI: as in CPython, the
    rank waits for it, then mpi4py's finalize runs."""
    result, out, err = _run(
        tmp_path,
        """
        import threading
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        peer = 1 - comm.rank

        def late():
            print("got", comm.recv(source=peer, tag=1), MPI.Is_finalized())

        threading.Thread(target=late).start()
        threading.Thread(target=threading.Event().wait, daemon=True).start()  # never ends
        if comm.rank == 0:
            threading.Lock().acquire(timeout=0)
            comm.Barrier()  # rank 1's thread is waiting by now
        else:
            comm.Barrier()
        comm.send(comm.rank, dest=peer, tag=1)
        """,
    )
    assert result.exit_code == 0, err
    assert sorted(out.splitlines()) == ["got 0 False", "got 1 False"]


def test_locks_events_and_queues_wait_in_simulated_time(tmp_path):
    result, out, err = _run(
        tmp_path,
        """
        import queue
        import threading
        from mpi4py import MPI

        t0 = MPI.Wtime()
        lock = threading.Lock()
        lock.acquire()
        print(lock.acquire(timeout=0.5), round(MPI.Wtime() - t0, 6))
        items = queue.Queue()
        try:
            items.get(timeout=0.25)
        except queue.Empty:
            print("empty", round(MPI.Wtime() - t0, 6))
        local = threading.local()
        local.x = "main"

        def worker():
            local.x = "thread"
            items.put((MPI.Wtime() - t0 > 0.7, local.x))

        timer = threading.Timer(0.125, worker)
        timer.start()
        print(items.get(), local.x)
        timer.join()
        """,
        nprocs=1,
    )
    assert result.exit_code == 0, err
    assert out.splitlines() == ["False 0.5", "empty 0.75", "(True, 'thread') main"]


def test_abort_in_a_thread_aborts_the_job(tmp_path):
    result, _, err = _run(
        tmp_path,
        """
        import threading
        from mpi4py import MPI

        t = threading.Thread(target=MPI.COMM_WORLD.Abort, args=(7,))
        t.start()
        t.join()
        MPI.COMM_WORLD.Barrier()
        """,
    )
    assert (result.exit_code, result.reason) == (7, "abort")
    assert "MPI_ABORT was invoked on rank 0" in err
    assert "Exception in thread" not in err


def test_an_error_in_a_thread_is_printed_and_the_rank_goes_on(tmp_path):
    result, out, err = _run(
        tmp_path,
        """
        import threading
        from mpi4py import MPI

        def fail():
            raise ValueError("in the thread")

        t = threading.Thread(target=fail, name="bad")
        t.start()
        t.join()
        print("after", MPI.COMM_WORLD.allreduce(1))
        """,
    )
    assert result.exit_code == 0, err
    assert out == "after 2\nafter 2\n"
    assert err.count("Exception in thread bad:") == 2 and "ValueError: in the thread" in err


def test_each_rank_has_its_own_main_thread_thread_locals_and_thread_list(tmp_path):
    result, out, err = _run(
        tmp_path,
        """
        import threading
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        local = MPI.__dict__.setdefault("shared_local", threading.local())  # one object
        local.rank = comm.rank
        main = threading.main_thread()
        worker = threading.Thread(target=threading.Event().wait, args=(1.0,), name="w")
        worker.start()
        comm.Barrier()  # every rank set its value and started its thread by now
        names = sorted(t.name for t in threading.enumerate())
        print(comm.rank, local.rank, main is threading.current_thread(), names,
              threading.active_count(), len({id(o) for o in comm.allgather(id(main))}))
        worker.join()
        """,
        nprocs=3,
    )
    assert result.exit_code == 0, err
    assert sorted(out.splitlines()) == [f"{r} {r} True ['MainThread', 'w'] 2 3" for r in range(3)]


def test_a_thread_pool_left_open_at_exit_is_shut_down_as_cpython_does(tmp_path):
    result, out, err = _run(
        tmp_path,
        """
        from concurrent.futures import ThreadPoolExecutor
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        pool = ThreadPoolExecutor(2)
        done = pool.submit(comm.allreduce, comm.rank)
        print("sum", done.result())
        pool.submit(print, "last task")  # the program ends without pool.shutdown()
        """,
    )
    assert result.exit_code == 0, err
    assert sorted(out.splitlines()) == ["last task", "last task", "sum 1", "sum 1"]


@pytest.mark.parametrize("send", ["Send", "Ssend"])
def test_two_threads_of_one_rank_send_to_each_other(tmp_path, send):
    """mpi4py's demo/threads/sendrecv.py: a message to the rank itself is work only a
    progress pass handles; the receiving thread, asleep in the BTL's wait, is woken for
    it when the sending thread blocks or ends."""
    result, out, err = _run(
        tmp_path,
        f"""
        import threading
        import numpy as np
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        data = np.arange(100_000, dtype="i")
        got = np.zeros_like(data)
        start = threading.Event()

        def receive():
            start.wait()
            comm.Recv([got, MPI.INT], source=comm.rank, tag=0)

        def send():
            start.wait()
            comm.{send}([data, MPI.INT], dest=comm.rank, tag=0)

        threads = [threading.Thread(target=receive), threading.Thread(target=send)]
        for t in threads:
            t.start()
        start.set()
        for t in threads:
            t.join()
        print(bool((got == data).all()))
        """,
    )
    assert (result.exit_code, out) == (0, "True\nTrue\n"), err
