"""Both ranks receive before they send: a deadlock at every timing (real MPI hangs)."""

from mpi4py import MPI

comm = MPI.COMM_WORLD
buf = bytearray(8)
comm.Recv(buf, source=1 - comm.Get_rank())
comm.Send(buf, dest=1 - comm.Get_rank())
