"""``pyopenib report trace``: converts a scenario's JSON-lines trace; bad input exits 1
with one clean line."""

import json

from click.testing import CliRunner

from pyopenib.cli import main
from pyopenib.report import write_jsonl


def _run(*args):
    return CliRunner().invoke(main, list(args))


def test_report_trace_converts_to_perfetto_and_png(t3_race_events, tmp_path):
    src = tmp_path / "t.jsonl"
    write_jsonl(t3_race_events, src)
    r = _run("report", "trace", str(src), "--format", "perfetto", "-o", str(tmp_path / "t.json"))
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    r = _run("report", "trace", str(src), "-o", str(tmp_path / "t.png"))
    assert r.exit_code == 0, r.output
    assert (tmp_path / "t.png").read_bytes().startswith(b"\x89PNG")


def test_report_trace_window_selects_the_events_drawn(t3_race_events, tmp_path):
    src = tmp_path / "t.jsonl"
    write_jsonl(t3_race_events, src)
    t = t3_race_events[-1][0] / 1e6
    out = tmp_path / "w.svg"
    r = _run("report", "trace", str(src), "-o", str(out), "--window-us", str(t - 5), str(t))
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 0


def test_missing_trace_file_exits_1_with_a_clean_message(tmp_path):
    r = _run("report", "trace", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "x.json"))
    assert r.exit_code == 1
    assert "pyopenib: cannot read trace file" in r.output and "Traceback" not in r.output


def test_a_file_that_is_not_json_lines_exits_1_naming_the_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"t_ps": 0, "layer": "hw", "kind": "k", "actor": "a"}\nhello\n')
    r = _run("report", "trace", str(bad), "-o", str(tmp_path / "x.json"))
    assert r.exit_code == 1
    assert f"{bad}:2:" in r.output


def test_an_empty_window_exits_1(tmp_path):
    src = tmp_path / "t.jsonl"
    write_jsonl([(1_000_000, "btl", "post_rr", "rank0->1", (("qp", 0),))], src)
    r = _run("report", "trace", str(src), "-o", str(tmp_path / "x.png"), "--window-us", "5", "6")
    assert r.exit_code == 1
    assert "no trace events between 5.000 us and 6.000 us" in r.output


def test_an_output_name_without_a_known_extension_needs_format(tmp_path):
    src = tmp_path / "t.jsonl"
    write_jsonl([(0, "btl", "post_rr", "rank0->1", ())], src)
    r = _run("report", "trace", str(src), "-o", str(tmp_path / "x.out"))
    assert r.exit_code == 1
    assert "give --format" in r.output
