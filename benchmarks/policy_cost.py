"""What each credits policy costs: the same BTL workloads under `smallest` and `own`.

Simulated completion time (and explicit credit messages) per scenario, device and policy,
nominal timing, receive_queues P,128,256,192,128:P,65536,256,192,128 (two per-peer
queues: the configuration in which the policy matters). A run that fails shows how.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from pyopenib.apps.scenarios import run_scenario

DEVICES = ("chelsio-t3", "chelsio-t4", "mellanox-hermon", "mellanox-connectx5", "ibm-ehca")
SCENARIOS = (("pingpong", 1000), ("stream", 4000), ("bibw", 4000), ("incast", 1000))


def measure(devices=DEVICES, scenarios=SCENARIOS):
    rows = []
    for device in devices:
        for name, iterations in scenarios:
            cells = {}
            for policy in ("smallest", "own"):
                r = run_scenario(
                    name,
                    device=device,
                    credits_qp=policy,
                    iterations=iterations,
                    check_invariants=False,
                )
                msgs = sum(r.credit_msgs_per_qp.values())
                cells[policy] = (r, msgs)
            rows.append((device, name, cells))
    return rows


def _cell(result, msgs) -> str:
    if result.failure is not None:
        return f"FAILS ({result.failure.status} at {result.sim_time_ps / 1e6:,.0f} us)"
    return f"{result.sim_time_ps / 1e6:,.1f} us ({msgs} cm)"


def main() -> None:
    table = Table(title="Simulated completion time per policy (cm = explicit credit messages)")
    for col in ("device", "scenario", "smallest", "own", "own / smallest"):
        table.add_column(col, justify="right" if col != "device" else "left")
    for device, name, cells in measure():
        (rs, ms), (ro, mo) = cells["smallest"], cells["own"]
        ratio = "-"
        if rs.completed and ro.completed:
            ratio = f"{ro.sim_time_ps / rs.sim_time_ps:.2f}"
        table.add_row(device, name, _cell(rs, ms), _cell(ro, mo), ratio)
    Console().print(table)


if __name__ == "__main__":
    main()
