"""Replay tokens: one execution of a scenario or a program, exactly, as a string a user
can paste into ``pyopenib check``, ``scenario`` or ``run`` (``--replay TOKEN``).

A run is a pure function of its configuration and of the oracle's answers at its choice
points (``sim/choice.py``). The token holds both: the configuration (devices, every MCA
setting, the workload, the program's digest, the pyopenib version) and the answers that
differ from nominal, each with the position of its choice point and its label. Replaying
answers nominal everywhere else, so a token stays short after delta debugging, and a
choice point whose label is not the recorded one means the model changed since the token
was written: replay stops there instead of running a different execution.

A command given a token builds its own configuration from its options and refuses the
token when the two differ, naming each setting that does (the token was recorded with
``credits_qp smallest``, this command resolves ``own``): a replay under other settings
would prove nothing about the recorded execution.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from dataclasses import dataclass

from .. import __version__
from ..errors import PyopenibError, register_topics
from ..sim import Oracle
from ..sim.ties import TieControl
from ..sim.untimed import UntimedControl
from .channels import channel_of, is_timeout
from .footprint import event_object
from .timing import Timing

__all__ = [
    "Answer",
    "RecordingOracle",
    "ReplayOracle",
    "ReplayToken",
    "SCHEDULE_LABEL",
    "program_config",
    "scenario_config",
    "untimed_script",
    "untimed_token",
]

TOKEN_PREFIX = "pyoib1."
"""Version 1 of the token format: base64url(zlib(JSON)) after this prefix."""

EXIT_BAD_TOKEN = 2
"""A malformed or mismatched token is an input error, as click's bad values are."""

register_topics(
    {
        "replay-bad-token": (
            "--replay: not a pyopenib replay token ({reason}); copy the whole token a "
            "`pyopenib check` counterexample printed (it starts with {prefix})"
        ),
        "replay-config-mismatch": (
            "--replay: the token was recorded with another configuration: {differences}. "
            "Run the command the counterexample printed (it names every setting), or "
            "record a token with these settings"
        ),
        "replay-diverged": (
            "--replay: choice point #{position} is {label} in this run but {recorded} in "
            "the token: the model differs from the one that recorded it, so this would be "
            "another execution"
        ),
    }
)


@dataclass(frozen=True, slots=True)
class Answer:
    """One choice point of a run and what the oracle answered there.

    ``kind`` is ``duration`` (``value`` in picoseconds, inside ``lo..hi``) or ``choice``
    (``value`` an option index below ``options``); ``nominal`` is what the nominal oracle
    answers. ``time_ps`` and ``trace_index`` place it in the run when a tracer was there
    to tell (the clock, and how many trace events came before)."""

    position: int
    label: str
    kind: str
    value: int
    nominal: int
    lo: int = 0
    hi: int = 0
    options: int = 0
    time_ps: int | None = None
    trace_index: int | None = None

    @property
    def deviates(self) -> bool:
        return self.value != self.nominal

    def describe(self) -> str:
        """The answer in the model's terms, e.g. ``nic.send_wqe = 0.412 us (nominal
        0.600 us, interval 0.400..0.800 us) at 75.337 us``."""
        if self.kind == "duration":
            text = (
                f"{self.label} = {_us(self.value)} (nominal {_us(self.nominal)}, interval "
                f"{_us(self.lo, unit=False)}..{_us(self.hi)})"
            )
        else:
            text = f"{self.label} = option {self.value} of {self.options} (nominal 0)"
        if self.time_ps is not None:
            text += f" at {_us(self.time_ps)}"
        return text


def _us(ps: int, unit: bool = True) -> str:
    return f"{ps / 1e6:.3f}" + (" us" if unit else "")


class RecordingOracle(Oracle):
    """Answers as ``inner`` does and records every answer (``answers``): the exact
    execution, whatever oracle steered it (random, scripted, a replay)."""

    def __init__(self, inner: Oracle, tracer=None):
        self.inner = inner
        self.tracer = tracer
        self.answers: list[Answer] = []
        self.ties = inner.ties  # same-instant ties stay choice points when inner's are

    def _where(self) -> tuple[int | None, int | None]:
        tr = self.tracer
        if tr is None or tr.sim is None:
            return None, None
        return tr.sim.now, len(tr.events)

    def choose(self, label: str, n: int) -> int:
        value = self.inner.choose(label, n)
        now, idx = self._where()
        self.answers.append(
            Answer(
                len(self.answers),
                label,
                "choice",
                value,
                0,
                options=n,
                time_ps=now,
                trace_index=idx,
            )
        )
        return value

    def duration(self, label: str, lo: int, nominal: int, hi: int) -> int:
        value = self.inner.duration(label, lo, nominal, hi)
        now, idx = self._where()
        self.answers.append(
            Answer(
                len(self.answers),
                label,
                "duration",
                value,
                nominal,
                lo,
                hi,
                time_ps=now,
                trace_index=idx,
            )
        )
        return value

    @property
    def deviations(self) -> list[Answer]:
        return [a for a in self.answers if a.deviates]


