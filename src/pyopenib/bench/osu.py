"""OSU-style measurements: each point is a small mpi4py program (``programs/osu_*.py``)
run by ``run_job`` on two simulated ranks over the openib BTL, one message size per job.

Why MPI programs and not the BTL directly: the figures OSU users compare include the
PML (matching, eager vs rendezvous, the ACK/FIN of large messages) and a job here costs
tens of milliseconds, so the full stack is affordable. Why one job per size: a point is
then a pure function of its inputs, whichever worker runs it and in whatever order.

Settings come only from the point (device, policy, ``--mca`` pairs): not from
``OMPI_MCA_*`` or param files, so a Dask worker with another environment measures the
same numbers.
"""

from __future__ import annotations

import io
import os

from ..btl import build_job_btls
from ..config import load_mca
from ..mpi import run_job
from ..sim import make_simulator
from .results import Point, PointResult

__all__ = ["OSU_TESTS", "OSU_WORKLOAD", "OSU_UNITS", "osu_figure", "measure_osu"]

OSU_TESTS = ("latency", "bw", "bibw", "msgrate")
OSU_WORKLOAD = {"latency": "osu_latency", "bw": "osu_bw", "bibw": "osu_bibw", "msgrate": "osu_bw"}
"""``msgrate`` is osu_mbw_mr with one pair, which is osu_bw's loop: it reads the same
simulation as ``bw`` (the sweep runs it once)."""

OSU_UNITS = {
    "latency": "Latency (us)",
    "bw": "Bandwidth (MB/s)",
    "bibw": "Bandwidth (MB/s)",
    "msgrate": "Messages/s",
}
DEFAULT_ITERATIONS = {"osu_latency": 100, "osu_bw": 20, "osu_bibw": 20}
DEFAULT_WARMUP = {"osu_latency": 10, "osu_bw": 2, "osu_bibw": 2}
WINDOW = 64
"""OSU's default window of non-blocking sends (-W 64)."""

_PROGRAMS = os.path.join(os.path.dirname(__file__), "programs")


def osu_figure(test: str, r: PointResult) -> float | None:
    """The figure OSU prints for ``test`` from a point's simulated time (None if failed)."""
    if r.failure is not None or r.sim_time_ps <= 0:
        return None
    p = r.point
    seconds = r.sim_time_ps / 1e12
    if test == "latency":
        return seconds * 1e6 / (2 * p.iterations)
    if test == "msgrate":
        return p.iterations * p.window / seconds
    mbytes = p.size / 1e6 * p.iterations * p.window
    return mbytes * (2 if test == "bibw" else 1) / seconds


def _failure(result, err: str) -> str:
    """One line saying how the job ended: the first line of the transport report, or
    the job's reason."""
    lines = [ln.strip() for ln in err.splitlines() if ln.strip() and not ln.startswith("---")]
    head = lines[0] if lines else ""
    return f"{result.reason}: {head}" if head else result.reason


def measure_osu(point: Point) -> PointResult:
    """Run ``point``'s OSU program; its simulated time, or how it failed."""
    pairs = [*point.mca, ("btl_openib_credits_qp", point.policy)]

    def make_btls(sim, nprocs):
        return build_job_btls(sim, nprocs, point.device, load_mca(cli_pairs=pairs))

    argv = [str(point.size), str(point.iterations), str(point.warmup)]
    if point.workload != "osu_latency":
        argv.append(str(point.window))
    out, err = io.StringIO(), io.StringIO()
    program = os.path.join(_PROGRAMS, point.workload + ".py")
    result = run_job(program, 2, make_btls, argv, sim=make_simulator(0), stdout=out, stderr=err)
    if result.exit_code != 0:
        return PointResult(point, result.sim_time_ps, _failure(result, err.getvalue()))
    seconds = float(out.getvalue().split()[-1])
    return PointResult(point, round(seconds * 1e12))
