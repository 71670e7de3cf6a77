"""A QP's attributes are one value shared by every QP with equal attributes
(``hw.qp.QpAttributes``, interned per NIC): whatever ``ibv_modify_qp`` sequence two QPs
go through, each reads back exactly what was last set on it (or created with), a modify
of one never shows on the other, and two QPs hold the same instance exactly when their
attributes are equal."""

import errno

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verbs_testbed import toy_model

from pyopenib.hw.qp import QpAttributes
from pyopenib.sim import Simulator
from pyopenib.verbs import QpState, VerbsError, open_devices

_VALUES = {
    "path_mtu": st.sampled_from([256, 1024, 2048]),
    "rnr_retry": st.integers(0, 7),
    "min_rnr_timer": st.integers(0, 31),
    "retry_cnt": st.integers(0, 7),
    "timeout": st.integers(0, 31),
}
_CHANGES = st.fixed_dictionaries({}, optional=_VALUES)
"""One ``ibv_modify_qp``'s attributes: any subset of the modifiable ones."""


def _qps(n: int):
    ctx = open_devices(Simulator(), [toy_model()])[0]
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(64)
    return [pd.create_qp(cq, cq, 16, 16, 0) for _ in range(n)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), _CHANGES), max_size=12))
def test_each_qp_reads_back_what_was_set_on_it_and_equal_attributes_share_one_value(steps):
    qps = _qps(3)
    expected = [{name: getattr(qp.hw, name) for name in QpAttributes.MODIFIABLE} for qp in qps]
    for qp in qps:
        qp.modify(QpState.INIT)
    for i, changes in steps:
        # INIT -> INIT is a legal modify: only the attributes change
        qps[i].modify(QpState.INIT, **changes)
        expected[i].update(changes)
    for qp, want in zip(qps, expected, strict=True):
        assert {name: getattr(qp.hw, name) for name in QpAttributes.MODIFIABLE} == want
        assert qp.query_qp().path_mtu == want["path_mtu"]
        assert (qp.max_send_wr, qp.max_recv_wr, qp.max_inline) == (16, 16, 0)
    for a in qps:
        for b in qps:
            same = a.hw.attrs.key() == b.hw.attrs.key()
            assert (a.hw.attrs is b.hw.attrs) == same


def test_a_qps_creation_attributes_come_from_its_create_call():
    (qp,) = _qps(1)
    hw = qp.hw
    assert hw.send_cq is qp.send_cq is hw.recv_cq
    assert hw.srq is None and hw.path_mtu == toy_model().mtu_max
    assert (hw.rnr_retry, hw.min_rnr_timer, hw.retry_cnt, hw.timeout) == (7, 12, 7, 20)


def test_a_modify_with_a_bad_attribute_changes_nothing():
    """``ibv_modify_qp`` is all or nothing: EINVAL leaves the QP as it was."""
    (qp,) = _qps(1)
    qp.modify(QpState.INIT)
    before = (qp.hw.attrs, qp.hw.dest_lid, qp.hw.dest_qpn, qp.state)
    with pytest.raises(VerbsError) as info:
        qp.modify(QpState.RTR, dest_lid=9, dest_qp_num=0x99, timeout=3, qkey=1)
    assert info.value.errno == errno.EINVAL and "qkey" in str(info.value)
    assert (qp.hw.attrs, qp.hw.dest_lid, qp.hw.dest_qpn, qp.state) == before
