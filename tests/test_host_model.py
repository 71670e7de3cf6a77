"""The host model (``sim.host``, ``data/hosts.toml``) and centred random timing: the
software path's CPU time is charged on the rank's clock, scales with ``--cpu-scale``,
comes before the receive re-post it precedes on a real host, and random durations sit
around the nominal value."""

import io
import statistics

import pytest

from pyopenib.apps.perftest import run_perftest
from pyopenib.apps.run_command import openib_btls
from pyopenib.config.hosts import COST_FIELDS, host_for_device, load_hosts
from pyopenib.errors import PyopenibError
from pyopenib.hw.device_model import load_device_models
from pyopenib.mpi import run_job
from pyopenib.sim import RandomOracle, Tracer, make_simulator
from pyopenib.sim.host import FREE_HOST, HostModel

PINGPONG = """
from mpi4py import MPI

comm = MPI.COMM_WORLD
buf = bytearray({size})
for i in range({warmup} + {iters}):
    if i == {warmup}:
        t0 = MPI.Wtime()
    if comm.rank == 0:
        comm.Send(buf, dest=1)
        comm.Recv(buf, source=1)
    else:
        comm.Recv(buf, source=0)
        comm.Send(buf, dest=0)
if comm.rank == 0:
    print((MPI.Wtime() - t0) * 1e6 / (2 * {iters}))
"""
"""A ping-pong of ``size``-byte messages; rank 0 prints the one-way latency (µs) of the
``iters`` after ``warmup``."""

# 300 one-way eager messages on the T3's 64 KiB queue (rd_num 256, rd_low 192): the
# receiver re-posts 64 buffers once 64 were consumed
STREAM = """
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
buf = np.zeros(4096, dtype=np.uint8)
for _ in range(300):
    if comm.rank == 0:
        comm.Send(buf, dest=1)
    else:
        comm.Recv(buf, source=0)
comm.Barrier()
"""


def _job(tmp_path, text, device, cpu_scale, tracer=None):
    """Run ``text`` on two ranks; the job's result and its standard output."""
    prog = tmp_path / "prog.py"
    prog.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    sim = make_simulator(0, tracer=tracer)
    make_btls = openib_btls(device, [], 1, cpu_scale=cpu_scale)
    result = run_job(str(prog), 2, make_btls, sim=sim, stdout=out, stderr=err)
    assert result.exit_code == 0, err.getvalue()
    return result, out.getvalue()


def _run(tmp_path, text, device, cpu_scale, tracer=None):
    return _job(tmp_path, text, device, cpu_scale, tracer)[0].sim_time_ps


@pytest.mark.parametrize("device", ["chelsio-t3", "mellanox-connectx5"])
def test_simulated_time_grows_with_cpu_scale_and_zero_is_a_free_host(tmp_path, device):
    pingpong = PINGPONG.format(size=4096, warmup=0, iters=20)
    times = [_run(tmp_path, pingpong, device, scale) for scale in (0.0, 1.0, 2.0)]
    assert times[0] < times[1] < times[2]
    # the host's cost is linear in the scale (the NIC's part does not move)
    assert times[2] - times[1] == pytest.approx(times[1] - times[0], rel=0.05)


def test_receive_repost_waits_for_the_hosts_processing(tmp_path):
    """The re-post of 64 buffers reaches the NIC only after the host handled the
    completion that made it due and built the 64 receive WRs: later than with a free
    host by at least 64 x post_recv."""

    def first_repost_delay(scale):
        tracer = Tracer()
        _run(tmp_path, STREAM, "chelsio-t3", scale, tracer)
        events = tracer.events  # (t_ps, layer, kind, actor, fields)
        repost = next(
            e
            for e in events
            if e[2] == "post_rr" and dict(e[4]).get("posted") == 64 and e[3] == "rank1->0"
        )
        # the message that consumed the 64th buffer of the 4 KiB messages' queue: its
        # completion, once handled, makes the re-post due
        consumed = [
            e[0]
            for e in events
            if e[2] == "recv_msg" and e[3].startswith("node001") and dict(e[4])["bytes"] > 4096
        ]
        arrived = consumed[63]
        return repost[0] - arrived

    host = host_for_device("chelsio-t3")
    assert first_repost_delay(1.0) - first_repost_delay(0.0) >= 64 * host.post_recv


def test_a_spend_sleeps_the_rank_and_a_charge_waits_for_settle():
    sim = make_simulator(0)
    host = HostModel(sim, host_for_device("chelsio-t3"), 2.0)
    seen = []

    def rank():
        host.spend(1000)
        seen.append(sim.now)
        host.charge(500)
        seen.append(sim.now)
        host.settle()
        seen.append(sim.now)

    sim.spawn(rank)
    sim.run()
    assert seen == [1000, 1000, 1500]
    assert host.match == 2 * host_for_device("chelsio-t3").match
    assert host.copy(0) == 0 < host.copy(1) < host.copy(4096)


def _costs(host: HostModel) -> list[int]:
    return [getattr(host, f.removesuffix("_ns")) for f in COST_FIELDS] + [host.copy(1 << 20)]


