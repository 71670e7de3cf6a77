"""Device models: every Open MPI INI device has one, the data validates, bad files are
refused with file, line, device and field, and lookups by alias and PCI ids work."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from pyopenib.errors import PyopenibError
from pyopenib.hw.device_model import (
    DeviceModel,
    Interval,
    find_device_by_ids,
    get_device_model,
    load_device_models,
)

OMPI_INI = Path("/usr/share/openmpi/mca-btl-openib-device-params.ini")

INTERVALS = (
    "link_latency",
    "switch_latency",
    "pcie_latency",
    "send_wqe",
    "recv_wqe",
    "recv_usable",
    "rx",
    "cqe",
    "host_post",
    "host_poll",
)


@pytest.fixture(scope="module")
def models() -> dict[str, DeviceModel]:
    return load_device_models()


def _ompi_sections() -> dict[str, tuple[set[int], set[int]]]:
    """Section title -> (vendor ids, part ids) of Open MPI's shipped INI, [default] aside."""
    if not OMPI_INI.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{OMPI_INI} is missing on CI")
        pytest.skip(f"{OMPI_INI} not installed")
    sections: dict[str, tuple[set[int], set[int]]] = {}
    current = None
    for line in OMPI_INI.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if m := re.fullmatch(r"\[(.+)\]", line):
            current = m.group(1).strip()
            sections[current] = (set(), set())
        elif current and (m := re.fullmatch(r"(vendor_id|vendor_part_id)\s*=\s*(.+)", line)):
            ids = {int(v.strip(), 0) for v in m.group(2).split(",")}
            sections[current][0 if m.group(1) == "vendor_id" else 1].update(ids)
    sections.pop("default", None)
    return sections


# --- the shipped data ---------------------------------------------------------------------


def test_every_open_mpi_ini_section_has_models_with_exactly_its_pci_ids(models):
    # A section may be split between models (Hermon: ConnectX-2 and ConnectX-3), and a
    # model may have variants with the same ids (RoCE ports); the ids of a section's
    # primary models together are the section's, and each id finds a model of the section.
    sections = _ompi_sections()
    assert sections, "no sections parsed from Open MPI's INI"
    primaries = [m for m in models.values() if not m.variant_of]
    for title, (vendors, parts) in sections.items():
        named = [m for m in primaries if m.name == title]
        assert named, f"no device model named {title!r}"
        for model in named:
            assert set(model.vendor_id) == vendors, title
        assert set().union(*(m.vendor_part_ids for m in named)) == parts, title
        assert sum(len(m.vendor_part_ids) for m in named) == len(parts), title
        for part in parts:  # a part two sections list (16) keeps the first one's model
            owner = find_device_by_ids(min(vendors), part, models)
            assert owner.name == title or part in sections[owner.name][1]
    assert {m.name for m in models.values()} == set(sections)


def test_variants_are_their_primary_adapter_on_another_port_type(models):
    variants = {m.id: m for m in models.values() if m.variant_of}
    assert set(variants) == {
        "mellanox-connectx3-roce",
        "mellanox-connectx4-roce",
        "mellanox-connectx5-roce",
    }
    for m in variants.values():
        primary = models[m.variant_of]
        assert (m.transport, m.link_layer, primary.link_layer) == ("ib", "ethernet", "ib")
        assert (m.name, m.vendor_part_ids) == (primary.name, primary.vendor_part_ids)


def test_packaged_models_satisfy_the_schema(models):
    for m in models.values():
        assert m.transport in ("ib", "iwarp")
        assert m.link_layer in ("ib", "ethernet")
        assert m.work_queue in ("shared", "firmware", "split")
        assert m.link_gbps > 0 and m.pcie_gbps > 0
        assert m.mtu_max in (256, 512, 1024, 2048, 4096)
        for field in INTERVALS:
            iv = getattr(m, field)
            assert isinstance(iv, Interval)
            assert all(isinstance(v, int) for v in iv), (m.id, field)
            assert 0 <= iv.lo <= iv.nominal <= iv.hi, (m.id, field)


def test_only_chelsio_t3_has_a_shared_work_queue(models):
    shared = [m.id for m in models.values() if m.work_queue == "shared"]
    assert shared == ["chelsio-t3"]


