"""Virtual topologies: ``Cartcomm``, ``Graphcomm``, ``Distgraphcomm`` and ``Compute_dims``,
with the neighbourhood collectives (blocking, nonblocking, persistent, object forms).

A topology is data attached to a communicator's state (``CommState.topo``): who a rank's
incoming and outgoing neighbours are. Creating one is a collective over the parent (the
context id is agreed there); ``reorder`` is accepted and, as Open MPI's default
``topo/basic`` component does, ignored: ranks keep their parent's numbering.

Neighbourhood collectives send to the outgoing neighbours and receive from the incoming
ones, in list order, skipping PROC_NULL (the edges of a non-periodic Cartesian grid).
On a Cartesian grid the message a rank sends towards +1 along a dimension is the one its
neighbour there receives from -1: sends go +1 first, receives come from -1 first, so that
FIFO matching pairs them even when both neighbours are one process (a periodic dimension
of size 1 or 2).
"""

from __future__ import annotations

import math

from .buffers import w_message
from .coll_comms import CommState, comm_object, new_cid
from .coll_engine import Channel, run
from .coll_methods import _blocks, _send_message, _store_blocks, dumps, loads
from .comm import Intracomm
from .comm_locks import comm_lock
from .error_classes import ERROR_CLASSES, Exception
from .status import PROC_NULL

__all__ = [
    "CART",
    "DIST_GRAPH",
    "GRAPH",
    "UNWEIGHTED",
    "WEIGHTS_EMPTY",
    "Cartcomm",
    "Compute_dims",
    "Distgraphcomm",
    "Graphcomm",
    "Topocomm",
    "cart_map",
    "create_cart",
    "create_dist_graph",
    "create_dist_graph_adjacent",
    "create_graph",
    "graph_map",
]

CART, GRAPH, DIST_GRAPH = 1, 2, 3
UNWEIGHTED, WEIGHTS_EMPTY = 2, 3
"""mpi4py's sentinels for ``MPI_UNWEIGHTED`` and ``MPI_WEIGHTS_EMPTY``."""

_ERR_ARG = ERROR_CLASSES["ERR_ARG"][0]
_ERR_DIMS = ERROR_CLASSES["ERR_DIMS"][0]
_ERR_RANK = ERROR_CLASSES["ERR_RANK"][0]
_ERR_TOPOLOGY = ERROR_CLASSES["ERR_TOPOLOGY"][0]


# -- topologies as data -------------------------------------------------------------------
class CartTopology:
    kind = CART

    def __init__(self, dims, periods):
        self.dims = [int(d) for d in dims]
        self.periods = [bool(p) for p in periods]

    @staticmethod
    def comm_class():
        return Cartcomm

    def coords(self, rank: int) -> list[int]:
        out = []
        for d in reversed(self.dims):
            rank, c = divmod(rank, d) if d else (rank, 0)
            out.append(c)
        return out[::-1]

    def rank(self, coords) -> int:
        rank = 0
        for c, d, p in zip(coords, self.dims, self.periods, strict=True):
            c = int(c)
            if p:
                c %= d
            elif not 0 <= c < d:
                raise Exception(_ERR_ARG)
            rank = rank * d + c
        return rank

    def shift(self, rank: int, direction: int, disp: int) -> tuple[int, int]:
        if not 0 <= direction < len(self.dims):
            raise Exception(_ERR_DIMS)
        coords = self.coords(rank)

        def moved(step):
            c = list(coords)
            c[direction] += step
            d = self.dims[direction]
            if not self.periods[direction] and not 0 <= c[direction] < d:
                return PROC_NULL
            return self.rank(c)

        return moved(-disp), moved(disp)

    def exchange_plan(self, rank: int, libnbc: bool = False):
        """(sends, receives): (peer, block index) in posting order (see module doc).
        ``libnbc``: the order of Open MPI 4.1's nonblocking neighbourhood collectives,
        which send towards -1 first; where both neighbours along a dimension are one
        process, the two blocks then arrive swapped, as they do with real Open MPI."""
        sends, recvs = [], []
        for d in range(len(self.dims)):
            src, dst = self.shift(rank, d, 1)
            if libnbc:
                sends += [(src, 2 * d), (dst, 2 * d + 1)]
            else:
                sends += [(dst, 2 * d + 1), (src, 2 * d)]
            recvs += [(src, 2 * d), (dst, 2 * d + 1)]
        return sends, recvs

    def degrees(self, rank: int) -> tuple[int, int]:
        return 2 * len(self.dims), 2 * len(self.dims)

    def inout(self, rank: int):
        neighbors = []
        for d in range(len(self.dims)):
            neighbors += list(self.shift(rank, d, 1))
        return neighbors, neighbors


