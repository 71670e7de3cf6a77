"""The job runner: N ranks of an unmodified mpi4py program as greenlets on one simulator.

Each rank runs the program as a process would: in a ``__main__`` module of its own, with its
own copies of the program's modules (``isolation``). For the job's duration ``mpi4py`` and
its submodules are pyopenib's (``package``), ``sys.stdout`` and ``sys.stderr`` forward
per-rank lines, ``sys.argv`` is ``[program, *argv]`` and the program's directory leads
``sys.path``; all are restored afterwards. A rank's Python threads are simulator
processes of the rank (``coop_threading``, ``rank_threads``: the job provides
``MPI_THREAD_MULTIPLE``); a program's main thread that ends joins its non-daemon threads
first, as CPython's does. A rank's blocking socket call waits in simulated time
(``sockets``), and its ``time`` module's clocks and ``sleep`` are simulated time's
(``simtime``).

``MPI_Comm_spawn`` adds a job to the run (``_Job.spawn``): its ranks get the next process
indices, BTL modules from ``add_btls`` (each on a node of its own, on the same fabric),
their own ``MPI_COMM_WORLD``, program (``launch.Program``) and ``sys.argv``; the
spawned script's directory joins ``sys.path`` (after the others: the path is the
interpreter's). Spawned ranks are ranks like the others for everything below: output
(tagged ``[jobid,rank]``), traces, ``--stats``, and the end of the run, which waits for
every rank of every job and ends with the first failure or abort of any of them.

A job ends (mpirun's rules, plus what the simulator can see that mpirun cannot):
* every rank returned: exit 0 (a rank that finished keeps serving its peers' protocol
  traffic, as ``MPI_Finalize`` does, until the last one finishes);
* a rank raised: its traceback on its stderr, mpirun's "exited with non-zero status"
  report, exit 1 (``sys.exit(n)``: exit n), once the ranks already due at that simulated
  instant have run (``_Job._end``); the others are then killed and report nothing;
* ``Abort(code)``: mpirun's MPI_ABORT report, exit ``code``;
* the BTL raised ``TransportError``: its report (Open MPI's wording), exit 3;
* no rank can run and no event is pending: a deadlock report naming each rank's blocking
  call and pending requests, exit 4 (real MPI would hang);
* ``timeout`` simulated seconds passed: a report like the deadlock one, exit 5.
"""

from __future__ import annotations

import gc
import os
import sys
import traceback
from dataclasses import dataclass

from greenlet import GreenletExit, getcurrent

from ..errors import TOPICS, PyopenibError, TransportError, register_topics
from ..pml import Pml, describe
from ..sim import PS_PER_S, Simulator
from . import context, coop_threading, package, rank_threads, simtime, sockets, startup, threads
from .comm import CommState
from .context import JobAborted, RankContext
from .isolation import ModuleSpace, RankModules
from .launch import Program, ProgramFailed, SpawnRefused
from .output import Demux, RankStream

__all__ = [
    "EXIT_DEADLOCK",
    "EXIT_TIMEOUT",
    "EXIT_TRANSPORT",
    "JobResult",
    "run_job",
]

GC_THRESHOLDS = (10_000, 10, 1000)
"""The cyclic collector's thresholds while a job runs (the default is 700, 10, 10). A job
builds hundreds of thousands of long-lived objects (endpoints, QPs, receive fragments,
registrations) that the default pushes through the older generations again and again: a
256-rank alltoall spent 14.0 s of its 27.3 s of CPU in 12,522 collections. With a young
generation of 10,000 and full collections 100 times rarer it spends 2.7 s in 804 (18.1 s
in all). Garbage in reference cycles waits longer; everything else is freed by reference
counting as before. The old thresholds return when the job ends."""

EXIT_TRANSPORT = 3
EXIT_DEADLOCK = 4
EXIT_TIMEOUT = 5

_RULE = "-" * 74

