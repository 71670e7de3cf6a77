"""Every collective in its blocking, nonblocking and persistent forms, v/w variants,
IN_PLACE, prefix reductions, user operations and object forms; one line per result."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size


def show(what, value):
    if isinstance(value, np.ndarray):
        value = value.tolist()
    print(what, value)


def forms(name, blocking, nonblocking, persistent, reset, result):
    """Run one collective three ways; print the blocking and nonblocking results. The
    persistent form (MPI-4: real Open MPI 4.1 raises NotImplementedError) must give the
    blocking result twice in a row, else the line says so."""
    reset()
    blocking()
    first = result()
    show(f"{name} blocking", first)
    reset()
    nonblocking().Wait()
    show(f"{name} I", result())
    try:
        req = persistent()
    except NotImplementedError:
        return
    for _ in range(2):
        reset()
        req.Start()
        req.Wait()
        again = result()
        if repr(again) != repr(first):
            show(f"{name} persistent MISMATCH", again)
    req.Free()


# -- barrier and bcast ------------------------------------------------------------------
comm.Barrier()
comm.Ibarrier().Wait()
try:
    req = comm.Barrier_init()
    req.Start()
    req.Wait()
    req.Free()
except NotImplementedError:
    pass
print("barriers done")

for n, dt in ((5, "i"), (3000, "d"), (70000, "b")):
    buf = np.zeros(n, dt)

    def reset_bcast(buf=buf, n=n, dt=dt):
        buf[:] = np.arange(n, dtype=dt) if rank == size - 1 else 0

    forms(
        f"Bcast {n}{dt}",
        lambda buf=buf: comm.Bcast(buf, root=size - 1),
        lambda buf=buf: comm.Ibcast(buf, root=size - 1),
        lambda buf=buf: comm.Bcast_init(buf, root=size - 1),
        reset_bcast,
        lambda buf=buf: int(buf.astype(np.int64).sum()),
    )

# -- reductions on several types and ops -------------------------------------------------
for dt, opname in (("i", "SUM"), ("d", "MAX"), ("l", "BXOR"), ("f", "PROD"), ("i", "LOR")):
    op = getattr(MPI, opname)
    send = (np.arange(4, dtype=dt) + rank + 1).astype(dt)
    recv = np.zeros(4, dt)

    def zero(recv=recv):
        recv[:] = 0

    forms(
        f"Allreduce {dt} {opname}",
        lambda s=send, r=recv, o=op: comm.Allreduce(s, r, o),
        lambda s=send, r=recv, o=op: comm.Iallreduce(s, r, o),
        lambda s=send, r=recv, o=op: comm.Allreduce_init(s, r, o),
        zero,
        lambda r=recv: r,
    )
    root = 1 % size
    forms(
        f"Reduce {dt} {opname}",
        lambda s=send, r=recv, o=op, t=root: comm.Reduce(s, r, o, t),
        lambda s=send, r=recv, o=op, t=root: comm.Ireduce(s, r, o, t),
        lambda s=send, r=recv, o=op, t=root: comm.Reduce_init(s, r, o, t),
        zero,
        lambda r=recv, t=root: r if rank == t else None,
    )

big = np.arange(5000, dtype="d") * (rank + 1)
out = np.zeros_like(big)
comm.Allreduce(big, out, MPI.SUM)  # ring (commutative, more elements than processes)
show("Allreduce ring", float(out.sum()))
inplace = np.full(3, rank + 2, "i")
comm.Allreduce(MPI.IN_PLACE, inplace, MPI.PROD)
show("Allreduce in place", inplace)
mine = np.array([rank * 10.0])
if rank == 0:
    comm.Reduce(MPI.IN_PLACE, mine, MPI.MIN, 0)
    show("Reduce in place", mine)
else:
    comm.Reduce(mine, None, MPI.MIN, 0)
pairs = np.zeros(1, dtype=[("v", "i4"), ("i", "i4")])
pairs["v"], pairs["i"] = rank % 2, rank
best = np.zeros_like(pairs)
comm.Allreduce([pairs, MPI.TWOINT], [best, MPI.TWOINT], MPI.MINLOC)
show("Allreduce minloc", (int(best["v"][0]), int(best["i"][0])))


def concat(invec, inoutvec, datatype):
    """A non-commutative op: keep the lower rank's value, add ten times the higher's."""
    a = np.frombuffer(invec, "i")
    b = np.frombuffer(inoutvec, "i")
    b[:] = a * 10 + b


noncomm = MPI.Op.Create(concat, commute=False)
val = np.array([rank + 1], "i")
res = np.zeros(1, "i")
comm.Allreduce(val, res, noncomm)
show("Allreduce noncommutative", res)
comm.Reduce(val, res, noncomm, size - 1)
show("Reduce noncommutative", res if rank == size - 1 else None)
comm.Scan(val, res, noncomm)
show("Scan noncommutative", res)
noncomm.Free()

for fn in ("Scan", "Exscan"):
    send = np.array([rank + 1, 2 * rank], "i")
    recv = np.full(2, -7, "i")

    def reset_scan(recv=recv):
        recv[:] = -7

    forms(
        fn,
        lambda s=send, r=recv, f=fn: getattr(comm, f)(s, r, MPI.SUM),
        lambda s=send, r=recv, f=fn: getattr(comm, "I" + f.lower()[0] + f[1:])(s, r, MPI.SUM),
        lambda s=send, r=recv, f=fn: getattr(comm, f + "_init")(s, r, MPI.SUM),
        reset_scan,
        lambda r=recv, f=fn: r if (f == "Scan" or rank > 0) else None,
    )
inp = np.array([rank + 1.0])
comm.Scan(MPI.IN_PLACE, inp, MPI.PROD)
show("Scan in place", inp)

counts = [i + 1 for i in range(size)]
send = np.arange(sum(counts), dtype="i") + rank
recv = np.zeros(counts[rank], "i")
comm.Reduce_scatter(send, recv, counts, MPI.SUM)
show("Reduce_scatter", recv)
comm.Ireduce_scatter(send, recv, None, MPI.MAX).Wait()
show("Ireduce_scatter", recv)
block = np.arange(2 * size, dtype="d") * (rank + 1)
rb = np.zeros(2)
comm.Reduce_scatter_block(block, rb, MPI.SUM)
show("Reduce_scatter_block", rb)
inpl = np.arange(2 * size, dtype="d") + rank
comm.Reduce_scatter_block(MPI.IN_PLACE, inpl, MPI.SUM)
show("Reduce_scatter_block in place", inpl[:2])

# -- gather / scatter / allgather / alltoall, v and w ------------------------------------
mine = np.array([rank, -rank, rank * rank], "l")
gath = np.zeros(3 * size, "l")
forms(
    "Gather",
    lambda: comm.Gather(mine, gath, root=0),
    lambda: comm.Igather(mine, gath, root=0),
    lambda: comm.Gather_init(mine, gath, root=0),
    lambda: gath.fill(0),
    lambda: gath if rank == 0 else None,
)
forms(
    "Allgather",
    lambda: comm.Allgather(mine, gath),
    lambda: comm.Iallgather(mine, gath),
    lambda: comm.Allgather_init(mine, gath),
    lambda: gath.fill(0),
    lambda: gath,
)
root_data = np.arange(2 * size, dtype="f") * 1.5
part = np.zeros(2, "f")
forms(
    "Scatter",
    lambda: comm.Scatter(root_data, part, root=size - 1),
    lambda: comm.Iscatter(root_data, part, root=size - 1),
    lambda: comm.Scatter_init(root_data, part, root=size - 1),
    lambda: part.fill(0),
    lambda: part,
)
a2a_send = np.arange(size * 2, dtype="i") + 100 * rank
a2a_recv = np.zeros(size * 2, "i")
forms(
    "Alltoall",
    lambda: comm.Alltoall(a2a_send, a2a_recv),
    lambda: comm.Ialltoall(a2a_send, a2a_recv),
    lambda: comm.Alltoall_init(a2a_send, a2a_recv),
    lambda: a2a_recv.fill(0),
    lambda: a2a_recv,
)
big_send = np.arange(size * 1000, dtype="d") + rank
big_recv = np.zeros_like(big_send)
comm.Alltoall(big_send, big_recv)  # pairwise exchange (3000-byte blocks and more)
show("Alltoall pairwise", float(big_recv.sum()))

vcounts = [r + 1 for r in range(size)]
vdispls = [sum(vcounts[:r]) + r for r in range(size)]
vsend = np.full(rank + 1, rank, "d")
vrecv = np.full(sum(vcounts) + size, -1.0)
forms(
    "Gatherv",
    lambda: comm.Gatherv(vsend, [vrecv, vcounts, vdispls, MPI.DOUBLE], root=0),
    lambda: comm.Igatherv(vsend, [vrecv, vcounts, vdispls, MPI.DOUBLE], root=0),
    lambda: comm.Gatherv_init(vsend, [vrecv, vcounts, vdispls, MPI.DOUBLE], root=0),
    lambda: vrecv.fill(-1),
    lambda: vrecv if rank == 0 else None,
)
forms(
    "Allgatherv",
    lambda: comm.Allgatherv(vsend, [vrecv, (vcounts, vdispls), MPI.DOUBLE]),
    lambda: comm.Iallgatherv(vsend, [vrecv, (vcounts, vdispls), MPI.DOUBLE]),
    lambda: comm.Allgatherv_init(vsend, [vrecv, (vcounts, vdispls), MPI.DOUBLE]),
    lambda: vrecv.fill(-1),
    lambda: vrecv,
)
sv_src = np.arange(sum(vcounts) + size, dtype="d")
sv_dst = np.zeros(rank + 1)
forms(
    "Scatterv",
    lambda: comm.Scatterv([sv_src, vcounts, vdispls, MPI.DOUBLE], sv_dst, root=0),
    lambda: comm.Iscatterv([sv_src, vcounts, vdispls, MPI.DOUBLE], sv_dst, root=0),
    lambda: comm.Scatterv_init([sv_src, vcounts, vdispls, MPI.DOUBLE], sv_dst, root=0),
    lambda: sv_dst.fill(0),
    lambda: sv_dst,
)
scounts = [(rank + d) % 3 for d in range(size)]
rcounts = [(s + rank) % 3 for s in range(size)]
sdispls = [sum(scounts[:d]) for d in range(size)]
rdispls = [sum(rcounts[:s]) for s in range(size)]
av_send = np.arange(sum(scounts), dtype="i") + 1000 * rank
av_recv = np.zeros(sum(rcounts), "i")
forms(
    "Alltoallv",
    lambda: comm.Alltoallv([av_send, (scounts, sdispls)], [av_recv, (rcounts, rdispls)]),
    lambda: comm.Ialltoallv([av_send, (scounts, sdispls)], [av_recv, (rcounts, rdispls)]),
    lambda: comm.Alltoallv_init([av_send, (scounts, sdispls)], [av_recv, (rcounts, rdispls)]),
    lambda: av_recv.fill(0),
    lambda: av_recv,
)
w_send = np.arange(size, dtype="i") + 10 * rank
w_recv = np.zeros(size, "i")
bytes_at = [4 * i for i in range(size)]
ones = [1] * size
ints = [MPI.INT] * size
forms(
    "Alltoallw",
    lambda: comm.Alltoallw([w_send, ones, bytes_at, ints], [w_recv, ones, bytes_at, ints]),
    lambda: comm.Ialltoallw([w_send, ones, bytes_at, ints], [w_recv, ones, bytes_at, ints]),
    lambda: comm.Alltoallw_init([w_send, ones, bytes_at, ints], [w_recv, ones, bytes_at, ints]),
    lambda: w_recv.fill(0),
    lambda: w_recv,
)

ag = np.full(size, -1, "i")
ag[rank] = rank * 7
comm.Allgather(MPI.IN_PLACE, ag)
show("Allgather in place", ag)
at = np.arange(size, dtype="i") * (rank + 1)
comm.Alltoall(MPI.IN_PLACE, at)
show("Alltoall in place", at)
if rank == 0:
    g = np.full(size, -1, "i")
    g[0] = 42
    comm.Gather(MPI.IN_PLACE, g, root=0)
    show("Gather in place", g)
    comm.Scatter(np.arange(size, dtype="i") * 3, MPI.IN_PLACE, root=0)
else:
    comm.Gather(np.array([rank], "i"), None, root=0)
    s = np.zeros(1, "i")
    comm.Scatter(None, s, root=0)
    show("Scatter to in-place root", s)

# -- a nonblocking collective progresses while its rank waits elsewhere ------------------
# (binomial tree from 0: rank 3 receives the data from rank 2, which is meanwhile
# blocked in a Recv that only rank 3 can satisfy once its Ibcast has completed)
buf = np.arange(4, dtype="i") if rank == 0 else np.zeros(4, "i")
req = comm.Ibcast(buf, root=0)
token = np.zeros(1, "i")
if size >= 4 and rank == 2:
    comm.Recv(token, source=3, tag=5)
if size >= 4 and rank == 3:
    req.Wait()
    comm.Send(np.array([buf.sum()], "i"), dest=2, tag=5)
else:
    req.Wait()
show("Ibcast overlapped", (buf.tolist(), int(token[0])))
reqs = [comm.Iallreduce(np.array([rank + k], "i"), np.zeros(1, "i"), MPI.SUM) for k in range(3)]
MPI.Request.Waitall(reqs)
print("three outstanding nonblocking collectives completed")

# -- object forms ------------------------------------------------------------------------
show("bcast", comm.bcast({"root": size - 1, "x": [1, 2]} if rank == size - 1 else None, size - 1))
show("gather", comm.gather((rank, f"r{rank}"), root=size // 2))
show("scatter", comm.scatter([i * i for i in range(size)] if rank == 0 else None, root=0))
show("allgather", comm.allgather(chr(97 + rank)))
show("alltoall", comm.alltoall([(rank, d) for d in range(size)]))
show("reduce", comm.reduce([rank], op=MPI.SUM, root=0))
show("allreduce", comm.allreduce(rank + 1, op=MPI.PROD))
show("allreduce list order", comm.allreduce([rank]))
show("scan", comm.scan(rank + 1))
show("exscan", comm.exscan(rank + 1))
show("allreduce maxloc", comm.allreduce((rank % 2, rank), op=MPI.MAXLOC))
show("reduce lambda", comm.reduce(rank, op=lambda a, b: a * 10 + b, root=0))
local = np.array([1, 2, 3], "i")
inout = np.array([10, 20, 30], "i")
MPI.SUM.Reduce_local(local, inout)
show("Reduce_local", inout)
try:
    comm.Allreduce(np.zeros(2), np.zeros(2), MPI.BAND)
except MPI.Exception as exc:
    show("BAND on DOUBLE", exc.Get_error_class() == MPI.ERR_OP)
try:
    comm.Bcast(np.zeros(1), root=size)
except MPI.Exception as exc:
    show("bad root", exc.Get_error_class() == MPI.ERR_ROOT)
