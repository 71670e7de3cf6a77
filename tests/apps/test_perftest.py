"""pyopenib perftest: simulated ib_send_lat / ib_*_bw figures and the command."""

import re

import pytest
from click.testing import CliRunner

from pyopenib.apps.perftest import run_perftest
from pyopenib.cli import main
from pyopenib.hw.device_model import get_device_model

# docs/devices.md: nominal one-way small-SEND latency the models were tuned to (us)
NOMINAL_SEND_LAT_US = {"chelsio-t3": 6.39, "connectx": 1.25}
BAND_US = {"chelsio-t3": (2.0, 15.0), "connectx": (0.5, 4.0)}


@pytest.mark.parametrize("device", sorted(NOMINAL_SEND_LAT_US))
def test_send_lat_typical_is_within_30_percent_of_the_documented_nominal(device):
    _, (row,) = run_perftest("send_lat", get_device_model(device), iters=200)
    lo, hi = BAND_US[device]
    assert lo < row.t_typical < hi
    assert abs(row.t_typical / NOMINAL_SEND_LAT_US[device] - 1) < 0.30
    assert row.t_min <= row.t_typical <= row.t_max


@pytest.mark.parametrize("device", ["chelsio-t3", "connectx"])
@pytest.mark.parametrize("test", ["send_bw", "write_bw"])
def test_64k_bandwidth_never_exceeds_the_link_rate(device, test):
    model = get_device_model(device)
    _, (row,) = run_perftest(test, model, iters=100)
    link_mb = model.link_gbps * 1000 / 8  # decimal MB/s; perftest's MB is 2**20, smaller
    assert 0 < row.bw_avg <= row.bw_peak * (1 + 1e-9)
    assert row.bw_peak <= link_mb


def test_connectx_64k_send_bandwidth_approaches_the_link_rate():
    model = get_device_model("connectx")
    _, (row,) = run_perftest("send_bw", model, iters=100)
    assert row.bw_avg * 2**20 / 1e6 > 0.7 * model.link_gbps * 1000 / 8


def test_read_lat_is_a_full_round_trip_and_write_lat_is_below_send_lat():
    model = get_device_model("connectx")
    rows = {
        t: run_perftest(t, model, iters=100)[1][0] for t in ("send_lat", "write_lat", "read_lat")
    }
    assert rows["write_lat"].t_typical < rows["send_lat"].t_typical < rows["read_lat"].t_typical


def test_random_timing_spreads_the_samples_and_is_reproducible_by_seed():
    model = get_device_model("t3")
    a = run_perftest("send_lat", model, iters=100, seed=7, random_timing=True)[1][0]
    b = run_perftest("send_lat", model, iters=100, seed=7, random_timing=True)[1][0]
    assert a == b
    assert a.t_stdev > 0 and a.t_max > a.t_min


