"""The grid of a bench run and its execution.

A run is a list of ``Point``s — (workload, device, policy, size) plus iteration counts and
``--mca`` pairs — each an independent, deterministic simulation. They run in worker
processes (``concurrent.futures``, default two), inline with one job, or on a Dask cluster
(``--dask ADDRESS`` or ``--dask local``). Results come back in point order and do not
depend on the executor: each point starts a fresh simulator with the nominal oracle and
reads no environment. Wall time is measured around each point and kept apart from the
simulated figures.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from ..apps.scenarios import SCENARIOS
from ..btl import build_job_btls
from ..config import load_mca
from ..errors import PyopenibError, register_topics
from ..sim import make_simulator
from ..workers import Workers
from .osu import (
    DEFAULT_ITERATIONS,
    DEFAULT_WARMUP,
    OSU_TESTS,
    OSU_WORKLOAD,
    WINDOW,
    measure_osu,
    osu_figure,
)
from .policy import POLICY_SCENARIOS, measure_scenario
from .results import Figure, Point, PointResult

__all__ = ["TESTS", "POLICIES", "plan_points", "run_point", "run_sweep", "figures", "preflight"]

TESTS = (*OSU_TESTS, "policy")
POLICIES = ("smallest", "own", "auto")

register_topics({"bench-device": "--device {device} --credits-qp {policy}: {reason}"})

# run_job swaps sys.modules['mpi4py'] and sys.stdout for the job's duration: two points
# must never run at once in one process (a Dask worker may have several threads).
_ONE_JOB_PER_PROCESS = threading.Lock()


def plan_points(tests, devices, policies, sizes, iterations=None, mca=()) -> list[Point]:
    """Every point the tests need, without duplicates (``bw`` and ``msgrate`` share
    osu_bw's), in a fixed order: test, device, policy, size."""
    mca = tuple((str(k), str(v)) for k, v in mca)
    points: dict[Point, None] = {}
    for test in tests:
        if test == "policy":
            for device in devices:
                for scenario, default_iters in POLICY_SCENARIOS:
                    for policy in policies:
                        its = iterations or default_iters
                        points[Point(scenario, device, policy, 0, its, mca=mca)] = None
            continue
        workload = OSU_WORKLOAD[test]
        window = 0 if test == "latency" else WINDOW
        its = iterations or DEFAULT_ITERATIONS[workload]
        for device in devices:
            for policy in policies:
                for size in sizes:
                    if size == 0 and test != "latency":
                        continue  # OSU's bandwidth tests start at 1 byte
                    p = Point(
                        workload, device, policy, size, its, DEFAULT_WARMUP[workload], window, mca
                    )
                    points[p] = None
    return list(points)


def preflight(devices, policies, mca=()) -> None:
    """Build each (device, policy) job once before the sweep, so a bad device id or MCA
    value is one clear error here rather than a failure inside a worker."""
    for device in devices:
        for policy in policies:
            pairs = [*mca, ("btl_openib_credits_qp", policy)]
            try:
                build_job_btls(make_simulator(0), 2, device, load_mca(cli_pairs=pairs))
            except PyopenibError as exc:
                raise PyopenibError(
                    "bench-device", device=device, policy=policy, reason=str(exc)
                ) from None


def run_point(point: Point) -> PointResult:
    """Simulate one point; its wall time rides along, outside the simulated figures."""
    with _ONE_JOB_PER_PROCESS:
        start = time.perf_counter()
        if point.workload in SCENARIOS:
            result = measure_scenario(point)
        else:
            result = measure_osu(point)
        return replace(result, wall_s=time.perf_counter() - start)


def run_sweep(points: list[Point], jobs: int = 2, dask: str | None = None) -> list[PointResult]:
    """Results in ``points`` order: inline (``jobs=1``), in ``jobs`` worker processes, or
    on the Dask scheduler at ``dask`` (``"local"``: a local cluster of ``jobs`` workers)."""
    with Workers(jobs, dask) as workers:
        return workers.map(run_point, points)


def figures(test: str, results: list[PointResult]) -> list[Figure]:
    """The cells of ``test``'s table, from whichever results belong to it."""
    out = []
    if test == "policy":
        for r in results:
            p = r.point
            if p.workload in SCENARIOS:
                out.append(
                    Figure(
                        test,
                        p.device,
                        p.policy,
                        p.workload,
                        None if r.failure else r.sim_time_ps / 1e6,
                        r.failure,
                        r.sim_time_ps,
                        r.credit_msgs,
                    )
                )
        return out
    workload = OSU_WORKLOAD[test]
    for r in results:
        p = r.point
        if p.workload == workload and (test == "latency" or p.size > 0):
            out.append(
                Figure(
                    test, p.device, p.policy, p.size, osu_figure(test, r), r.failure, r.sim_time_ps
                )
            )
    return out
