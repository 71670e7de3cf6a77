"""btl_openib_receive_queues: Open MPI's derived defaults, validation order and errors,
the built-in default string and credits_qp."""

import pytest

from pyopenib.config import (
    QueueSpec,
    credits_qp_index,
    default_receive_queues,
    format_receive_queues,
    parse_receive_queues,
)
from pyopenib.errors import PyopenibError


def test_pp_defaults_follow_open_mpis_formulas():
    (q,) = parse_receive_queues("P,65536,64")
    assert q == QueueSpec("P", 65536, 64, 48, rd_win=32, rd_rsv=4)


def test_pp_explicit_fields_and_left_out_trailing_fields_take_defaults():
    (q,) = parse_receive_queues("P,128,256,192,32")
    assert (q.rd_low, q.rd_win, q.rd_rsv) == (192, 32, 16)
    (q,) = parse_receive_queues("P,128,256,192,128")
    assert q.rd_rsv == 4


def test_srq_defaults_follow_open_mpis_formulas():
    a, b = parse_receive_queues("S,128,256,192,128:S,2048,1024,1008,64")
    assert (a.sd_max, a.rd_init, a.srq_limit) == (128, 64, 12)
    assert (b.rd_init, b.srq_limit) == (256, 48)
    (c,) = parse_receive_queues("S,4096,4")
    assert (c.rd_low, c.sd_max, c.rd_init, c.srq_limit) == (3, 1, 1, 1)


def test_a_default_that_computes_to_zero_becomes_one():
    (q,) = parse_receive_queues("S,128,4")  # sd_max = rd_low // 4 = 0
    assert q.sd_max == 1


def test_default_string_is_open_mpis_for_stock_and_changed_limits():
    assert default_receive_queues(12288, 65536) == (
        "S,128,256,192,128:S,2048,1024,1008,64:S,12288,1024,1008,64:S,65536,1024,1008,64"
    )
    assert default_receive_queues(4096, 65536).startswith("S,128,256,192,128:S,1024,")
    assert default_receive_queues(100, 65536).split(":")[1] == "S,1024,1024,1008,64"


def test_credits_qp_is_the_first_p_queue_else_the_last_queue():
    assert credits_qp_index(parse_receive_queues("S,128,256:P,4096,64:P,65536,64")) == 1
    assert credits_qp_index(parse_receive_queues("S,128,256:S,4096,256")) == 1
    assert credits_qp_index(parse_receive_queues("P,128,256:P,65536,256")) == 0


def test_format_writes_every_field_and_parses_back_to_the_same_queues():
    queues = parse_receive_queues("P,128,256,192,128:S,65536,256")
    assert parse_receive_queues(format_receive_queues(queues)) == queues


@pytest.mark.parametrize(
    ("value", "topic", "fragment"),
    [
        ("", "rq-empty", "defines no queue pairs"),
        ("  ", "rq-empty", "defines no queue pairs"),
        (":::", "rq-empty-entry", "entry 0 is empty"),
        ("P,128,256::P,65536,256", "rq-empty-entry", "entry 1 is empty"),
        ("P,128,256:", "rq-empty-entry", "entry 1 is empty"),
        ("P,128,256,,32", "rq-empty-field", "field 4 (rd_low)"),
        ("P,128,,", "rq-empty-field", "field 3 (rd_num)"),
        ("P,99999999999999999999,4", "rq-number-too-big", "above the limit 2147483647"),
        ("S,128,3000000000", "rq-number-too-big", "(rd_num)"),
        ("Q,128,256", "rq-bad-type", "'Q,128,256'"),
        ("p,128,256", "rq-bad-type", "valid types are P"),
        ("X,128,256", "rq-xrc", "not support"),
        ("P,128", "rq-bad-field-count", "has 2 fields"),
        ("P,128,256,192,128,4,9", "rq-bad-field-count", "3 to 6"),
        ("S,128,256,1,2,3,4,5", "rq-bad-field-count", "3 to 7"),
        ("P,12k,256", "rq-bad-number", "'12k'"),
        ("P,128,-5", "rq-bad-number", "'-5'"),
        ("P,128,256,192,0", "rq-bad-window", "rd_win 0"),
        ("P,128,256,300", "rq-bad-window", "rd_win"),
        ("P,128,256,256,8", "rq-num-le-low", "rd_num 256 <= rd_low 256"),
        ("S,128,256,100,10,300", "rq-num-lt-init", "rd_init 300"),
        ("S,128,256,100,10,64,400", "rq-num-lt-srq-limit", "srq_limit 400"),
        ("S,128,256,256", "rq-num-le-low", "rd_low"),
        ("P,0,256", "rq-zero-size", "size 0"),
        ("P,65536,64:P,128,64", "rq-not-increasing", "strictly increasing"),
        ("P,128,64:S,128,64", "rq-not-increasing", "128 bytes"),
    ],
)
def test_bad_values_are_refused_naming_value_source_and_entry(value, topic, fragment):
    with pytest.raises(PyopenibError) as info:
        parse_receive_queues(value, "file (/etc/x.conf:3)")
    assert info.value.topic == topic
    assert fragment in str(info.value)
    assert "file (/etc/x.conf:3)" in str(info.value)