class GraphTopology:
    kind = GRAPH

    def __init__(self, index, edges):
        self.index = [int(i) for i in index]
        self.edges = [int(e) for e in edges]

    @staticmethod
    def comm_class():
        return Graphcomm

    def neighbors(self, rank: int) -> list[int]:
        if not 0 <= rank < len(self.index):
            raise Exception(_ERR_RANK)
        lo = self.index[rank - 1] if rank else 0
        return self.edges[lo : self.index[rank]]

    def exchange_plan(self, rank: int, libnbc: bool = False):
        plan = [(p, i) for i, p in enumerate(self.neighbors(rank))]
        return plan, plan

    def degrees(self, rank: int) -> tuple[int, int]:
        n = len(self.neighbors(rank))
        return n, n

    def inout(self, rank: int):
        n = self.neighbors(rank)
        return n, n


class DistGraphTopology:
    """One rank's part of a distributed graph: its own in- and out-edges."""

    kind = DIST_GRAPH

    def __init__(self, sources, destinations, sweights, dweights, weighted: bool):
        self.sources = list(sources)
        self.destinations = list(destinations)
        self.sweights = sweights
        self.dweights = dweights
        self.weighted = weighted

    @staticmethod
    def comm_class():
        return Distgraphcomm

    def exchange_plan(self, rank: int, libnbc: bool = False):
        sends = [(p, i) for i, p in enumerate(self.destinations)]
        recvs = [(p, i) for i, p in enumerate(self.sources)]
        return sends, recvs

    def degrees(self, rank: int) -> tuple[int, int]:
        return len(self.sources), len(self.destinations)

    def inout(self, rank: int):
        return list(self.sources), list(self.destinations)


# -- constructors (Intracomm.Create_cart, ...) --------------------------------------------
def _topo_comm(comm, st, topo, member: bool, call: str):
    """Agree on an id over the parent, attach ``topo``; non-members get COMM_NULL."""
    ch = Channel.of(st, call)
    cid = run(ch, new_cid(ch))
    if not member:
        return topo.comm_class()(None)
    size = len(st.group)
    nodes = size
    if isinstance(topo, CartTopology):
        nodes = math.prod(topo.dims)
    elif isinstance(topo, GraphTopology):
        nodes = len(topo.index)
    new = CommState(cid, st.group[:nodes], st.rank, st.rc)
    new.topo = topo
    return comm_object(None, new)


def create_cart(comm, dims, periods=None, reorder=False):
    st = comm._st()
    dims = [int(d) for d in dims]
    if periods is None:
        periods = False
    if isinstance(periods, bool):
        periods = [periods] * len(dims)
    periods = list(periods)
    if len(periods) != len(dims):
        raise ValueError(f"expecting {len(dims)} items, got {len(periods)}")
    if any(d < 0 for d in dims):
        raise Exception(_ERR_DIMS)
    if math.prod(dims) > len(st.group):
        raise Exception(_ERR_ARG)
    topo = CartTopology(dims, periods)
    return _topo_comm(comm, st, topo, st.rank < math.prod(dims), "MPI_Cart_create")


def create_graph(comm, index, edges, reorder=False):
    st = comm._st()
    index = [int(i) for i in index]
    edges = [int(e) for e in edges]
    if index and index[0] == 0 and index[-1] == len(edges):
        index = index[1:]  # mpi4py's extension: "standard" adjacency arrays
    nnodes = len(index)
    if nnodes > len(st.group):
        raise Exception(_ERR_ARG)
    if any(not 0 <= e < nnodes for e in edges):
        raise Exception(_ERR_TOPOLOGY)
    return _topo_comm(comm, st, GraphTopology(index, edges), st.rank < nnodes, "MPI_Graph_create")


def _weights(weights, n: int):
    if weights is None or weights is UNWEIGHTED or (type(weights) is int and weights == UNWEIGHTED):
        return None
    if type(weights) is int and weights == WEIGHTS_EMPTY:
        if n > 0:
            raise ValueError("empty weights but nonzero degree")
        return []
    weights = [int(w) for w in weights]
    if len(weights) != n:
        raise ValueError(f"expecting {n} items, got {len(weights)}")
    return weights


