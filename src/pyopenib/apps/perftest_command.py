"""The ``pyopenib perftest`` command: perftest's ``ib_*_lat`` / ``ib_*_bw`` on two
simulated hosts, printed the way perftest prints them. Measurement lives in
``perftest``; this module only parses options and formats."""

from __future__ import annotations

import click

from ..hw.device_model import get_device_model
from ..options import DEVICE_NAME
from .perftest import (
    ALL_SIZES,
    DEF_ITERS,
    TESTS,
    BandwidthResult,
    LatencyResult,
    run_perftest,
)

__all__ = ["perftest", "format_report"]

RESULT_LINE = "-" * 87
_TITLES = {
    "send_lat": "Send Latency Test",
    "send_bw": "Send BW Test",
    "write_lat": "RDMA_Write Latency Test",
    "write_bw": "RDMA_Write BW Test",
    "read_lat": "RDMA_Read Latency Test",
}
_LAT_HEADER = (
    " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
    "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
)
_BW_HEADER = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"


def _header(setup) -> list[str]:
    transport = "IW" if setup.transport == "iwarp" else "IB"
    link = "Ethernet" if setup.link_layer == "ethernet" else "IB"
    lines = [
        RESULT_LINE,
        f"                    {_TITLES[setup.test]}",
        f" Dual-port       : OFF          Device         : {setup.device}",
        f" Number of qps   : 1            Transport type : {transport}",
        " Connection type : RC           Using SRQ      : OFF",
        f" TX depth        : {setup.tx_depth}",
    ]
    if setup.test.startswith("send"):
        lines.append(f" RX depth        : {setup.rx_depth}")
    if not setup.is_latency:
        lines.append(f" CQ Moderation   : {setup.cq_moderation}")
    lines += [
        f" Mtu             : {setup.mtu}[B]",
        f" Link type       : {link}",
        f" Max inline data : {setup.max_inline}[B]",
        " rdma_cm QPs     : OFF",
        " Data ex. method : simulated",
        RESULT_LINE,
    ]
    for side, (lid, qpn, psn) in (("local", setup.local), ("remote", setup.remote)):
        lines.append(f" {side} address: LID {lid:#06x} QPN {qpn:#06x} PSN {psn:#08x}")
    lines.append(RESULT_LINE)
    return lines


def _row(r: LatencyResult | BandwidthResult) -> str:
    if isinstance(r, LatencyResult):
        return (
            f" {r.size:<7} {r.iterations:<10} {r.t_min:>11.2f} {r.t_max:>14.2f}"
            f" {r.t_typical:>16.2f} {r.t_avg:>14.2f} {r.t_stdev:>16.2f}"
            f" {r.p99:>22.2f} {r.p999:>24.2f}"
        )
    return (
        f" {r.size:<7}    {r.iterations:<10}     {r.bw_peak:>10.2f}"
        f"         {r.bw_avg:>10.2f}           {r.msg_rate:>10.6f}"
    )


def format_report(setup, rows) -> str:
    """perftest's output: header block, column titles, one row per size, closing rule."""
    lines = _header(setup)
    lines.append(_LAT_HEADER if setup.is_latency else _BW_HEADER)
    lines += [_row(r) for r in rows]
    lines.append(RESULT_LINE)
    return "\n".join(lines)


@click.command()
@click.argument("test", type=click.Choice(TESTS))
@click.option(
    "--device",
    "device",
    type=DEVICE_NAME,
    required=True,
    help="Device model id or alias (both hosts).",
)
@click.option("-s", "--size", type=int, default=None, help="Message size in bytes.")
@click.option("-n", "--iters", type=int, default=DEF_ITERS, show_default=True)
@click.option("-a", "--all", "all_sizes", is_flag=True, help="Sizes 2 .. 2^23 (powers of two).")
@click.option(
    "-t",
    "--tx-depth",
    type=click.IntRange(min=1),
    default=None,
    help="Outstanding sends (bw: 128; at most the device's max_qp_wr).",
)
@click.option(
    "-Q",
    "--cq-mod",
    type=int,
    default=None,
    help="Bandwidth tests: one signalled send per N (default 100; 1 above 8 KiB without -a).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0, max=2**63 - 1),
    default=0,
    show_default=True,
    help="Seed of the random oracle (with --random-timing).",
)
@click.option("--random-timing", is_flag=True, help="Draw durations inside the intervals.")
def perftest(test, device, size, iters, all_sizes, tx_depth, cq_mod, seed, random_timing):
    """perftest (ib_send_lat, ib_send_bw, ...) between two simulated hosts through a switch.

    All times are simulated. Latency tests report half the ping-pong round trip
    (read_lat: the whole READ round trip)."""
    model = get_device_model(device)
    sizes = ALL_SIZES if all_sizes else (None if size is None else (size,))
    setup, rows = run_perftest(
        test, model, sizes, iters, seed, random_timing, tx_depth, cq_mod, run_all=all_sizes
    )
    click.echo(format_report(setup, rows))