def test_iwarp_and_roce_devices_have_the_right_transport(models):
    iwarp = {m.id for m in models.values() if m.transport == "iwarp"}
    assert iwarp == {
        "chelsio-t3",
        "chelsio-t4",
        "chelsio-t5",
        "chelsio-t6",
        "netxen",
        "intel-ne020",
        "qlogic-fastlinq",
        "ibm-soft-iwarp",
    }
    for bcm in ("broadcom-bcm57xxx", "broadcom-bcm58xxx"):
        assert (models[bcm].transport, models[bcm].link_layer) == ("ib", "ethernet")


def test_inline_limits_cover_what_open_mpi_asks_of_each_device(models):
    # max_inline_data in Open MPI's INI (default 128) must fit the device's capability,
    # except the Xeon Phi pseudo-device, which Open MPI ignores (ignore_device = 1).
    ini = {
        "chelsio-t3": 64,
        "chelsio-t4": 280,
        "intel-ne020": 64,
        "ibm-soft-iwarp": 72,
        "broadcom-bcm57xxx": 96,
        "mellanox-hermon": 128,
        "mellanox-connectx5": 256,
        "ibm-ehca": 0,
    }
    for device, inline in ini.items():
        assert models[device].max_inline >= inline, device


# Published small-message half-round-trip latencies (us) the nominal timing must reproduce
# within 15%; sources and the "guess" marks are in docs/devices.md.
PUBLISHED_US = {
    "mellanox-tavor": 4.8,
    "mellanox-arbel": 3.5,
    "mellanox-sinai": 3.0,
    "mellanox-hermon": 1.3,
    "mellanox-connectib": 1.05,
    "mellanox-connectx4": 0.9,
    "mellanox-connectx5": 0.85,
    "mellanox-connectx6": 0.9,
    "ibm-ehca": 5.0,
    "ibm-ehca2": 3.5,
    "chelsio-t3": 6.5,
    "chelsio-t4": 2.6,
    "chelsio-t5": 1.8,
    "chelsio-t6": 1.6,
    "intel-ne020": 6.0,
}
# Header bytes on the wire per packet (docs/devices.md): IB LRH+BTH+ICRC+VCRC; RoCEv2 and
# iWARP include preamble, inter-frame gap, Ethernet, IP, UDP/TCP and the RDMA headers.
HEADER_BYTES = {("ib", "ib"): 26, ("ib", "ethernet"): 82, ("iwarp", "ethernet"): 114}


def one_way_small_send_ns(m: DeviceModel, payload: int = 2) -> float:
    wire = (HEADER_BYTES[m.transport, m.link_layer] + payload) * m.ps_per_byte
    ps = (
        m.host_post.nominal
        + 2 * m.pcie_latency.nominal
        + m.send_wqe.nominal
        + wire
        + 2 * m.link_latency.nominal
        + m.switch_latency.nominal
        + m.rx.nominal
        + m.cqe.nominal
        + m.host_poll.nominal
    )
    return ps / 1000


@pytest.mark.parametrize("device", sorted(PUBLISHED_US))
def test_nominal_timing_reproduces_published_small_message_latency(models, device):
    got_us = one_way_small_send_ns(models[device]) / 1000
    assert got_us == pytest.approx(PUBLISHED_US[device], rel=0.15)


def test_t3_is_slower_than_connectx_by_several_times(models):
    t3 = one_way_small_send_ns(models["chelsio-t3"])
    cx = one_way_small_send_ns(models["mellanox-hermon"])
    assert 3 < t3 / cx < 8


def test_split_devices_make_a_posted_receive_usable_within_half_a_microsecond(models):
    for m in models.values():
        if m.work_queue == "split":
            assert m.recv_usable.nominal <= 500_000, m.id


def test_serialization_rates_follow_the_data_rate(models):
    assert models["chelsio-t3"].ps_per_byte == 800.0
    assert models["mellanox-tavor"].ps_per_byte == 1000.0
    assert models["mellanox-hermon"].pcie_ps_per_byte == pytest.approx(8000 / 26)


