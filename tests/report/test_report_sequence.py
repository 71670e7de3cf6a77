"""Sequence diagrams of the race: files are written, the default window ends at the
failure, and an unreadable request is refused with a clean message."""

import pytest

from pyopenib.errors import PyopenibError
from pyopenib.report import default_window, first_failure, write_trace
from pyopenib.report.sequence import MAX_ROWS


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_sequence_diagram_of_the_t3_race_is_written(t3_race_events, tmp_path, suffix):
    path = tmp_path / f"race{suffix}"
    write_trace(t3_race_events, path)
    data = path.read_bytes()
    assert len(data) > 10_000
    assert data.startswith(b"\x89PNG") if suffix == ".png" else b"<svg" in data[:2000]


def _ev(t, kind, actor="node000/t3/qp1", **f):
    return (t, "hw", kind, actor, tuple(f.items()))


def test_default_window_runs_from_the_last_interesting_events_to_the_first_failure():
    events = [_ev(t, "post_rr") for t in range(0, 100, 10)]
    events += [_ev(100, "recv_usable"), _ev(110, "terminate_sent"), _ev(120, "post_rr")]
    assert first_failure(events) == 11
    assert default_window(events, last=3) == (80, 110)


def test_receive_readiness_bursts_do_not_crowd_the_default_window():
    events = [_ev(0, "credit_msg")] + [_ev(t, "recv_usable") for t in range(1, 50)]
    events.append(_ev(60, "terminate_sent"))
    assert default_window(events, last=2) == (0, 60)


def test_default_window_of_a_trace_without_failure_is_its_end():
    events = [_ev(t, "post_rr") for t in range(5)]
    assert default_window(events, last=2) == (3, 4)


def test_a_window_with_too_many_events_is_refused(tmp_path):
    events = [_ev(t, "post_rr") for t in range(MAX_ROWS + 1)]
    with pytest.raises(PyopenibError) as exc:
        write_trace(events, tmp_path / "x.png", window=(0, MAX_ROWS))
    assert exc.value.topic == "report-window-too-large"


def test_an_unknown_extension_is_refused(tmp_path):
    with pytest.raises(PyopenibError) as exc:
        write_trace([_ev(0, "post_rr")], tmp_path / "x.txt")
    assert exc.value.topic == "report-trace-format"


def test_runs_of_receive_readiness_share_one_row_per_qp():
    from pyopenib.report.sequence import _group_bursts

    events = [_ev(0, "post_rr", "rank0->1")]
    events += [_ev(t, "recv_usable", f"node000/t3/qp{64 + t % 2}") for t in range(1, 9)]
    events += [_ev(9, "credit_msg", "rank0->1"), _ev(10, "recv_usable")]
    assert [len(g) for g in _group_bursts(events, list(range(len(events))))] == [1, 4, 4, 1, 1]
