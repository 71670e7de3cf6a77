"""JSON lines: the trace written by ``scenario --trace`` reads back as the same tuples."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyopenib.errors import PyopenibError
from pyopenib.report import read_jsonl, write_jsonl, write_trace


def test_t3_race_trace_round_trips_exactly_through_json_lines(t3_race_events, tmp_path):
    path = tmp_path / "t.jsonl"
    write_trace(t3_race_events, path)
    assert read_jsonl(path) == t3_race_events


def test_each_line_is_the_flat_record_scenario_trace_always_wrote(tmp_path):
    path = tmp_path / "t.jsonl"
    write_jsonl(
        [(5, "hw", "recv_msg", "node001/chelsio-t3/qp65", (("msn", 3), ("op", "SEND")))], path
    )
    assert json.loads(path.read_text()) == {
        "t_ps": 5,
        "layer": "hw",
        "kind": "recv_msg",
        "actor": "node001/chelsio-t3/qp65",
        "msn": 3,
        "op": "SEND",
    }


_names = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8).filter(
    lambda s: s not in ("t_ps", "layer", "kind", "actor")
)
_values = st.one_of(st.integers(-(2**63), 2**63), st.text(max_size=12), st.booleans())
_events = st.lists(
    st.tuples(
        st.integers(0, 10**15),
        st.sampled_from(["hw", "btl"]),
        st.text(max_size=10),
        st.text(max_size=20),
        st.dictionaries(_names, _values, max_size=4).map(lambda d: tuple(d.items())),
    ),
    max_size=20,
)


@settings(max_examples=100, deadline=None)
@given(_events)
def test_any_plain_valued_events_round_trip(tmp_path_factory, events):
    path = tmp_path_factory.mktemp("rt") / "t.jsonl"
    write_jsonl(events, path)
    assert read_jsonl(path) == events


def test_a_field_shadowing_a_column_is_refused(tmp_path):
    with pytest.raises(ValueError, match="shadows"):
        write_jsonl([(0, "hw", "x", "a", (("kind", 1),))], tmp_path / "t.jsonl")


def test_a_bad_line_is_reported_with_file_and_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"t_ps": 0, "layer": "hw", "kind": "k", "actor": "a"}\n{not json\n')
    with pytest.raises(PyopenibError) as exc:
        read_jsonl(path)
    assert exc.value.topic == "report-trace-line"
    assert f"{path}:2:" in str(exc.value)


def test_a_negative_time_is_not_a_trace_event(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"t_ps": -1, "layer": "hw", "kind": "k", "actor": "a"}\n')
    with pytest.raises(PyopenibError, match="t_ps must be a non-negative integer"):
        read_jsonl(path)
