"""bench — ``pyopenib bench``: OSU-style latency, bandwidth, bi-bandwidth and message
rate per device and credits policy, and the policy-cost grid of BTL scenarios, as a
sweep of independent deterministic simulations (local processes or a Dask cluster).

Printing and plotting live in ``report.bench_tables`` and ``report.bench_plots``."""

from .results import Figure, Point, PointResult, read_json, write_json
from .sweep import POLICIES, TESTS, figures, plan_points, preflight, run_point, run_sweep

__all__ = [
    "TESTS",
    "POLICIES",
    "Point",
    "PointResult",
    "Figure",
    "plan_points",
    "preflight",
    "run_point",
    "run_sweep",
    "figures",
    "read_json",
    "write_json",
]
