"""Dynamic process management: ``Spawn``/``Spawn_multiple``, ``Get_parent``, ports and
name publishing, ``Accept``/``Connect`` and ``Join``, with Open MPI 4.1's semantics.

Spawning (``ompi/mpi/c/comm_spawn.c``, ``ompi/dpm/dpm.c``): the arguments count at the
root only. The root resolves each command (``launch``: a Python invocation, or
``MPI_ERR_SPAWN`` with mpirun's report on stderr, at every rank of the communicator),
applies or refuses the info keys, and asks the runner for a new job of ``sum(maxprocs)``
ranks: new simulated processes, each with its own ``__main__`` and module copies, on a
node of its own whose NIC joins the fabric (``btl.cluster.JobBtls.add_processes``). The
children's ``MPI_COMM_WORLD`` is their own; ``MPI_APPNUM`` is the index of their command.
Before its program runs, each child builds its parent intercommunicator (the context id
the parents agreed on with a max-allreduce, which is free at every fresh child) and the
children's root tells the parents' root it started, as a child's ``MPI_Init`` connects
back in Open MPI; the parents' ``Spawn`` returns once it has (``ompi_non_mpi``: at once,
with ``COMM_NULL``). A child that fails before that ends the job as mpirun does.

Ports: ``Open_port`` gives a port name owned by the calling rank; ``Close_port`` retires
it. ``Publish_name``/``Lookup_name``/``Unpublish_name`` use one table of services for the
whole run, spawned jobs included, as ``mpirun``'s PMIx server keeps it (a missing service
is ``ERR_NAME`` on lookup, ``ERR_SERVICE`` on unpublish). ``comm.Accept(port, root=r)``
and ``other.Connect(port, root=r)`` are collective over their two communicators, whose
groups must be disjoint: the connecting root sends its group and a context id its group
agreed on to the port's owner, which answers with its own; both sides take the larger
id, broadcast the remote group and build the intercommunicator (and its local
intracommunicator, as ``Intercomm_create`` does).

``Join(fd)``: Open MPI writes a port name through the socket and reads the peer's. Both
ends of a socket between two simulated ranks are in this one interpreter, so the two
ends find each other by the connection's addresses (``getsockname``/``getpeername`` of
the descriptor, one end's pair reversed at the other) and meet as ``Connect``/``Accept``
would: the first end to call waits for the other's request; nothing is read from or
written to the socket, so neither rank ever blocks the simulation in a system call.

All the roots' messages travel on ``COMM_WORLD``'s collective context with tags no
collective uses and the sender's process index as its source, so they never match user
traffic, across jobs included.
"""

from __future__ import annotations

import os
import pickle
import socket
import weakref
from dataclasses import dataclass

from .coll_comms import CommState, comm_object
from .context import current
from .error_classes import ERROR_CLASSES, Exception
from .info import info_items
from .launch import SpawnRefused, resolve_command, spawn_options
from .ops import OPS
from .status import ANY_SOURCE

__all__ = ["NAMES"]

_ERR = {name: code for name, (code, _) in ERROR_CLASSES.items()}
_CONNECT_TAG = (1 << 30) + 1
"""Tag of a connecting root's request (collectives use tags below 2**30)."""
_REPLY_TAG = (1 << 30) + 2
_SPAWNED_TAG = (1 << 30) + 3
"""Tag of a spawned job's root telling the parents' root that the children started."""
_JOIN_TAG = (1 << 30) + 4
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
        self.joins: dict[tuple, int] = {}  # a Join's (local, peer) address -> its rank


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
    """Send ``obj`` to process ``peer`` (its index in the run, any job) as this process."""
    data = pickle.dumps(obj, _PICKLE)
    req = rc.pml.isend(data, peer, rc.world.coll_ctx, rc.rank, tag, label="MPI_Comm_connect")
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


# -- spawning ---------------------------------------------------------------------------
@dataclass
class _App:
    """One command of a spawn, as the root passed it."""

    command: object
    args: list | None
    maxprocs: int
    info: object


@dataclass
class _ParentLink:
    """What a spawned job's ranks need to build their parent intercommunicator, and
    their start-up step (``on_start``: the connect-back of Open MPI's ``MPI_Init``)."""

    parents: list[int]
    root: int  # the parents' root, by process index
    cid: int
    non_mpi: bool

    def on_start(self, ctx) -> None:
        if self.non_mpi:
            return
        world = ctx.world
        ctx.next_cid = max(ctx.next_cid, self.cid + 2)
        local = CommState(self.cid + 1, list(world.group), world.rank, ctx)
        ctx.parent = CommState(
            self.cid, list(world.group), world.rank, ctx, remote=self.parents, local=local
        )
        if world.rank == 0:
            _send(ctx, self.root, _SPAWNED_TAG, list(world.group))


def _launch(rc, st, apps: list[_App], cid: int):
    """At the root: start the children; what every rank of the parents learns."""
    if any(app.maxprocs < 0 for app in apps):
        return ("error", "ERR_ARG")
    try:
        launches = []
        non_mpi = False
        for appnum, app in enumerate(apps):
            program = resolve_command(app.command, app.args, rc.hostname)
            non_mpi |= spawn_options(info_items(app.info)).non_mpi
            launches += [(program, appnum)] * app.maxprocs
        if not launches:
            raise SpawnRefused("pyopenib: MPI_Comm_spawn of no process (every maxprocs is 0)")
        link = _ParentLink(list(st.group), rc.rank, cid, non_mpi)
        children = rc.job.spawn(launches, link.on_start)
    except SpawnRefused as exc:
        rc.job.err.write(exc.report + "\n")
        return ("error", "ERR_SPAWN")
    if not non_mpi:
        _recv(rc, children[0], _SPAWNED_TAG, "MPI_Comm_spawn (waiting for the children)")
    return ("ok", children, non_mpi)


