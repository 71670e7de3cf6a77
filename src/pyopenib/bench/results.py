"""The records of a bench sweep: what was run (``Point``), what it measured
(``PointResult``) and the figures the tables and plots show (``Figure``); JSON in and out.

A ``PointResult`` holds simulated quantities only, plus the wall time the point took,
which is kept apart (``compare=False``): two runs of the same points compare equal
whichever executor ran them, and ``--json`` files of two runs can be diffed on
``simulated`` alone.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from ..errors import PyopenibError, register_topics

__all__ = ["Point", "PointResult", "Figure", "write_json", "read_json"]

FORMAT = "pyopenib-bench/1"

register_topics(
    {
        "bench-json-read": "--json file {path}: {reason}",
    }
)


@dataclass(frozen=True, slots=True)
class Point:
    """One simulation: ``workload`` (an OSU program such as ``osu_bw``, or a BTL scenario
    such as ``bibw``) on two ranks of ``device`` with ``btl_openib_credits_qp=policy``.
    ``size`` is the message size (0 for scenarios), ``window`` the OSU window."""

    workload: str
    device: str
    policy: str
    size: int
    iterations: int
    warmup: int = 0
    window: int = 0
    mca: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class PointResult:
    """``sim_time_ps``: the timed OSU iterations (after warm-up), or a scenario's
    completion time; on failure, when it failed. ``failure``: how the job ended if not
    cleanly (e.g. ``transport: IBV_WC_... on QP 1``). ``credit_msgs``: explicit credit
    messages (scenarios only)."""

    point: Point
    sim_time_ps: int
    failure: str | None = None
    credit_msgs: int | None = None
    wall_s: float = field(default=0.0, compare=False)


@dataclass(frozen=True, slots=True)
class Figure:
    """One table cell: ``test`` at ``(device, policy, key)`` where ``key`` is the message
    size (OSU tests) or the scenario name (``policy``); ``value`` in the test's unit, or
    ``None`` with ``failure`` set."""

    test: str
    device: str
    policy: str
    key: int | str
    value: float | None
    failure: str | None = None
    sim_time_ps: int = 0
    credit_msgs: int | None = None


def _point_dict(r: PointResult) -> dict:
    p = asdict(r.point)
    p["mca"] = [list(kv) for kv in r.point.mca]
    simulated = {"sim_time_ps": r.sim_time_ps, "failure": r.failure, "credit_msgs": r.credit_msgs}
    return {"point": p, "simulated": simulated, "wall_s": r.wall_s}


def write_json(path: str, settings: dict, results: list[PointResult]) -> None:
    """All results of a run, for comparing runs: ``simulated`` is deterministic,
    ``wall_s`` is how long this machine took."""
    doc = {
        "format": FORMAT,
        "settings": settings,
        "results": [_point_dict(r) for r in results],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def read_json(path: str) -> tuple[dict, list[PointResult]]:
    """The settings and results ``write_json`` wrote."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        raise PyopenibError("bench-json-read", path=path, reason=str(exc)) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise PyopenibError("bench-json-read", path=path, reason=f"not a {FORMAT} file")
    results = []
    for rec in doc["results"]:
        p = dict(rec["point"])
        p["mca"] = tuple(tuple(kv) for kv in p["mca"])
        sim = rec["simulated"]
        results.append(
            PointResult(
                Point(**p), sim["sim_time_ps"], sim["failure"], sim["credit_msgs"], rec["wall_s"]
            )
        )
    return doc["settings"], results