# --- lookup -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "device"),
    [
        ("connectx", "mellanox-hermon"),
        ("ConnectX", "mellanox-hermon"),
        ("hermon", "mellanox-hermon"),
        ("t3", "chelsio-t3"),
        ("CHELSIO-T3", "chelsio-t3"),
        ("ehca", "ibm-ehca"),
        ("siw", "ibm-soft-iwarp"),
    ],
)
def test_get_device_model_accepts_ids_and_aliases_in_any_case(name, device):
    assert get_device_model(name).id == device


def test_unknown_device_name_lists_valid_ids():
    with pytest.raises(PyopenibError) as err:
        get_device_model("myrinet")
    assert err.value.topic == "device-model-unknown"
    assert "myrinet" in str(err.value)
    assert "chelsio-t3" in str(err.value) and "mellanox-hermon" in str(err.value)


def test_find_device_by_ids_matches_vendor_and_part(models):
    assert find_device_by_ids(0x1425, 0x0031).id == "chelsio-t3"
    assert find_device_by_ids(0x1425, 0x5410).id == "chelsio-t5"
    assert find_device_by_ids(0x119F, 4099).id == "mellanox-connectx3"
    assert find_device_by_ids(0x15B3, 26428).id == "mellanox-hermon"
    assert find_device_by_ids(0x02C9, 23108).id == "mellanox-tavor"
    assert find_device_by_ids(0x1425, 23108) is None
    assert find_device_by_ids(0xDEAD, 0) is None


def test_find_device_by_ids_takes_the_first_section_like_open_mpi(models):
    # Part 16 is listed by both "QLogic InfiniPath 2" and "... 3"; Open MPI keeps the
    # first section's name for the (vendor, part) pair.
    assert find_device_by_ids(0x1077, 16, models).id == "qlogic-infinipath2"


def test_load_returns_a_fresh_dict_each_time():
    first = load_device_models()
    first.pop("chelsio-t3")
    assert "chelsio-t3" in load_device_models()


# --- bad files ------------------------------------------------------------------------------


def _valid_fields() -> dict[str, object]:
    return {
        "name": "Test NIC",
        "aliases": ["tn"],
        "vendor_id": [0x1234],
        "vendor_part_ids": [1, 2],
        "transport": "iwarp",
        "link_layer": "ethernet",
        "link_gbps": 10.0,
        "mtu_max": 2048,
        "work_queue": "shared",
        "max_inline": 64,
        "srq": False,
        "max_qp_wr": 1023,
        "max_srq_wr": 0,
        "max_cq_entries": 4096,
        "pcie_gbps": 12,
        **{f"{f}_ns": [1, 2.5, 3] for f in INTERVALS},
    }


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return repr(v)


