"""Which rank is running: one ``RankContext`` per rank greenlet.

All ranks of a job share one ``mpi4py.MPI`` module object (Python's import system has one
``sys.modules``), so the module's ``COMM_WORLD`` and its functions look the current rank
up here, keyed by the running greenlet. Also home of the blocking-wait loop every MPI call
uses: MPI has no progress thread, so a blocked rank drives its own PML and sleeps in
simulated time until its BTL has a completion.
"""

from __future__ import annotations

import threading

from greenlet import getcurrent

from . import threads

__all__ = ["JobAborted", "RankContext", "bind", "current", "lookup", "unbind"]

_CONTEXTS: dict = {}

POLL_PS = 100_000
"""Simulated cost of one fruitless progress pass (an empty CQ poll) in Test/Iprobe: a
rank that spins on them lets simulated time, and so its peers, move on."""


class JobAborted(BaseException):  # noqa: N818 - it ends the job, it is not an error to catch
    """Raised by ``Abort``: unwinds the rank (user ``except Exception`` cannot catch it)."""

    def __init__(self, rank: int, errorcode: int, comm_name: str):
        super().__init__(rank, errorcode)
        self.rank = rank
        self.errorcode = errorcode
        self.comm_name = comm_name


_get_ident = threading.get_ident


class RankContext:
    """One rank's MPI state: its PML/BTL, predefined communicators, what it is blocked in.

    Every MPI call that sends, receives or progresses reaches the rank's PML through
    ``pml``, which is where a call from a thread other than the simulator's is refused
    (``threads``): before it changes any state, and for every communicator alike."""

    def __init__(self, job, rank: int, pml, hostname: str, thread_support):
        self.job = job
        self.sim = job.sim
        self.rank = rank
        self.size = job.nprocs
        self._pml = pml
        self.thread_support = thread_support
        self._main_ident = thread_support.main_ident
        self.hostname = hostname
        self.next_cid = 2
        self.blocked_in = None  # what the rank is blocked in: a label (see pml.describe)
        self.finalized = False
        self.world = None
        self.self_comm = None
        self.streams: dict = {}
        self.modules = None  # the rank's RankModules (isolation): its __main__ and copies
        self.program = None  # what the rank runs (launch.Program)
        self.on_start = None  # run in the rank before its program (a spawned rank's init)
        self.jobid = 1  # mpirun's job id: 1 for the launched job, 2... for spawned ones
        self.appnum = 0  # MPI_APPNUM: which command of its job's spawn the rank runs
        self.parent = None  # a spawned rank's intercommunicator to its parents (Get_parent)
        self.at_exit: list = []  # run in the rank when its program ends (``atexit`` per rank)
        self.threads = None  # the rank's RankThreads once it made a thread (rank_threads)

    @property
    def pml(self):
        if _get_ident() != self._main_ident:
            raise self.thread_support.forbidden()
        return self._pml

    def poll(self, idle_ps: int = POLL_PS) -> bool:
        """One progress pass for a nonblocking check (Test, Iprobe); when it did nothing
        the rank sleeps ``idle_ps``. Whether it did something."""
        if self.pml.progress() == 0:
            self.sim.sleep(idle_ps)
            return False
        if self.threads is not None:  # it may have ended another thread's wait
            self.threads.after_pass()
        return True

    def wait_request(self, preq, call) -> None:
        """Drive progress until the PML request ``preq`` completes: ``wait_for`` without a
        closure, for the blocking calls every program makes (Send, Recv, Wait)."""
        if preq.complete:
            return
        if _get_ident() != self._main_ident:  # ``pml``'s check, inlined on the hot path
            raise self.thread_support.forbidden()
        if self.threads is not None:
            self.threads.progress_until(lambda: preq.complete, call, True)
            return
        pml = self._pml
        outer = self.blocked_in
        if outer is None:
            self.blocked_in = call
        while not preq.complete:
            if pml.progress() == 0:
                pml.wait_for_activity()
        self.blocked_in = outer

    def wait_for(self, done, call) -> None:
        """Drive progress until ``done()``; ``call`` names the MPI call for deadlock reports
        (a string, or a ``(render, *args)`` label that only a report renders)."""
        if done():
            return
        self._progress_until(done, call, True)

    def wait_matched(self, probe, call):
        """Drive progress until ``probe()`` returns something other than None, and return
        it; the caller has just called ``probe`` and got None. ``wait_for`` for a test of
        the PML's matching queues (a matched or plain probe), which only a progress pass
        that handled something can change: ``probe`` runs again only after such a pass,
        not after every wake-up and not twice in a row (a blocked ``Mprobe``, hence every
        lowercase ``recv``, probed five times per message through ``wait_for``)."""
        return self._progress_until(probe, call, False)

    def _progress_until(self, test, call, after_idle: bool):
        """The loop of ``wait_for`` (``after_idle``: ``test()`` true ends it, tested after
        every pass) and of ``wait_matched`` (``test()`` not None ends it, tested only
        after a pass that handled something); returns the last ``test()``."""
        pml = self.pml
        if self.threads is not None:
            return self.threads.progress_until(test, call, after_idle)
        outer = self.blocked_in
        if outer is None:
            self.blocked_in = call
        if after_idle:
            while not (found := test()):
                if pml.progress() == 0:
                    pml.wait_for_activity()
        else:
            while True:
                if pml.progress() == 0:
                    pml.wait_for_activity()
                    continue
                found = test()
                if found is not None:
                    break
        self.blocked_in = outer
        return found


def bind(glet, ctx: RankContext) -> None:
    _CONTEXTS[glet] = ctx


def unbind(glet) -> None:
    _CONTEXTS.pop(glet, None)


def lookup() -> RankContext | None:
    return _CONTEXTS.get(getcurrent())


def current() -> RankContext:
    try:
        return _CONTEXTS[getcurrent()]
    except KeyError:
        support = threads.active_or_none()
        if support is not None and _get_ident() != support.main_ident:
            raise support.forbidden() from None
        raise RuntimeError(
            "pyopenib's MPI was called outside a rank of a running job "
            "(run the program with `pyopenib run`)"
        ) from None
