"""Ctrl-C at many moments of ``run``, ``check --jobs 2`` and ``bench`` (issue 11's fault test).

``tests/test_bad_inputs_faults.py`` interrupts each command at two moments in CI; this runs
the same checks at a dozen moments per command (three dozen interrupts): each must exit
130 within 5 s, leave no process of its group and no half-written file.

Run: ``.venv/bin/python benchmarks/ctrl_c_faults.py [moments]`` (default 12, spread over
the first 1.1 s of each command's work).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST = ROOT / "tests" / "test_bad_inputs_faults.py"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    count = int(argv[0]) if argv else 12
    moments = ",".join(f"{i * 0.1:.1f}" for i in range(count))
    env = dict(os.environ, PYOPENIB_CTRL_C_MOMENTS=moments)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(TEST)]
    print(f"interrupting run, check --jobs 2 and bench at {count} moments each: {moments}")
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
    print(summary)
    if proc.returncode:
        print(proc.stdout[-4000:])
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
