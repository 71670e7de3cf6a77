"""``pyopenib run`` loads only what a job needs (issue 13's start-up): each subcommand's
module is imported when the command is used (``cli._Group``), the report package's
names on first use (``report.__getattr__``), so a run never pays for check's search,
bench, the report command or rich's tables."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import sys
from pyopenib.cli import main
try:
    main(["run", "-n", "2", sys.argv[1], "1"])
except SystemExit as exc:
    assert not exc.code, exc.code
loaded = sorted(m for m in sys.modules if m == "rich" or m.startswith(
    ("rich.", "pyopenib.check", "pyopenib.bench", "pyopenib.apps.report_command",
     "pyopenib.apps.perftest", "pyopenib.report.bench")))
print("LOADED", loaded)
"""


def test_a_run_imports_no_other_command_nor_rich():
    program = ROOT / "benchmarks" / "smpi" / "pingpong.py"
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, str(program)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "messages 2 simulated_s" in proc.stdout
    assert "LOADED []" in proc.stdout, proc.stdout


def test_every_report_name_resolves_to_its_module():
    import pyopenib.report as report

    for name in report.__all__:
        value = getattr(report, name)
        assert getattr(value, "__module__", None) in (None, f"pyopenib.report.{report._HOME[name]}")
