"""MCA variables: sources and their precedence, Open MPI's value syntax, strict errors
naming variable, value and source, deprecated synonyms."""

import pytest

from pyopenib.config import load_mca
from pyopenib.errors import PyopenibError


def write(path, text):
    path.write_text(text)
    return str(path)


def test_defaults_are_open_mpi_41s_and_credits_qp_is_auto():
    ctx = load_mca()
    assert ctx.get("btl_openib_eager_limit") == 12288
    assert ctx.get("btl_openib_ib_rnr_retry") == 7
    assert ctx.get("btl_openib_credits_qp") == "auto"
    assert ctx.get("btl_openib_receive_queues") == (
        "S,128,256,192,128:S,2048,1024,1008,64:S,12288,1024,1008,64:S,65536,1024,1008,64"
    )
    assert ctx.source("btl_openib_credits_qp") == "default"
    assert ctx.is_default("btl_openib_receive_queues")


def test_command_line_beats_environment_beats_file_beats_default(tmp_path):
    conf = write(tmp_path / "a.conf", "btl_openib_ib_timeout = 10\nbtl_openib_cq_size = 5\n")
    env = {
        "OMPI_MCA_mca_base_param_files": conf,
        "OMPI_MCA_btl_openib_ib_timeout": "11",
        "OMPI_MCA_btl_openib_ib_retry_count": "2",
    }
    ctx = load_mca([("btl_openib_ib_timeout", "12")], environ=env)
    assert (ctx.get("btl_openib_ib_timeout"), ctx.source("btl_openib_ib_timeout")) == (
        12,
        "command line",
    )
    assert ctx.source("btl_openib_ib_retry_count") == "environment"
    assert ctx.source("btl_openib_cq_size") == f"file ({conf}:2)"
    assert ctx.source("btl_openib_ib_min_rnr_timer") == "default"


def test_home_param_file_is_read_by_default(tmp_path):
    (tmp_path / ".openmpi").mkdir()
    write(tmp_path / ".openmpi" / "mca-params.conf", "btl_openib_credits_qp = own\n")
    ctx = load_mca(home=tmp_path)
    assert ctx.get("btl_openib_credits_qp") == "own"
    assert ctx.source("btl_openib_credits_qp").startswith("file (")


def test_leftmost_param_file_wins_as_in_open_mpi(tmp_path):
    left = write(tmp_path / "left.conf", "btl_openib_ib_timeout = 1\n")
    right = write(tmp_path / "right.conf", "btl_openib_ib_timeout = 2\nbtl_openib_cq_size = 9\n")
    ctx = load_mca(environ={"OMPI_MCA_mca_base_param_files": f"{left},{right}"})
    assert ctx.get("btl_openib_ib_timeout") == 1
    assert ctx.get("btl_openib_cq_size") == 9


def test_param_files_none_reads_no_file(tmp_path):
    (tmp_path / ".openmpi").mkdir()
    write(tmp_path / ".openmpi" / "mca-params.conf", "btl_openib_ib_timeout = 1\n")
    ctx = load_mca([("mca_base_param_files", "none")], home=tmp_path)
    assert ctx.is_default("btl_openib_ib_timeout")


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("btl_openib_enable_srq_resize", "disabled", False),
        ("btl_openib_enable_srq_resize", "y", True),
        ("btl_openib_enable_srq_resize", "2", True),
        ("btl_openib_eager_limit", "16k", 16384),
        ("btl_openib_eager_limit", "0x100", 256),
        ("btl_openib_eager_limit", "010", 8),
        ("btl_openib_device_type", "IW", "iwarp"),
        ("btl_openib_device_type", "0", "infiniband"),
        ("btl_openib_credits_qp", "2", "own"),
        ("btl_openib_mtu", "4k", 5),
        ("btl_openib_max_inline_data", "-1", -1),
    ],
)
def test_values_use_open_mpis_syntax(name, text, expected):
    assert load_mca([(name, text)]).get(name) == expected


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("btl_openib_ib_timeout", "abc"),
        ("btl_openib_ib_timeout", "32"),
        ("btl_openib_ib_retry_count", "-1"),
        ("btl_openib_eager_limit", "12x"),
        ("btl_openib_eager_limit", ""),
        ("btl_openib_enable_srq_resize", "True"),
        ("btl_openib_credits_qp", "qp0"),
        ("btl_openib_mtu", "0"),
        ("btl_openib_max_inline_data", "-2"),
    ],
)
def test_bad_values_name_variable_value_and_source(name, text):
    with pytest.raises(PyopenibError) as info:
        load_mca([(name, text)])
    message = str(info.value)
    assert info.value.topic == "mca-invalid-value"
    assert name in message and repr(text) in message and "command line" in message


