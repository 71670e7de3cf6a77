"""The ``policy`` test: benchmarks/policy_cost.py's grid (scenario x device x policy) as
sweep points — the BTL scenarios with two per-peer queues, nominal timing, simulated
completion time and explicit credit messages, or how and when the run failed."""

from __future__ import annotations

from ..apps.scenarios import run_scenario
from .results import Point, PointResult

__all__ = ["POLICY_SCENARIOS", "measure_scenario"]

POLICY_SCENARIOS = (("pingpong", 1000), ("stream", 4000), ("bibw", 4000), ("incast", 1000))
"""(scenario, iterations) as in benchmarks/policy_cost.py and docs/PERFORMANCE.md."""


def measure_scenario(point: Point) -> PointResult:
    r = run_scenario(
        point.workload,
        device=point.device,
        credits_qp=point.policy,
        mca_pairs=point.mca,
        iterations=point.iterations,
        check_invariants=False,
    )
    msgs = sum(r.credit_msgs_per_qp.values())
    if r.failure is not None:
        f = r.failure
        return PointResult(point, r.sim_time_ps, f"{f.status} on QP {f.qp_index}", msgs)
    if r.hung is not None:
        return PointResult(point, r.sim_time_ps, "hung", msgs)
    return PointResult(point, r.sim_time_ps, None, msgs)