register_topics(
    {
        "mpi-abort": (
            f"{_RULE}\nMPI_ABORT was invoked on rank {{rank}} in communicator {{comm}}\n"
            "with errorcode {code}.\n\n"
            "NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.\n"
            "You may or may not see output from other processes, depending on\n"
            f"exactly when Open MPI kills them.\n{_RULE}"
        ),
        "mpi-rank-failed": (
            f"{_RULE}\nPrimary job  terminated normally, but 1 process returned\n"
            f"a non-zero exit code. Per user-direction, the job has been aborted.\n{_RULE}\n"
            f"{_RULE}\nmpirun detected that one or more processes exited with non-zero "
            "status, thus causing\nthe job to be terminated. The first process to do so "
            "was:\n\n  Process name: [[1,{jobid}],{rank}]\n  Exit code:    {code}\n"
            f"  Simulated time: {{time}}\n{_RULE}"
        ),
        "mpi-rank-not-finalized": (
            f"{_RULE}\nmpirun has exited due to process rank {{rank}} with PID 0 on\n"
            "node {host} exiting improperly. There are three reasons this could occur:\n\n"
            '1. this process did not call "init" before exiting, but others in\n'
            "the job did. This can cause a job to hang indefinitely while it waits\n"
            'for all processes to call "init". By rule, if one process calls "init",\n'
            'then ALL processes must call "init" prior to termination.\n\n'
            '2. this process called "init", but exited without calling "finalize".\n'
            'By rule, all processes that call "init" MUST call "finalize" prior to\n'
            'exiting or it will be considered an "abnormal termination"\n\n'
            '3. this process called "MPI_Abort" or "orte_abort" and the mca parameter\n'
            "orte_create_session_dirs is set to false. In this case, the run-time cannot\n"
            "detect that the abort call was an abnormal termination. Hence, the only\n"
            "error message you will receive is this one.\n\n"
            "This may have caused other processes in the application to be\n"
            "terminated by signals sent by mpirun (as reported here).\n\n"
            "You can avoid this message by specifying -quiet on the mpirun command line.\n"
            f"{_RULE}"
        ),
        "mpi-transport-failed": (
            "{report}\n"
            f"{_RULE}\nThe openib BTL reported a fatal transport error on rank {{rank}}; "
            f"the job has been aborted.\n{_RULE}"
        ),
        "mpi-deadlock": (
            "pyopenib: deadlock at simulated time {time}: every rank is blocked and no "
            "event is pending (real MPI would hang here).\n{ranks}"
        ),
        "mpi-timeout": (
            "pyopenib: the job did not finish within --timeout {limit} simulated seconds.\n{ranks}"
        ),
    }
)


@dataclass
class JobResult:
    """How a job ended: ``exit_code`` as ``pyopenib run`` exits; ``reason`` one of
    ``ok``, ``failed``, ``abort``, ``transport``, ``deadlock``, ``timeout``."""

    exit_code: int
    reason: str
    sim_time_ps: int
    rank: int | None = None


class _JobOver(BaseException):  # noqa: N818 - control flow out of Simulator.run
    pass


KILL_ATTEMPTS = 1000
"""How many times the runner throws ``GreenletExit`` into a rank still alive when the job
is over. mpirun kills such a process outright; a greenlet can only be unwound, and code
that catches everything (``unittest`` records any exception as a test error and goes on to
the next test) survives a throw until it blocks again, where the next one reaches it."""


def _format_time(ps: int) -> str:
    return f"{ps / 1e6:.3f} us"


