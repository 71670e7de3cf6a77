"""Groups, communicator constructors, intercommunicators and topologies, with the
collectives on what they build; one line per result."""

import numpy as np
from mpi4py import MPI

world = MPI.COMM_WORLD
rank, size = world.rank, world.size

# -- groups ------------------------------------------------------------------------------
g = world.Get_group()
evens = g.Incl(list(range(0, size, 2)))
odds = g.Excl(list(range(0, size, 2)))
print("group", g.size, g.rank, evens.size, evens.rank, odds.size, odds.rank)
print("union", MPI.Group.Union(odds, evens).Translate_ranks(list(range(size)), g))
print("intersection", MPI.Group.Intersection(g, odds).size, MPI.Group.Difference(g, odds).size)
print("range", g.Range_incl([(size - 1, 0, -2)]).Translate_ranks(None, g))
print("range excl", g.Range_excl([(0, size - 1, 3)]).size)
print("translate", evens.Translate_ranks(list(range(evens.size)), odds))
rev = g.Incl(list(range(size - 1, -1, -1)))
print("compare", MPI.Group.Compare(g, g), MPI.Group.Compare(g, rev), MPI.Group.Compare(g, odds))
print("empty", MPI.Group.Difference(g, g) == MPI.GROUP_EMPTY, MPI.GROUP_EMPTY.size)
for grp in (evens, odds, rev):
    grp.Free()

# -- duplicates, splits, subsets ---------------------------------------------------------
dup = world.Dup()
print("dup", dup.size, dup.rank, MPI.Comm.Compare(world, dup), repr(dup.Get_name()))
dup.Set_name("my dup")
print("name", dup.name)
idup, req = world.Idup()
req.Wait()
print("idup", idup.size, MPI.Comm.Compare(idup, dup))
split = world.Split(rank % 2, -rank)
print("split", split.size, split.rank, MPI.Comm.Compare(world, split))
undefined = world.Split(MPI.UNDEFINED if rank == 0 else 0, 0)
print("split undefined", undefined == MPI.COMM_NULL, undefined.size if undefined else None)
reverse = world.Split(0, size - rank)
print("reverse", reverse.rank, MPI.Comm.Compare(world, reverse))
group = world.Get_group().Incl([r for r in range(size) if r % 3 != 1])
created = world.Create(group)
print("create", created == MPI.COMM_NULL, created.rank if created else None)
if rank % 3 != 1:
    mine = world.Create_group(group, tag=7)
    print("create_group", mine.size, mine.rank, mine.allreduce(rank))
    mine.Free()
group.Free()

# the same tags on different communicators never meet
if size >= 2:
    peer = rank ^ 1
    if peer < size:
        a = np.zeros(1, "i")
        b = np.zeros(1, "i")
        ra = world.Irecv(a, source=peer, tag=3)
        rb = dup.Irecv(b, source=peer, tag=3)
        dup.Send(np.array([200 + rank], "i"), dest=peer, tag=3)
        world.Send(np.array([100 + rank], "i"), dest=peer, tag=3)
        MPI.Request.Waitall([ra, rb])
        print("isolated", int(a[0]), int(b[0]))
print("split allreduce", split.allreduce(rank), dup.allreduce(1), reverse.allgather(rank))
for c in (dup, idup, split, reverse):
    c.Free()
if created:
    created.Free()