def create_dist_graph_adjacent(
    comm, sources, destinations, sourceweights=None, destweights=None, info=None, reorder=False
):
    st = comm._st()
    sources = [] if sources is None else [int(s) for s in sources]
    destinations = [] if destinations is None else [int(d) for d in destinations]
    sw = _weights(sourceweights, len(sources))
    dw = _weights(destweights, len(destinations))
    size = len(st.group)
    if any(not 0 <= p < size for p in sources + destinations):
        raise Exception(_ERR_RANK)
    weighted = sw is not None or dw is not None
    if weighted:
        sw = [1] * len(sources) if sw is None else sw
        dw = [1] * len(destinations) if dw is None else dw
    topo = DistGraphTopology(sources, destinations, sw, dw, weighted)
    return _topo_comm(comm, st, topo, True, "MPI_Dist_graph_create_adjacent")


def create_dist_graph(comm, sources, degrees, destinations, weights=None, info=None, reorder=False):
    """Each rank names edges of any sources; an allgather tells every rank its own in-
    and out-edges (in rank order of the ranks that named them, then in their order)."""
    st = comm._st()
    sources = [int(s) for s in sources]
    degrees = [int(d) for d in degrees]
    if len(degrees) != len(sources):
        raise ValueError(f"expecting {len(sources)} items, got {len(degrees)}")
    destinations = [int(d) for d in destinations]
    if len(destinations) != sum(degrees):
        raise ValueError(f"expecting {sum(degrees)} items, got {len(destinations)}")
    w = _weights(weights, len(destinations))
    size = len(st.group)
    if any(not 0 <= p < size for p in sources + destinations):
        raise Exception(_ERR_RANK)
    edges, at = [], 0
    for s, deg in zip(sources, degrees, strict=True):
        for k in range(deg):
            edges.append((s, destinations[at + k], 1 if w is None else w[at + k]))
        at += deg
    weighted = w is not None
    ch = Channel.of(st, "MPI_Dist_graph_create")
    from . import collectives as coll

    everyone = run(ch, coll.allgather(ch, dumps((edges, weighted))))
    me = st.rank
    ins, outs, sw, dw = [], [], [], []
    any_weighted = False
    for block in everyone:
        their, flag = loads(block)
        any_weighted = any_weighted or flag
        for s, d, wt in their:
            if d == me:
                ins.append(s)
                sw.append(wt)
            if s == me:
                outs.append(d)
                dw.append(wt)
    topo = DistGraphTopology(
        ins, outs, sw if any_weighted else None, dw if any_weighted else None, any_weighted
    )
    return _topo_comm(comm, st, topo, True, "MPI_Dist_graph_create")


def Compute_dims(nnodes: int, dims) -> list[int]:  # noqa: N802 - mpi4py's name
    """Return a balanced distribution of processes per coordinate direction.

    This is ``MPI_Dims_create`` as Open MPI computes it: the free dimensions get the prime
    factors of what the fixed ones leave, largest factor to the smallest bin, then
    sorted non-increasing."""
    dims = [0] * int(dims) if isinstance(dims, int) else [int(d) for d in dims]
    if nnodes <= 0 or not dims or any(d < 0 for d in dims):
        raise Exception(_ERR_DIMS)
    fixed = math.prod(d for d in dims if d)
    free = [i for i, d in enumerate(dims) if d == 0]
    if fixed == 0 or nnodes % fixed:
        raise Exception(_ERR_DIMS)
    left = nnodes // fixed
    if not free:
        if left != 1:
            raise Exception(_ERR_DIMS)
        return dims
    factors, n, p = [], left, 2
    while p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    if n > 1:
        factors.append(n)
    bins = [1] * len(free)
    for f in sorted(factors, reverse=True):
        i = bins.index(min(bins))
        bins[i] *= f
    bins.sort(reverse=True)
    for i, b in zip(free, bins, strict=True):
        dims[i] = b
    return dims