def test_bad_value_in_a_param_file_names_file_and_line(tmp_path):
    conf = write(tmp_path / "x.conf", "# c\nbtl_openib_credits_qp = sometimes\n")
    with pytest.raises(PyopenibError) as info:
        load_mca(environ={"OMPI_MCA_mca_base_param_files": conf})
    assert f"file ({conf}:2)" in str(info.value)
    assert "'sometimes'" in str(info.value)


def test_syntax_error_in_a_param_file_names_file_and_line(tmp_path):
    conf = write(tmp_path / "x.conf", "btl_openib_ib_timeout = 3\nbtl_openib_cq_size 10\n")
    with pytest.raises(PyopenibError) as info:
        load_mca(environ={"OMPI_MCA_mca_base_param_files": conf})
    assert str(info.value).startswith(f"{conf}:2:")


def test_explicitly_named_missing_param_file_is_an_error(tmp_path):
    missing = str(tmp_path / "nope.conf")
    with pytest.raises(PyopenibError) as info:
        load_mca(environ={"OMPI_MCA_mca_base_param_files": missing})
    assert missing in str(info.value) and "environment" in str(info.value)


def test_same_name_twice_on_the_command_line_is_an_error():
    with pytest.raises(PyopenibError, match="more than once"):
        load_mca([("btl_openib_ib_timeout", "1"), ("btl_openib_ib_timeout", "2")])


def test_deprecated_synonym_applies_its_value_and_warns_once(tmp_path):
    conf = write(tmp_path / "x.conf", "btl_openib_ib_cq_size = 100\n")
    env = {"OMPI_MCA_mca_base_param_files": conf, "OMPI_MCA_btl_openib_ib_cq_size": "200"}
    ctx = load_mca(environ=env)
    assert ctx.get("btl_openib_cq_size") == 200
    assert ctx.get("btl_openib_ib_cq_size") == 200
    deprecations = [w for w in ctx.warnings if w.topic == "mca-deprecated"]
    assert len(deprecations) == 1
    assert "btl_openib_ib_cq_size" in deprecations[0].message
    assert "btl_openib_cq_size" in deprecations[0].message


def test_long_name_with_project_prefix_is_accepted():
    ctx = load_mca(environ={"OMPI_MCA_opal_btl_openib_ib_timeout": "5"})
    assert ctx.get("btl_openib_ib_timeout") == 5


def test_misspelt_openib_name_warns_and_other_frameworks_are_ignored():
    env = {"OMPI_MCA_btl_openib_credit_qp": "own", "OMPI_MCA_btl": "^tcp"}
    ctx = load_mca(environ=env)
    assert [w.topic for w in ctx.warnings] == ["mca-unknown-openib-name"]
    assert "OMPI_MCA_btl_openib_credit_qp" in ctx.warnings[0].message


def test_command_line_value_loses_one_pair_of_double_quotes_like_mpirun():
    ctx = load_mca([("btl_openib_receive_queues", '"P,128,32"')])
    assert ctx.get("btl_openib_receive_queues") == "P,128,32"


def test_string_values_expand_home():
    ctx = load_mca([("btl_openib_device_param_files", "~/a.ini:~/b.ini")], home="/h")
    assert ctx.get("btl_openib_device_param_files") == "/h/a.ini:/h/b.ini"


def test_unknown_variable_lookup_is_a_pyopenib_error():
    with pytest.raises(PyopenibError):
        load_mca().get("btl_openib_nonexistent")


def test_param_files_variable_inside_a_param_file_warns_that_it_has_no_effect(tmp_path):
    conf = write(tmp_path / "x.conf", "mca_base_param_files = /elsewhere.conf\n")
    ctx = load_mca(environ={"OMPI_MCA_mca_base_param_files": conf})
    assert ctx.get("mca_base_param_files") == conf
    assert [w.topic for w in ctx.warnings] == ["mca-param-files-in-file"]
