"""pyopenib perftest: simulated ib_send_lat / ib_*_bw figures and the command."""

import re

import pytest
from click.testing import CliRunner

from pyopenib.cli import main
from pyopenib.hw.device_model import get_device_model
from pyopenib.verbs.perftest import run_perftest

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


def test_cli_unknown_device_exits_1_with_a_clear_message_and_no_traceback():
    result = CliRunner().invoke(main, ["perftest", "send_lat", "--device", "nosuch"])
    assert result.exit_code == 1
    assert "unknown device 'nosuch'" in result.output
    assert "Traceback" not in result.output


def test_cli_bad_size_exits_1():
    result = CliRunner().invoke(main, ["perftest", "send_lat", "--device", "t3", "--size", "0"])
    assert result.exit_code == 1
    assert "--size 0 is out of range" in result.output