# -- the communicator classes -------------------------------------------------------------
class Topocomm(Intracomm):
    """A communicator with a topology: its neighbours and neighbourhood collectives."""

    __slots__ = ()
    _kind = None

    @classmethod
    def _check_kind(cls, comm: Intracomm) -> None:
        topo = comm._st().topo
        if topo is None or cls._kind not in (None, topo.kind):
            raise TypeError(f"expecting a {cls._what} communicator")

    _what = "topology"

    def _topo(self):
        topo = self._st().topo
        if topo is None:
            raise Exception(_ERR_TOPOLOGY)
        return topo

    @property
    def degrees(self) -> tuple[int, int]:
        return self._topo().degrees(self._st().rank)

    @property
    def indegree(self) -> int:
        return self.degrees[0]

    @property
    def outdegree(self) -> int:
        return self.degrees[1]

    @property
    def inoutedges(self):
        return self._topo().inout(self._st().rank)

    @property
    def inedges(self) -> list[int]:
        return self.inoutedges[0]

    @property
    def outedges(self) -> list[int]:
        return self.inoutedges[1]

    # -- neighbourhood collectives ------------------------------------------------------
    def _neighbor(self, st, sendbuf, recvbuf, kind: str, libnbc: bool = False):
        """Build a neighbourhood collective's schedule.

        ``libnbc``: the nonblocking and persistent forms (Open MPI's coll/libnbc)."""
        topo = st.topo
        if topo is None:
            raise Exception(_ERR_TOPOLOGY)
        indeg, outdeg = topo.degrees(st.rank)
        sends, recvs = topo.exchange_plan(st.rank, libnbc)
        vector = kind.endswith("v")
        if kind.startswith("allgather"):
            data = _send_message(sendbuf).data
            out_blocks = [data] * outdeg
            targets = _blocks(recvbuf, indeg, True, vector)
        elif kind == "alltoallw":
            sv = w_message(sendbuf, outdeg)
            out_blocks = [sv.block(i) for i in range(outdeg)]
            targets = w_message(recvbuf, indeg, writable=True)
        else:
            sv = _blocks(sendbuf, outdeg, False, vector)
            out_blocks = [sv.block(i) for i in range(outdeg)]
            targets = _blocks(recvbuf, indeg, True, vector)

        def schedule(st, ch):
            got = yield from neighbor_exchange(ch, sends, recvs, out_blocks)
            _store_blocks(targets, [got.get(i) for i in range(indeg)])

        return schedule

    def Neighbor_allgather(self, sendbuf, recvbuf) -> None:
        """Gather a block from every neighbour (neighbourhood collective)."""
        self._blocking(self._neighbor, "MPI_Neighbor_allgather", sendbuf, recvbuf, "allgather")

    def Neighbor_allgatherv(self, sendbuf, recvbuf) -> None:
        """Gather blocks of any size from every neighbour."""
        self._blocking(self._neighbor, "MPI_Neighbor_allgatherv", sendbuf, recvbuf, "allgatherv")

    def Neighbor_alltoall(self, sendbuf, recvbuf) -> None:
        """Exchange a block with every neighbour."""
        self._blocking(self._neighbor, "MPI_Neighbor_alltoall", sendbuf, recvbuf, "alltoall")

    def Neighbor_alltoallv(self, sendbuf, recvbuf) -> None:
        """Exchange blocks of any size with every neighbour."""
        self._blocking(self._neighbor, "MPI_Neighbor_alltoallv", sendbuf, recvbuf, "alltoallv")

    def Neighbor_alltoallw(self, sendbuf, recvbuf) -> None:
        """Exchange blocks of any size and type with every neighbour."""
        self._blocking(self._neighbor, "MPI_Neighbor_alltoallw", sendbuf, recvbuf, "alltoallw")

    def Ineighbor_allgather(self, sendbuf, recvbuf):
        """Start ``Neighbor_allgather``; return its request."""
        return self._nonblocking(
            self._neighbor, "MPI_Ineighbor_allgather", sendbuf, recvbuf, "allgather", True
        )

    def Ineighbor_allgatherv(self, sendbuf, recvbuf):
        """Start ``Neighbor_allgatherv``; return its request."""
        return self._nonblocking(
            self._neighbor, "MPI_Ineighbor_allgatherv", sendbuf, recvbuf, "allgatherv", True
        )

    def Ineighbor_alltoall(self, sendbuf, recvbuf):
        """Start ``Neighbor_alltoall``; return its request."""
        return self._nonblocking(
            self._neighbor, "MPI_Ineighbor_alltoall", sendbuf, recvbuf, "alltoall", True
        )

    def Ineighbor_alltoallv(self, sendbuf, recvbuf):
        """Start ``Neighbor_alltoallv``; return its request."""
        return self._nonblocking(
            self._neighbor, "MPI_Ineighbor_alltoallv", sendbuf, recvbuf, "alltoallv", True
        )

    def Ineighbor_alltoallw(self, sendbuf, recvbuf):
        """Start ``Neighbor_alltoallw``; return its request."""
        return self._nonblocking(
            self._neighbor, "MPI_Ineighbor_alltoallw", sendbuf, recvbuf, "alltoallw", True
        )

    def Neighbor_allgather_init(self, sendbuf, recvbuf, info=None):
        """Create a persistent ``Neighbor_allgather``."""
        return self._persistent(
            self._neighbor, "MPI_Neighbor_allgather_init", sendbuf, recvbuf, "allgather", True
        )

    def Neighbor_allgatherv_init(self, sendbuf, recvbuf, info=None):
        """Create a persistent ``Neighbor_allgatherv``."""
        return self._persistent(
            self._neighbor, "MPI_Neighbor_allgatherv_init", sendbuf, recvbuf, "allgatherv", True
        )

    def Neighbor_alltoall_init(self, sendbuf, recvbuf, info=None):
        """Create a persistent ``Neighbor_alltoall``."""
        return self._persistent(
            self._neighbor, "MPI_Neighbor_alltoall_init", sendbuf, recvbuf, "alltoall", True
        )

    def Neighbor_alltoallv_init(self, sendbuf, recvbuf, info=None):
        """Create a persistent ``Neighbor_alltoallv``."""
        return self._persistent(
            self._neighbor, "MPI_Neighbor_alltoallv_init", sendbuf, recvbuf, "alltoallv", True
        )

    def Neighbor_alltoallw_init(self, sendbuf, recvbuf, info=None):
        """Create a persistent ``Neighbor_alltoallw``."""
        return self._persistent(
            self._neighbor, "MPI_Neighbor_alltoallw_init", sendbuf, recvbuf, "alltoallw", True
        )

    def neighbor_allgather(self, sendobj) -> list:
        """Gather a Python object from every neighbour."""
        st = self._st()
        topo = self._topo()
        sends, recvs = topo.exchange_plan(st.rank)
        indeg, outdeg = topo.degrees(st.rank)
        data = dumps(sendobj)
        with comm_lock(self, "neighbor_allgather"):
            ch = Channel.of(st, "neighbor_allgather")
            got = run(ch, neighbor_exchange(ch, sends, recvs, [data] * outdeg))
            return [loads(got[i]) if i in got else None for i in range(indeg)]

    def neighbor_alltoall(self, sendobj) -> list:
        """Exchange a Python object with every neighbour."""
        st = self._st()
        topo = self._topo()
        sends, recvs = topo.exchange_plan(st.rank)
        indeg, outdeg = topo.degrees(st.rank)
        if len(sendobj) != outdeg:
            raise ValueError(f"expecting {outdeg} items, got {len(sendobj)}")
        with comm_lock(self, "neighbor_alltoall"):
            ch = Channel.of(st, "neighbor_alltoall")
            got = run(ch, neighbor_exchange(ch, sends, recvs, [dumps(o) for o in sendobj]))
            return [loads(got[i]) if i in got else None for i in range(indeg)]


