"""Where the credit race is reachable: OSU-style bibw by window, size, device and policy.

Runs the bench's osu_bibw program (``src/pyopenib/bench/programs/osu_bibw.py``: one size,
both ranks post WINDOW receives then WINDOW sends, then wait) on two ranks with the given
receive_queues (default: the Chelsio T3's shipped two per-peer queues) and prints, per
point, ``ok`` with the simulated time or how the job failed. Nominal timing; the host
model at ``--cpu-scale`` (default 1); ``--leave-pinned`` runs each point per
mpi_leave_pinned value (without it, ob1 sends the end of a large message by copy in/out:
many fragments on the T3's second queue). docs/FIDELITY.md "Race reachability" reads it.

    .venv/bin/python benchmarks/race_reachability.py --device chelsio-t3 \\
        --windows 64,128,192,256 --sizes 1024,8192,65536
    .venv/bin/python benchmarks/race_reachability.py --device chelsio-t3 --windows 64 \\
        --sizes 1048576,2097152 --leave-pinned auto,0
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from pyopenib.apps.run_command import openib_btls
from pyopenib.mpi import run_job
from pyopenib.sim import make_simulator

PROGRAM = Path(__file__).resolve().parents[1] / "src/pyopenib/bench/programs/osu_bibw.py"
T3_QUEUES = "P,128,256,192,128:P,65536,256,192,128"


def run_point(
    device, size, window, policy, queues, cpu_scale, iterations=4, warmup=1, mca_pairs=()
):
    """One bibw point: ``("ok", seconds)`` or ``(reason, first line of the report)``.
    ``mca_pairs`` are more ``--mca`` settings (``mpi_leave_pinned``, the pipeline sizes)."""
    mca = [("btl_openib_credits_qp", policy)]
    if queues:
        mca.append(("btl_openib_receive_queues", queues))
    mca.extend(mca_pairs)
    make_btls = openib_btls(device, mca, 1, cpu_scale=cpu_scale)
    out, err = io.StringIO(), io.StringIO()
    argv = [str(size), str(iterations), str(warmup), str(window)]
    result = run_job(
        str(PROGRAM), 2, make_btls, argv, sim=make_simulator(0), stdout=out, stderr=err
    )
    if result.exit_code == 0:
        return "ok", out.getvalue().strip()
    lines = [ln.strip() for ln in err.getvalue().splitlines() if "TERMINATE" in ln or "RNR" in ln]
    return result.reason, lines[0] if lines else ""


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="chelsio-t3")
    p.add_argument("--queues", default=T3_QUEUES, help="receive_queues ('' = the INI's)")
    p.add_argument("--windows", default="64,128,192,256")
    p.add_argument("--sizes", default="1024,4096,8192,65536")
    p.add_argument("--policies", default="smallest,own")
    p.add_argument("--cpu-scale", type=float, default=1.0)
    p.add_argument("--iterations", type=int, default=4)
    p.add_argument(
        "--leave-pinned",
        default="auto",
        help="comma-separated mpi_leave_pinned values to run each point with (auto,0,1)",
    )
    p.add_argument(
        "--mca",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="another MCA setting for every point (repeatable)",
    )
    args = p.parse_args(argv)
    for leave_pinned in args.leave_pinned.split(","):
        pairs = [("mpi_leave_pinned", leave_pinned), *map(tuple, args.mca)]
        for policy in args.policies.split(","):
            for window in (int(w) for w in args.windows.split(",")):
                for size in (int(s) for s in args.sizes.split(",")):
                    how, detail = run_point(
                        args.device,
                        size,
                        window,
                        policy,
                        args.queues,
                        args.cpu_scale,
                        iterations=args.iterations,
                        mca_pairs=pairs,
                    )
                    print(
                        f"{args.device} cpu_scale={args.cpu_scale:g} leave_pinned={leave_pinned} "
                        f"{policy:8} window={window:<4} size={size:<8} {how:10} {detail[:110]}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