class _Job:
    """The ranks of one ``pyopenib run``: the launched job's, then each spawned job's,
    numbered in one sequence (the BTL's process index), as mpirun numbers them by job
    (``[[jobid,1],vpid]``)."""

    def __init__(self, sim, btls, add_btls, out, err, tag_output, space, support):
        self.sim = sim
        self.space = space
        self.btls = btls
        self.add_btls = add_btls
        self.out = out
        self.err = err
        self.tag_output = tag_output
        self.support = support
        self.finished: list[bool] = []
        self.result: JobResult | None = None
        self.over = False  # the job has ended: a rank still alive is being killed
        self._report: str | None = None  # mpirun's report of the failed rank, at the end
        self.contexts: list[RankContext] = []
        self.processes = []
        self.jobs = 0  # mpirun's job ids: 1 the launched job, 2... one per spawn

    @property
    def nprocs(self) -> int:
        return len(self.contexts)

    def start(self, launches, btls, hostnames, on_start=None) -> list[int]:
        """Start one job of ``len(btls)`` ranks: ``launches`` gives each its ``(Program,
        appnum)``, ``btls`` its BTL module; they get the next job id and process
        indices, and their own ``MPI_COMM_WORLD``. ``on_start(ctx)`` runs in each new
        rank before its program (a spawned rank's ``MPI_Init`` connects to its parent
        there). Returns the new ranks' process indices."""
        self.jobs += 1
        first = len(self.contexts)
        group = list(range(first, first + len(btls)))
        for vpid, (btl, (program, appnum)) in enumerate(zip(btls, launches, strict=True)):
            rank = first + vpid
            ctx = RankContext(self, rank, Pml(btl), hostnames[vpid], self.support)
            ctx.size = len(group)
            ctx.appnum = appnum
            ctx.jobid = self.jobs
            ctx.program = program
            ctx.on_start = on_start
            ctx.modules = RankModules(rank, program.path, program.argv)
            ctx.modules.table.update(package.rank_modules())  # each process's own mpi4py
            ctx.world = CommState(0, group, vpid, ctx, "MPI_COMM_WORLD")
            ctx.self_comm = CommState(1, [rank], 0, ctx, "MPI_COMM_SELF")
            ctx.streams = {
                kind: RankStream(vpid, kind, sink, self.tag_output, self.jobs)
                for kind, sink in (("stdout", self.out), ("stderr", self.err))
            }
            self.contexts.append(ctx)
            self.finished.append(False)
        for rank in group:
            self.processes.append(self.sim.spawn(self._rank_main, rank, name=f"rank{rank}"))
        return group

    def spawn(self, launches, on_start) -> list[int]:
        """Add a job of ``len(launches)`` ranks to the running simulation
        (``MPI_Comm_spawn``): new BTL modules from ``add_btls``, each on a node of its
        own. ``SpawnRefused`` when the job's BTLs cannot grow."""
        if self.add_btls is None:
            raise SpawnRefused(
                f"{_RULE}\nthis job's BTL factory cannot add processes to a running job "
                f"(run_job was given no add_btls)\n{_RULE}"
            )
        try:
            btls = self.add_btls(self.btls, len(launches))
        except PyopenibError as exc:
            raise SpawnRefused(f"{_RULE}\n{exc}\n{_RULE}") from None
        for directory in dict.fromkeys(program.directory for program, _ in launches):
            if directory not in sys.path:  # a spawned script's imports of its neighbours
                sys.path.append(directory)
        hostnames = [btl.hostname for btl in btls]
        return self.start(launches, btls, hostnames, on_start)

    # -- one rank -----------------------------------------------------------------------
    def _rank_main(self, rank: int) -> None:
        ctx = self.contexts[rank]
        glet = getcurrent()
        context.bind(glet, ctx)
        self.space.enter(glet, ctx.modules)
        try:
            try:
                code = ctx.program.load()
                ctx.program.prepare(ctx.modules.main, sys.argv)
                if ctx.on_start is not None:
                    ctx.on_start(ctx)
                exec(code, ctx.modules.main.__dict__)
            except SystemExit as exc:
                code = _exit_code(exc.code, ctx)
                if code:
                    self._end(JobResult(code, "failed", self.sim.now, rank), "mpi-rank-failed", ctx)
            except ProgramFailed as exc:  # what the interpreter reports before it runs code
                ctx.streams["stderr"].write(exc.message + "\n")
                self._end(
                    JobResult(exc.status, "failed", self.sim.now, rank), "mpi-rank-failed", ctx
                )
            if ctx.threads is not None:  # as CPython, before atexit (so before rc.finalize)
                coop_threading.shutdown(ctx)
            while ctx.at_exit:  # last registered first, as ``atexit`` runs them
                ctx.at_exit.pop()()
            if startup.left_active(ctx):  # rc.finalize false, or Init without Finalize
                self._end(JobResult(1, "failed", self.sim.now, rank), "mpi-rank-not-finalized", ctx)
            ctx.finalized = True
            self.finished[rank] = True
            if all(self.finished):
                self._end(JobResult(0, "ok", self.sim.now))
            ctx.blocked_in = "MPI_Finalize (finished, waiting for the other ranks)"
            if ctx.threads is not None:  # daemon threads may still wait in MPI
                ctx.threads.serve_forever(ctx.blocked_in)
            pml = ctx.pml
            while True:
                if pml.progress() == 0:
                    pml.wait_for_activity()
        except (_JobOver, GreenletExit, KeyboardInterrupt):
            raise  # Ctrl-C stops the job, not one rank: `run` writes the trace and exits 130
        except (JobAborted, TransportError) as exc:
            self._ended_by(exc, rank)
        except BaseException as exc:  # the program's own failure, reported like Python does
            self._unless_over()
            ctx.streams["stderr"].write("".join(_program_traceback(exc, ctx.program.path)))
            self._end(JobResult(1, "failed", self.sim.now, rank), "mpi-rank-failed", ctx)

    def _ended_by(self, exc: JobAborted | TransportError, rank: int):
        """``Abort`` or a fatal transport error in rank ``rank`` (its main thread or
        another): mpirun's report, and the job is over."""
        self._unless_over()
        if self.result is None:
            if isinstance(exc, JobAborted):
                self.result = JobResult(exc.errorcode, "abort", self.sim.now, exc.rank)
                text = TOPICS["mpi-abort"].format(
                    rank=exc.rank, comm=exc.comm_name, code=exc.errorcode
                )
            else:
                self.result = JobResult(EXIT_TRANSPORT, "transport", self.sim.now, rank)
                text = TOPICS["mpi-transport-failed"].format(report=exc.report, rank=rank)
            self.err.write(text + "\n")
        self._over()

    # -- a rank's threads -----------------------------------------------------------------
    def start_thread(self, ctx, thread, function, args, kwargs) -> None:
        """Start ``function(*args, **kwargs)`` as the rank thread ``thread`` of the rank
        of ``ctx`` (``coop_threading``: ``threading.Thread.start`` in a rank)."""
        name = f"rank{ctx.rank}.thread{thread.ident & 0xFFFFF}"
        proc = self.sim.spawn(self._thread_main, ctx, thread, function, args, kwargs, name=name)
        self.processes.append(proc)

    def _thread_main(self, ctx, thread, function, args, kwargs) -> None:
        glet = getcurrent()
        thread.glet = glet
        rank_threads.register(thread)
        context.bind(glet, ctx)
        self.space.enter(glet, ctx.modules)
        try:
            function(*args, **kwargs)  # threading's bootstrap: it reports the thread's errors
            ctx.threads.yielding(thread)
        except (_JobOver, GreenletExit, KeyboardInterrupt):
            raise
        except (JobAborted, TransportError) as exc:
            self._ended_by(exc, ctx.rank)
        finally:
            thread.finished()

    def _unless_over(self) -> None:
        """A rank that ends after the job is over is being killed (``KILL_ATTEMPTS``): like
        a killed process it reports nothing, and its greenlet just ends."""
        if self.over:
            raise GreenletExit

    def _end(self, result: JobResult, topic: str | None = None, ctx=None):
        """A rank ended: the job ends now when every rank has finished. A failed rank ends
        the job through the event heap, after everything already due at this simulated
        instant: mpirun kills the others once it sees the exit, and meanwhile they ran
        (the simulator runs ranks one at a time, and a rank that never waits for MPI
        would otherwise end the job before the others had started)."""
        self._unless_over()
        if ctx is not None:
            for stream in ctx.streams.values():
                stream.close()
        if result.reason == "ok":
            if self.result is None:
                self.result = result
            self._over()
        if self.result is None:
            self.result = result
            self._report = TOPICS[topic].format(
                jobid=ctx.jobid,
                rank=ctx.world.rank,
                host=ctx.hostname,
                code=result.exit_code,
                time=_format_time(result.sim_time_ps),
            )
            self.sim.schedule(0, self._over)
        raise GreenletExit  # this rank is done; its peers may still be due at this instant

    def _over(self):
        """End the job (from a rank or from the event heap): mpirun's report, if one is
        pending, and out of ``Simulator.run``."""
        self.over = True
        if self._report is not None:
            self.err.write(self._report + "\n")
            self._report = None
        raise _JobOver

    # -- when nothing can run -----------------------------------------------------------
    def rank_report(self) -> str:
        lines = []
        for ctx in self.contexts:
            state = describe(ctx.blocked_in) if ctx.blocked_in else "running"
            lines.append(f"  rank {ctx.rank}: blocked in {state}")
            if ctx.threads is not None:
                lines.extend(ctx.threads.report_lines(describe))
            for req in ctx.pml.pending_requests():
                lines.append(f"    pending request: {req.describe()}")
        return "\n".join(lines)

    def close_streams(self) -> None:
        for ctx in self.contexts:
            for stream in ctx.streams.values():
                stream.close()


