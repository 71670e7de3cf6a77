"""Fuzzing the three parsers: whatever the input, the only exception is PyopenibError
(and for INI files, not even that when collecting diagnostics)."""

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from pyopenib.config import load_device_params, load_mca, parse_receive_queues
from pyopenib.config.device_params import DeviceParamsTable, parse_ini_text
from pyopenib.errors import PyopenibError

FUZZ = settings(max_examples=150, deadline=None)

ini_line = st.one_of(
    st.sampled_from(
        [
            "[default]",
            "[Chelsio T3]",
            "[ bad",
            "vendor_id = 0x1425,0",
            "vendor_part_id = 0x20",
            "vendor_part_id = 0",
            "mtu = 2048",
            "mtu = 3",
            "receive_queues = P,65536,256,192,128",
            "receive_queues = S,128,x",
            "credits_on_own_qp = 1",
            "max_inline_data = -1",
            "/* c",
            "*/",
            "# x",
            "// y",
            "=",
            "key",
            "",
        ]
    ),
    st.text(alphabet=string.printable, max_size=40),
)
rq_field = st.one_of(st.integers(-3, 70000).map(str), st.sampled_from(["", " ", "x", "1k"]))
rq_entry = st.builds(
    lambda kind, fields: ",".join([kind, *fields]),
    st.sampled_from(["P", "S", "X", "Q", "p", ""]),
    st.lists(rq_field, max_size=8),
)


@FUZZ
@given(st.lists(ini_line, max_size=30))
def test_ini_parser_only_ever_reports_diagnostics(lines):
    table = DeviceParamsTable(("fuzz.ini",))
    parse_ini_text("\n".join(lines), "fuzz.ini", table)
    for diagnostic in table.diagnostics:
        assert diagnostic.path == "fuzz.ini" and diagnostic.line >= 1
    for entry in table.entries.values():
        table.lookup(entry.vendor_id, entry.part_id)


@FUZZ
@given(st.lists(ini_line, max_size=30))
def test_strict_ini_loading_raises_only_pyopenib_error(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("ini") / "f.ini"
    path.write_text("\n".join(lines))
    try:
        load_device_params([path])
    except PyopenibError as exc:
        assert str(path) in str(exc)


@FUZZ
@given(st.one_of(st.lists(rq_entry, max_size=5).map(":".join), st.text(max_size=60)))
def test_receive_queues_parser_raises_only_pyopenib_error(value):
    try:
        queues = parse_receive_queues(value, "fuzz")
    except PyopenibError as exc:
        assert "fuzz" in str(exc)
    else:
        assert all(q.size >= 1 and q.rd_num > q.rd_low for q in queues)


param_line = st.one_of(
    st.sampled_from(
        [
            "btl_openib_ib_timeout = 5",
            "btl_openib_ib_timeout = 99",
            "btl_openib_credits_qp = own",
            "btl_openib_credits_qp = maybe",
            "btl_openib_ib_cq_size = 1k",
            "btl_openib_enable_srq_resize = yes",
            "btl_openib_receive_queues = P,128,8",
            "opal_btl_openib_mtu = 2k",
            "btl_openib_nonsense = 1",
            "[section]",
            "/* open",
            "# comment",
            "x",
            "",
        ]
    ),
    st.text(alphabet=string.printable, max_size=40),
)


@FUZZ
@given(st.lists(param_line, max_size=20))
def test_param_file_parser_raises_only_pyopenib_error(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("conf") / "p.conf"
    path.write_text("\n".join(lines))
    try:
        load_mca(environ={"OMPI_MCA_mca_base_param_files": str(path)})
    except PyopenibError as exc:
        assert str(path) in str(exc)


@FUZZ
@given(
    st.sampled_from(
        [
            "btl_openib_ib_timeout",
            "btl_openib_mtu",
            "btl_openib_credits_qp",
            "btl_openib_eager_limit",
            "btl_openib_enable_srq_resize",
            "btl_openib_max_inline_data",
        ]
    ),
    st.text(max_size=20),
)
def test_any_mca_value_converts_or_raises_pyopenib_error(name, text):
    try:
        load_mca([(name, text)])
    except PyopenibError as exc:
        assert name in str(exc) and "command line" in str(exc)
