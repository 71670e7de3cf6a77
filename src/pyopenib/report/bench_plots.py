"""``pyopenib bench --plot DIR``: one PNG per OSU test, the figure against message size
(log2 x axis), one line per device x policy; failed points are left out of the line and
marked with an x at the bottom of the axes. matplotlib with the Agg backend (no display).
"""

from __future__ import annotations

import os

from .figures import save_figure

__all__ = ["plot_osu", "write_bench_plots"]

_STYLES = (
    {"linestyle": "-", "linewidth": 4.0, "alpha": 0.45, "marker": "o", "markersize": 6},
    {"linestyle": "--", "linewidth": 1.6, "alpha": 1.0, "marker": "x", "markersize": 6},
    {"linestyle": ":", "linewidth": 1.6, "alpha": 1.0, "marker": "^", "markersize": 5},
)
"""One style per policy: a wide pale line under a thin dashed one, so two policies that
measure the same stay visible as two lines."""
_TITLES = {
    "latency": "Latency (half round trip)",
    "bw": "Bandwidth (window of 64 sends)",
    "bibw": "Bi-directional bandwidth (window of 64 each way)",
    "msgrate": "Message rate (one pair, window of 64)",
}


def _size_label(size: int) -> str:
    for unit, shift in (("M", 20), ("K", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def plot_osu(test: str, figures, unit: str, path: str) -> str:
    """Write ``test``'s plot to ``path``: one colour per device, one line style per
    policy, so device-vs-device and policy-vs-policy both read at a glance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    devices = list(dict.fromkeys(f.device for f in figures))
    policies = list(dict.fromkeys(f.policy for f in figures))
    colours = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=110)
    sizes = sorted({f.key for f in figures if f.key > 0})
    failed_any = False
    for di, device in enumerate(devices):
        for pi, policy in enumerate(policies):
            pts = sorted(
                (f for f in figures if f.device == device and f.policy == policy and f.key > 0),
                key=lambda f: f.key,
            )
            if not pts:
                continue
            ok = [(f.key, f.value) for f in pts if f.value is not None]
            colour = colours(di % 10)
            if ok:
                xs, ys = zip(*ok, strict=True)
                ax.plot(
                    xs, ys, color=colour, label=f"{device} {policy}", **_STYLES[pi % len(_STYLES)]
                )
            bad = [f.key for f in pts if f.value is None]
            if bad:
                failed_any = True
                ax.plot(
                    bad,
                    [0.02] * len(bad),
                    "x",
                    color=colour,
                    markersize=9,
                    transform=ax.get_xaxis_transform(),
                    clip_on=False,
                    label=f"{device} {policy}: FAILS",
                )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")  # OSU figures span decades across sizes
    if sizes:
        ticks = sizes[:: -(-len(sizes) // 12)]  # at most 12 labels, readable at this width
        ax.set_xticks(ticks, [_size_label(s) for s in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("Message size (bytes)")
    ax.set_ylabel(unit)
    title = _TITLES.get(test, test) + " — simulated"
    if failed_any:
        title += "  (x = run failed)"
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.35)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return path


def write_bench_plots(directory: str, figures_by_test: dict, units: dict) -> list[str]:
    """``DIR/<test>.png`` for each OSU test given; returns the paths written."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for test, figs in figures_by_test.items():
        if test == "policy" or not figs:
            continue
        paths.append(plot_osu(test, figs, units[test], os.path.join(directory, f"{test}.png")))
    return paths