def _exit_code(code, ctx) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return int(code)  # unittest.main exits with a bool: True is status 1
    ctx.streams["stderr"].write(f"{code}\n")
    return 1


def _program_traceback(exc: BaseException, path: str) -> list[str]:
    """The traceback from the program's first frame on (the runner's frames are noise)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    return traceback.format_exception(type(exc), exc, tb or exc.__traceback__)


class _gc_thresholds:  # noqa: N801 - used as a context manager, like contextlib's
    def __init__(self, thresholds):
        self.thresholds = thresholds

    def __enter__(self):
        self.saved = gc.get_threshold()
        gc.set_threshold(*self.thresholds)
        return self

    def __exit__(self, *exc):
        gc.set_threshold(*self.saved)
        return False


class _Installed:
    """Swap the interpreter-wide streams, argv and path a job needs, and put them back,
    with the environment as it was (a rank's ``os.environ`` changes are the job's)."""

    def __init__(self, path: str, argv, out, err):
        self.path = path
        self.argv = [path, *argv]
        self.out = out
        self.err = err

    def __enter__(self):
        self.saved = (sys.stdout, sys.stderr, sys.argv, list(sys.path), os._exit)
        self.environ = dict(os.environ)
        sys.stdout = Demux("stdout", self.out)
        sys.stderr = Demux("stderr", self.err)
        sys.argv = self.argv
        sys.path.insert(0, os.path.dirname(self.path))
        os._exit = _rank_exit(os.getpid(), os._exit)
        return self

    def __exit__(self, *exc):
        sys.stdout, sys.stderr, sys.argv, sys.path[:], os._exit = self.saved
        if os.environ != self.environ:
            os.environ.clear()
            os.environ.update(self.environ)
        return False


class _RankExit(SystemExit):
    """``os._exit(n)`` in a rank: that rank ends with status n, reported as mpirun does;
    the real call would take every simulated rank and the launcher down silently."""


def _rank_exit(job_pid: int, real_exit):
    def _exit(code: int) -> None:
        if os.getpid() != job_pid:
            real_exit(code)  # a child the program forked exits for real
        raise _RankExit(code)

    return _exit


def run_job(
    program: str,
    nprocs: int,
    make_btls,
    argv=(),
    *,
    sim: Simulator | None = None,
    ppn: int = 1,
    tag_output: bool = False,
    timeout: float | None = None,
    stdout=None,
    stderr=None,
    add_btls=None,
) -> JobResult:
    """Run ``program`` on ``nprocs`` ranks over ``make_btls(sim, nprocs)`` (one BTL module
    per rank); write the ranks' output to ``stdout``/``stderr`` (default: sys's).
    ``add_btls(btls, count)``, when given, adds ``count`` BTL modules to the list
    ``make_btls`` built, for the processes ``MPI_Comm_spawn`` starts (without it a spawn
    fails with ``MPI_ERR_SPAWN``)."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    world = Program.script(program, argv)
    path = world.path
    with open(path, encoding="utf-8") as f:
        world.code = compile(f.read(), path, "exec")  # a SyntaxError is the caller's to report
    sim = sim if sim is not None else Simulator()
    with _gc_thresholds(GC_THRESHOLDS):
        btls = make_btls(sim, nprocs)
        hostnames = [f"node{r // ppn:03d}" for r in range(nprocs)]
        # The classifier goes onto sys.meta_path after (so ahead of) the mpi4py finder,
        # and the ranks' modules leave sys.modules before the host's mpi4py comes back.
        space = ModuleSpace()
        with (
            _Installed(path, argv, out, err),
            package.Installed(space.keep_private),
            space,
            sockets.Cooperative(),
            simtime.Installed(),
            coop_threading.Cooperative(),
        ):
            support = threads.ThreadSupport()
            threads.activate(support)
            job = _Job(sim, btls, add_btls, out, err, tag_output, space, support)
            job.start([(world, 0)] * nprocs, btls, hostnames)
            until = None if timeout is None else int(timeout * PS_PER_S)
            try:
                sim.run(until=until)
            except _JobOver:
                pass
            try:
                if job.result is None:
                    job.close_streams()
                    timed_out = until is not None and sim.peek() is not None
                    if timed_out:
                        job.result = JobResult(EXIT_TIMEOUT, "timeout", sim.now)
                        text = TOPICS["mpi-timeout"].format(limit=timeout, ranks=job.rank_report())
                    else:
                        job.result = JobResult(EXIT_DEADLOCK, "deadlock", sim.now)
                        text = TOPICS["mpi-deadlock"].format(
                            time=_format_time(sim.now), ranks=job.rank_report()
                        )
                    err.write(text + "\n")
                else:
                    job.close_streams()
            finally:
                job.over = True
                for proc in job.processes:
                    glet = proc.greenlet
                    for _ in range(KILL_ATTEMPTS):
                        if glet.dead:
                            break
                        glet.throw(GreenletExit)
                    context.unbind(glet)
                threads.activate(None)
    out.flush()
    err.flush()
    return job.result
