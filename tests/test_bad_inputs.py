"""The catalogue of bad inputs (issue 11): every class of bad input on every command gets a
clear message and exit code before any work, never a Python traceback (unless --debug).

Each case is (command line, environment, files, exit code, words the message must
contain). Click's usage errors exit 2, pyopenib's own refusals 1, a job keeps its own
status (5 for the program's ``sys.exit(5)``). ``test_every_option_of_every_command_is_
in_the_catalogue`` keeps the catalogue complete as commands gain options.

Everything runs in-process through click's CliRunner with HOME pointed at an empty
directory (no stray ``~/.openmpi/mca-params.conf``) and no ``OMPI_MCA_*`` of the caller.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from pyopenib.cli import main
from pyopenib.errors import PyopenibError

OK_PROGRAM = "from mpi4py import MPI\nMPI.COMM_WORLD.Barrier()\n"

FILES = {
    "ok.py": OK_PROGRAM,
    "five.py": "import sys\nsys.exit(5)\n",
    "syntax.py": "from mpi4py import MPI\nx = (1,\nprint(x)\n",
    "trace.jsonl": '{"t_ps": 0, "layer": "hw", "kind": "post_rr", "actor": "a"}\n',
    "empty.jsonl": "",
    "bad-vendor.toml": '[x]\nname = "x"\nvendor_id = -5\nvendor_part_ids = [1]\n',
    "unknown-key.ini": "[default]\nvendor_id = 0\nvendor_part_id = 0\nmut = 512\n",
    "repeated.ini": (
        "[default]\nvendor_id = 0\nvendor_part_id = 0\nmtu = 1024\n"
        "[default]\nvendor_id = 0\nvendor_part_id = 0\nmtu = 2048\n"
    ),
    "no-section.ini": "[other]\nvendor_id = 0x9999\nvendor_part_id = 1\n",
    "broken.ini": "[default]\nvendor_id = 0\nvendor_part_id = 0\nmtu = 1000\n",
    "bad-value.conf": "btl_openib_credits_qp = sideways\n",
    "a-file": "not a directory\n",
    "os-exit.py": (
        "import os\nfrom mpi4py import MPI\nif MPI.COMM_WORLD.rank == 1:\n    os._exit(7)\n"
        "MPI.COMM_WORLD.Barrier()\n"
    ),
    "spin.py": "from mpi4py import MPI\nwhile True:\n    pass\n",
}

SCEN = ["scenario", "bibw", "--iterations", "4"]
CHECK = ["check", "bibw", "--runs", "1", "--iterations", "4", "--jobs", "1"]
BENCH = ["bench", "--test", "latency", "--sizes", "8", "--iterations", "1", "--jobs", "1"]
PERF = ["perftest", "send_lat", "--device", "connectx", "-n", "5", "-s", "8"]
REPORT = ["report", "trace", "{tmp}/trace.jsonl"]


@dataclass(frozen=True)
class Case:
    """One bad input: ``argv`` (``{tmp}`` is the case's directory), its environment,
    the exit code and the words its message must contain."""

    id: str
    argv: list[str]
    code: int
    words: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)


def case(id_, argv, code, *words, env=None):
    return Case(id_, argv, code, words, env or {})


CASES = [
    # -- output files: checked before the work, never a traceback, status kept ----------
    case(
        "run-trace-missing-dir",
        ["run", "-n", "2", "--trace", "{tmp}/no/x.jsonl", "{tmp}/ok.py"],
        1,
        "--trace",
        "does not exist",
    ),
    case(
        "run-trace-is-dir",
        ["run", "-n", "2", "--trace", "{tmp}", "{tmp}/ok.py"],
        1,
        "is a directory",
    ),
    case(
        "run-trace-unknown-format",
        ["run", "-n", "2", "--trace", "{tmp}/x.txt", "{tmp}/ok.py"],
        1,
        "cannot tell the format",
        ".jsonl",
    ),
    case(
        "run-trace-parent-is-file",
        ["run", "-n", "2", "--trace", "{tmp}/a-file/x.jsonl", "{tmp}/ok.py"],
        1,
        "is not a directory",
    ),
    case("run-trace-empty", ["run", "-n", "2", "--trace", "", "{tmp}/ok.py"], 1, "empty"),
    case(
        "run-trace-write-fails-keeps-status-5",
        ["run", "-n", "2", "--trace", "/proc/pyopenib-x.jsonl", "{tmp}/five.py"],
        5,
        "cannot write --trace",
        "/proc/pyopenib-x.jsonl",
    ),
    case(
        "run-trace-write-fails-ok-job",
        ["run", "-n", "2", "--trace", "/proc/pyopenib-x.jsonl", "{tmp}/ok.py"],
        1,
        "cannot write --trace",
    ),
    case("scenario-trace-missing-dir", [*SCEN, "--trace", "{tmp}/no/x.png"], 1, "does not exist"),
    case("scenario-trace-format", [*SCEN, "--trace", "{tmp}/x.gif"], 1, "cannot tell the format"),
    case("check-trace-is-dir", [*CHECK, "--trace", "{tmp}"], 1, "is a directory"),
    case(
        "bench-json-missing-dir",
        [*BENCH, "--json", "{tmp}/no/r.json"],
        1,
        "--json",
        "does not exist",
    ),
    case("bench-json-format", [*BENCH, "--json", "{tmp}/r.csv"], 1, "cannot tell the format"),
    case("bench-plot-is-file", [*BENCH, "--plot", "{tmp}/a-file"], 1, "--plot", "is a file"),
    case("bench-plot-missing-parent", [*BENCH, "--plot", "{tmp}/no/plots"], 1, "does not exist"),
    case("report-o-missing-dir", [*REPORT, "-o", "{tmp}/no/x.json"], 1, "-o", "does not exist"),
    case("report-o-is-dir", [*REPORT, "-o", "{tmp}"], 2, "is a directory"),
    case("report-o-format", [*REPORT, "-o", "{tmp}/x.gif"], 1, "give --format"),
    # -- settings: one path for every command, OMPI_MCA_* and param files honoured -------
    case(
        "run-env-bad-value",
        ["run", "-n", "2", "{tmp}/ok.py"],
        1,
        "btl_openib_credits_qp",
        "environment",
        env={"OMPI_MCA_btl_openib_credits_qp": "sideways"},
    ),
    case(
        "scenario-env-bad-value",
        SCEN,
        1,
        "btl_openib_credits_qp",
        "environment",
        env={"OMPI_MCA_btl_openib_credits_qp": "sideways"},
    ),
    case(
        "check-env-bad-value",
        CHECK,
        1,
        "btl_openib_credits_qp",
        "environment",
        env={"OMPI_MCA_btl_openib_credits_qp": "sideways"},
    ),
    case(
        "bench-env-bad-value",
        BENCH,
        1,
        "btl_openib_credits_qp",
        "environment",
        env={"OMPI_MCA_btl_openib_credits_qp": "sideways"},
    ),
    case(
        "info-env-bad-value",
        ["info"],
        1,
        "btl_openib_credits_qp",
        "environment",
        env={"OMPI_MCA_btl_openib_credits_qp": "sideways"},
    ),
    case(
        "demo-env-bad-value",
        ["demo"],
        1,
        "btl_openib_credits_qp",
        "environment",
        env={"OMPI_MCA_btl_openib_credits_qp": "sideways"},
    ),
    case(
        "demo-param-file-bad-value",
        ["demo"],
        1,
        "btl_openib_credits_qp",
        "bad-value.conf:1",
        env={"OMPI_MCA_mca_base_param_files": "{tmp}/bad-value.conf"},
    ),
    case(
        "demo-ini-error",
        ["demo"],
        1,
        "broken.ini:4",
        "mtu",
        env={"OMPI_MCA_btl_openib_device_param_files": "{tmp}/broken.ini"},
    ),
    case(
        "run-leave-pinned-bad-value",
        ["run", "-n", "2", "--mca", "mpi_leave_pinned", "sometimes", "{tmp}/ok.py"],
        1,
        "mpi_leave_pinned",
        "sometimes",
        "command line",
    ),
    case(
        "run-leave-pinned-and-pipeline-warns",
        ["run", "-n", "2", "{tmp}/ok.py"],
        0,
        "cannot set both mpi_leave_pinned and mpi_leave_pinned_pipeline",
        env={"OMPI_MCA_mpi_leave_pinned": "1", "OMPI_MCA_opal_leave_pinned_pipeline": "1"},
    ),
    case(
        "scenario-param-file-bad-value",
        SCEN,
        1,
        "btl_openib_credits_qp",
        "bad-value.conf:1",
        env={"OMPI_MCA_mca_base_param_files": "{tmp}/bad-value.conf"},
    ),
    case(
        "scenario-param-file-missing",
        SCEN,
        1,
        "cannot be read",
        "nowhere.conf",
        env={"OMPI_MCA_mca_base_param_files": "{tmp}/nowhere.conf"},
    ),
    case(
        "scenario-env-policy-applies",
        ["scenario", "bibw", "--iterations", "400"],
        3,
        "TERMINATE",
        env={"OMPI_MCA_btl_openib_credits_qp": "smallest"},
    ),
    case(
        "run-device-type-excludes",
        ["run", "-n", "2", "{tmp}/ok.py"],
        1,
        "btl_openib_device_type",
        "environment",
        "mellanox-hermon",
        env={"OMPI_MCA_btl_openib_device_type": "iwarp"},
    ),
    case(
        "scenario-device-type-excludes",
        [*SCEN, "--mca", "btl_openib_device_type", "ib"],
        1,
        "btl_openib_device_type",
        "chelsio-t3",
        "iwarp",
    ),
    case(
        "run-ignore-device",
        ["run", "-n", "2", "--device", "intel-xeon-phi", "{tmp}/ok.py"],
        1,
        "ignore_device",
        "Intel Xeon Phi",
    ),
    case(
        "scenario-no-device-params-warns",
        SCEN,
        0,
        "warning",
        "no device-params INI section",
        env={"OMPI_MCA_btl_openib_device_param_files": "{tmp}/no-section.ini"},
    ),
    case(
        "scenario-ini-unknown-key-warns",
        SCEN,
        0,
        "warning",
        "unknown key 'mut'",
        env={"OMPI_MCA_btl_openib_device_param_files": "{tmp}/unknown-key.ini"},
    ),
    case(
        "scenario-ini-repeated-section-warns",
        SCEN,
        0,
        "[default] appears again",
        env={"OMPI_MCA_btl_openib_device_param_files": "{tmp}/repeated.ini"},
    ),
    case(
        "run-ini-error",
        ["run", "-n", "2", "{tmp}/ok.py"],
        1,
        "broken.ini:4",
        "mtu",
        env={"OMPI_MCA_btl_openib_device_param_files": "{tmp}/broken.ini"},
    ),
    case(
        "info-synonym-beside-name",
        ["info", "--mca", "btl_openib_cq_size", "100", "--mca", "btl_openib_ib_cq_size", "200"],
        0,
        "set under two names",
        "btl_openib_ib_cq_size",
    ),
    case(
        "run-rq-empty-field",
        [
            "run",
            "-n",
            "2",
            "--mca",
            "btl_openib_receive_queues",
            "P,128,,:P,65536,256",
            "{tmp}/ok.py",
        ],
        1,
        "field 3 (rd_num)",
        "empty",
    ),
    case(
        "scenario-rq-empty-entry",
        [*SCEN, "--mca", "btl_openib_receive_queues", "P,128,256::P,65536,256"],
        1,
        "entry 1 is empty",
    ),
    case(
        "info-unknown-openib-variable-warns",
        ["info", "--mca", "btl_openib_mut", "1"],
        0,
        "btl_openib_mut",
        "misspelt",
    ),
    # -- limits known only inside the job, now checked before ranks start ---------------
    case(
        "run-rq-below-pml-header",
        ["run", "-n", "2", "--mca", "btl_openib_receive_queues", "P,2,4", "{tmp}/ok.py"],
        1,
        "btl_openib_receive_queues",
        "'P,2,4'",
        "command line",
        "44 bytes",
    ),
    case(
        "run-max-send-size-below-frag-header",
        [
            "run",
            "-n",
            "2",
            "--mca",
            "btl_openib_max_send_size",
            "20",
            "--mca",
            "btl_openib_receive_queues",
            "P,128,256,192,128:P,65536,256,192,128",
            "{tmp}/ok.py",
        ],
        1,
        "btl_openib_max_send_size = 20",
        "command line",
        "20-byte FRAG header",
    ),
    case(
        "run-rq-above-max-qp-wr",
        ["run", "-n", "2", "--mca", "btl_openib_receive_queues", "P,128,100000", "{tmp}/ok.py"],
        1,
        "max_qp_wr",
        "16351",
        "rd_num",
    ),
    case(
        "run-srq-above-max-srq-wr",
        [
            "run",
            "-n",
            "2",
            "--mca",
            "btl_openib_receive_queues",
            "S,128,16000,15000,4000:S,65536,256",
            "{tmp}/ok.py",
        ],
        1,
        "max_srq_wr",
        "16383",
    ),
    case(
        "run-rq-20-digit-size",
        [
            "run",
            "-n",
            "2",
            "--mca",
            "btl_openib_receive_queues",
            "P,99999999999999999999,4",
            "{tmp}/ok.py",
        ],
        1,
        "above the limit 2147483647",
    ),
    case(
        "run-eager-rdma-num-huge",
        [
            "run",
            "-n",
            "2",
            "--mca",
            "btl_openib_eager_rdma_num",
            "2000000000",
            "--mca",
            "btl_openib_use_eager_rdma",
            "1",
            "{tmp}/ok.py",
        ],
        1,
        "memory",
        "eager RDMA ring",
        "btl_openib_eager_rdma_num",
    ),
    case(
        "run-n-huge", ["run", "-n", "100000", "{tmp}/ok.py"], 1, "-n 100000", "memory", "per rank"
    ),
    case(
        "run-eager-limit-20-digits",
        [
            "run",
            "-n",
            "2",
            "--mca",
            "btl_openib_eager_limit",
            "99999999999999999999",
            "{tmp}/ok.py",
        ],
        1,
        "btl_openib_eager_limit",
        "between",
    ),
    case(
        "scenario-rq-above-t3-max-qp-wr",
        [*SCEN, "--mca", "btl_openib_receive_queues", "P,128,2000:P,65536,256"],
        1,
        "max_qp_wr",
        "1023",
        "chelsio-t3",
    ),
    case(
        "check-rq-above-t3-max-qp-wr",
        [*CHECK, "--mca", "btl_openib_receive_queues", "P,128,2000:P,65536,256"],
        1,
        "max_qp_wr",
        "1023",
    ),
    case(
        "bench-rq-above-max-qp-wr",
        [*BENCH, "--mca", "btl_openib_receive_queues", "P,128,100000"],
        1,
        "max_qp_wr",
    ),
    # -- numbers and names on the command line: a type with a range ---------------------
    *[
        case(f"run-timeout-{v}", ["run", "-n", "2", "--timeout", v, "{tmp}/ok.py"], 2, "--timeout")
        for v in ("nan", "inf", "-1", "0", "soon")
    ],
    *[
        case(
            f"run-cpu-scale-{v}",
            ["run", "-n", "2", "--cpu-scale", v, "{tmp}/ok.py"],
            2,
            "--cpu-scale",
        )
        for v in ("-5", "nan", "inf")
    ],
    case("scenario-cpu-scale", ["scenario", "pingpong", "--cpu-scale", "-1"], 2, "--cpu-scale"),
    *[case(f"run-n-{v}", ["run", "-n", v, "{tmp}/ok.py"], 2, "-n") for v in ("0", "-3", "two")],
    case("run-ppn-0", ["run", "-n", "2", "--ppn", "0", "{tmp}/ok.py"], 2, "--ppn"),
    case("run-ppn-not-dividing", ["run", "-n", "3", "--ppn", "2", "{tmp}/ok.py"], 1, "--ppn 2"),
    case("run-seed-negative", ["run", "-n", "2", "--seed", "-1", "{tmp}/ok.py"], 2, "--seed"),
    case("run-device-empty", ["run", "-n", "2", "--device", "", "{tmp}/ok.py"], 2, "empty"),
    case(
        "run-device-unknown",
        ["run", "-n", "2", "--device", "nosuch", "{tmp}/ok.py"],
        2,
        "unknown device 'nosuch'",
    ),
    case(
        "run-devices-empty",
        ["run", "-n", "2", "--devices", ",", "{tmp}/ok.py"],
        1,
        "--devices",
        "empty map",
    ),
    case(
        "run-devices-bad-count",
        ["run", "-n", "2", "--devices", "connectx:0", "{tmp}/ok.py"],
        1,
        "bad count",
    ),
    case(
        "run-devices-unknown",
        ["run", "-n", "2", "--devices", "nosuch", "{tmp}/ok.py"],
        1,
        "unknown device 'nosuch'",
    ),
    case(
        "run-device-and-devices",
        ["run", "-n", "2", "--device", "connectx", "--devices", "connectx", "{tmp}/ok.py"],
        1,
        "not both",
    ),
    case(
        "run-mca-bad-value",
        ["run", "-n", "2", "--mca", "btl_openib_mtu", "7", "{tmp}/ok.py"],
        1,
        "btl_openib_mtu",
        "command line",
    ),
    case(
        "run-mca-repeated",
        [
            "run",
            "-n",
            "2",
            "--mca",
            "btl_openib_mtu",
            "3",
            "--mca",
            "btl_openib_mtu",
            "4",
            "{tmp}/ok.py",
        ],
        1,
        "more than once",
    ),
    case("run-program-missing", ["run", "-n", "2", "{tmp}/nowhere.py"], 2, "does not exist"),
    case("run-program-is-dir", ["run", "-n", "2", "{tmp}"], 2, "is a directory"),
    case(
        "run-tag-output-stats-program-exit",
        ["run", "-n", "2", "--tag-output", "--stats", "{tmp}/five.py", "arg"],
        5,
        "Exit code:    5",
    ),
    case("scenario-n-1", [*SCEN, "-n", "1"], 2, "-n"),
    case("scenario-iterations-negative", [*SCEN[:2], "--iterations", "-5"], 2, "--iterations"),
    case("scenario-seed-negative", [*SCEN, "--seed", "-1"], 2, "--seed"),
    case("scenario-device-empty", [*SCEN, "--device", ""], 2, "empty"),
    case("scenario-peer-device-unknown", [*SCEN, "--peer-device", "nosuch"], 2, "nosuch"),
    case("scenario-credits-qp-bogus", [*SCEN, "--credits-qp", "sideways"], 2, "--credits-qp"),
    case("scenario-name-bogus", ["scenario", "pingping"], 2, "pingpong"),
    case(
        "scenario-random-timing-mca-bad",
        [*SCEN, "--random-timing", "--mca", "btl_openib_ib_timeout", "40"],
        1,
        "btl_openib_ib_timeout",
        "between 0 and 31",
    ),
    case("check-iterations-0", [*CHECK[:2], "--iterations", "0"], 2, "--iterations"),
    case(
        "check-deviations-negative",
        [*CHECK, "--exhaustive", "--deviations", "-1"],
        2,
        "--deviations",
    ),
    case(
        "check-max-executions-0",
        [*CHECK, "--exhaustive", "--max-executions", "0"],
        2,
        "--max-executions",
    ),
    case("check-labels-empty", [*CHECK, "--exhaustive", "--labels", ","], 2, "--labels"),
    case("check-runs-0", [*CHECK[:2], "--runs", "0"], 2, "--runs"),
    case("check-jobs-0", [*CHECK[:2], "--jobs", "0"], 2, "--jobs"),
    case("check-seed-negative", [*CHECK, "--seed", "-1"], 2, "--seed"),
    case("check-device-unknown", [*CHECK, "--device", "nosuch"], 2, "nosuch"),
    case("check-peer-device-empty", [*CHECK, "--peer-device", " "], 2, "empty"),
    case("check-credits-qp-bogus", [*CHECK, "--credits-qp", "x"], 2, "--credits-qp"),
    case(
        "check-mca-bad", [*CHECK, "--mca", "btl_openib_credits_qp", "x"], 1, "btl_openib_credits_qp"
    ),
    case("check-dask-missing-module", [*CHECK, "--dask", "local"], 1, "dask"),
    case("check-np-1", [*CHECK, "-n", "1"], 2, "'-n'"),
    case("check-timing-bogus", [*CHECK, "--exhaustive", "--timing", "fast"], 2, "--timing"),
    case("check-timing-without-exhaustive", [*CHECK, "--timing", "bounds"], 2, "--exhaustive"),
    case("check-time-budget-nan", [*CHECK, "--time-budget", "nan"], 2, "--time-budget"),
    case("check-replay-garbage", [*CHECK, "--replay", "xyz"], 2, "not a pyopenib replay token"),
    case("check-timing-bogus", [*CHECK, "--exhaustive", "--timing", "x"], 2, "--timing"),
    case("check-timing-not-exhaustive", [*CHECK, "--timing", "nominal"], 2, "--exhaustive"),
    case("check-target-unknown", ["check", "nosuch"], 2, "neither a scenario"),
    case(
        "check-labels-typo",
        [*CHECK, "--exhaustive", "--labels", "nic.recv_wqe,nic.recvwqe"],
        2,
        "labelled nic.recvwqe",
    ),
    case("scenario-replay-garbage", [*SCEN, "--replay", "pyoib1.@@"], 2, "replay token"),
    case(
        "run-replay-garbage",
        ["run", "-n", "2", "--replay", "pyoib1.", "{tmp}/ok.py"],
        2,
        "replay token",
    ),
    case("perftest-tx-depth-0", [*PERF, "-t", "0"], 2, "--tx-depth"),
    case("perftest-size-0", [*PERF[:4], "-s", "0"], 1, "--size 0"),
    case("perftest-size-huge", [*PERF[:4], "--size", "99999999999999999999"], 1, "--size"),
    case("perftest-iters-0", [*PERF[:4], "-n", "0"], 1, "--iters 0"),
    case(
        "perftest-cq-mod-0",
        ["perftest", "send_bw", "--device", "connectx", "-Q", "0"],
        1,
        "--cq-mod 0",
    ),
    case(
        "perftest-all-with-bad-cq-mod",
        ["perftest", "send_bw", "--device", "connectx", "-a", "--cq-mod", "-1"],
        1,
        "--cq-mod",
    ),
    case("perftest-device-empty", ["perftest", "send_lat", "--device", ""], 2, "empty"),
    case("perftest-seed-negative", [*PERF, "--seed", "-1", "--random-timing"], 2, "--seed"),
    case(
        "perftest-test-bogus", ["perftest", "send_latency", "--device", "connectx"], 2, "send_lat"
    ),
    case(
        "report-window-nan",
        [*REPORT, "-o", "{tmp}/x.json", "--window-us", "nan", "1"],
        2,
        "--window-us",
    ),
    case(
        "report-window-reversed",
        [*REPORT, "-o", "{tmp}/x.json", "--window-us", "5", "1"],
        2,
        "before END",
    ),
    case("report-last-0", [*REPORT, "-o", "{tmp}/x.svg", "--last", "0"], 2, "--last"),
    case("report-format-bogus", [*REPORT, "-o", "{tmp}/x.json", "--format", "gif"], 2, "--format"),
    case(
        "report-trace-missing",
        ["report", "trace", "{tmp}/nowhere.jsonl", "-o", "{tmp}/x.json"],
        1,
        "cannot read trace file",
    ),
    case(
        "report-trace-empty",
        ["report", "trace", "{tmp}/empty.jsonl", "-o", "{tmp}/x.json"],
        1,
        "has no events",
    ),
    case("bench-max-size-0", [*BENCH[:3], "--max-size", "0"], 2, "--max-size"),
    case("bench-iterations-negative", [*BENCH[:5], "--iterations", "-5"], 2, "--iterations"),
    case("bench-jobs-0", [*BENCH[:5], "--jobs", "0"], 2, "--jobs"),
    case("bench-sizes-junk", [*BENCH[:3], "--sizes", "8,big"], 1, "--sizes", "not a size"),
    case(
        "bench-sizes-20-digits",
        [*BENCH[:3], "--sizes", "99999999999999999999"],
        1,
        "above the largest size",
    ),
    case("bench-sizes-and-max-size", [*BENCH[:5], "--max-size", "64"], 1, "not both"),
    case("bench-device-empty", [*BENCH, "--device", ""], 2, "empty"),
    case("bench-credits-qp-bogus", [*BENCH, "--credits-qp", "x"], 2, "--credits-qp"),
    case("bench-test-bogus", ["bench", "--test", "latancy"], 2, "--test"),
    case(
        "bench-mca-bad",
        [*BENCH, "--mca", "btl_openib_ib_retry_count", "9"],
        1,
        "btl_openib_ib_retry_count",
    ),
    case("bench-dask-missing-module", [*BENCH, "--dask", "local"], 1, "dask"),
    case("info-level-0", ["info", "--level", "0"], 1, "--level 0"),
    case("info-level-junk", ["info", "--level", "nine", "--parsable", "--all"], 1, "--level"),
    case(
        "info-vendor-negative",
        ["info", "--vendor-id", "-5", "--part-id", "1"],
        1,
        "--vendor-id",
        "out of range",
    ),
    case("info-part-junk", ["info", "--vendor-id", "5", "--part-id", "x"], 1, "--part-id"),
    case("info-vendor-alone", ["info", "--vendor-id", "0x1425"], 1, "give either"),
    case("info-device-unknown", ["info", "--device", "nosuch"], 1, "no device 'nosuch'"),
    case(
        "info-devices-file-negative-vendor",
        ["info", "--device", "x", "--devices-file", "{tmp}/bad-vendor.toml"],
        1,
        "vendor_id = -5",
        "PCI id",
    ),
    case(
        "info-devices-file-missing",
        ["info", "--device", "x", "--devices-file", "{tmp}/nowhere.toml"],
        1,
        "cannot be read",
    ),
    case("info-mca-bad", ["info", "--mca", "btl_openib_mtu", "7"], 1, "btl_openib_mtu"),
    case("ini-check-missing", ["ini", "check", "{tmp}/nowhere.ini"], 1, "cannot read"),
    case("ini-check-errors", ["ini", "check", "{tmp}/broken.ini"], 1, "broken.ini:4", "mtu"),
    case("ini-show-nothing", ["ini", "show"], 1, "give either"),
    case(
        "ini-show-file-missing",
        ["ini", "show", "--device", "t3", "--file", "{tmp}/nowhere.ini"],
        1,
        "cannot be read",
    ),
    case(
        "ini-show-bad-part",
        [
            "ini",
            "show",
            "--vendor-id",
            "1",
            "--part-id",
            "0x",
            "--devices-file",
            "{tmp}/bad-vendor.toml",
        ],
        1,
        "--part-id",
    ),
    case(
        "run-timeout-huge", ["run", "-n", "2", "--timeout", "1e300", "{tmp}/ok.py"], 2, "<= 1e+09"
    ),
    case(
        "check-labels-unknown",
        [*CHECK, "--exhaustive", "--labels", "foo"],
        2,
        "labelled foo",
        "nic.recv_wqe",
    ),
    case(
        "bench-bw-only-size-0",
        ["bench", "--test", "bw", "--sizes", "0", "--jobs", "1"],
        1,
        "nothing to measure",
    ),
    # -- program errors ------------------------------------------------------------------
    case(
        "run-os-exit-on-one-rank",
        ["run", "-n", "2", "{tmp}/os-exit.py"],
        7,
        "Exit code:    7",
        "[[1,1],1]",
    ),
    case(
        "run-wall-timeout-stops-a-compute-loop",
        ["run", "-n", "2", "--wall-timeout", "0.5", "{tmp}/spin.py"],
        5,
        "--wall-timeout 0.5",
        "real time",
    ),
    case(
        "run-wall-timeout-nan",
        ["run", "-n", "2", "--wall-timeout", "nan", "{tmp}/spin.py"],
        2,
        "--wall-timeout",
    ),
    case(
        "run-syntax-error",
        ["run", "-n", "2", "{tmp}/syntax.py"],
        1,
        "syntax.py",
        "line 2",
        "^",
        "SyntaxError: '(' was never closed",
    ),
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad-inputs")
    for name, text in FILES.items():
        (root / name).write_text(text)
    (root / "home").mkdir()
    return root


def _expand(text: str, tmp: Path) -> str:
    return text.replace("{tmp}", str(tmp))


def invoke(argv, env, tmp: Path, debug=False):
    environment = {k: None for k in os.environ if k.startswith("OMPI_MCA_")}
    environment["HOME"] = str(tmp / "home")
    environment.update({k: _expand(v, tmp) for k, v in env.items()})
    args = (["--debug"] if debug else []) + [_expand(a, tmp) for a in argv]
    return CliRunner().invoke(main, args, env=environment)


@pytest.mark.parametrize("bad", CASES, ids=[c.id for c in CASES])
def test_bad_input_gets_its_exit_code_and_a_clear_message_without_traceback(bad, workdir):
    result = invoke(bad.argv, bad.env, workdir)
    output = result.output
    assert result.exit_code == bad.code, output
    assert "Traceback" not in output, output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        pytest.fail(f"uncaught {result.exception!r}")
    for word in bad.words:
        assert word in output, (word, output)


def test_a_failed_trace_write_leaves_no_file_behind(workdir):
    before = set(Path("/proc").glob("pyopenib-*"))
    invoke(["run", "-n", "2", "--trace", "/proc/pyopenib-x.jsonl", "{tmp}/ok.py"], {}, workdir)
    assert set(Path("/proc").glob("pyopenib-*")) == before
    assert not list(workdir.glob(".*.tmp*"))


def test_traces_are_written_atomically_and_replace_an_old_file(workdir):
    target = workdir / "t.jsonl"
    target.write_text("old\n")
    result = invoke(["run", "-n", "2", "--trace", str(target), "{tmp}/ok.py"], {}, workdir)
    assert result.exit_code == 0, result.output
    assert target.read_text().startswith('{"t_ps"')
    assert not [p for p in workdir.iterdir() if p.name.startswith(".t.jsonl.")]


def test_with_debug_a_refusal_is_raised_with_its_traceback(workdir):
    result = invoke(
        ["run", "-n", "2", "--trace", "{tmp}/x.txt", "{tmp}/ok.py"], {}, workdir, debug=True
    )
    assert isinstance(result.exception, PyopenibError)
    assert result.exception.topic == "output-no-format"


def test_an_unexpected_error_is_one_line_that_says_it_is_a_bug(workdir, monkeypatch):
    import pyopenib.apps.config_commands as config_commands

    def broken(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(config_commands, "render_human", broken)
    result = invoke(["info"], {}, workdir)
    assert result.exit_code == 1
    assert "internal error: ZeroDivisionError" in result.output
    assert "--debug" in result.output and "Traceback" not in result.output


def test_scenario_honours_a_param_file_like_run(workdir):
    conf = workdir / "smallest.conf"
    conf.write_text("btl_openib_credits_qp = smallest\n")
    env = {"OMPI_MCA_mca_base_param_files": str(conf)}
    result = invoke(["scenario", "bibw", "--iterations", "400"], env, workdir)
    assert result.exit_code == 3, result.output  # T3 TERMINATE with credits on QP 0
    result = invoke(
        ["scenario", "bibw", "--iterations", "400", "--credits-qp", "own"], env, workdir
    )
    assert result.exit_code == 0, result.output  # the command line beats the file


def test_no_device_params_warning_is_silenced_by_its_variable(workdir):
    env = {
        "OMPI_MCA_btl_openib_device_param_files": "{tmp}/no-section.ini",
        "OMPI_MCA_btl_openib_warn_no_device_params_found": "0",
    }
    result = invoke(SCEN, env, workdir)
    assert result.exit_code == 0, result.output
    assert "no device-params INI section" not in result.output


def _options(command: click.Command, path: str):
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):  # a lazy group loads each on request
            yield from _options(command.get_command(ctx, name), f"{path} {name}".strip())
        return
    for param in command.params:
        if isinstance(param, click.Option) and (param.is_flag or param.name == "help"):
            continue  # a flag has no bad value
        yield path, param


def test_every_option_of_every_command_is_in_the_catalogue():
    missing = []
    for path, param in _options(main, ""):
        words = path.split()
        argvs = [c.argv for c in CASES if c.argv[: len(words)] == words]
        if isinstance(param, click.Argument):
            if not argvs and param.required:
                missing.append(f"{path} {param.name}")
            continue
        if not any(opt in argv for argv in argvs for opt in param.opts + param.secondary_opts):
            missing.append(f"{path} {param.opts[-1]}")
    assert missing == [], "add a bad-input case for: " + ", ".join(missing)