def _spawn(comm, apps: list[_App] | None, root: int):
    """Collective over ``comm``: spawn at the root, the intercommunicator everywhere."""
    st = comm._st()
    if st.inter:
        raise _error("ERR_COMM")
    if not 0 <= root < len(st.group):
        raise _error("ERR_ARG")
    cid = _agreed_cid(comm)
    outcome = _launch(st.rc, st, apps, cid) if st.rank == root else None
    outcome = comm.bcast(outcome, root=root)
    if outcome[0] == "error":
        raise _error(outcome[1])
    _, children, non_mpi = outcome
    if non_mpi:
        return comm_object("inter", None)
    return _intercomm(comm, children, cid)


def _is_path(obj) -> bool:
    return isinstance(obj, str | bytes) or hasattr(obj, "__fspath__")


def _argv(args) -> list | None:
    """mpi4py's ``asarray_argv``: None, one string, or a sequence of strings."""
    if args is None:
        return None
    if isinstance(args, str | bytes):
        return [args]
    return list(args)


def _per_command(value, count: int, single) -> list:
    """One ``value`` for every command, or a sequence of ``count`` (mpi4py's ``ValueError``
    on another length)."""
    if single(value):
        return [value] * count
    values = list(value)
    if len(values) != count:
        raise ValueError(f"expecting {count} items, got {len(values)}")
    return values


def _multiple_apps(command, args, maxprocs, info) -> list[_App]:
    """Spawn_multiple's arguments at the root, checked as mpi4py's ``asarray_*`` do."""
    if _is_path(command):
        raise ValueError("expecting a sequence of path-like")
    commands = list(command)
    count = len(commands)
    if args is None:
        argvs = [None] * count
    else:
        argvs = [_argv(a) or [] for a in _per_command(args, count, _is_path)]
    counts = _per_command(1 if maxprocs is None else maxprocs, count, lambda v: isinstance(v, int))
    infos = _per_command(info, count, lambda v: v is None or not isinstance(v, list | tuple))
    return [
        _App(cmd, argv, int(n), inf)
        for cmd, argv, n, inf in zip(commands, argvs, counts, infos, strict=True)
    ]


# -- Join -------------------------------------------------------------------------------
def _join_key(fd: int):
    """This end's (local, peer) addresses of the connected socket ``fd``; the other end
    sees the same pair reversed."""
    sock = socket.socket(fileno=os.dup(fd))
    try:
        return sock.getsockname(), sock.getpeername()
    except OSError:
        raise _error("ERR_ARG") from None
    finally:
        sock.close()


# -- communicator methods -----------------------------------------------------------------
def Get_parent(cls):
    """Return the parent intercommunicator of this process.

    A spawned rank's intercommunicator to its parents (until it is freed or
    disconnected); ``COMM_NULL`` in the launched job."""
    parent = current().parent
    return comm_object("inter", None if parent is None or parent.freed else parent)


def Join(cls, fd: int):
    """Collective between the two ranks at the ends of the connected socket ``fd``."""
    rc = current()
    local, peer = _join_key(fd)
    pending = _registry(rc).joins
    partner = pending.pop((peer, local), None)
    cid = max(rc.next_cid, 2)
    if partner is None:  # the first end: wait for the other's request
        pending[(local, peer)] = rc.rank
        source, (remote, their_cid) = _recv(rc, ANY_SOURCE, _JOIN_TAG, "MPI_Comm_join")
        _send(rc, source, _JOIN_TAG, ([rc.rank], cid))
    else:
        _send(rc, partner, _JOIN_TAG, ([rc.rank], cid))
        _, (remote, their_cid) = _recv(rc, partner, _JOIN_TAG, "MPI_Comm_join")
    return _intercomm(comm_object("intra", rc.self_comm), remote, max(cid, their_cid))


def Accept(self, port_name: str | None = None, info=None, root: int = 0):
    """Accept a connection from a client (collective over this communicator)."""
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
    """Connect to a server's port (collective over this communicator)."""
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
    """Spawn instances of a program (collective; MPI_Comm_spawn).

    ``maxprocs`` copies of ``command`` (the arguments count at the root only)."""
    maxprocs = int(maxprocs)
    apps = None
    if self.Get_rank() == root:
        apps = [_App(command, _argv(args), maxprocs, info)]
    inter = _spawn(self, apps, root)
    if errcodes is not None:
        errcodes[:] = [0] * maxprocs
    return inter


def Spawn_multiple(
    self, command, args=None, maxprocs=None, info=None, root: int = 0, errcodes=None
):
    """One job running several commands, ``MPI_APPNUM`` telling them apart."""
    apps = None
    if self.Get_rank() == root:
        apps = _multiple_apps(command, args, maxprocs, info)
        counts = [app.maxprocs for app in apps]
    elif errcodes is not None:
        counts = [int(n) for n in maxprocs]
    inter = _spawn(self, apps, root)
    if errcodes is not None:
        errcodes[:] = [[0] * n for n in counts]
    return inter


NAMES = {
    "Open_port": Open_port,
    "Close_port": Close_port,
    "Publish_name": Publish_name,
    "Unpublish_name": Unpublish_name,
    "Lookup_name": Lookup_name,
}
"""What ``mpi4py.MPI`` exports from this module (the methods join the communicator
classes)."""
