"""A rank's threads, and which of them drives the rank's progress (``MPI_THREAD_MULTIPLE``).

A rank's Python threads are simulator processes of the rank (``coop_threading`` makes
``threading.Thread.start`` spawn one): greenlets of the simulator's thread, bound to the
rank's context and module space like its main greenlet, run one at a time in the
simulator's order. Each is a ``RankThread``; the rank's ``RankThreads`` lists them.

Several of them may block in MPI at once (two threads in ``Recv`` on different tags, one
in ``Send`` while the main thread is in ``Recv``). The BTL has one slot for the process
that sleeps until it has a completion, as ``opal_progress`` has one caller that polls
the hardware at a time, so Open MPI's answer for ``THREAD_MULTIPLE`` (``ompi_wait_sync``:
the first waiting thread progresses, the others sleep on their condition until it
signals them) is the rule here: the first thread to wait becomes the *driver* and runs
the rank's progress loop; the others *follow*, suspended until a pass of the driver
handled something (then each tests its own request again) or the driver's own wait
ended (then the first of them drives). A rank that never started a thread never comes
here: ``RankContext``'s wait loops are the single-threaded ones.

Which thread waits on what: a thread's ``blocked_in`` (the main thread's is the rank
context's own), rendered in the runner's deadlock report thread by thread.
"""

from __future__ import annotations

import threading

from greenlet import getcurrent

from .context import lookup

__all__ = ["RankThread", "RankThreads", "running"]

_BY_GREENLET: dict = {}
"""Every thread of a running job by its greenlet (main threads once they are known)."""
_MAINS: dict = {}
"""The main thread of each rank of a running job that has one, by rank context."""

IDENT_BASE = 1 << 40
"""Where the idents of a job's simulated threads start: deterministic, and far from the
pointer-sized idents of the OS threads the host runs (``_thread.get_ident``)."""


class RankThread:
    """One thread of a rank: its greenlet, its ident (``threading.get_ident``), the
    ``threading.Thread`` that stands for it (``view``: the one it runs, or the rank's own
    ``MainThread``) and the lock held while it lives (``_thread._set_sentinel``'s, which
    ``Thread.join`` waits for)."""

    __slots__ = ("ctx", "glet", "ident", "view", "is_main", "sentinel", "blocked_in", "holder")

    def __init__(self, ctx, glet, ident: int, view=None, is_main: bool = False):
        self.ctx = ctx
        self.glet = glet
        self.ident = ident
        self.view = view
        self.is_main = is_main
        self.sentinel = None
        self.blocked_in = None
        self.holder = ctx if is_main else self
        """Whose ``blocked_in`` says what this thread waits on: the main thread's is the
        rank's (what every single-threaded wait and the deadlock report read)."""

    @property
    def name(self) -> str:
        return f"thread {self.ident:#x}" if self.view is None else self.view.name

    def finished(self) -> None:
        """The thread's function returned (or it was killed): joiners may go on."""
        sentinel, self.sentinel = self.sentinel, None
        if sentinel is not None and sentinel.locked():
            sentinel.release()
        _BY_GREENLET.pop(self.glet, None)


