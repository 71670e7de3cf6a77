"""Group and topology corner cases: handle identity, argument errors with their error
classes, Compute_dims over many shapes, Split_type, Cart_map/Graph_map."""

from mpi4py import MPI

world = MPI.COMM_WORLD
rank, size = world.rank, world.size
g = world.Get_group()


def error_class(fn):
    try:
        fn()
    except MPI.Exception as exc:
        return exc.Get_error_class()
    return "no error"


print("same group handle", world.Get_group() == world.Get_group(), g == g.Dup())
print(
    "empty results are GROUP_EMPTY",
    g.Incl([]) == MPI.GROUP_EMPTY,
    g.Excl(range(size)) == MPI.GROUP_EMPTY,
)
if size > 1:
    print("incl duplicate", g.Incl([0, 0]).Translate_ranks(None, g), g.Excl([0, 0]).size)
print("incl too many", error_class(lambda: g.Incl([0] * (size + 1))) == MPI.ERR_RANK)
print("incl out of range", error_class(lambda: g.Incl([size])) == MPI.ERR_RANK)
print("translate proc null", g.Translate_ranks([MPI.PROC_NULL], g))
print("range stride 0", error_class(lambda: g.Range_incl([(0, 0, 0)])) == MPI.ERR_RANK)
print("self group in world", world.Get_group().Translate_ranks([rank], MPI.COMM_SELF.Get_group()))
print("range stride", g.Range_incl([(0, size - 1, 2)]).size, g.Range_excl([(size - 1, 0, -2)]).size)
for nnodes in (1, 2, 6, 7, 12, 16, 24, 30, 36, 60, 64, 97, 120):
    print("dims", nnodes, [MPI.Compute_dims(nnodes, d) for d in (1, 2, 3, 4)])
print("dims fixed", MPI.Compute_dims(24, [0, 3, 0]), MPI.Compute_dims(24, [2, 0, 2, 0]))
print("dims error", error_class(lambda: MPI.Compute_dims(7, [2, 0])) == MPI.ERR_DIMS)
print("cart too big", error_class(lambda: world.Create_cart([size + 1])) == MPI.ERR_ARG)
print("cart map", world.Cart_map([1]), world.Cart_map([size + 1]), world.Graph_map([1], [0]))
print("dims errors", [error_class(lambda a=a: MPI.Compute_dims(*a)) for a in ((0, 2), (6, 0))])
print("split type undefined", world.Split_type(MPI.UNDEFINED) == MPI.COMM_NULL)
print(
    "topo test",
    world.Get_topology() == MPI.UNDEFINED,
    world.Create_cart([size]).topology == MPI.CART,
)
