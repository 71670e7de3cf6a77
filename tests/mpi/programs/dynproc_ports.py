"""Ports, name publishing and Accept/Connect between two halves of COMM_WORLD."""

from mpi4py import MPI

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()


def code(call):
    try:
        call()
    except MPI.Exception as exc:
        return exc.Get_error_class()
    return 0


print(rank, "parent-null", MPI.Comm.Get_parent() == MPI.COMM_NULL)
port = MPI.Open_port()
service = f"pyopenib-test-{rank}"
MPI.Publish_name(service, port)
print(rank, "lookup", MPI.Lookup_name(service) == port)
MPI.Unpublish_name(service, port)
print(rank, "lookup-gone", code(lambda: MPI.Lookup_name(service)) == MPI.ERR_NAME)
MPI.Close_port(port)

half = world.Split(rank % 2, rank)
if rank % 2 == 0:
    port = MPI.Open_port() if half.rank == 0 else None
    if half.rank == 0:
        world.send(port, dest=1)
    inter = half.Accept(port, root=0)
    if half.rank == 0:
        MPI.Close_port(port)
else:
    port = world.recv(source=0) if rank == 1 else None
    inter = half.Connect(port, root=0)
print(rank, "inter", inter.Is_inter(), inter.Get_size(), inter.Get_remote_size(), inter.Get_rank())
value = inter.bcast(
    ["from odd", 42] if rank == 1 else None,
    root=(MPI.ROOT if rank == 1 else MPI.PROC_NULL) if rank % 2 else 0,
)
print(rank, "bcast", value)
peer = inter.Get_rank() % inter.Get_remote_size()
got = inter.sendrecv(("hello", rank), dest=peer, source=MPI.ANY_SOURCE)
print(rank, "sendrecv-from-other-side", got[1] % 2 != rank % 2)
merged = inter.Merge(high=rank % 2 == 1)
print(rank, "merged", merged.Get_size(), merged.Get_rank())
merged.Free()
inter.Disconnect()
print(rank, "disconnected", inter == MPI.COMM_NULL)
half.Free()