def _write(tmp_path: Path, devices: dict[str, dict[str, object]]) -> Path:
    lines = ["# test devices"]
    for device, fields in devices.items():
        lines.append(f"[{device}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in fields.items()]
    path = tmp_path / "devices.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _error(tmp_path: Path, devices) -> PyopenibError:
    path = _write(tmp_path, devices)
    with pytest.raises(PyopenibError) as err:
        load_device_models(path)
    assert str(path) in str(err.value)
    return err.value


def test_a_valid_file_loads_and_converts_nanoseconds_to_picoseconds(tmp_path):
    fields = _valid_fields()
    fields["cqe_ns"] = [0.5, 1.2346, 7]
    m = load_device_models(_write(tmp_path, {"test-nic": fields}))["test-nic"]
    assert m.cqe == Interval(500, 1235, 7000)
    assert m.send_wqe == Interval(1000, 2500, 3000)
    assert m.vendor_part_ids == (1, 2) and m.aliases == ("tn",)
    assert m.pcie_gbps == 12.0 and isinstance(m.pcie_gbps, float)


def test_unknown_field_is_named_with_its_line(tmp_path):
    fields = _valid_fields() | {"rnr_nak_ns": [1, 2, 3]}
    err = _error(tmp_path, {"test-nic": fields})
    assert err.topic == "device-model-unknown-field"
    line = 2 + list(fields).index("rnr_nak_ns") + 1
    assert f"devices.toml:{line}:" in str(err)
    assert "'test-nic'" in str(err) and "'rnr_nak_ns'" in str(err)


def test_missing_field_is_named(tmp_path):
    fields = _valid_fields()
    del fields["recv_usable_ns"]
    err = _error(tmp_path, {"test-nic": fields})
    assert err.topic == "device-model-missing-field"
    assert "devices.toml:2:" in str(err) and "'recv_usable_ns'" in str(err)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("link_gbps", "fast"),
        ("mtu_max", 2048.0),
        ("srq", 1),
        ("max_qp_wr", True),
        ("vendor_id", 0x1234),
        ("vendor_part_ids", []),
        ("aliases", "tn"),
        ("cqe_ns", [1, 2]),
        ("cqe_ns", [1, "2", 3]),
        ("name", ""),
    ],
)
def test_wrong_type_is_refused_with_field_and_value(tmp_path, field, value):
    err = _error(tmp_path, {"test-nic": _valid_fields() | {field: value}})
    assert err.topic == "device-model-bad-type"
    assert f"'{field}'" in str(err) and "'test-nic'" in str(err)


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("send_wqe_ns", [5, 2, 9], "lo <= nominal <= hi"),
        ("send_wqe_ns", [1, 9, 5], "lo <= nominal <= hi"),
        ("host_post_ns", [-1, 2, 3], "negative"),
        ("max_inline", -4, "negative"),
        ("link_gbps", 0, "positive"),
        ("transport", "myrinet", "ib, iwarp"),
        ("link_layer", "fddi", "ib, ethernet"),
        ("work_queue", "merged", "shared, firmware, split"),
        ("mtu_max", 1500, "verbs MTU"),
        ("max_srq_wr", 16, "srq = false"),
        ("vendor_id", [-1], "between"),
        ("aliases", ["Bad Alias"], "slug"),
    ],
)
def test_bad_values_are_refused_with_the_reason(tmp_path, field, value, reason):
    err = _error(tmp_path, {"test-nic": _valid_fields() | {field: value}})
    assert err.topic == "device-model-bad-value"
    assert f"'{field}'" in str(err) and reason in str(err)
    line = 2 + list(_valid_fields()).index(field) + 1
    assert f"devices.toml:{line}:" in str(err)


def test_iwarp_over_an_ib_link_layer_is_refused(tmp_path):
    err = _error(tmp_path, {"test-nic": _valid_fields() | {"link_layer": "ib"}})
    assert err.topic == "device-model-bad-value" and "iWARP" in str(err)


def test_srq_devices_need_srq_depth(tmp_path):
    err = _error(tmp_path, {"test-nic": _valid_fields() | {"srq": True}})
    assert "'max_srq_wr'" in str(err) and "srq = true" in str(err)


def test_duplicate_alias_across_devices_is_refused(tmp_path):
    other = _valid_fields() | {"aliases": ["tn"]}
    err = _error(tmp_path, {"test-nic": _valid_fields(), "other-nic": other})
    assert err.topic == "device-model-duplicate-name"
    assert "'tn'" in str(err) and "'test-nic'" in str(err) and "'other-nic'" in str(err)


def test_alias_clashing_with_a_device_id_is_refused(tmp_path):
    other = _valid_fields() | {"aliases": ["test-nic"]}
    err = _error(tmp_path, {"test-nic": _valid_fields(), "other-nic": other})
    assert err.topic == "device-model-duplicate-name"


def test_device_id_must_be_a_slug(tmp_path):
    err = _error(tmp_path, {'"Test NIC"': _valid_fields()})
    assert err.topic == "device-model-bad-id"


def test_device_that_is_not_a_table_is_refused(tmp_path):
    path = tmp_path / "devices.toml"
    path.write_text('chelsio-t3 = "fast"\n')
    with pytest.raises(PyopenibError) as err:
        load_device_models(path)
    assert err.value.topic == "device-model-not-table"


def test_toml_syntax_error_names_the_file_and_line(tmp_path):
    path = tmp_path / "devices.toml"
    path.write_text("[t3]\nname = \n")
    with pytest.raises(PyopenibError) as err:
        load_device_models(path)
    assert err.value.topic == "device-model-syntax"
    assert str(path) in str(err.value) and "line 2" in str(err.value)


def test_empty_and_missing_files_are_refused(tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text("# nothing\n")
    with pytest.raises(PyopenibError) as err:
        load_device_models(empty)
    assert err.value.topic == "device-model-empty"
    with pytest.raises(PyopenibError) as err:
        load_device_models(tmp_path / "absent.toml")
    assert err.value.topic == "device-model-file" and "absent.toml" in str(err.value)
