"""Bidirectional windows between two ranks: each keeps a window of non-blocking sends in
flight towards the other while it receives the other's window, for a few rounds. Every
fourth message is small (the small receive queue); the others are medium from rank 0 and
large from rank 1 (the large queue): rank 1's large sends keep its large QP's work queue
deep while rank 0's medium messages use up rank 1's large receive buffers. With
btl_openib_credits_qp smallest the credits for the large queue travel on the small QP,
so on a NIC with one work queue per QP (Chelsio T3) they can overtake the receive posts
they advertise: the race of the seed. Usage: bidir_window.py [ROUNDS] [WINDOW]."""

import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
peer = 1 - rank
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
window = int(sys.argv[2]) if len(sys.argv) > 2 else 16
SMALL = 100
BODY = {0: 3000, 1: 12 * 1024}


def size(sender: int, i: int) -> int:
    return SMALL if i % 4 == 0 else BODY[sender]


def fill(sender: int, r: int, i: int) -> int:
    return (sender * 31 + r * 7 + i) & 0xFF


for r in range(rounds):
    requests, inbox = [], []
    for i in range(window):
        msg = bytearray([fill(rank, r, i)]) * size(rank, i)
        requests.append(comm.Isend(msg, dest=peer, tag=i))
        buf = bytearray(size(peer, i))
        inbox.append(buf)
        requests.append(comm.Irecv(buf, source=peer, tag=i))
    MPI.Request.Waitall(requests)
    for i, buf in enumerate(inbox):
        assert buf.count(fill(peer, r, i)) == len(buf), f"round {r} message {i} corrupted"
if rank == 0:
    print(f"{rounds} rounds of {window} messages each way: ok")
