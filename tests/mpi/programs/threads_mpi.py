"""MPI from a rank's Python threads (MPI_THREAD_MULTIPLE): two threads in Recv on different
tags while the main thread sends, a thread's Send while the main thread is in Recv, one
collective per thread on communicators of their own, and work handed to a thread through a
queue. Every line a rank prints is independent of how its threads interleave, so real Open
MPI prints the same."""

import queue
import threading

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
print("level", MPI.Query_thread() == MPI.THREAD_MULTIPLE, MPI.Is_thread_main())

# two threads of each rank in Recv (tags 1 and 2); the main thread sends tag 2 first
got = {}
info = {}


def receive(tag):
    got[tag] = comm.recv(source=left, tag=tag)
    info[tag] = (MPI.Is_thread_main(), threading.current_thread().name)


threads = [threading.Thread(target=receive, args=(tag,), name=f"recv{tag}") for tag in (1, 2)]
for t in threads:
    t.start()
comm.send(f"tag 2 from {rank}", dest=right, tag=2)
comm.send(f"tag 1 from {rank}", dest=right, tag=1)
for t in threads:
    t.join()
print("recv", sorted(got.items()), sorted(info.items()))

# a thread sends while the main thread receives
sender = threading.Thread(target=comm.send, args=(rank * 10, right), kwargs={"tag": 3})
sender.start()
print("main got", comm.recv(source=left, tag=3))
sender.join()

# a collective in each of three threads, each on a communicator of its own
comms = [comm.Dup() for _ in range(3)]
sums = [None] * 3


def reduce(i):
    sums[i] = comms[i].allreduce(rank + i)


workers = [threading.Thread(target=reduce, args=(i,)) for i in range(3)]
for t in workers:
    t.start()
for t in workers:
    t.join()
print("allreduce", sums)

# work handed to a thread through a queue; the thread answers over MPI
jobs: queue.Queue = queue.Queue()


def serve():
    while (item := jobs.get()) is not None:
        comm.send(item * item, dest=right, tag=4)


server = threading.Thread(target=serve)
server.start()
for item in range(3):
    jobs.put(rank + item)
    print("squared", comm.recv(source=left, tag=4))
jobs.put(None)
server.join()
for c in comms:
    c.Free()
print("alive", threading.active_count())
