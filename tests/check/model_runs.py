"""The real model's runs the check tests search: T3 ``bibw`` with small queues."""

from __future__ import annotations

from pyopenib.check.scenario_runs import ScenarioRun, scenario_runner

SMALL_QUEUES = "P,128,4,2,2,2:P,65536,4,2,2,2"
"""Two per-peer queues of four buffers: a 1-fragment run has ~200 untimed steps."""

CHECK_QUEUES = "P,128,8,6,4,4:P,65536,8,6,4,4"
"""The queues of ``benchmarks/check.py``: past 16 fragments eager RDMA starts."""


def t3_bibw(iterations: int, queues: str = SMALL_QUEUES, policy: str = "own") -> ScenarioRun:
    """``bibw`` on Chelsio T3 as ``check`` runs it."""
    return scenario_runner(
        "bibw",
        device="chelsio-t3",
        credits_qp=policy,
        iterations=iterations,
        mca_pairs=[("btl_openib_receive_queues", queues)],
    )