def neighbor_exchange(ch, sends, recvs, blocks):
    """Schedule: post the receives (in order) and sends of a neighbourhood collective;
    returns {receive block index: bytes} (PROC_NULL neighbours skipped)."""
    posted = {i: ch.irecv(peer) for peer, i in recvs if peer != PROC_NULL}
    out = [ch.isend(blocks[i], peer) for peer, i in sends if peer != PROC_NULL]
    yield list(posted.values()) + out
    return {i: q.data for i, q in posted.items()}


class Cartcomm(Topocomm):
    """Cartesian topology intracommunicator: a grid, ranks numbered row-major."""

    __slots__ = ()
    _kind = CART
    _what = "Cartesian"

    def Get_dim(self) -> int:
        """Return the number of dimensions."""
        return len(self._topo().dims)

    @property
    def dim(self) -> int:
        return self.Get_dim()

    @property
    def ndim(self) -> int:
        return self.Get_dim()

    def Get_topo(self):
        """Return the dimensions, periodicities and this process's coordinates."""
        topo = self._topo()
        return list(topo.dims), [int(p) for p in topo.periods], topo.coords(self._st().rank)

    @property
    def topo(self):
        return self.Get_topo()

    @property
    def dims(self) -> list[int]:
        return self.Get_topo()[0]

    @property
    def periods(self) -> list[int]:
        return self.Get_topo()[1]

    @property
    def coords(self) -> list[int]:
        return self.Get_topo()[2]

    def Get_cart_rank(self, coords) -> int:
        """Return the rank of the process at the given coordinates."""
        topo = self._topo()
        coords = list(coords)
        if len(coords) != len(topo.dims):
            raise ValueError(f"expecting {len(topo.dims)} items, got {len(coords)}")
        return topo.rank(coords)

    def Get_coords(self, rank: int) -> list[int]:
        """Return the coordinates of the process at a rank."""
        if not 0 <= rank < len(self._st().group):
            raise Exception(_ERR_RANK)
        return self._topo().coords(rank)

    def Shift(self, direction: int, disp: int) -> tuple[int, int]:
        """Return the source and destination ranks of a shift along a dimension."""
        return self._topo().shift(self._st().rank, direction, disp)

    def Sub(self, remain_dims) -> Cartcomm:
        """Collective: ranks that agree on the dropped coordinates form one sub-grid."""
        topo = self._topo()
        keep = [bool(k) for k in remain_dims]
        if len(keep) != len(topo.dims):
            raise ValueError(f"expecting {len(topo.dims)} items, got {len(keep)}")
        st = self._st()
        coords = topo.coords(st.rank)
        color = 0
        for c, d, k in zip(coords, topo.dims, keep, strict=True):
            if not k:
                color = color * d + c
        sub = Intracomm.Split(self, color, st.rank)
        s = sub._s
        s.topo = CartTopology(
            [d for d, k in zip(topo.dims, keep, strict=True) if k],
            [p for p, k in zip(topo.periods, keep, strict=True) if k],
        )
        return Cartcomm._of(s)


