"""Effective device settings: Open MPI's precedence between MCA variables, the device's
INI section and built-in defaults, the credits policy, clamping, and peer checks."""

import pytest

from pyopenib.config import (
    SHIPPED_INI,
    check_peer_compatibility,
    effective_settings,
    load_device_params,
    load_mca,
)
from pyopenib.errors import PyopenibError

CHELSIO_T3 = (0x1425, 0x20)
CONNECTX5 = (0x15B3, 4119)
EHCA = (0x5076, 0)
CHELSIO_T4 = (0x1425, 0xA000)
UNKNOWN = (0x9999, 7)


@pytest.fixture(scope="module")
def shipped():
    return load_device_params([SHIPPED_INI])


def settings(shipped, device, cli=(), env=None):
    return effective_settings(load_mca(cli, environ=env), *device, ini=shipped)


def test_auto_credits_policy_uses_the_devices_ini_key(shipped):
    s = settings(shipped, CHELSIO_T3)
    assert s.credits_policy == "own"
    assert "[Chelsio T3]" in s.origins["credits_policy"]
    assert settings(shipped, CONNECTX5).credits_policy == "smallest"


def test_explicit_credits_qp_beats_the_ini_key(shipped):
    s = settings(shipped, CHELSIO_T3, [("btl_openib_credits_qp", "smallest")])
    assert s.credits_policy == "smallest"
    assert s.origins["credits_policy"] == "MCA btl_openib_credits_qp (command line)"


def test_auto_without_any_ini_value_means_smallest(tmp_path):
    path = tmp_path / "x.ini"
    path.write_text("[default]\nvendor_id = 0\nvendor_part_id = 0\nmtu = 1024\n")
    s = effective_settings(load_mca(), *UNKNOWN, ini=load_device_params([path]))
    assert s.credits_policy == "smallest"
    assert s.origins["credits_policy"].startswith("built-in default")


def test_receive_queues_ini_value_beats_default_and_explicit_mca_beats_ini(shipped):
    s = settings(shipped, CHELSIO_T3)
    assert s.receive_queues_string == "P,128,256,192,128:P,65536,256,192,128"
    assert s.receive_queues_kind == "ini"
    s = settings(
        shipped, CHELSIO_T3, env={"OMPI_MCA_btl_openib_receive_queues": "P,128,8:P,65536,64"}
    )
    assert s.receive_queues_kind == "mca" and len(s.receive_queues) == 2
    assert s.origins["receive_queues"] == "MCA btl_openib_receive_queues (environment)"
    s = settings(shipped, CONNECTX5)
    assert s.receive_queues_kind == "default"
    assert s.receive_queues_string.startswith("S,128,256,192,128")
    assert s.credits_qp_index == 3  # no P queue: the last queue


def test_mtu_use_eager_rdma_and_inline_come_from_ini_unless_set(shipped):
    s = settings(shipped, CHELSIO_T3)
    assert (s.mtu, s.use_eager_rdma, s.max_inline_data) == (2048, True, 64)
    s = settings(
        shipped,
        CHELSIO_T3,
        [
            ("btl_openib_mtu", "1k"),
            ("btl_openib_use_eager_rdma", "0"),
            ("btl_openib_max_inline_data", "-1"),
        ],
    )
    assert (s.mtu, s.use_eager_rdma, s.max_inline_data) == (1024, False, -1)


def test_unknown_device_uses_default_section_and_says_so(shipped):
    s = settings(shipped, UNKNOWN)
    assert (s.mtu, s.use_eager_rdma, s.max_inline_data) == (1024, False, 128)
    assert "via [default]" in s.origins["mtu"]
    assert s.notes and "no device-params INI section" in s.notes[0]
    quiet = settings(shipped, UNKNOWN, [("btl_openib_warn_no_device_params_found", "0")])
    assert quiet.notes == ()


def test_default_eager_limit_and_max_send_size_are_lowered_to_the_largest_buffer(shipped):
    s = settings(shipped, CHELSIO_T3, [("btl_openib_receive_queues", "P,128,8:P,8192,64")])
    assert (s.eager_limit, s.max_send_size) == (8192, 8192)
    assert "lowered" in s.origins["eager_limit"]


def test_explicit_eager_limit_above_the_largest_buffer_is_an_error(shipped):
    cli = [("btl_openib_receive_queues", "P,128,8:P,8192,64"), ("btl_openib_eager_limit", "9000")]
    with pytest.raises(PyopenibError) as info:
        settings(shipped, CHELSIO_T3, cli)
    assert "btl_openib_eager_limit = 9000 (from command line)" in str(info.value)


def test_free_list_max_below_the_buffers_needed_is_an_error(shipped):
    with pytest.raises(PyopenibError, match="btl_openib_free_list_max = 100"):
        settings(shipped, CHELSIO_T3, [("btl_openib_free_list_max", "100")])


def test_ini_files_named_by_the_mca_variable_are_read(tmp_path):
    path = tmp_path / "site.ini"
    path.write_text("[X]\nvendor_id = 0x9999\nvendor_part_id = 7\ncredits_on_own_qp = 1\n")
    s = effective_settings(load_mca([("btl_openib_device_param_files", str(path))]), *UNKNOWN)
    assert s.credits_policy == "own" and s.device_section == "X"


def test_rows_list_every_setting_with_an_origin(shipped):
    rows = settings(shipped, CHELSIO_T3).rows()
    assert {name for name, _, _ in rows} >= {
        "receive_queues",
        "credits_policy",
        "mtu",
        "ib_rnr_retry",
    }
    assert all(origin for _, _, origin in rows)


def test_peers_with_the_same_queues_are_compatible_even_with_different_policies(shipped):
    a = settings(shipped, CHELSIO_T3)
    b = settings(shipped, CHELSIO_T3, [("btl_openib_credits_qp", "smallest")])
    check_peer_compatibility(a, b)


def test_peers_with_different_queues_get_an_error_saying_what_differs(shipped):
    with pytest.raises(PyopenibError) as info:
        check_peer_compatibility(settings(shipped, CHELSIO_T4), settings(shipped, EHCA))
    message = str(info.value)
    assert info.value.topic == "peer-queues-differ"
    assert "queue 0 is P,65536,64,48,32,4 locally but P,128,256,192,128,4 remotely" in message
    assert "[Chelsio T4]" in message and "[IBM eHCA 4x and 12x]" in message
    with pytest.raises(PyopenibError, match="1 queues locally but 4 remotely"):
        check_peer_compatibility(
            settings(shipped, CHELSIO_T3, [("btl_openib_receive_queues", "S,128,256,192,128")]),
            settings(shipped, CONNECTX5),
        )


def test_qp_inline_row_follows_open_mpis_max_inline_size(shipped):
    """ConnectX-5: INI max_inline_data 256 over S,128:S,2048:S,12288:S,65536 gives the
    first queue its size, the last (RDMA) QP 256 and the queues between nothing."""
    rows = {name: (value, origin) for name, value, origin in settings(shipped, CONNECTX5).rows()}
    assert rows["qp_inline"][0] == "128:0:0:256"
    assert "max_inline_size()" in rows["qp_inline"][1]
    small = settings(shipped, CONNECTX5, [("btl_openib_max_inline_data", "64")])
    assert small.qp_inline_string == "64:0:0:64"
