"""Settings against device limits, tool presets, the pairs that travel to workers, and
the notices for a variable set under two names or an INI section repeated in a file."""

from dataclasses import replace

import pytest

from pyopenib.config import load_device_params, load_mca
from pyopenib.config.device_ids import device_ids
from pyopenib.config.effective import effective_settings
from pyopenib.config.limits import DeviceLimits, check_device, queue_depths
from pyopenib.config.receive_queues import parse_receive_queues
from pyopenib.errors import PyopenibError

HERMON = DeviceLimits("mellanox-hermon", "ib", True, 16351, 16383)
T3 = DeviceLimits("chelsio-t3", "iwarp", False, 1023, 0)
HERMON_IDS = (0x02C9, 25408)


def _settings(ctx):
    return effective_settings(ctx, *HERMON_IDS)


def _refusal(pairs, limits=HERMON, **kwargs):
    ctx = load_mca(pairs)
    with pytest.raises(PyopenibError) as info:
        check_device(ctx, _settings(ctx), limits, **kwargs)
    return info.value


def test_queue_depths_take_the_credit_messages_and_cts_of_credits_qp_into_account():
    queues = parse_receive_queues("P,128,256,192,128:P,65536,256,192,128")
    # credits_qp 0 posts both queues' reserves and the CTS buffer; it sends both
    # queues' credit messages
    assert queue_depths(queues, 0) == [(256 + 4 + 4 + 1, 256 + 2 + 1), (256 + 4, 256 + 1 + 1)]


def test_a_queue_deeper_than_max_qp_wr_is_refused_naming_value_source_and_limit():
    err = _refusal([("btl_openib_receive_queues", "P,128,100000")])
    assert err.topic == "limit-qp-depth"
    assert "'P,128,100000'" in str(err) and "command line" in str(err)
    assert "16351" in str(err) and "max_qp_wr" in str(err)


def test_the_deepest_queue_that_fits_is_accepted():
    ctx = load_mca([("btl_openib_receive_queues", "P,128,16000,12000,4000,300")])
    check_device(ctx, _settings(ctx), HERMON)  # 16000 + 300 + 1 receives fit


def test_a_shared_queue_above_max_srq_wr_is_refused():
    err = _refusal([("btl_openib_receive_queues", "S,128,16000,15000,4000:S,65536,256")])
    assert err.topic == "limit-srq-depth" and "16383" in str(err)


def test_device_type_that_excludes_the_device_is_refused_with_its_source():
    err = _refusal([("btl_openib_device_type", "iw")])
    assert err.topic == "limit-device-type"
    assert "mellanox-hermon" in str(err) and "command line" in str(err)
    ctx = load_mca([("btl_openib_device_type", "infiniband")])
    check_device(ctx, _settings(ctx), HERMON)


def test_a_device_marked_ignore_device_in_its_ini_section_is_refused():
    ctx = load_mca()
    settings = replace(_settings(ctx), ignore_device=True)
    settings.origins["ignore_device"] = "INI x.ini:3 [Phi]"
    with pytest.raises(PyopenibError, match="x.ini:3"):
        check_device(ctx, settings, HERMON)


def test_the_largest_buffer_must_hold_the_upper_layers_header():
    err = _refusal([("btl_openib_receive_queues", "P,2,4")], min_largest=36, min_largest_what="h")
    assert err.topic == "limit-largest-buffer" and "36" in str(err)


def test_a_preset_is_below_the_user_and_above_the_ini_and_says_whose_default_it_is():
    presets = [("btl_openib_receive_queues", "P,128,8", "pyopenib check")]
    ctx = load_mca(presets=presets)
    assert ctx.source("btl_openib_receive_queues") == "default of pyopenib check"
    assert _settings(ctx).receive_queues_string == "P,128,8"
    env = {"OMPI_MCA_btl_openib_receive_queues": "P,128,16"}
    assert load_mca(environ=env, presets=presets).get("btl_openib_receive_queues") == "P,128,16"


def test_explicit_pairs_resolve_to_the_same_values_in_a_worker():
    env = {
        "OMPI_MCA_btl_openib_credits_qp": "own",
        "OMPI_MCA_btl_openib_eager_rdma_num": "8",
        "OMPI_MCA_btl_openib_enable_srq_resize": "no",
        "OMPI_MCA_btl_openib_mtu": "4",
    }
    here = load_mca([("btl_openib_ib_cq_size", "100")], environ=env)
    worker = load_mca(here.explicit_pairs())
    for var in here.variables():
        assert worker.get(var.full_name) == here.get(var.full_name), var.full_name
    assert worker.get("btl_openib_eager_rdma_num") == 9  # Open MPI's ++, once


def test_a_variable_under_two_names_in_one_source_warns_and_the_synonym_wins():
    ctx = load_mca([("btl_openib_cq_size", "100"), ("btl_openib_ib_cq_size", "200")])
    assert ctx.get("btl_openib_cq_size") == 200
    (notice,) = [w for w in ctx.warnings if w.topic == "mca-two-names"]
    assert "btl_openib_ib_cq_size = '200'" in notice.message
    assert "btl_openib_cq_size = '100'" in notice.message


def test_a_section_repeated_in_one_file_warns(tmp_path):
    ini = tmp_path / "x.ini"
    ini.write_text(
        "[a]\nvendor_id = 1\nvendor_part_id = 2\n[a]\nvendor_id = 1\nvendor_part_id = 2\n"
    )
    table = load_device_params([ini])
    assert [d.line for d in table.diagnostics] == [4]
    assert "appears again (first at line 1)" in table.diagnostics[0].message


def test_a_devices_file_with_a_negative_vendor_id_is_refused(tmp_path):
    toml = tmp_path / "d.toml"
    toml.write_text('[x]\nname = "x"\nvendor_id = -5\nvendor_part_ids = [1]\n')
    with pytest.raises(PyopenibError, match="not a PCI id"):
        device_ids("x", toml)


def test_t3_refuses_a_queue_above_its_1023_work_requests():
    err = _refusal([("btl_openib_receive_queues", "P,128,2000:P,65536,256")], limits=T3)
    assert "1023" in str(err) and "chelsio-t3" in str(err)
