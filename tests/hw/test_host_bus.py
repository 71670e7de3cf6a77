"""A card's host slot: the PCIe link trains at the lower generation and narrower width of
card and slot, so a gen3 x16 card in an x8 slot moves data at half the rate; chosen per
device in the devices file (``slot``) or per run (``--device NAME@SLOT``), with clear
errors for what no PCIe link can be."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "verbs"))

from verbs_testbed import Pair, toy_model  # noqa: E402

from pyopenib.errors import PyopenibError  # noqa: E402
from pyopenib.hw import get_device_model, load_device_models  # noqa: E402
from pyopenib.hw.device_model import with_slot  # noqa: E402
from pyopenib.verbs import SendWR, WrOpcode  # noqa: E402

MIB = 1 << 20


def _write_time(model) -> int:
    """Simulated time until a 1 MiB RDMA WRITE completes at its sender."""
    p = Pair(model=model)
    wr = SendWR(1, WrOpcode.RDMA_WRITE, p.sge(0, 0, MIB - 4096))
    wr.remote_addr, wr.rkey = p.mr[1].addr, p.mr[1].rkey
    start = p.sim.now
    p.qp[0].post_send(wr)
    p.sim.run()
    assert len(p.cq[0]) == 1
    return p.sim.now - start


def test_an_x8_slot_halves_a_bus_bound_transfer():
    # the bus (4 Gb/s) is the bottleneck, not the link (8 Gb/s): halving it halves the rate
    card = toy_model(pcie_gbps=4.0, pcie_gen=3, pcie_lanes=16)
    x8 = with_slot(card, "gen3x8")
    assert x8.pcie_ps_per_byte == 2 * card.pcie_ps_per_byte
    assert (x8.pcie_gen, x8.pcie_lanes, x8.slot) == (3, 8, "gen3x8")
    ratio = _write_time(x8) / _write_time(card)
    assert 1.9 < ratio <= 2.0


def test_the_link_trains_at_the_lesser_of_card_and_slot():
    cx5 = get_device_model("connectx5")
    assert (cx5.pcie_gen, cx5.pcie_lanes) == (3, 16)
    assert get_device_model("connectx5@gen3x8").pcie_gbps == pytest.approx(cx5.pcie_gbps / 2)
    assert get_device_model("connectx5@x8").pcie_gbps == pytest.approx(cx5.pcie_gbps / 2)
    gen2 = get_device_model("connectx5@gen2 x16")
    assert gen2.pcie_gbps == pytest.approx(cx5.pcie_gbps * (4.0 * 16) / (8.0 * 128 / 130 * 16))
    wider = get_device_model("connectx5@gen4x32")  # a better slot: the card's own link
    assert (wider.pcie_gen, wider.pcie_lanes) == (3, 16)
    assert wider.pcie_gbps == cx5.pcie_gbps
    assert get_device_model("connectx5@gen3x8").id == "mellanox-connectx5@gen3x8"


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("connectx5@pcie8", "expected gen<1-5>x<lanes>"),
        ("connectx5@gen3x3", "lanes one of"),
        ("connectx5@gen7x8", "expected gen<1-5>x<lanes>"),
        ("ehca@x8", "not a PCIe card"),
    ],
)
def test_a_slot_no_pcie_link_can_be_is_refused(name, fragment):
    with pytest.raises(PyopenibError) as err:
        get_device_model(name)
    assert err.value.topic == "device-model-bad-slot"
    assert fragment in str(err.value) and name.split("@")[1] in str(err.value)


def _devices_file(tmp_path, **extra) -> Path:
    base = get_device_model("connectx5")
    lines = [
        "[my-cx5]",
        'name = "Mine"',
        "aliases = []",
        "vendor_id = [1]",
        "vendor_part_ids = [2]",
    ]
    fields = {
        "transport": '"ib"',
        "link_layer": '"ib"',
        "link_gbps": base.link_gbps,
        "mtu_max": base.mtu_max,
        "work_queue": '"split"',
        "max_inline": base.max_inline,
        "srq": "true",
        "max_qp_wr": base.max_qp_wr,
        "max_srq_wr": base.max_srq_wr,
        "max_cq_entries": base.max_cq_entries,
        "pcie_gbps": base.pcie_gbps,
        "pcie_gen": 3,
        "pcie_lanes": 16,
    }
    fields.update(extra)
    lines += [f"{k} = {v}" for k, v in fields.items()]
    for name in ("link", "switch", "pcie"):
        lines.append(f"{name}_latency_ns = [1, 2, 3]")
    for name in ("send_wqe", "recv_wqe", "recv_usable", "rx", "cqe", "host_post", "host_poll"):
        lines.append(f"{name}_ns = [1, 2, 3]")
    path = tmp_path / "devices.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_devices_file_puts_a_card_in_a_narrower_slot(tmp_path):
    model = load_device_models(_devices_file(tmp_path, slot='"gen3x8"'))
    (m,) = model.values()
    assert (m.pcie_lanes, m.slot) == (8, "gen3x8")
    assert m.pcie_gbps == pytest.approx(get_device_model("connectx5").pcie_gbps / 2)


@pytest.mark.parametrize(
    ("extra", "field", "fragment"),
    [
        ({"slot": '"x3"'}, "slot", "lanes one of"),
        ({"pcie_lanes": 12}, "pcie_lanes", "PCIe link width"),
        ({"pcie_gen": 0}, "pcie_gen", "given together"),
        ({"pcie_gbps": 130.0}, "pcie_gbps", "above the"),
    ],
)
def test_a_bad_host_bus_in_a_devices_file_names_file_line_and_field(
    tmp_path, extra, field, fragment
):
    path = _devices_file(tmp_path, **extra)
    with pytest.raises(PyopenibError) as err:
        load_device_models(path)
    line = next(
        i for i, text in enumerate(path.read_text().splitlines(), 1) if text.startswith(field)
    )
    assert f"{path}:{line}" in str(err.value) and fragment in str(err.value)
