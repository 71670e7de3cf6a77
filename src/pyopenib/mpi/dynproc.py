"""Dynamic process management: ports, name publishing, ``Accept``/``Connect`` between the
ranks of the running job; ``Spawn`` and ``Join`` are not available.

What works, with Open MPI 4.1's semantics:

- ``Open_port`` gives a port name owned by the calling rank; ``Close_port`` retires it.
  ``Publish_name``/``Lookup_name``/``Unpublish_name`` use one job-wide table of services,
  as ``mpirun``'s PMIx server keeps it (a missing service is ``ERR_NAME`` on lookup,
  ``ERR_SERVICE`` on unpublish).
- ``comm.Accept(port, root=r)`` and ``other.Connect(port, root=r)`` are collective over
  their two communicators, whose groups must be disjoint; the two roots meet through the
  port: the connecting root sends its group and a context id its group agreed on to the
  port's owner, which answers with its own; both sides take the larger id, broadcast the
  remote group and build the intercommunicator (and its local intracommunicator, as
  ``Intercomm_create`` does). The roots' messages travel on ``COMM_WORLD``'s collective
  context with tags no collective uses, so they never match user traffic.
- ``Comm.Get_parent()`` is ``COMM_NULL``: every rank was started by ``pyopenib run``.

What does not: ``Spawn``/``Spawn_multiple`` would have to add ranks (NICs, BTL modules,
fabric ports) to a simulation whose fabric is built before the job starts, and ``Join``
needs a socket between two MPI jobs; each raises ``NotImplementedError`` naming itself
when called.
"""

from __future__ import annotations

import pickle
import weakref

from .coll_comms import CommState, comm_object
from .context import current
from .errors import ERROR_CLASSES, Exception
from .ops import OPS
from .status import ANY_SOURCE

__all__ = ["DynamicComm", "DynamicIntracomm", "NAMES"]

_ERR = {name: code for name, (code, _) in ERROR_CLASSES.items()}
_CONNECT_TAG = (1 << 30) + 1
"""Tag of a connecting root's request (collectives use tags below 2**30)."""
_REPLY_TAG = (1 << 30) + 2
_PICKLE = pickle.HIGHEST_PROTOCOL


def _error(name: str) -> Exception:
    return Exception(_ERR[name])


class _Port:
    """An open port: its owner and the connect requests that reached the owner before
    an ``Accept`` on this port asked for them."""

    __slots__ = ("owner", "pending")

    def __init__(self, owner: int):
        self.owner = owner
        self.pending: list[tuple[int, list[int], int]] = []


class _Registry:
    """One job's ports and published services."""

    def __init__(self):
        self.ports: dict[str, _Port] = {}
        self.services: dict[str, str] = {}
        self.opened = 0


_REGISTRIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _registry(rc) -> _Registry:
    reg = _REGISTRIES.get(rc.job)
    if reg is None:
        reg = _REGISTRIES[rc.job] = _Registry()
    return reg


# -- module functions ---------------------------------------------------------------------
def Open_port(info=None) -> str:
    """A new port name, owned by the calling rank."""
    rc = current()
    reg = _registry(rc)
    reg.opened += 1
    name = f"pyopenib-port:{rc.rank}:{reg.opened}"
    reg.ports[name] = _Port(rc.rank)
    return name


def Close_port(port_name: str) -> None:
    """Close a port opened with ``Open_port``."""
    rc = current()
    port = _registry(rc).ports.get(port_name)
    if port is None or port.owner != rc.rank:
        raise _error("ERR_PORT")
    del _registry(rc).ports[port_name]


def Publish_name(service_name: str, port_name: str, info=None) -> None:
    """Publish a service name for a port."""
    _registry(current()).services[str(service_name)] = str(port_name)


def Unpublish_name(service_name: str, port_name: str, info=None) -> None:
    """Withdraw a service name published with ``Publish_name``."""
    services = _registry(current()).services
    if services.get(str(service_name)) != str(port_name):
        raise _error("ERR_SERVICE")
    del services[str(service_name)]


def Lookup_name(service_name: str, info=None) -> str:
    """Return the port published under a service name."""
    port = _registry(current()).services.get(str(service_name))
    if port is None:
        raise _error("ERR_NAME")
    return port


# -- the roots' rendezvous ----------------------------------------------------------------
def _send(rc, peer: int, tag: int, obj) -> None:
    world = rc.world
    data = pickle.dumps(obj, _PICKLE)
    req = rc.pml.isend(data, peer, world.coll_ctx, world.rank, tag, label="MPI_Comm_connect")
    rc.wait_request(req, "MPI_Comm_connect/accept (root handshake)")