class ReplayOracle(Oracle):
    """Answers the recorded deviations at their positions and nominal everywhere else.

    ``strict``: a deviation whose choice point carries another label, or whose value the
    interval no longer allows, is a model that diverged (``replay-diverged``). Not strict
    (delta debugging tries subsets, whose later positions may shift): such a deviation
    is dropped and the point answered nominal; the candidate is re-recorded anyway.

    ``timing``: the search's timing mode when the execution came from one
    (``check/timing.py``): same-instant ties are then choice points (a ``TieControl``
    naming objects as the search did); ``untimed`` runs the scheduler of
    ``sim/untimed.py`` instead, each step a choice point (``SCHEDULE_LABEL``) and every
    duration nominal."""

    def __init__(self, deviations, strict: bool = True, timing: str | None = None):
        self.deviations = {d[0]: d for d in deviations}  # position -> (pos, kind, label, value)
        self.strict = strict
        self.position = 0
        self.timing = timing
        self.untimed = timing == Timing.UNTIMED.value
        if self.untimed:  # the scheduler: every step is a choice point, durations nominal
            self.ties = UntimedControl(self._step, channel_of, is_timeout)
        else:
            self.ties = tie_control() if timing is not None else None

    def _step(self, sim, entries, channels) -> int:
        """An untimed run's step (``sim/untimed.py``): the recorded enabled event."""
        n = len(entries)
        value = self._recorded(SCHEDULE_LABEL, "choice", lambda v: 0 <= v < n)
        return 0 if value is None else value

    def _recorded(self, label: str, kind: str, fits) -> int | None:
        pos = self.position
        self.position += 1
        d = self.deviations.get(pos)
        if d is None:
            return None
        _, rkind, rlabel, value = d
        if rlabel == label and rkind == kind and fits(value):
            return value
        if self.strict:
            raise PyopenibError(
                "replay-diverged",
                exit_code=EXIT_BAD_TOKEN,
                position=pos,
                label=f"{kind} {label}",
                recorded=f"{rkind} {rlabel} = {value}",
            )
        return None

    def choose(self, label: str, n: int) -> int:
        value = self._recorded(label, "choice", lambda v: 0 <= v < n)
        return 0 if value is None else value

    def duration(self, label: str, lo: int, nominal: int, hi: int) -> int:
        if self.untimed:
            return nominal  # the schedule orders the events; durations are no choice
        value = self._recorded(label, "duration", lambda v: lo <= v <= hi)
        return nominal if value is None else value


SCHEDULE_LABEL = "sim.next"
"""The label of an untimed run's scheduler step in a replay token: which enabled event
(by its index in the scheduler's ``(when, seq)`` order) ran."""


def untimed_token(config: dict, script) -> ReplayToken:
    """The token of an untimed execution given as an ``UntimedOracle`` script."""
    devs = tuple(
        (k, "choice", SCHEDULE_LABEL, chosen) for k, (chosen, _) in enumerate(script) if chosen
    )
    return ReplayToken(config, devs, Timing.UNTIMED.value)


def untimed_script(token: ReplayToken) -> list[tuple[int, tuple]]:
    """The ``UntimedOracle`` script of an untimed token (the inverse of ``untimed_token``)."""
    if not token.deviations:
        return []
    script = [(0, ())] * (max(d[0] for d in token.deviations) + 1)
    for pos, _, _, value in token.deviations:
        script[pos] = (value, ())
    return script


def tie_control():
    """The tie control a replay needs: same-instant events grouped by object as the
    search groups them (the QP for a NIC callback)."""
    return TieControl(event_object)


def scenario_config(name: str, devices, mca_pairs, iterations, nprocs) -> dict:
    """What a scenario execution depends on besides its choice points."""
    return {
        "pyopenib": __version__,
        "workload": f"scenario {name}",
        "devices": list(devices),
        "mca": dict(mca_pairs),
        "iterations": iterations,
        "ranks": nprocs,
    }


