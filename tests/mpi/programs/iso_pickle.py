"""A class and an instance defined in the program, pickled between ranks."""

from dataclasses import dataclass

from mpi4py import MPI


@dataclass
class Point:
    x: int
    y: int

    def norm1(self):
        return abs(self.x) + abs(self.y)


comm = MPI.COMM_WORLD
if comm.rank == 0:
    comm.send(Point(3, -4), dest=1)
    back = comm.recv(source=1)
    print(type(back).__name__, type(back) is Point, back)
else:
    p = comm.recv(source=0)
    print(type(p) is Point, p.norm1())
    comm.send(Point(p.y, p.x), dest=0)
