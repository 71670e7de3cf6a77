"""Turning a BTL scenario into the ``run(oracle) -> (ok, outcome)`` an explorer needs."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..apps.scenarios import run_scenario
from ..btl import stall_report
from ..errors import InvariantViolation, PyopenibError

__all__ = ["RACE_LABELS", "Outcome", "ScenarioRun", "scenario_runner"]

RACE_LABELS = frozenset({"nic.recv_usable", "nic.recv_wqe", "nic.send_wqe", "nic.doorbell"})
"""The choice points that decide the credit race: when a posted receive becomes usable
(split devices), when the single work queue reaches it (shared devices), how long a send
work request takes, when a doorbell reaches the NIC."""


@dataclass
class Outcome:
    """What one execution did: ``ok``, a one-line ``text``, and for a run that stopped
    with every rank blocked the BTL's account of why no credit moves (``stall``)."""

    ok: bool
    text: str
    stall: list[str] = field(default_factory=list)
    output: str = ""
    """What the program wrote (a program's executions only), kept out of the way."""
    modules: list = field(default_factory=list, repr=False)
    """The run's BTL modules, for their statistics (in-process executions only)."""


def scenario_runner(name: str, **kwargs) -> ScenarioRun:
    """``run(oracle)`` for ``run_scenario(name, oracle=oracle, **kwargs)``: a run fails on
    a transport failure, a hang, a broken invariant or a delivery error. Every module
    checks its credit invariants at each ``progress()`` and conservation across modules
    is checked after every event (not once per 20,000 as in a plain scenario run)."""
    kwargs.setdefault("conservation_every", 1)
    return ScenarioRun(name, kwargs)


class ScenarioRun:
    """A scenario as an explorer's ``run(oracle) -> (ok, outcome)``; a plain object, so
    worker processes and Dask can receive it (a closure could not be pickled)."""

    forkable = True
    """An execution's only effect is the result it returns (the scenario builds its whole
    world under the oracle), so the searches may fork executions from another's prefix
    (``check/forking.py``); a run without this attribute is re-executed from the start."""

    rejoinable = True
    """The whole state of an execution is reachable from its simulator (the ranks' frames,
    the model, the pending events: no module globals), so a state fingerprint covers it
    and a search's last-level executions may end where they rejoin their parent's run
    (``check/convergence.py``)."""

    def __init__(self, name: str, kwargs: dict):
        self.name = name
        self.kwargs = kwargs

    def __call__(self, oracle) -> tuple[bool, str]:
        out = self.execute(oracle)
        return out.ok, out.text

    def execute(self, oracle, trace=None) -> Outcome:
        """One execution under ``oracle`` (``trace``: a Tracer that keeps its events)."""
        kwargs = dict(self.kwargs)
        if trace is not None:
            kwargs["trace"] = trace
        try:
            r = run_scenario(self.name, oracle=oracle, **kwargs)
        except InvariantViolation as exc:
            return Outcome(False, f"invariant broken: {exc}")
        except PyopenibError as exc:
            if exc.topic == "scenario-delivery":
                return Outcome(False, str(exc))
            raise
        if r.failure is not None:
            return Outcome(
                False,
                f"{r.failure.status} on QP {r.failure.qp_index} at "
                f"{r.sim_time_ps / 1e6:.3f} us. Detail: {r.failure.detail}",
                modules=r.modules,
            )
        if r.hung:
            return Outcome(False, r.hung, stall_report(r.modules), modules=r.modules)
        return Outcome(True, f"completed at {r.sim_time_ps / 1e6:.3f} us", modules=r.modules)
