"""Per-rank stdout/stderr, forwarded line by line like mpirun's IO forwarding.

While a job runs, ``sys.stdout``/``sys.stderr`` are ``Demux`` objects: a write from a rank
greenlet goes to that rank's ``RankStream``, which emits each complete line at once — the
simulation is sequential, so lines appear in simulated-time order. With ``tag_output``
lines carry mpirun's ``--tag-output`` prefix ``[<jobid>,<rank>]<stdout>:`` (job 1 is the
launched job, 2... the spawned ones).
"""

from __future__ import annotations

from . import context

__all__ = ["Demux", "RankStream"]


class RankStream:
    def __init__(self, rank: int, kind: str, sink, tag_output: bool, jobid: int = 1):
        self.rank = rank
        self.kind = kind
        self.sink = sink
        self.prefix = f"[{jobid},{rank}]<{kind}>:" if tag_output else ""
        self._partial = ""
        self.closed = False

    def write(self, text: str) -> int:
        if self.closed:  # the rank ended, or the job did: mpirun forwards nothing more
            return len(text)
        data = self._partial + text
        lines = data.split("\n")
        self._partial = lines.pop()
        if lines:
            prefix = self.prefix
            self.sink.write("".join(f"{prefix}{line}\n" for line in lines))
        return len(text)

    def close(self) -> None:
        """Emit an unfinished last line (a rank ended without a newline)."""
        if self._partial:
            self.sink.write(f"{self.prefix}{self._partial}\n")
            self._partial = ""
        self.closed = True
        self.sink.flush()


class Demux:
    """Stands in for ``sys.stdout`` or ``sys.stderr`` during a job."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, kind: str, outside):
        self.kind = kind
        self.outside = outside

    def _target(self):
        ctx = context.lookup()
        if ctx is None:
            return self.outside
        return ctx.streams[self.kind]

    def write(self, text: str) -> int:
        return self._target().write(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Lines are forwarded as they complete; nothing is held back but a partial line."""

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True
