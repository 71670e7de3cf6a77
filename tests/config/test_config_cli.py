"""``pyopenib info`` and ``pyopenib ini``: output formats, device selection, and clean
errors (message naming file:line or variable and source, exit code 1, no traceback)."""

import pytest
from click.testing import CliRunner

from pyopenib.cli import main
from pyopenib.config import SHIPPED_INI


@pytest.fixture
def run(tmp_path):
    def invoke(*args, env=None):
        environment = {"HOME": str(tmp_path)}
        environment.update(env or {})
        return CliRunner().invoke(main, list(args), env=environment)

    return invoke


def assert_clean_failure(result, *fragments):
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.stderr.startswith("pyopenib: ")
    for fragment in fragments:
        assert fragment in result.stderr


@pytest.fixture
def devices_file(tmp_path):
    path = tmp_path / "devices.toml"
    path.write_text(
        "[chelsio-t3]\naliases = ['t3']\nvendor_id = [0x1425]\nvendor_part_ids = [0x20, 0x21]\n"
        "transport = 'iwarp'\nwork_queue = 'shared'\n"
    )
    return str(path)


def test_info_prints_ompi_info_style_lines_with_the_new_variable(run):
    result = run("info")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "                 MCA btl: openib (MCA v2.1.0, API v3.1.0, Component v0.1.0)"
    assert (
        '          MCA btl openib: parameter "btl_openib_credits_qp" (current value: "auto", '
        "data source: default, level: 5 tuner/detail, type: int)"
    ) in lines
    assert '                          Valid values: 0:"auto", 1:"smallest", 2:"own"' in lines


def test_info_level_filters_like_ompi_info(run):
    result = run("info", "--level", "4", "--parsable")
    names = {line.split(":")[4] for line in result.stdout.splitlines() if ":param:" in line}
    assert names == {
        "btl_openib_eager_limit",
        "btl_openib_max_send_size",
        "btl_openib_rndv_eager_limit",
        "btl_openib_rdma_pipeline_send_length",
        "btl_openib_rdma_pipeline_frag_size",
        "btl_openib_min_rdma_pipeline_size",
    }


def test_info_parsable_reports_mca_source_and_quotes_values_with_colons(run):
    result = run(
        "info",
        "--parsable",
        "--mca",
        "btl_openib_credits_qp",
        "own",
        env={"OMPI_MCA_btl_openib_receive_queues": "P,128,8:P,4096,8"},
    )
    out = result.stdout.splitlines()
    assert "mca:btl:openib:param:btl_openib_credits_qp:value:own" in out
    assert "mca:btl:openib:param:btl_openib_credits_qp:source:command line" in out
    assert 'mca:btl:openib:param:btl_openib_receive_queues:value:"P,128,8:P,4096,8"' in out
    assert "mca:btl:openib:param:btl_openib_receive_queues:source:environment" in out


def test_info_all_adds_the_generic_param_files_variable(run):
    assert "mca_base_param_files" not in run("info").stdout
    assert 'parameter "mca_base_param_files"' in run("info", "--all").stdout


def test_info_for_a_device_shows_effective_settings_and_their_origins(run, devices_file):
    result = run("info", "--device", "T3", "--devices-file", devices_file)
    assert result.exit_code == 0, result.output
    assert "Effective settings on vendor 0x1425 part 32 [Chelsio T3]:" in result.stdout
    assert "from INI " + SHIPPED_INI in result.stdout
    parsable = run("info", "--parsable", "--vendor-id", "0x1425", "--part-id", "32").stdout
    assert "pyopenib:device:credits_policy:value:own" in parsable.splitlines()


def test_info_deprecated_synonym_warns_on_stderr(run):
    result = run("info", env={"OMPI_MCA_btl_openib_ib_mtu": "4"})
    assert result.exit_code == 0
    assert "pyopenib: warning: MCA variable btl_openib_ib_mtu is deprecated" in result.stderr


@pytest.mark.parametrize("level", ["0", "10", "x"])
def test_info_bad_level_fails_cleanly(run, level):
    assert_clean_failure(run("info", "--level", level), f"--level {level}")


