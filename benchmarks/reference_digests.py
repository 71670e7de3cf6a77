"""The traced reference runs and their digests: a speed or structure change must keep them.

Each run is a whole ``pyopenib`` process writing a JSON-lines trace; the digest is the
SHA-256 of that trace and of the process's stdout. ``--record`` writes them to
``benchmarks/reference_digests.json``; a plain run compares against that file and exits 1
on any difference, naming the runs that changed. A change that alters the simulation on
purpose (a fidelity fix, a new algorithm) re-records and says so in its commit.

    .venv/bin/python benchmarks/reference_digests.py            # compare
    .venv/bin/python benchmarks/reference_digests.py --record   # accept the current answers
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RECORD = HERE / "reference_digests.json"
PYOPENIB = [str(Path(sys.executable).with_name("pyopenib"))]

_POLICY_GRID = [
    (
        f"grid-{device}-{scenario}-{policy}",
        [
            "scenario",
            scenario,
            "--device",
            device,
            "--credits-qp",
            policy,
            "--iterations",
            str(iterations),
            "--mca",
            "btl_openib_receive_queues",
            "P,128,256,192,128:P,65536,256,192,128",
        ],
    )
    for device in ("chelsio-t3", "chelsio-t4", "mellanox-hermon", "mellanox-connectx5", "ibm-ehca")
    for scenario, iterations in (("pingpong", 200), ("stream", 800), ("bibw", 800), ("incast", 200))
    for policy in ("smallest", "own")
]
"""The policy grid of benchmarks/policy_cost.py, with fewer iterations (same code paths)."""

RUNS: list[tuple[str, list[str]]] = [
    ("demo-race", ["scenario", "bibw", "--device", "chelsio-t3", "--credits-qp", "smallest"]),
    ("demo-fix", ["scenario", "bibw", "--device", "chelsio-t3", "--credits-qp", "own"]),
    *_POLICY_GRID,
    ("perftest-send_lat", ["perftest", "send_lat", "--device", "connectx"]),
    ("perftest-write_bw", ["perftest", "write_bw", "--device", "chelsio-t3"]),
    ("osu-latency", ["run", "-n", "2", "examples/osu_latency.py"]),
    ("osu-bw", ["run", "-n", "2", "examples/osu_bw.py"]),
    ("osu-bibw-t3", ["run", "-n", "2", "--device", "chelsio-t3", "examples/osu_bibw.py"]),
    ("osu-bw-sm", ["run", "-n", "2", "--ppn", "2", "examples/osu_bw.py"]),
    ("alltoall-16", ["run", "-n", "16", "{workdir}/alltoall.py"]),
]


def _alltoall_program() -> str:
    """The program of benchmarks/alltoall.py (one copy of it)."""
    spec = importlib.util.spec_from_file_location("pyopenib_bench_alltoall", HERE / "alltoall.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._PROGRAM


def _digest(name: str, args: list[str], workdir: str) -> tuple[str, str]:
    trace = os.path.join(workdir, f"{name}.jsonl")
    args = [a.format(workdir=workdir) for a in args]
    supports_trace = args[0] in ("scenario", "run")
    cmd = [*PYOPENIB, *args[:1], *(["--trace", trace] if supports_trace else []), *args[1:]]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, timeout=900)
    h = hashlib.sha256()
    h.update(b"exit %d\n" % proc.returncode)
    h.update(proc.stdout)
    if supports_trace and os.path.exists(trace):
        with open(trace, "rb") as f:
            h.update(f.read())
    return name, h.hexdigest()


def measure(jobs: int = 2) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as workdir, ThreadPoolExecutor(jobs) as pool:
        Path(workdir, "alltoall.py").write_text(_alltoall_program())
        return dict(pool.map(lambda run: _digest(*run, workdir), RUNS))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", action="store_true", help="accept the current digests")
    parser.add_argument("--jobs", type=int, default=2)
    opts = parser.parse_args(argv)
    digests = measure(opts.jobs)
    if opts.record:
        RECORD.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
        print(f"recorded {len(digests)} reference digests in {RECORD.relative_to(ROOT)}")
        return 0
    recorded = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    changed = [name for name in digests if recorded.get(name) != digests[name]]
    for name, digest in digests.items():
        mark = "CHANGED" if name in changed else "same"
        print(f"{name:40s} {digest[:16]}  {mark}")
    print(f"{len(digests) - len(changed)} of {len(digests)} reference runs byte-identical")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