def _recv(rc, source: int, tag: int, call: str):
    req = rc.pml.irecv(None, rc.world.coll_ctx, source, tag, call)
    rc.wait_request(req, call)
    return req.source, pickle.loads(req.data)


def _next_request(rc, port_name: str, port: _Port) -> tuple[int, list[int], int]:
    """The next connect request for ``port_name``: one that arrived earlier for it, or
    the next to arrive (requests for this rank's other ports are kept for them)."""
    reg = _registry(rc)
    while not port.pending:
        source, (name, group, cid) = _recv(rc, ANY_SOURCE, _CONNECT_TAG, "MPI_Comm_accept")
        target = reg.ports.get(name)
        if target is not None:
            target.pending.append((source, group, cid))
    return port.pending.pop(0)


def _agreed_cid(comm) -> int:
    """A context id free at every member of ``comm`` (Open MPI's max-allreduce)."""
    rc = comm._st().rc
    return comm.allreduce(rc.next_cid, op=OPS["MAX"])


def _intercomm(comm, remote: list[int], cid: int):
    st = comm._st()
    rc = st.rc
    rc.next_cid = max(rc.next_cid, cid + 2)
    local = CommState(cid + 1, list(st.group), st.rank, rc)
    inter = CommState(cid, list(st.group), st.rank, rc, remote=list(remote), local=local)
    return comm_object("inter", inter)


# -- communicator methods -----------------------------------------------------------------
class DynamicComm:
    """The dynamic-process methods every communicator class has (``Get_parent``,
    ``Join``)."""

    __slots__ = ()

    @classmethod
    def Get_parent(cls):
        """``COMM_NULL``: no rank of a ``pyopenib run`` job was spawned."""
        current()
        return comm_object("inter", None)

    @classmethod
    def Join(cls, fd: int):
        raise NotImplementedError(
            "mpi4py.MPI.Comm.Join: pyopenib runs one job and cannot connect to another "
            "MPI job over a socket"
        )


class DynamicIntracomm:
    """``Accept``/``Connect`` (between ranks of this job) and ``Spawn``/``Spawn_multiple``
    (not available) of ``MPI.Intracomm``."""

    __slots__ = ()

    def Accept(self, port_name: str | None = None, info=None, root: int = 0):
        st = self._st()
        rc = st.rc
        if not 0 <= root < len(st.group):
            raise _error("ERR_ROOT")
        cid = _agreed_cid(self)
        reply = None
        if st.rank == root:
            port = _registry(rc).ports.get(port_name)
            if port is None or port.owner != rc.rank:
                raise _error("ERR_PORT")
            source, remote, their_cid = _next_request(rc, port_name, port)
            _send(rc, source, _REPLY_TAG, (list(st.group), cid))
            reply = (remote, max(cid, their_cid))
        remote, cid = self.bcast(reply, root=root)
        return _intercomm(self, remote, cid)

    def Connect(self, port_name: str | None = None, info=None, root: int = 0):
        st = self._st()
        rc = st.rc
        if not 0 <= root < len(st.group):
            raise _error("ERR_ROOT")
        cid = _agreed_cid(self)
        reply = None
        if st.rank == root:
            port = _registry(rc).ports.get(port_name)
            if port is None:
                raise _error("ERR_PORT")
            _send(rc, port.owner, _CONNECT_TAG, (port_name, list(st.group), cid))
            _, (remote, their_cid) = _recv(rc, port.owner, _REPLY_TAG, "MPI_Comm_connect")
            reply = (remote, max(cid, their_cid))
        remote, cid = self.bcast(reply, root=root)
        return _intercomm(self, remote, cid)

    def Spawn(self, command, args=None, maxprocs: int = 1, info=None, root: int = 0, errcodes=None):
        raise NotImplementedError(
            "mpi4py.MPI.Intracomm.Spawn: pyopenib cannot add ranks to a running job "
            "(the simulated fabric is built before the job starts)"
        )

    def Spawn_multiple(
        self, command, args=None, maxprocs=None, info=None, root: int = 0, errcodes=None
    ):
        raise NotImplementedError(
            "mpi4py.MPI.Intracomm.Spawn_multiple: pyopenib cannot add ranks to a running "
            "job (the simulated fabric is built before the job starts)"
        )


NAMES = {
    "Open_port": Open_port,
    "Close_port": Close_port,
    "Publish_name": Publish_name,
    "Unpublish_name": Unpublish_name,
    "Lookup_name": Lookup_name,
}
"""What ``mpi4py.MPI`` exports from this module (the methods join the communicator
classes)."""