class RankThreads:
    """The threads a rank started and the state of its shared progress loop."""

    def __init__(self, ctx, main: RankThread):
        self.ctx = ctx
        self.main = main
        self.started: list[RankThread] = []
        self.driver: RankThread | None = None
        self.driver_waiting = False  # the driver sleeps in the BTL's wait for activity
        self.followers: list[RankThread] = []
        self.next_name = 1

    def add(self, thread: RankThread) -> None:
        self.started.append(thread)

    def alive(self) -> list[RankThread]:
        """The started threads that have not ended (``glet`` None: not yet run)."""
        return [t for t in self.started if t.glet is None or not t.glet.dead]

    # -- progress shared by the rank's threads --------------------------------------------
    def progress_until(self, test, call, after_idle: bool):
        """``RankContext._progress_until`` for a rank with threads (see the module
        docstring): ``test()`` true ends it (``after_idle``: tested after every pass),
        or ``test()`` not None (tested only after a pass that handled something)."""
        me = running()
        holder = me.holder
        outer = holder.blocked_in
        if outer is None:
            holder.blocked_in = call
        pml = self.ctx._pml
        sim = self.ctx.sim
        try:
            while True:
                if after_idle:
                    found = test()
                    if found:
                        return found
                if self.driver is None:
                    self.driver = me
                if self.driver is me:
                    if pml.progress() == 0:
                        self.driver_waiting = True
                        pml.wait_for_activity()
                        self.driver_waiting = False
                        continue
                    self.wake_followers()
                else:
                    self.followers.append(me)
                    self.yielding(me)
                    sim.suspend()
                if not after_idle:
                    found = test()
                    if found is not None:
                        return found
        finally:
            if self.driver is me:
                self.driver = None
                self.wake_followers()
            holder.blocked_in = outer

    def yielding(self, me: RankThread | None) -> None:
        """``me`` gives the simulator back (it blocks or ends) after running: what it
        did may have queued work for the rank itself that only a progress pass handles
        (a send to itself, the RTS and ACK of one), so a driver asleep in the BTL's wait
        wakes for a pass (``Pml.wake``; a pass that finds nothing costs nothing)."""
        if self.driver_waiting and self.driver is not me:
            self.driver_waiting = False
            self.ctx._pml.wake()

    def after_pass(self) -> None:
        """A progress pass outside the shared loop (``Test``, ``Iprobe``: never the
        driver's) handled something: it may have ended any waiting thread's wait, the
        driver's too."""
        self.wake_followers()
        self.yielding(None)

    def wake_followers(self) -> None:
        """Let every follower test its own wait again (after a pass that handled
        something, or when the driver leaves: the first of them drives next)."""
        followers = self.followers
        if followers:
            self.followers = []
            resume = self.ctx.sim.resume
            for thread in followers:
                resume(thread.glet)

    def serve_forever(self, call) -> None:
        """The finished main thread's loop that serves its peers' protocol traffic
        (``MPI_Finalize``'s), as one more waiter of the shared loop."""
        self.progress_until(_never, call, True)

    # -- the deadlock report ---------------------------------------------------------------
    def report_lines(self, describe) -> list[str]:
        lines = []
        for thread in self.alive():
            label = thread.blocked_in
            state = describe(label) if label else "running"
            lines.append(f"    thread {thread.name!r}: blocked in {state}")
        return lines


def _never() -> bool:
    return False


def running() -> RankThread | None:
    """The thread of a rank the caller runs in (its main thread's record made at its
    first need), or ``None`` outside every rank (the host's code and OS threads)."""
    glet = getcurrent()
    thread = _BY_GREENLET.get(glet)
    if thread is None:
        ctx = lookup()
        if ctx is None:
            return None
        thread = _BY_GREENLET[glet] = _MAINS[ctx] = RankThread(
            ctx, glet, main_ident(ctx.rank), is_main=True
        )
        # the rank's own ``MainThread``, as a process has one: ``_MainThread`` asks
        # ``get_ident`` (the record's) and enters itself in ``threading._active``
        thread.view = threading._MainThread()
    return thread


def main_of(ctx) -> RankThread:
    """The record of the rank's main thread (made if the rank has none yet)."""
    thread = _MAINS.get(ctx)
    return running() if thread is None else thread


def main_ident(rank: int) -> int:
    """The ident of rank ``rank``'s main thread; its threads' follow it."""
    return IDENT_BASE + (rank << 20)


def register(thread: RankThread) -> None:
    _BY_GREENLET[thread.glet] = thread


def forget_job() -> None:
    """The job ended: no record outlives it (idents are reused by the next job), and
    ``threading`` forgets the job's threads: its main threads' locks are released (the
    interpreter's exit waits for every non-daemon thread's) and none stays active."""
    for main in _MAINS.values():
        for thread in main.ctx.threads.started if main.ctx.threads is not None else ():
            threading._limbo.pop(thread.view, None)  # started, never run
    for thread in [*_BY_GREENLET.values(), *_MAINS.values()]:
        thread.finished()
        threading._active.pop(thread.ident, None)
    _BY_GREENLET.clear()
    _MAINS.clear()
