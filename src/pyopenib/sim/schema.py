"""The trace schema: every event kind the layers emit, its fields, and what it touches.

Declared once here so that the tracer's users agree on it: the exporters take their field
lists from it, the tests validate whole traces against it (``validate``), and the explorer
reads from an event the identities it touches (``identities``) to decide which events
race. Emitting code stays as cheap as before: nothing is checked per event in a plain run;
``validate`` is for tests and for ``Tracer(validate=True)``.

An event is ``(time_ps, layer, kind, actor, ((name, value), ...))``. The *actor* names the
object that acted, in one of the forms an ``ActorForm`` parses:

* ``QP`` — ``<host>/<device>/qp<qpn>`` (a hardware QP: its host, its NIC, its number);
* ``NIC`` — ``<host>/<device>`` (the adapter itself);
* ``ENDPOINT`` — ``rank<r>-><peer>`` (a BTL endpoint: rank r's view of its peer);
* ``RANK`` — ``rank<r>``;
* ``PORT`` — ``lid<l>`` (a switch port, by the LID of the NIC on it).

``identities`` turns an actor into the state it names, coarsest last: a QP event touches
that QP, its NIC and its host; an endpoint event touches the endpoint and the rank. The
explorer coarsens further where hidden state is shared (see ``check/footprint.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = [
    "COLUMNS",
    "ActorForm",
    "EventKind",
    "SCHEMA",
    "field_names",
    "identities",
    "validate",
]

COLUMNS = ("t_ps", "layer", "kind", "actor")
"""The columns every exported event has; no field may be named like one."""


class ActorForm(Enum):
    QP = "qp"
    NIC = "nic"
    ENDPOINT = "endpoint"
    RANK = "rank"
    PORT = "port"


@dataclass(frozen=True, slots=True)
class EventKind:
    """One kind of trace event: its layer, name, actor form and fields (in emit order).
    ``optional`` fields may be absent (an emitter that has nothing to say for them)."""

    layer: str
    kind: str
    actor: ActorForm
    fields: tuple[str, ...]
    optional: tuple[str, ...] = ()
    doc: str = ""


def _k(layer, kind, actor, fields, optional="", doc=""):
    return EventKind(layer, kind, actor, tuple(fields.split()), tuple(optional.split()), doc)


_Q, _N, _E, _R, _P = ActorForm.QP, ActorForm.NIC, ActorForm.ENDPOINT, ActorForm.RANK, ActorForm.PORT

_KINDS = (
    # hardware: one QP's work queues and transport
    _k("hw", "recv_usable", _Q, "wr_id", doc="a posted receive can take a message"),
    _k("hw", "send_emit", _Q, "wr_id op msn bytes packets", doc="a send WR cut into packets"),
    _k("hw", "send_left", _Q, "msn", doc="a message's last packet left the port"),
    _k("hw", "recv_msg", _Q, "msn op bytes wr_id", doc="a message consumed a receive"),
    _k("hw", "rnr_nak_sent", _Q, "msn posted usable"),
    _k("hw", "rnr_nak_received", _Q, "msn attempt rnr_retry"),
    _k("hw", "seq_nak_sent", _Q, "psn expected"),
    _k("hw", "retransmit", _Q, "msn cause attempt retry_cnt"),
    _k("hw", "terminate_sent", _Q, "msn posted usable"),
    _k("hw", "terminate_received", _Q, "msn"),
    _k("hw", "wc_error", _Q, "wr_id status reason"),
    _k("hw", "qp_error", _Q, "reason"),
    _k("hw", "async", _N, "event qp reason", doc="an affiliated asynchronous event"),
    # the fabric
    _k("wire", "loss", _P, "packet dst qpn msn psn", doc="a packet dropped by a loss rule"),
    # the openib BTL: one endpoint's protocol steps
    _k("btl", "placement", _R, "host", doc="where a rank runs (lets readers group by host)"),
    _k("btl", "connect_start", _E, ""),
    _k("btl", "cts_sent", _E, "wr_id qpn"),
    _k("btl", "cts_received", _E, ""),
    _k("btl", "connected", _E, ""),
    _k("btl", "eager_rdma_offer", _E, "slots"),
    _k("btl", "eager_rdma_connected", _E, "slots"),
    _k("btl", "post_rr", _E, "qp posted rd_credits"),
    _k("btl", "srq_resize", _E, "qp rd_curr_num"),
    _k("btl", "credits_in", _E, "qp credits explicit"),
    _k("btl", "credit_msg_deferred", _E, "qp cm_sent"),
    _k("btl", "credit_msg", _E, "qp on_qp credits cm_seen rdma_credits by_rdma wr_id qpn"),
    _k("btl", "fatal", _E, "qp status"),
    # the shared-memory BTL
    _k("btl", "sm_send", _E, "tag bytes"),
    _k("btl", "sm_put", _E, "bytes"),
    _k("btl", "sm_get", _E, "bytes"),
)

SCHEMA: dict[tuple[str, str], EventKind] = {(k.layer, k.kind): k for k in _KINDS}
"""Every event kind, by ``(layer, kind)``."""

for _spec in _KINDS:
    if set(_spec.fields) & set(COLUMNS):
        raise AssertionError(f"{_spec.layer}.{_spec.kind}: a field is named like a column")
del _spec


def field_names(layer: str, kind: str) -> tuple[str, ...]:
    """The fields of a kind, in emit order (what an exporter lays out as columns)."""
    return SCHEMA[(layer, kind)].fields


def identities(event) -> tuple[tuple[str, str], ...]:
    """The state an event touches, finest first: ``(("qp", ...), ("nic", ...), ("host",
    ...))`` for a QP event, ``(("endpoint", ...), ("rank", ...))`` for an endpoint's."""
    layer, kind, actor = event[1], event[2], event[3]
    spec = SCHEMA.get((layer, kind))
    form = spec.actor if spec is not None else None
    if form is ActorForm.QP:
        nic, _, _qp = actor.rpartition("/")
        return (("qp", actor), ("nic", nic), ("host", nic.partition("/")[0]))
    if form is ActorForm.NIC:
        return (("nic", actor), ("host", actor.partition("/")[0]))
    if form is ActorForm.ENDPOINT:
        return (("endpoint", actor), ("rank", actor.partition("->")[0]))
    if form is ActorForm.RANK:
        return (("rank", actor),)
    if form is ActorForm.PORT:
        return (("port", actor),)
    return (("unknown", actor),)


