"""Run every benchmark script, in a fixed order (``make bench``).

Each entry of ``BENCHMARKS`` names ``benchmarks/<name>.py``, a script defining ``main()``
that measures and prints its own tables. Append a name to add a benchmark.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = [
    "kernel",
    "check",
    "policy_cost",
    "mpi_pingpong",
    "smpi_ratio",
    "message_cost",
    "alltoall",
    "startup",
    "registration_leak",
    "ctrl_c_faults",
    "reference_digests",
    "fidelity",
    "mpi4py_suite",
    "mpi4py_demos",
]

HERE = Path(__file__).resolve().parent


def load(name: str):
    """Import ``benchmarks/<name>.py`` by path (the directory is not a package)."""
    spec = importlib.util.spec_from_file_location(f"pyopenib_bench_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def main() -> None:
    for name in BENCHMARKS:
        print(f"== benchmarks/{name}.py")
        load(name).main()


if __name__ == "__main__":
    main()
