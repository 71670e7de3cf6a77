"""Device-params INI files: Open MPI's format, key-by-key merging across sections and
files, [default] fallback, diagnostics with file and line, and the shipped file's
credits_on_own_qp rule."""

import pytest

from pyopenib.config import SHIPPED_INI, load_device_params
from pyopenib.errors import PyopenibError

BASE = """\
[default]
vendor_id = 0
vendor_part_id = 0
mtu = 1024
use_eager_rdma = 0
max_inline_data = 128

[Card A]
vendor_id = 0x1425,5
vendor_part_id = 0x20, 33
mtu = 2048
receive_queues = P,65536,256,192,128
credits_on_own_qp = 1
"""


def ini(tmp_path, text, name="a.ini"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def diagnostics(tmp_path, text):
    path = ini(tmp_path, text)
    table = load_device_params([path], strict=False)
    return path, [(d.severity, d.line, d.message) for d in table.diagnostics]


def test_section_expands_to_every_vendor_and_part_pair(tmp_path):
    table = load_device_params([ini(tmp_path, BASE)])
    for vendor in (0x1425, 5):
        for part in (0x20, 33):
            assert table.lookup(vendor, part).section == "Card A"


def test_values_record_file_line_and_section(tmp_path):
    path = ini(tmp_path, BASE)
    params = load_device_params([path]).lookup(0x1425, 0x20)
    assert params.mtu.value == 2048
    assert params.mtu.where() == f"{path}:11 [Card A]"
    assert params.credits_on_own_qp.value is True


def test_unset_tuning_keys_fall_back_to_default_section(tmp_path):
    params = load_device_params([ini(tmp_path, BASE)]).lookup(0x1425, 0x20)
    assert params.max_inline_data.value == 128
    assert params.max_inline_data.section == "default"
    assert set(params.from_default) == {"use_eager_rdma", "max_inline_data"}


def test_unknown_device_gets_default_values_but_is_not_found(tmp_path):
    table = load_device_params([ini(tmp_path, BASE)])
    params = table.lookup(0x9999, 1)
    assert not params.found
    assert params.mtu.value == 1024
    assert table.lookup(0x9999, 1, with_default=False).mtu is None


def test_later_file_overrides_key_by_key_and_every_file_is_read(tmp_path):
    first = ini(tmp_path, BASE)
    second = ini(
        tmp_path, "[Card A tuned]\nvendor_id = 0x1425\nvendor_part_id = 32\nmtu = 4096\n", "b.ini"
    )
    params = load_device_params([first, second]).lookup(0x1425, 0x20)
    assert params.mtu.value == 4096 and params.mtu.path == second
    assert params.receive_queues.path == first
    assert params.section == "Card A"  # the entry keeps the first section's name


def test_comments_in_every_open_mpi_style_are_skipped(tmp_path):
    text = (
        "# hash\n  // slashes\n/* block\n still block */\n[S]\n"
        "vendor_id = 1 \nvendor_part_id = 2\n/* inline */ mtu = 512\n"
    )
    path, found = diagnostics(tmp_path, text)
    assert found == []
    assert load_device_params([path]).lookup(1, 2).mtu.value == 512


def test_octal_and_decimal_ids_as_strtol(tmp_path):
    table = load_device_params([ini(tmp_path, "[S]\nvendor_id = 010\nvendor_part_id = 0\n")])
    assert table.lookup(8, 0).found


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("mtu = 1024\n", 1, "not in a section"),
        ("[S]\nvendor_id 5\n", 2, "expected '='"),
        ("[S]\n!bad = 1\n", 2, "unexpected text"),
        ("[S\nvendor_id = 1\n", 1, "malformed section header"),
        ("[S]\nvendor_id = 0x1g\n", 2, "not a number"),
        ("[S]\nvendor_id = 1,,2\n", 2, "not a number"),
        ("[S]\nvendor_id = 1\nvendor_part_id = 1\nmtu = 1000\n", 4, "mtu must be"),
        ("[S]\nvendor_id = 1\nvendor_part_id = 1\nmax_inline_data = -2\n", 4, "must be -1"),
        ("[S]\nvendor_id = 1\nvendor_part_id = 1\ncredits_on_own_qp = 2\n", 4, "must be 0"),
        ("[S]\nvendor_id = 1\nvendor_part_id = 1\nreceive_queues = X,128,4\n", 4, "XRC"),
        ("[S]\nvendor_id = 1\nvendor_part_id = 1\nuse_eager_rdma = yes\n", 4, "not a number"),
        ("[S]\n/* never closed\n", 2, "never closed"),
    ],
)
def test_errors_name_file_and_line(tmp_path, text, line, fragment):
    path, found = diagnostics(tmp_path, text)
    errors = [d for d in found if d[0] == "error"]
    assert errors and errors[0][1] == line and fragment in errors[0][2]
    with pytest.raises(PyopenibError) as info:
        load_device_params([path])
    assert f"{path}:{line}:" in str(info.value)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("[S]\nvendor_id = 1\nvendor_part_id = 1\ncolour = blue\n", 4, "unknown key 'colour'"),
        ("[S]\nvendor_id = 1\nvendor_part_id = 1\nmtu = 512\nmtu = 256\n", 5, "again"),
        ("[S]\nmtu = 512\n", 1, "no vendor_id"),
    ],
)
def test_warnings_are_collected_not_fatal(tmp_path, text, line, fragment):
    path, found = diagnostics(tmp_path, text)
    assert [(d[0], d[1]) for d in found] == [("warning", line)]
    assert fragment in found[0][2]
    load_device_params([path])  # strict loading does not refuse warnings


def test_missing_file_is_an_error_naming_it(tmp_path):
    missing = str(tmp_path / "gone.ini")
    with pytest.raises(PyopenibError, match="gone.ini"):
        load_device_params([missing])
    table = load_device_params([missing], strict=False)
    assert table.errors[0].path == missing


def test_keys_are_case_insensitive_as_in_open_mpi(tmp_path):
    table = load_device_params(
        [ini(tmp_path, "[S]\nVENDOR_ID = 1\nVendor_Part_Id = 1\nMTU = 256\n")]
    )
    assert table.lookup(1, 1).mtu.value == 256


IWARP = {
    "QLogic FastLinQ QL41000",
    "Chelsio T3",
    "Chelsio T4",
    "Chelsio T5",
    "Chelsio T6",
    "NetXen",
    "NetEffect/Intel NE020",
    "IBM Soft iWARP",
}
BROADCOM = {"Broadcom BCM57XXX", "Broadcom BCM58XXX"}


def test_shipped_file_sets_credits_on_own_qp_for_iwarp_and_broadcom_only():
    table = load_device_params([SHIPPED_INI], strict=False)
    assert table.diagnostics == []
    for entry in table.entries.values():
        expected = entry.section in IWARP | BROADCOM
        assert entry.credits_on_own_qp is not None, entry.section
        assert entry.credits_on_own_qp.value is expected, entry.section
    blocks = open(SHIPPED_INI).read().split("\n[")[1:]
    assert len(blocks) == len(table.sections)
    assert all("\ncredits_on_own_qp = " in block for block in blocks)