# -- intercommunicators ------------------------------------------------------------------
if size >= 2:
    color = rank % 2
    local = world.Split(color, rank)
    inter = local.Create_intercomm(0, world, 1 - color, tag=11)
    print("inter", inter.Is_inter(), inter.size, inter.rank, inter.remote_size)
    print("remote group", inter.Get_remote_group().Translate_ranks(None, world.Get_group()))
    inter.Barrier()
    buf = np.zeros(3, "i")
    if color == 0:
        if local.rank == 0:
            buf[:] = [7, 8, 9]
            inter.Bcast(buf, root=MPI.ROOT)
        else:
            inter.Bcast(buf, root=MPI.PROC_NULL)
    else:
        inter.Bcast(buf, root=0)
    print("inter Bcast", buf.tolist())
    out = np.zeros(2, "d")
    inter.Allreduce(np.array([rank, 1.0]), out, MPI.SUM)
    print("inter Allreduce", out.tolist())
    ag = np.zeros(inter.remote_size, "i")
    inter.Allgather(np.array([rank], "i"), ag)
    print("inter Allgather", ag.tolist())
    a2a = np.zeros(inter.remote_size, "i")
    inter.Alltoall(np.arange(inter.remote_size, dtype="i") + 10 * rank, a2a)
    print("inter Alltoall", a2a.tolist())
    if color == 1:  # group 1's rank 0 is the root, gathering from group 0
        root = MPI.ROOT if local.rank == 0 else MPI.PROC_NULL
        gathered = np.zeros(inter.remote_size, "i")
        inter.Gather(None, gathered, root=root)
        print("inter Gather", gathered.tolist() if local.rank == 0 else None)
        red = np.zeros(1, "i")
        inter.Reduce(None, red, MPI.MAX, root=root)
        print("inter Reduce", int(red[0]) if local.rank == 0 else None)
        inter.Scatter(np.arange(inter.remote_size, dtype="i") * 5, None, root=root)
    else:
        inter.Gather(np.array([rank * rank], "i"), None, root=0)
        inter.Reduce(np.array([rank], "i"), None, MPI.MAX, root=0)
        got = np.zeros(1, "i")
        inter.Scatter(None, got, root=0)
        print("inter Scatter", int(got[0]))
    r = inter.Iallreduce(np.array([1], "i"), np.zeros(1, "i"), MPI.SUM)
    r.Wait()
    print(
        "inter bcast obj",
        inter.bcast(
            "hello" if rank == 0 else None,
            root=(MPI.ROOT if rank == 0 else MPI.PROC_NULL) if color == 0 else 0,
        ),
    )
    print("inter allreduce obj", inter.allreduce([rank]), inter.allgather(rank))
    merged = inter.Merge(high=bool(color))
    print("merge", merged.size, merged.rank, merged.allgather(rank))
    idup = inter.Dup()
    print("inter dup", idup.Is_inter(), idup.remote_size, MPI.Comm.Compare(inter, idup))
    isplit = inter.Split(0 if rank < 4 else MPI.UNDEFINED, rank)
    print("inter split", isplit.remote_size if isplit else None)
    for c in (merged, idup, inter, local):
        c.Free()
    if isplit:
        isplit.Free()

# -- topologies --------------------------------------------------------------------------
print("dims", MPI.Compute_dims(size, 2), MPI.Compute_dims(12, 3), MPI.Compute_dims(size, [0, 1]))
dims = MPI.Compute_dims(size, 2)
cart = world.Create_cart(dims, periods=[True, False])
print("cart", cart.Get_topology() == MPI.CART, cart.dims, cart.periods, cart.coords)
print("cart rank", cart.Get_cart_rank(cart.coords), cart.Shift(0, 1), cart.Shift(1, -1))
print("cart neighbours", cart.inedges, cart.degrees)
nb = np.full(2 * len(dims), -1, "i")
cart.Neighbor_allgather(np.array([rank], "i"), nb)
print("cart Neighbor_allgather", nb.tolist())
sendblocks = np.arange(2 * len(dims), dtype="i") + 10 * rank
recvblocks = np.full(2 * len(dims), -1, "i")
cart.Neighbor_alltoall(sendblocks, recvblocks)
print("cart Neighbor_alltoall", recvblocks.tolist())
recvblocks[:] = -1
cart.Ineighbor_alltoall(sendblocks, recvblocks).Wait()
print("cart Ineighbor_alltoall", recvblocks.tolist())
print("cart neighbor_allgather", cart.neighbor_allgather(rank))
sub = cart.Sub([False, True])
print("cart sub", sub.dims, sub.coords, sub.size)
sub.Free()
cart.Free()

index = [2 * (i + 1) for i in range(size)]
edges = [e for i in range(size) for e in ((i - 1) % size, (i + 1) % size)]
graph = world.Create_graph(index, edges)
print("graph", graph.Get_topology() == MPI.GRAPH, graph.dims, graph.neighbors)
gn = np.full(2, -1, "i")
graph.Neighbor_allgather(np.array([rank * 3], "i"), gn)
print("graph Neighbor_allgather", gn.tolist())
print("graph neighbor_alltoall", graph.neighbor_alltoall([("to", n) for n in graph.neighbors]))
graph.Free()

left, right = (rank - 1) % size, (rank + 1) % size
dist = world.Create_dist_graph_adjacent([left], [right], [2], [3])
print("dist adjacent", dist.Get_dist_neighbors(), dist.Get_dist_neighbors_count())
dn = np.full(1, -1, "i")
dist.Neighbor_allgather(np.array([rank], "i"), dn)
print("dist Neighbor_allgather", dn.tolist())
dv = np.full(3, -1, "i")
dist.Neighbor_alltoallv(
    [np.arange(2, dtype="i") + rank, [2], [0], MPI.INT], [dv, [2], [1], MPI.INT]
)
print("dist Neighbor_alltoallv", dv.tolist())
dist.Free()
dist = world.Create_dist_graph([rank], [1], [right])
src, dst, weights = dist.Get_dist_neighbors()
print("dist graph", sorted(src), sorted(dst), weights)
dist.Free()