def test_a_zero_scale_and_the_free_host_cost_nothing():
    assert not any(_costs(FREE_HOST))
    assert not any(_costs(HostModel(None, host_for_device("mellanox-hermon"), 0.0)))
    assert all(_costs(HostModel(None, host_for_device("mellanox-hermon"), 1.0)))


def test_every_device_model_runs_on_a_host_of_the_file():
    catalogue = load_hosts()
    for device in load_device_models():
        host = catalogue.for_device(device)
        assert host.name in catalogue.hosts
        assert all(getattr(host, f.removesuffix("_ns")) > 0 for f in COST_FIELDS)
        # listed by name: a new device model must say which host it runs on
        assert device in catalogue.device_hosts, f"{device}: add it to [device_hosts]"
    # the T3 / InfiniHost era is not the ConnectX-5 era
    assert host_for_device("chelsio-t3").match > host_for_device("mellanox-connectx5").match


@pytest.mark.parametrize(
    "text,topic,words",
    [
        ("[hosts.a]\nmatch_ns = 1\n[device_hosts]\ndefault = 'a'\n", "host-field", "missing"),
        (
            "[hosts.a]\nmpi_call_ns=1\nmatch_ns=-1\nbtl_send_ns=1\ncompletion_ns=1\n"
            "poll_empty_ns=1\npost_recv_ns=1\ncopy_setup_ns=1\ncopy_gbps=1\n"
            "[device_hosts]\ndefault='a'\n",
            "host-field",
            "match_ns = -1",
        ),
        ("[hosts.a]\nmach_ns = 1\n[device_hosts]\ndefault = 'a'\n", "host-unknown-field", "mach"),
        ("[device_hosts]\ndefault = 'nowhere'\n", "host-missing", "nowhere"),
        ("[hosts]\n", "host-no-default", "default"),
        ("[hosts\n", "host-syntax", "invalid TOML"),
    ],
)
def test_a_bad_host_file_names_file_host_and_field(tmp_path, text, topic, words):
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    with pytest.raises(PyopenibError) as info:
        load_hosts(path)
    assert info.value.topic == topic
    assert str(path) in str(info.value) and words in str(info.value)


def test_random_durations_are_centred_on_the_nominal_value():
    """Split triangular over [lo, hi]: the median and the mode are the nominal value
    however skewed the interval, and both ends stay reachable."""
    oracle = RandomOracle(7)
    for lo, nominal, hi in ((100, 150, 300), (800, 1200, 2500), (10, 10, 40), (5, 30, 30)):
        draws = [oracle.duration("x", lo, nominal, hi) for _ in range(20001)]
        span = hi - lo
        # a sample median: within 2 % of the span of nominal (a uniform draw's would be
        # the midpoint, 10-23 % of the span away for these skewed intervals)
        assert abs(statistics.median(draws) - nominal) <= 0.02 * span
        below = sum(d < nominal for d in draws) / len(draws)
        above = sum(d > nominal for d in draws) / len(draws)
        assert below <= 0.52 and above <= 0.52
        assert lo <= min(draws) and max(draws) <= hi
        assert min(draws) <= lo + span * 0.05 and max(draws) >= hi - span * 0.05
        # the density peaks at nominal: a bin around it outweighs one at either end
        near = sum(abs(d - nominal) <= span * 0.05 for d in draws)
        assert near > sum(d <= lo + span * 0.1 for d in draws) or nominal == lo
        assert near > sum(d >= hi - span * 0.1 for d in draws) or nominal == hi


def test_an_idle_rank_sees_a_wake_up_at_its_next_progress_pass():
    """A rank with nothing to do busy-polls in passes of ``poll_empty``: what wakes it is
    found at the start of the next pass, not the instant it lands."""
    sim = make_simulator(0)
    host = HostModel(sim, host_for_device("chelsio-t3"), 1.0)
    period = host.poll_empty
    seen = []

    def rank():
        host.idle()
        sim.sleep(period * 5 // 2)  # the arrival, half-way through the third pass
        host.spend(host.poll_phase())
        seen.append(sim.now)

    sim.spawn(rank)
    sim.run()
    assert seen == [3 * period]
    assert HostModel(sim, host_for_device("chelsio-t3"), 0.0).poll_phase() == 0


@pytest.mark.parametrize("device", ["chelsio-t3", "ibm-ehca"])
def test_mpi_small_message_latency_sits_above_verbs_send_latency(tmp_path, device):
    """Small MPI messages go by RDMA write into the eager-RDMA ring, which spares the
    SEND's completion; the write still pays the responder's processing, and the host's
    software costs more than the completion it spares (the order real adapters show)."""
    pingpong = PINGPONG.format(size=8, warmup=20, iters=40)
    _result, out = _job(tmp_path, pingpong, device, 1.0)
    mpi_us = float(out.split()[-1])
    model = load_device_models()[device]
    _setup, (send,) = run_perftest("send_lat", model, sizes=(8,), iters=100)
    _setup, (write,) = run_perftest("write_lat", model, sizes=(8,), iters=100)
    assert write.t_typical < send.t_typical < mpi_us
