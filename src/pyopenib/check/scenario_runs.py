"""Turning a BTL scenario into the ``run(oracle) -> (ok, outcome)`` an explorer needs."""

from __future__ import annotations

from ..btl.scenarios import run_scenario
from ..errors import InvariantViolation, PyopenibError

__all__ = ["RACE_LABELS", "ScenarioRun", "scenario_runner"]

RACE_LABELS = frozenset({"nic.recv_usable", "nic.recv_wqe", "nic.send_wqe", "nic.doorbell"})
"""The choice points that decide the credit race: when a posted receive becomes usable
(split devices), when the single work queue reaches it (shared devices), how long a send
work request takes, when a doorbell reaches the NIC."""


def scenario_runner(name: str, **kwargs) -> ScenarioRun:
    """``run(oracle)`` for ``run_scenario(name, oracle=oracle, **kwargs)``: a run fails on
    a transport failure, a hang, a broken invariant or a delivery error."""
    return ScenarioRun(name, kwargs)


class ScenarioRun:
    """A scenario as an explorer's ``run(oracle) -> (ok, outcome)``; a plain object, so
    worker processes and Dask can receive it (a closure could not be pickled)."""

    def __init__(self, name: str, kwargs: dict):
        self.name = name
        self.kwargs = kwargs

    def __call__(self, oracle) -> tuple[bool, str]:
        try:
            r = run_scenario(self.name, oracle=oracle, **self.kwargs)
        except InvariantViolation as exc:
            return False, f"invariant broken: {exc}"
        except PyopenibError as exc:
            if exc.topic == "scenario-delivery":
                return False, str(exc)
            raise
        if r.failure is not None:
            return (
                False,
                f"{r.failure.status} on QP {r.failure.qp_index} at "
                f"{r.sim_time_ps / 1e6:.3f} us. Detail: {r.failure.detail}",
            )
        if r.hung:
            return False, r.hung
        return True, f"completed at {r.sim_time_ps / 1e6:.3f} us"