def program_config(path: str, nprocs: int, devices, mca_pairs, args=()) -> dict:
    """What a program execution depends on besides its choice points: the program's text
    (by digest: a changed program is another execution), its arguments, the job."""
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    return {
        "pyopenib": __version__,
        "workload": "program",
        "program sha256": digest,
        "program args": list(args),
        "devices": list(devices),
        "mca": dict(mca_pairs),
        "ranks": nprocs,
    }


def _differences(recorded: dict, current: dict) -> list[str]:
    out = []
    for key in sorted(set(recorded) | set(current), key=str):
        a, b = recorded.get(key), current.get(key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b)):
                if a.get(k) != b.get(k):
                    out.append(f"{k}: token {_show(a.get(k))}, this command {_show(b.get(k))}")
        else:
            out.append(f"{key}: token {_show(a)}, this command {_show(b)}")
    return out


def _show(value) -> str:
    return "(not set)" if value is None else repr(value)


@dataclass(frozen=True)
class ReplayToken:
    """A configuration and the deviations of one execution (see the module doc)."""

    config: dict
    deviations: tuple[tuple[int, str, str, int], ...]
    """(position, kind, label, value) of every answer that is not nominal."""
    timing: str | None = None
    """The search's timing mode (ties are choice points), or None: durations only."""

    @classmethod
    def of(cls, config: dict, answers, timing: str | None = None) -> ReplayToken:
        devs = tuple((a.position, a.kind, a.label, a.value) for a in answers if a.deviates)
        return cls(config, devs, timing)

    @property
    def digest(self) -> str:
        """Of the configuration: two tokens of one configuration share it."""
        canon = json.dumps(self.config, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canon.encode()).hexdigest()[:12]

    def encode(self) -> str:
        body = {
            "config": self.config,
            "digest": self.digest,
            "deviations": [list(d) for d in self.deviations],
            "timing": self.timing,
        }
        raw = zlib.compress(json.dumps(body, sort_keys=True, separators=(",", ":")).encode(), 9)
        return TOKEN_PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> ReplayToken:
        text = text.strip()
        if not text.startswith(TOKEN_PREFIX):
            raise _bad("it does not start with " + TOKEN_PREFIX)
        payload = text[len(TOKEN_PREFIX) :]
        try:
            raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
            body = json.loads(zlib.decompress(raw))
            config = body["config"]
            deviations = tuple(
                (int(p), str(k), str(lbl), int(v)) for p, k, lbl, v in body["deviations"]
            )
            digest = body["digest"]
            timing = body["timing"]
            if timing is not None and timing not in {t.value for t in Timing}:
                raise ValueError(f"unknown timing mode {timing!r}")
        except (ValueError, KeyError, TypeError, zlib.error) as exc:
            raise _bad(f"it is damaged: {exc}") from None
        token = cls(config, deviations, timing)
        if not isinstance(config, dict) or token.digest != digest:
            raise _bad("its configuration does not match its digest: it was edited or cut")
        return token

    def require(self, config: dict) -> None:
        """Refuse this token unless ``config`` is the one it was recorded with."""
        diffs = _differences(self.config, config)
        if diffs:
            raise PyopenibError(
                "replay-config-mismatch", exit_code=EXIT_BAD_TOKEN, differences="; ".join(diffs)
            )

    def oracle(self, strict: bool = True) -> ReplayOracle:
        return ReplayOracle(self.deviations, strict, self.timing)

    def scenario_oracle(self, name: str, devices, mca_pairs, iterations, nprocs) -> ReplayOracle:
        """The oracle of ``pyopenib scenario --replay``: refused unless the scenario's
        configuration is the recorded one."""
        self.require(scenario_config(name, devices, mca_pairs, iterations, nprocs))
        return self.oracle()

    def program_oracle(self, path: str, nprocs: int, devices, mca_pairs, args) -> ReplayOracle:
        """The oracle of ``pyopenib run --replay``: refused unless the program (by
        digest), its arguments and the job's configuration are the recorded ones."""
        self.require(program_config(path, nprocs, devices, mca_pairs, args))
        return self.oracle()


def _bad(reason: str) -> PyopenibError:
    return PyopenibError(
        "replay-bad-token", exit_code=EXIT_BAD_TOKEN, reason=reason, prefix=TOKEN_PREFIX
    )