def test_cli_prints_perftest_header_and_latency_columns():
    result = CliRunner().invoke(main, ["perftest", "send_lat", "--device", "connectx", "-n", "100"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Send Latency Test" in out and "Connection type : RC" in out
    assert "TX depth        : 1" in out and "Mtu             : 4096[B]" in out
    assert "t_typical[usec]" in out and "99.9% percentile[usec]" in out
    row = re.search(r"^ 2\s+100\s+([\d.]+)", out, re.M)
    assert row and 0.5 < float(row.group(1)) < 4.0


def test_cli_bandwidth_columns_and_size_option():
    result = CliRunner().invoke(
        main, ["perftest", "write_bw", "--device", "t3", "--size", "4096", "--iters", "50"]
    )
    assert result.exit_code == 0, result.output
    assert "BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]" in result.output
    assert re.search(r"^ 4096\s+50\s+[\d.]+", result.output, re.M)


def test_cli_unknown_device_is_a_usage_error_with_a_clear_message_and_no_traceback():
    result = CliRunner().invoke(main, ["perftest", "send_lat", "--device", "nosuch"])
    assert result.exit_code == 2
    assert "unknown device 'nosuch'" in result.output
    assert "Traceback" not in result.output


def test_cli_bad_size_exits_1():
    result = CliRunner().invoke(main, ["perftest", "send_lat", "--device", "t3", "--size", "0"])
    assert result.exit_code == 1
    assert "--size 0 is out of range" in result.output


# -- CQ moderation (perftest's -Q/--cq-mod, DEF_CQ_MOD 100) ---------------------------------


def _spy_send_cq_polls(monkeypatch):
    """Count the send-CQ completions the bandwidth sender polls (side 0's send CQ)."""
    from pyopenib.apps import perftest as pt

    polled = []
    real = pt._Run._completions

    def spy(self, cq, block=True):
        wcs = real(self, cq, block)
        if cq is self.send_cq[0]:
            polled.extend(wc.wr_id for wc in wcs)
        return wcs

    monkeypatch.setattr(pt._Run, "_completions", spy)
    return polled


@pytest.mark.parametrize("test", ["send_bw", "write_bw"])
@pytest.mark.parametrize(("iters", "cq_mod"), [(1000, 100), (1000, 1), (250, 100), (50, 7)])
def test_bandwidth_sender_gets_one_send_completion_per_cq_mod_wrs(monkeypatch, test, iters, cq_mod):
    polled = _spy_send_cq_polls(monkeypatch)
    setup, (row,) = run_perftest(
        test, get_device_model("connectx"), sizes=(64,), iters=iters, cq_mod=cq_mod
    )
    assert setup.cq_moderation == cq_mod
    # WR k is signalled when k % cq_mod == cq_mod - 1, and the last WR always
    expected = [k for k in range(iters) if k % cq_mod == cq_mod - 1 or k == iters - 1]
    assert polled == expected
    assert row.iterations == iters and 0 < row.bw_avg <= row.bw_peak * (1 + 1e-9)


def test_cq_moderation_defaults_and_clamps_as_perftest():
    model = get_device_model("connectx")
    # DEF_CQ_MOD; off above MSG_SIZE_CQ_MOD_LIMIT (8 KiB) unless -a or -Q; <= tx_depth
    assert run_perftest("send_bw", model, sizes=(8192,), iters=100)[0].cq_moderation == 100
    assert run_perftest("send_bw", model, sizes=(8193,), iters=100)[0].cq_moderation == 1
    big = run_perftest("write_bw", model, sizes=(65536,), iters=100, run_all=True)[0]
    assert big.cq_moderation == 100
    assert (
        run_perftest("send_bw", model, sizes=(65536,), iters=100, cq_mod=50)[0].cq_moderation == 50
    )
    clamped = run_perftest("send_bw", model, sizes=(8,), iters=100, tx_depth=16, cq_mod=1024)[0]
    assert (clamped.tx_depth, clamped.cq_moderation) == (16, 16)
    assert run_perftest("send_bw", model, sizes=(8,), iters=20)[0].tx_depth == 20  # tx <= iters


# `pyopenib perftest ... -n 200` rows with every send signalled, as before CQ moderation
# existed (commit f3bb8bb): --cq-mod 1 must give them to the digit. Re-measured when
# issue 14 changed the NIC model on purpose (cut-through, DMA reads as round trips, the
# split send engine overlapping payload reads): T3 8 B 2.80 -> 2.10, ConnectX-2 8 B
# 16.68 -> 36.80 (send) / 36.79 (write), 64 KiB 3019.01 -> 3097.38 MB/sec.
_ROWS_BEFORE_CQ_MOD = {
    (
        "send_bw",
        "chelsio-t3",
        8,
    ): " 8          200                  2.10               2.10             0.275558",
    (
        "send_bw",
        "connectx",
        8,
    ): " 8          200                 36.80              36.80             4.822942",
    (
        "write_bw",
        "connectx",
        8,
    ): " 8          200                 36.79              36.79             4.822477",
    (
        "send_bw",
        "connectx",
        65536,
    ): " 65536      200               3097.38            3097.38             0.049558",
}


@pytest.mark.parametrize(("test", "device", "size"), sorted(_ROWS_BEFORE_CQ_MOD))
def test_cq_mod_1_reproduces_the_figures_from_before_cq_moderation(test, device, size):
    args = ["perftest", test, "--device", device, "-s", str(size), "-n", "200", "--cq-mod", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "CQ Moderation   : 1\n" in result.output
    assert _ROWS_BEFORE_CQ_MOD[(test, device, size)] in result.output.splitlines()


def test_cli_header_shows_the_cq_moderation_used():
    def header(*args):
        result = CliRunner().invoke(main, ["perftest", *args, "--device", "t3", "-n", "100"])
        assert result.exit_code == 0, result.output
        return re.search(r"^ CQ Moderation   : (\d+)$", result.output, re.M).group(1)

    assert header("send_bw", "-s", "8") == "100"
    assert header("write_bw", "-s", "8", "--cq-mod", "10") == "10"
    assert header("send_bw") == "1"  # 64 KiB without -a: perftest disables moderation
    assert header("send_bw", "-s", "8", "-t", "32") == "32"  # never above the TX depth
    lat = CliRunner().invoke(main, ["perftest", "send_lat", "--device", "t3", "-n", "10"])
    assert "CQ Moderation" not in lat.output  # perftest prints it for BW tests only


def test_cli_bad_cq_mod_exits_1():
    result = CliRunner().invoke(main, ["perftest", "send_bw", "--device", "t3", "-Q", "0"])
    assert result.exit_code == 1
    assert "--cq-mod 0 is out of range (1 .. 1024)" in result.output
