"""A rank's blocking socket call waits in simulated time, not in the interpreter.

Real ranks are processes: one blocked in ``accept`` or ``recv`` leaves the others
running, and the peer that will unblock it can be another rank (mpi4py's ``Join`` test:
rank 0 accepts what rank 1 connects). pyopenib's ranks are greenlets of one thread, so
the same call would stop every rank, the peer included, for ever. While a job runs, the
socket calls that can block (``accept``, ``connect``, ``recv*``, ``send``, ``sendall``:
as ``send`` calls)
made by a rank on a socket in blocking mode are made non-blocking: when the system call
would block, the rank sleeps ``POLL_PS`` of simulated time (the others run) and tries
again, until it succeeds or fails as the blocking call would have.

Deterministic for sockets between ranks: both ends live in this process, so what one
rank did (a loopback ``connect``, a ``send``) is in the kernel before another rank runs,
and a retry sees it at a simulated instant the schedule alone decides. A socket with a
timeout, or a call from outside a rank (the launcher, a program's thread), is left to
the system call as it is. A rank that waits when nothing else is pending in the
simulation waits for ever, as a real process would, and the runner reports the deadlock
(a peer outside the simulation is not waited for).
"""

from __future__ import annotations

import errno
import os
import socket

from .context import POLL_PS, lookup

__all__ = ["Cooperative"]

_IN_PROGRESS = frozenset({errno.EINPROGRESS, errno.EALREADY, errno.EWOULDBLOCK, errno.EAGAIN})
_BLOCKING_CALLS = ("accept", "recv", "recv_into", "recvfrom", "recvfrom_into", "send")


def _wait(rc) -> None:
    """Let the other ranks run before the next try; when nothing else is pending in the
    simulation no rank can ever unblock this one: it stays blocked, and the job ends
    with the runner's deadlock report naming the call."""
    if rc.sim.peek() is None:
        rc.sim.suspend()
    rc.sim.sleep(POLL_PS)


def _waiting(call_name: str, original):
    """``original`` (an unbound socket method) as a rank calls it: retried in simulated
    time while it would block."""

    def call(sock, *args, **kwargs):
        rc = lookup()
        if rc is None or sock.gettimeout() is not None:
            return original(sock, *args, **kwargs)
        label = f"socket.{call_name} (a blocking system call)"
        outer = rc.blocked_in
        sock.setblocking(False)
        try:
            while True:
                try:
                    return original(sock, *args, **kwargs)
                except (BlockingIOError, InterruptedError):
                    rc.blocked_in = outer or label
                    _wait(rc)
        finally:
            rc.blocked_in = outer
            if sock.fileno() >= 0:
                sock.setblocking(True)

    call.__name__ = call_name
    call.__doc__ = original.__doc__
    return call


def _connect(original):
    def connect(sock, address):
        rc = lookup()
        if rc is None or sock.gettimeout() is not None:
            return original(sock, address)
        outer = rc.blocked_in
        sock.setblocking(False)
        try:
            err = sock.connect_ex(address)
            while err in _IN_PROGRESS:
                rc.blocked_in = outer or "socket.connect (a blocking system call)"
                _wait(rc)
                err = sock.connect_ex(address)
            if err not in (0, errno.EISCONN):
                raise OSError(err, os.strerror(err))
        finally:
            rc.blocked_in = outer
            if sock.fileno() >= 0:
                sock.setblocking(True)

    connect.__doc__ = original.__doc__
    return connect


def _sendall(sock, data, flags: int = 0) -> None:
    """``sendall`` as ``send`` calls, so that data a would-block interrupted is never
    sent twice."""
    view = memoryview(data).cast("B")
    while view:
        view = view[sock.send(view, flags) :]


class Cooperative:
    """Install the waiting socket methods for a job's duration (and put back the
    originals)."""

    def __enter__(self):
        cls = socket.socket
        names = (*_BLOCKING_CALLS, "connect", "sendall")
        self.saved = {name: cls.__dict__.get(name) for name in names}
        for name in _BLOCKING_CALLS:
            setattr(cls, name, _waiting(name, getattr(cls, name)))
        cls.connect = _connect(cls.connect)
        cls.sendall = _sendall
        return self

    def __exit__(self, *exc):
        cls = socket.socket
        for name, original in self.saved.items():
            if original is None:
                delattr(cls, name)
            else:
                setattr(cls, name, original)
        return False