def test_info_bad_mca_value_fails_cleanly_naming_variable_and_source(run):
    result = run("info", "--mca", "btl_openib_credits_qp", "qp0")
    assert_clean_failure(result, "btl_openib_credits_qp", "'qp0'", "command line")


def test_info_bad_environment_value_names_the_source(run):
    result = run("info", env={"OMPI_MCA_btl_openib_ib_timeout": "forever"})
    assert_clean_failure(result, "btl_openib_ib_timeout", "environment")


def test_info_bad_param_file_names_file_and_line(run, tmp_path):
    conf = tmp_path / "p.conf"
    conf.write_text("\nbtl_openib_eager_limit = lots\n")
    result = run("info", env={"OMPI_MCA_mca_base_param_files": str(conf)})
    assert_clean_failure(result, f"file ({conf}:2)")


def test_info_bad_receive_queues_for_a_device_names_variable_and_source(run):
    result = run(
        "info",
        "--vendor-id",
        "0x1425",
        "--part-id",
        "32",
        "--mca",
        "btl_openib_receive_queues",
        "X,128,4",
    )
    assert_clean_failure(result, "X,128,4", "command line", "not support")


def test_info_unknown_device_and_bad_ids_fail_cleanly(run, devices_file, tmp_path):
    assert_clean_failure(run("info", "--device", "nic9", "--devices-file", devices_file), "nic9")
    missing = str(tmp_path / "none.toml")
    assert_clean_failure(run("info", "--device", "t3", "--devices-file", missing), missing)
    assert_clean_failure(run("info", "--vendor-id", "0xzz", "--part-id", "1"), "--vendor-id")
    assert_clean_failure(run("info", "--vendor-id", "1"), "--vendor-id")


def test_ini_check_accepts_the_shipped_file(run):
    result = run("ini", "check", SHIPPED_INI)
    assert result.exit_code == 0
    assert "OK" in result.stdout


def test_ini_check_lists_every_problem_with_file_and_line(run, tmp_path):
    bad = tmp_path / "bad.ini"
    bad.write_text("mtu = 1\n[S]\nvendor_id = 1\nvendor_part_id = 1\ncolour = 3\nmtu = 7\n")
    result = run("ini", "check", str(bad), str(tmp_path / "missing.ini"))
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    out = result.stdout
    assert f"{bad}:1: error:" in out
    assert f"{bad}:5: warning:" in out
    assert f"{bad}:6: error:" in out
    assert "missing.ini:0: error: cannot read file" in out
    assert "3 error(s), 1 warning(s)" in result.stderr


def test_ini_show_resolves_values_and_where_each_came_from(run, devices_file):
    result = run("ini", "show", "--device", "chelsio-t3", "--devices-file", devices_file)
    assert result.exit_code == 0, result.output
    assert "section [Chelsio T3]" in result.stdout
    assert "credits_on_own_qp = 1" in result.stdout
    assert "[Chelsio T3])" in result.stdout


def test_ini_show_unknown_device_says_default_values_apply(run, tmp_path):
    ini = tmp_path / "a.ini"
    ini.write_text("[default]\nvendor_id = 0\nvendor_part_id = 0\nmtu = 512\n")
    result = run("ini", "show", "--vendor-id", "5", "--part-id", "5", "--file", str(ini))
    assert result.exit_code == 0
    assert "no section; [default] values apply" in result.stdout
    assert f"mtu = 512    ({ini}:4 [default] via [default])" in result.stdout


def test_ini_show_with_a_broken_file_fails_cleanly_naming_file_and_line(run, tmp_path):
    ini = tmp_path / "a.ini"
    ini.write_text("[S]\nvendor_id = 1\nvendor_part_id = 1\nmtu = 999\n")
    result = run("ini", "show", "--vendor-id", "1", "--part-id", "1", "--file", str(ini))
    assert_clean_failure(result, f"{ini}:4")
    assert_clean_failure(run("ini", "show"), "--device")