def _actor_matches(form: ActorForm, actor: str) -> bool:
    if form is ActorForm.QP:
        nic, sep, qp = actor.rpartition("/")
        return bool(sep) and "/" in nic and qp.startswith("qp") and qp[2:].isdigit()
    if form is ActorForm.NIC:
        return actor.count("/") == 1
    if form is ActorForm.ENDPOINT:
        rank, sep, peer = actor.partition("->")
        return bool(sep) and rank.startswith("rank") and (peer.isdigit() or peer == "?")
    if form is ActorForm.RANK:
        return actor.startswith("rank") and actor[4:].isdigit()
    return actor.startswith("lid") and actor[3:].isdigit()


def validate(event) -> None:
    """Raise ``ValueError`` naming what is wrong when ``event`` does not follow its kind's
    declaration (unknown kind, actor of the wrong form, fields missing, extra or out of
    order, a value that is not a plain int/str/bool)."""
    t, layer, kind, actor, fields = event
    spec = SCHEMA.get((layer, kind))
    if spec is None:
        raise ValueError(f"trace event kind {layer}.{kind} is not declared in sim/schema.py")
    if type(t) is not int:
        raise ValueError(f"{layer}.{kind}: time {t!r} is not an int of picoseconds")
    if not _actor_matches(spec.actor, actor):
        raise ValueError(f"{layer}.{kind}: actor {actor!r} is not a {spec.actor.value} name")
    names = tuple(name for name, _ in fields)
    expected = tuple(f for f in spec.fields if f in names or f not in spec.optional)
    if names != expected:
        raise ValueError(f"{layer}.{kind}: fields {names} but the schema declares {expected}")
    for name, value in fields:
        if type(value) not in (int, str, bool):
            raise ValueError(f"{layer}.{kind}: field {name}={value!r} is not a plain value")
