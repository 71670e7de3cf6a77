"""The host model: the CPU time of the MPI / ob1 / openib software path on a rank's clock.

A real rank spends time between the NIC's events: ob1 allocates a request and matches a
fragment, the BTL fills a descriptor, polls its CQ, copies an eager payload in and out,
and re-posts receive buffers. That time decides *when* a re-post reaches the NIC and when
a credit message leaves, which is what the credit race is about. One ``HostModel`` per
rank charges those costs (a ``config.hosts.HostType`` times ``--cpu-scale``) in
simulated time, deterministically: they are not choice points, so ``check`` explores
the device intervals with the host's costs as given.

Two ways to charge, so a layer never sleeps with its state half changed:

* ``spend(ps)``: at a call's entry, before the layer touches anything (``MPI_Isend``):
  the rank sleeps at once.
* ``charge(ps)``: inside completion handling; the time is owed and ``settle()`` pays it
  at the next point where the rank does something the rest of the job can see (a
  receive re-post, going idle, returning from a progress pass).

A rank with nothing to do busy-polls, as an MPI rank blocked in ``MPI_Recv`` or
``MPI_Wait`` does: it runs progress passes of ``poll_empty`` each (opal_progress, the
eager-RDMA ring checks, the CQ polls) and sees what arrived at the start of the pass
after it arrived, not at the instant it lands. ``idle()`` marks when the passes began,
``poll_phase()`` is the wait from a wake-up to that pass (the simulated rank sleeps
while idle and is woken by the arrival; the phase puts it where the loop would be).

``FREE_HOST`` costs nothing: the default of a BTL that models no host (a rank's own
model at ``--cpu-scale 0`` costs nothing the same way).
"""

from __future__ import annotations

__all__ = ["HostModel", "FREE_HOST"]


class HostModel:
    """One rank's host: its costs in picoseconds (scaled), and the time it owes.

    The cost attributes are read directly by the charge sites (one attribute load and
    an add each on the hot paths); ``copy(n)`` is the time of an ``n``-byte memcpy."""

    __slots__ = (
        "sim",
        "host",
        "scale",
        "owed",
        "mpi_call",
        "match",
        "btl_send",
        "completion",
        "poll_empty",
        "post_recv",
        "copy_setup",
        "_ps_per_byte",
        "idle_since",
    )

    def __init__(self, sim, host, scale: float = 1.0):
        if not scale >= 0:
            raise ValueError(f"host cost scale {scale!r} must be >= 0")
        self.sim = sim
        self.host = host
        self.scale = scale
        self.owed = 0
        if host is None or scale == 0:
            scale = 0.0
        self.mpi_call = _scaled(host, "mpi_call", scale)
        self.match = _scaled(host, "match", scale)
        self.btl_send = _scaled(host, "btl_send", scale)
        self.completion = _scaled(host, "completion", scale)
        self.poll_empty = _scaled(host, "poll_empty", scale)
        self.post_recv = _scaled(host, "post_recv", scale)
        self.copy_setup = _scaled(host, "copy_setup", scale)
        self._ps_per_byte = 1e12 / host.copy_bytes_per_s * scale if scale else 0.0
        self.idle_since = 0

    def copy(self, nbytes: int) -> int:
        """Picoseconds of one memcpy of ``nbytes`` (0 bytes: no copy, no cost)."""
        if nbytes <= 0:
            return 0
        return self.copy_setup + int(nbytes * self._ps_per_byte)

    def charge(self, ps: int) -> None:
        """Owe ``ps``: paid at the next ``settle``."""
        self.owed += ps

    def settle(self) -> None:
        """Pay what is owed now: the rank sleeps for it (nothing in the event loop
        itself, which cannot sleep: the debt then waits for the rank's next settle)."""
        owed = self.owed
        if owed:
            self.owed = 0  # before the sleep: the rank's other threads may charge meanwhile
            if not self.sim.sleep_if_process(owed):
                self.owed = owed  # the loop: nothing ran, the debt stays

    def idle(self) -> None:
        """The rank found nothing and busy-polls from now on (its passes start now)."""
        if self.poll_empty:
            self.idle_since = self.sim.now

    def poll_phase(self) -> int:
        """Picoseconds from now, when something woke the idle rank, to the start of its
        next progress pass: the pass that finds it (0 for a host without pass costs)."""
        period = self.poll_empty
        if not period:
            return 0
        return -(self.sim.now - self.idle_since) % period

    def spend(self, ps: int) -> None:
        """Spend ``ps`` (and anything owed) now."""
        owed = self.owed + ps
        self.owed = 0  # before the sleep, as in ``settle``
        if not owed or not self.sim.sleep_if_process(owed):
            self.owed = owed


def _scaled(host, field: str, scale: float) -> int:
    return round(getattr(host, field) * scale) if scale else 0


FREE_HOST = HostModel(None, None, 0.0)
"""A host that costs nothing: the BTL interface's default and ``--cpu-scale 0``."""