class Graphcomm(Topocomm):
    """General graph topology intracommunicator, given by MPI's index/edges arrays."""

    __slots__ = ()
    _kind = GRAPH
    _what = "general graph"

    def Get_dims(self) -> tuple[int, int]:
        """Return the number of nodes and edges."""
        topo = self._topo()
        return len(topo.index), len(topo.edges)

    @property
    def dims(self):
        return self.Get_dims()

    @property
    def nnodes(self) -> int:
        return self.Get_dims()[0]

    @property
    def nedges(self) -> int:
        return self.Get_dims()[1]

    def Get_topo(self):
        """Return the index and edges of the graph."""
        topo = self._topo()
        return list(topo.index), list(topo.edges)

    @property
    def topo(self):
        return self.Get_topo()

    @property
    def index(self) -> list[int]:
        return self.Get_topo()[0]

    @property
    def edges(self) -> list[int]:
        return self.Get_topo()[1]

    def Get_neighbors_count(self, rank: int) -> int:
        """Return the number of neighbours of a rank."""
        return len(self._topo().neighbors(rank))

    @property
    def nneighbors(self) -> int:
        return self.Get_neighbors_count(self._st().rank)

    def Get_neighbors(self, rank: int) -> list[int]:
        """Return the neighbours of a rank."""
        return list(self._topo().neighbors(rank))

    @property
    def neighbors(self) -> list[int]:
        return self.Get_neighbors(self._st().rank)


class Distgraphcomm(Topocomm):
    """Distributed graph topology intracommunicator: each rank knows its own edges."""

    __slots__ = ()
    _kind = DIST_GRAPH
    _what = "distributed graph"

    def Get_dist_neighbors_count(self):
        """Return the in-degree, out-degree and whether weighted."""
        topo = self._topo()
        return len(topo.sources), len(topo.destinations), topo.weighted

    def Get_dist_neighbors(self):
        """Return the sources, destinations and weights."""
        topo = self._topo()
        weights = (list(topo.sweights), list(topo.dweights)) if topo.weighted else None
        return list(topo.sources), list(topo.destinations), weights


def cart_map(comm, dims, periods=None) -> int:
    """Open MPI 4.1's ``topo/base`` mapping: every process keeps its rank (it does not
    return MPI_UNDEFINED for a process outside the grid, nor check the grid's size)."""
    return comm._st().rank


def graph_map(comm, index, edges) -> int:
    """As ``cart_map``: the caller's rank."""
    return comm._st().rank


NAMES = {
    "Topocomm": Topocomm,
    "Cartcomm": Cartcomm,
    "Graphcomm": Graphcomm,
    "Distgraphcomm": Distgraphcomm,
    "Compute_dims": Compute_dims,
    "CART": CART,
    "GRAPH": GRAPH,
    "DIST_GRAPH": DIST_GRAPH,
    "UNWEIGHTED": UNWEIGHTED,
    "WEIGHTS_EMPTY": WEIGHTS_EMPTY,
}
"""What ``mpi4py.MPI`` exports from here."""
