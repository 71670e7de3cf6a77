"""Simulated figures beside published measurements, per adapter and metric.

Every row of ``PUBLISHED`` is a figure someone measured on a real adapter, with the setup
it was taken on (link, host bus, back-to-back or through a switch) and where it was
published. The benchmark simulates the same measurement on the device model (perftest's
``ib_send_lat``/``ib_send_bw`` through ``run_perftest``, OSU's ``osu_latency``/``osu_bw``
through ``pyopenib run`` of this repository's examples), in the same unit, and prints the
table with the error, and puts it into docs/FIDELITY.md between its markers (``make
bench`` regenerates it; ``--print-only`` leaves the document alone). A
back-to-back setup is simulated as one cable: no switch latency, the two links' latency
as one. Figures no source was found for are not here: docs/FIDELITY.md says so per
adapter; a guess is never a row.

    python benchmarks/fidelity.py                 # regenerate docs/FIDELITY.md's tables
    python benchmarks/fidelity.py --print-only    # only print them

The second table puts every device model's MPI small-message latency (``osu_latency``
with a free host and with the host model) beside its verbs ``send_lat`` and
``write_lat``: MPI must sit above ``send_lat`` on every adapter (host software on top of
the same NIC), and docs/FIDELITY.md says why per adapter family.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from pyopenib.apps.perftest import run_perftest
from pyopenib.config.hosts import host_for_device
from pyopenib.hw import Interval, get_device_model, load_device_models

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "FIDELITY.md"
BEGIN, END = "<!-- fidelity:begin -->", "<!-- fidelity:end -->"
MPI_BEGIN, MPI_END = "<!-- mpi-vs-verbs:begin -->", "<!-- mpi-vs-verbs:end -->"
TOLERANCE = 0.15
"""The calibration target: small-message latency and peak bandwidth within ±15 %."""
CALIBRATED = "±15 %"
CURVE = "curve (not a target)"
VM = "orientation (VMs)"
OLDER = "orientation (older part)"

POTTER = (
    "D. Potter, master's thesis, RWTH Aachen, 2018, table `mtu_performance` "
    "(git.dennispotter.eu/Dennis/masters-thesis, tables/mtu_performance.tex; setup in "
    "tables/benchmark_testsystem.tex)"
)
LIU = (
    'J. Liu, A. Mamidala, A. Vishnu, D. K. Panda, "Performance Evaluation of InfiniBand '
    'with PCI Express", Hot Interconnects 2004 (abstract)'
)
FORUM_CX4 = (
    'Mellanox community forum, "ib_send_bw ... message size" (MCX456A-ECAT, '
    "MLNX_OFED 3.2), mirrored at mellanox37.rssing.com/chan-11689808/article3279.html"
)
LIU_MICRO = (
    'J. Liu, A. Mamidala, A. Vishnu, D. K. Panda, "Evaluating InfiniBand Performance with '
    'PCI Express", IEEE Micro 25(1), 2005 (abstract)'
)
SQUYRES = (
    "J. Squyres, devel@lists.open-mpi.org, 2007 (mail-archive.com/devel@lists.open-mpi.org/"
    "msg02158.html), quoting Mellanox's measurements"
)
AZURE = (
    "MicrosoftDocs/azure-docs, articles/virtual-machines/hc-series-performance.md "
    '(HC) and hb-series-performance.md (HB), row "RDMA latency & bandwidth"'
)


@dataclass(frozen=True)
class Figure:
    """One published measurement and how to reproduce it on a device model."""

    adapter: str
    device: str
    """The device model (``--device``)."""
    metric: str
    """``send_lat``/``send_bw`` (perftest), ``osu_latency``/``osu_bw`` (OSU over MPI)."""
    size: int
    value: float
    unit: str
    """``us``; ``MB/s`` (10^6 B/s); ``Gb/s``."""
    setup: str
    source: str
    back_to_back: bool = False
    derived: str = ""
    """How the figure was derived from the published one, when it was."""
    target: str = CALIBRATED
    """``CALIBRATED`` (small-message latency, peak bandwidth: within ±15 %), or why the
    figure is shown without being a target (the curve's shape, virtual machines)."""


PUBLISHED = (
    Figure(
        "Mellanox ConnectX-4 EDR",
        "mellanox-connectx4",
        "send_lat",
        32,
        0.83,
        "us",
        "4x EDR, PCIe gen3 x16, back-to-back 0.5 m copper; MTU 4096; inline; RDMA CM QP",
        POTTER,
        back_to_back=True,
    ),
    Figure(
        "Mellanox ConnectX-4 EDR",
        "mellanox-connectx4",
        "send_lat",
        1024,
        1.61,
        "us",
        "as above",
        POTTER,
        back_to_back=True,
        target=CURVE,
    ),
    Figure(
        "Mellanox ConnectX-4 EDR",
        "mellanox-connectx4",
        "send_lat",
        4096,
        2.28,
        "us",
        "as above",
        POTTER,
        back_to_back=True,
        target=CURVE,
    ),
    Figure(
        "Mellanox ConnectX-4 EDR",
        "mellanox-connectx4",
        "send_lat",
        32768,
        4.57,
        "us",
        "as above",
        POTTER,
        back_to_back=True,
        target=CURVE,
    ),
    Figure(
        "Mellanox ConnectX-4 100GbE (RoCE)",
        "mellanox-connectx4-roce",
        "send_bw",
        65536,
        97.0,
        "Gb/s",
        "100GbE through a Mellanox SN2700 switch; PCIe x16 card",
        FORUM_CX4,
        derived='"~ 97Gbps", as the poster gives it',
    ),
    Figure(
        "Mellanox InfiniHost III Ex (PCIe)",
        "mellanox-arbel",
        "send_lat",
        2,
        3.8,
        "us",
        "4x SDR card on PCIe x8 (the model is the 4x DDR part; latency barely depends on "
        "the link rate); verbs level, operation and switch not stated in the abstract",
        LIU,
    ),
    Figure(
        "Mellanox InfiniHost III Ex (PCIe)",
        "mellanox-arbel",
        "osu_latency",
        8,
        4.6,
        "us",
        "MVAPICH over the same HCAs; switch not stated in the abstract",
        LIU,
    ),
    Figure(
        "Mellanox InfiniHost III Ex (PCIe)",
        "mellanox-arbel",
        "osu_latency",
        8,
        4.1,
        "us",
        "MPI over the same HCAs (the journal version of the paper above); size and switch "
        "not stated in the abstract",
        LIU_MICRO,
    ),
    Figure(
        "Mellanox InfiniHost (PCI-X)",
        "mellanox-tavor",
        "send_lat",
        2,
        5.0,
        "us",
        "4x SDR on 64-bit 133 MHz PCI-X; verbs level, as above",
        LIU,
    ),
    Figure(
        "Mellanox InfiniHost (PCI-X)",
        "mellanox-tavor",
        "send_bw",
        1048576,
        781.0,
        "MB/s",
        "4x SDR on PCI-X, one port, unidirectional peak",
        LIU,
        derived="968 MB/s (PCIe HCA) / 1.24, the ratio the abstract gives",
    ),
    Figure(
        "Mellanox ConnectX (first generation, 2007)",
        "mellanox-hermon",
        "osu_latency",
        8,
        1.9,
        "us",
        "Open MPI's openib BTL on the first ConnectX HCAs (MVAPICH 1.4 us, 1.9 us without "
        "its header caching); link rate, bus, host and size not stated; the model is the "
        "ConnectX-2 QDR part of 2009",
        SQUYRES,
        target=OLDER,
    ),
    Figure(
        "Mellanox EDR (Azure HC, ConnectX-5 assumed)",
        "mellanox-connectx5",
        "osu_latency",
        8,
        1.05,
        "us",
        "EDR, SR-IOV virtual machines on a switched fat tree; benchmark of the figure not "
        "stated (osu_latency or ib_send_lat)",
        AZURE,
        target=VM,
    ),
    Figure(
        "Mellanox EDR (Azure HC, ConnectX-5 assumed)",
        "mellanox-connectx5",
        "osu_bw",
        4194304,
        96.8,
        "Gb/s",
        "as above; osu_bw from MVAPICH2 2.3",
        AZURE,
        target=VM,
    ),
)


def back_to_back(model):
    """The model joined by one cable: no switch, the two links' latency as one."""
    lo, nominal, hi = model.link_latency
    return replace(
        model,
        switch_latency=Interval(0, 0, 0),
        link_latency=Interval(lo // 2, nominal // 2, hi // 2),
    )


def _perftest(figure: Figure) -> float:
    model = get_device_model(figure.device)
    if figure.back_to_back:
        model = back_to_back(model)
    iters = 200 if figure.metric.endswith("_lat") else 100
    _setup, (row,) = run_perftest(figure.metric, model, sizes=(figure.size,), iters=iters)
    if figure.metric.endswith("_lat"):
        return row.t_typical
    return row.bw_avg * 2**20  # perftest's MB/sec is 2^20 bytes per second


_OSU_SCRIPT = {"osu_latency": "osu_latency.py", "osu_bw": "osu_bw.py"}


def _osu_run(metric: str, device: str, size: int, *options: str) -> float | None:
    """Run this repository's OSU port under ``pyopenib run`` and read the size's row
    (None: Open MPI would not use the device, its INI says ``ignore_device``)."""
    cli = Path(sys.executable).with_name("pyopenib")
    script = ROOT / "examples" / _OSU_SCRIPT[metric]
    args = [str(cli), "run", "-n", "2", "--device", device, *options, str(script)]
    args += ["-m", str(size)]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0 and "ignore_device" in done.stderr:
        return None
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stderr}")
    for line in done.stdout.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == str(size):
            return float(fields[1])
    raise RuntimeError(f"no {size}-byte row in {metric} output:\n{done.stdout}")


def _osu(figure: Figure) -> float:
    if figure.back_to_back:
        raise ValueError(f"{figure}: back-to-back MPI runs are not supported")
    value = _osu_run(figure.metric, figure.device, figure.size)
    if value is None:
        raise RuntimeError(f"{figure}: Open MPI ignores the device")
    return value if figure.metric == "osu_latency" else value * 1e6  # MB/s -> B/s


def simulate(figure: Figure) -> float:
    """The simulated figure in the published figure's unit."""
    raw = _osu(figure) if figure.metric.startswith("osu_") else _perftest(figure)
    if figure.unit == "us":
        return raw
    if figure.unit == "MB/s":
        return raw / 1e6
    if figure.unit == "Gb/s":
        return raw * 8 / 1e9
    raise ValueError(f"unknown unit {figure.unit!r}")


def _size(n: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def table(results) -> str:
    rows = [
        "| adapter | model | metric | size | published | simulated | error | target | setup "
        "| source |",
        "|---|---|---|---:|---:|---:|---:|---|---|---|",
    ]
    for figure, sim in results:
        error = (sim - figure.value) / figure.value
        target = figure.target
        if target == CALIBRATED:
            target += " ✓" if abs(error) <= TOLERANCE else " ✗"
        published = f"{figure.value:g} {figure.unit}"
        if figure.derived:
            published += f" (*derived*: {figure.derived})"
        rows.append(
            f"| {figure.adapter} | `{figure.device}` | {figure.metric} | {_size(figure.size)} "
            f"| {published} | {sim:.2f} {figure.unit} | {error * 100:+.1f} % | {target} "
            f"| {figure.setup} | {figure.source} |"
        )
    return "\n".join(rows)


MPI_VS_VERBS_SIZE = 8


@dataclass(frozen=True)
class MpiVsVerbs:
    """One device's small-message latencies: MPI (free host, then the host model) beside
    verbs ``send_lat`` and ``write_lat``; ``None`` where Open MPI ignores the device."""

    device: str
    host: str
    mpi_free: float | None
    mpi: float | None
    send_lat: float
    write_lat: float


def mpi_vs_verbs(device: str) -> MpiVsVerbs:
    """``osu_latency`` at ``--cpu-scale 0`` and 1 against perftest, 8 bytes, nominal."""
    size = MPI_VS_VERBS_SIZE
    model = get_device_model(device)
    lat = {}
    for test in ("send_lat", "write_lat"):
        _setup, (row,) = run_perftest(test, model, sizes=(size,))
        lat[test] = row.t_typical
    free = _osu_run("osu_latency", device, size, "--cpu-scale", "0")
    mpi = _osu_run("osu_latency", device, size) if free is not None else None
    host = host_for_device(device).name
    return MpiVsVerbs(device, host, free, mpi, lat["send_lat"], lat["write_lat"])


def mpi_vs_verbs_table(rows) -> str:
    lines = [
        f"| device (host type) | osu_latency {MPI_VS_VERBS_SIZE} B, free host → host model (µs) "
        f"| `send_lat` (µs) | `write_lat` (µs) | MPI − `send_lat` (µs) |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        verbs = f"| {r.send_lat:.2f} | {r.write_lat:.2f} "
        if r.mpi is None:
            lines.append(f"| {r.device} ({r.host}) | — (ignore_device) {verbs}| — |")
            continue
        lines.append(
            f"| {r.device} ({r.host}) | {r.mpi_free:.2f} → {r.mpi:.2f} {verbs}"
            f"| {r.mpi - r.send_lat:+.2f} |"
        )
    return "\n".join(lines)


def write(text: str, begin: str = BEGIN, end: str = END) -> None:
    doc = DOC.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    if not pattern.search(doc):
        raise SystemExit(f"{DOC}: markers {begin} ... {end} not found")
    DOC.write_text(pattern.sub(lambda _m: f"{begin}\n{text}\n{end}", doc), encoding="utf-8")


def main(argv=None) -> list[tuple[Figure, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--print-only", action="store_true", help="print the table, leave docs/FIDELITY.md"
    )
    parser.add_argument(
        "--no-mpi-vs-verbs",
        action="store_true",
        help="skip the per-device MPI-vs-verbs table (two MPI runs per device model)",
    )
    opts = parser.parse_args(argv if argv is not None else [])
    results = [(figure, simulate(figure)) for figure in PUBLISHED]
    text = table(results)
    print(text)
    if not opts.print_only:
        write(text)
    if not opts.no_mpi_vs_verbs:
        rows = [mpi_vs_verbs(device) for device in load_device_models()]
        text = mpi_vs_verbs_table(rows)
        print(text)
        if not opts.print_only:
            write(text, MPI_BEGIN, MPI_END)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
