"""Perfetto / Chrome trace-event JSON: a valid file, one process per host, one thread per
QP or BTL endpoint, and an arrow for every message from its send to its arrival."""

import json
from collections import defaultdict

from pyopenib.report import find_messages, qp_peers, to_perfetto, write_trace

_REQUIRED = {
    "M": ("name", "pid", "tid", "args"),
    "i": ("name", "ts", "pid", "tid", "s"),
    "X": ("name", "ts", "dur", "pid", "tid"),
    "s": ("name", "id", "ts", "pid", "tid"),
    "f": ("name", "id", "ts", "pid", "tid", "bp"),
}


def _load(events, tmp_path):
    path = tmp_path / "t.json"
    write_trace(events, path)
    return json.loads(path.read_text())


def test_perfetto_file_is_json_with_the_required_fields(t3_race_events, tmp_path):
    doc = _load(t3_race_events, tmp_path)
    evs = doc["traceEvents"]
    assert evs
    for ev in evs:
        for key in _REQUIRED[ev["ph"]]:
            assert key in ev, (key, ev)
        if "ts" in ev:
            assert isinstance(ev["ts"], float)


def test_timestamps_are_microseconds_and_monotonic_per_track(t3_race_events, tmp_path):
    evs = _load(t3_race_events, tmp_path)["traceEvents"]
    last = defaultdict(float)
    for ev in evs:
        if ev["ph"] == "M":
            continue
        key = (ev["pid"], ev["tid"])
        assert ev["ts"] >= last[key]
        last[key] = ev["ts"]
    assert max(last.values()) == t3_race_events[-1][0] / 1e6


def test_every_flow_start_has_one_finish_at_or_after_it(t3_race_events, tmp_path):
    evs = _load(t3_race_events, tmp_path)["traceEvents"]
    starts = {ev["id"]: ev for ev in evs if ev["ph"] == "s"}
    finishes = {ev["id"]: ev for ev in evs if ev["ph"] == "f"}
    assert starts and starts.keys() == finishes.keys()
    assert sum(ev["ph"] == "f" for ev in evs) == len(finishes)
    for fid, s in starts.items():
        assert finishes[fid]["ts"] >= s["ts"] and finishes[fid]["name"] == s["name"]


def test_one_process_per_host_and_one_thread_per_qp_and_endpoint(t3_race_events):
    meta = [ev for ev in to_perfetto(t3_race_events)["traceEvents"] if ev["ph"] == "M"]
    processes = {ev["args"]["name"] for ev in meta if ev["name"] == "process_name"}
    threads = {ev["args"]["name"] for ev in meta if ev["name"] == "thread_name"}
    assert processes == {"node000", "node001"}
    assert {"btl rank0->1", "btl rank1->0"} <= threads
    assert {a.split("/", 1)[1] for a in {e[3] for e in t3_race_events} if "/qp" in a} <= threads


def test_flow_ends_are_slices_so_the_viewers_can_bind_arrows_to_them(t3_race_events):
    evs = to_perfetto(t3_race_events)["traceEvents"]
    slices = {(ev["pid"], ev["tid"], ev["ts"]) for ev in evs if ev["ph"] == "X"}
    for ev in evs:
        if ev["ph"] in "sf":
            assert (ev["pid"], ev["tid"], ev["ts"]) in slices


def test_connected_qps_pair_up_symmetrically_across_hosts(t3_race_events):
    peers = qp_peers(t3_race_events)
    assert peers
    for a, b in peers.items():
        assert peers[b] == a and a.split("/")[0] != b.split("/")[0]


def test_every_arrival_of_the_race_trace_is_paired_with_its_send(t3_race_events):
    arrivals = [i for i, e in enumerate(t3_race_events) if e[2] == "recv_msg"]
    messages = find_messages(t3_race_events)
    assert (
        sorted(m.arrival for m in messages if t3_race_events[m.arrival][2] == "recv_msg")
        == arrivals
    )
    for m in messages:
        s, a = t3_race_events[m.send], t3_race_events[m.arrival]
        assert dict(s[4])["msn"] == dict(a[4])["msn"] and s[0] <= a[0]


def test_every_explicit_credit_message_is_labelled_by_the_qp_it_credits(t3_race_events):
    posted = [e for e in t3_race_events if e[2] == "credit_msg"]
    labelled = [m for m in find_messages(t3_race_events) if m.label.startswith("credits")]
    # a credit message still queued when the connection died has no send to label
    assert 0 < len(labelled) <= len(posted)
    for m in labelled:
        f = dict(t3_race_events[m.control][4])
        assert m.label == f"credits qp={f['qp']} on qp{f['on_qp']}"


def _ev(t, kind, actor, **f):
    return (t, "hw", kind, actor, tuple(f.items()))


def test_a_terminated_send_is_an_arrow_into_the_terminate():
    events = [
        _ev(0, "send_emit", "node000/t3/qp7", op="SEND", msn=0, bytes=100),
        _ev(5, "recv_msg", "node001/t3/qp9", op="SEND", msn=0, bytes=100),
        _ev(6, "send_emit", "node000/t3/qp7", op="SEND", msn=1, bytes=100),
        _ev(9, "terminate_sent", "node001/t3/qp9", msn=1, posted=4, usable=0),
    ]
    assert [(m.send, m.arrival) for m in find_messages(events)] == [(0, 1), (2, 3)]


def test_a_credit_message_is_the_next_control_sized_send_on_the_qp_it_was_posted_on():
    btl = ("btl", "credit_msg", "rank1->0", (("qp", 1), ("on_qp", 0), ("credits", 64)))
    events = [
        _ev(0, "send_emit", "node000/t3/qp8", op="SEND", msn=0, bytes=500),
        _ev(1, "send_emit", "node001/t3/qp4", op="SEND", msn=0, bytes=500),
        _ev(3, "recv_msg", "node001/t3/qp5", op="SEND", msn=0, bytes=500),
        _ev(4, "recv_msg", "node000/t3/qp7", op="SEND", msn=0, bytes=500),
        (5, *btl),
        _ev(6, "send_emit", "node001/t3/qp5", op="SEND", msn=1, bytes=8),  # QP index 1: not it
        _ev(7, "send_emit", "node001/t3/qp4", op="SEND", msn=1, bytes=8),
        _ev(9, "recv_msg", "node000/t3/qp8", op="SEND", msn=1, bytes=8),
        _ev(9, "recv_msg", "node000/t3/qp7", op="SEND", msn=1, bytes=8),
    ]
    assert qp_peers(events)["node001/t3/qp4"] == "node000/t3/qp7"
    labels = {(m.send, m.arrival): m.label for m in find_messages(events)}
    assert labels[(6, 8)] == "credits qp=1 on qp0"
    assert labels[(5, 7)] == "SEND 8B msn 1"
