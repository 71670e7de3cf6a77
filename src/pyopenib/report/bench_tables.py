"""``pyopenib bench`` tables (rich): one OSU-style table per test, with a column per
device x policy, the policy-cost grid, and the wall time the points took.

Takes the bench's ``Figure`` records as they are (test, device, policy, key, value,
failure, ...) and computes nothing but presentation: a failed cell says FAILS and how.
"""

from __future__ import annotations

from rich.table import Table

__all__ = ["osu_table", "policy_table", "wall_table", "series_label"]

_TITLES = {
    "latency": "OSU MPI Latency Test",
    "bw": "OSU MPI Bandwidth Test",
    "bibw": "OSU MPI Bi-Directional Bandwidth Test",
    "msgrate": "OSU MPI Message Rate Test (one pair)",
}


def series_label(device: str, policy: str) -> str:
    return f"{device} {policy}"


def _series(figures) -> list[tuple[str, str]]:
    """(device, policy) pairs in first-seen order (the sweep's order)."""
    return list(dict.fromkeys((f.device, f.policy) for f in figures))


def _osu_value(test: str, value: float) -> str:
    return f"{value:,.0f}" if test == "msgrate" else f"{value:,.2f}"


def osu_table(test: str, figures, unit: str) -> Table:
    """``# Size`` down the side, ``unit`` per device x policy across, simulated time."""
    series = _series(figures)
    cells = {(f.device, f.policy, f.key): f for f in figures}
    table = Table(title=f"# {_TITLES.get(test, test)} — {unit}, simulated", title_justify="left")
    table.add_column("# Size", justify="right")
    for device, policy in series:
        table.add_column(f"{device}\n{policy}", justify="right")
    for size in sorted({f.key for f in figures}):
        row = [str(size)]
        for device, policy in series:
            f = cells.get((device, policy, size))
            if f is None:
                row.append("")
            elif f.value is None:
                row.append(f"[red]FAILS[/red] ({f.failure} at {f.sim_time_ps / 1e6:,.0f} us)")
            else:
                row.append(_osu_value(test, f.value))
        table.add_row(*row)
    return table


def _policy_cell(f) -> str:
    if f is None:
        return ""
    if f.value is None:
        return f"[red]FAILS[/red] ({f.failure} at {f.sim_time_ps / 1e6:,.0f} us)"
    return f"{f.value:,.1f} us ({f.credit_msgs} cm)"


def policy_table(figures) -> Table:
    """benchmarks/policy_cost.py's grid: completion time per scenario, device and
    policy (cm = explicit credit messages), and own / smallest when both completed."""
    policies = list(dict.fromkeys(f.policy for f in figures))
    cells = {(f.device, f.key, f.policy): f for f in figures}
    table = Table(
        title="Simulated completion time per credits policy (cm = explicit credit messages)",
        title_justify="left",
    )
    table.add_column("device")
    table.add_column("scenario")
    for policy in policies:
        table.add_column(policy, justify="right")
    ratio = "smallest" in policies and "own" in policies
    if ratio:
        table.add_column("own / smallest", justify="right")
    for device, scenario in dict.fromkeys((f.device, f.key) for f in figures):
        row = [device, scenario] + [
            _policy_cell(cells.get((device, scenario, p))) for p in policies
        ]
        if ratio:
            s, o = cells.get((device, scenario, "smallest")), cells.get((device, scenario, "own"))
            ok = s is not None and o is not None and s.value is not None and o.value is not None
            row.append(f"{o.value / s.value:.2f}" if ok else "-")
        table.add_row(*row)
    return table


def wall_table(results) -> Table:
    """Wall time of the points (this machine, not simulated): per workload, the total
    and the slowest point."""
    groups: dict[str, list] = {}
    for r in results:
        groups.setdefault(r.point.workload, []).append(r)
    table = Table(
        title="Wall time per point (this machine; not part of the results)", title_justify="left"
    )
    for col in ("workload", "points", "total s", "slowest point"):
        table.add_column(col, justify="left" if col == "workload" else "right")
    for workload, rs in groups.items():
        slow = max(rs, key=lambda r: r.wall_s)
        p = slow.point
        where = f"{p.device} {p.policy}" + (f" size {p.size}" if p.size else "")
        table.add_row(
            workload,
            str(len(rs)),
            f"{sum(r.wall_s for r in rs):.2f}",
            f"{where}: {slow.wall_s:.2f} s",
        )
    total = sum(r.wall_s for r in results)
    table.caption = f"{len(results)} points, {total:.1f} s of worker time"
    return table
