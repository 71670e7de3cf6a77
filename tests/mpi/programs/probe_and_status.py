"""Probe/Iprobe before receiving; Status counts in several datatypes."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.rank

if rank == 0:
    comm.Send(np.arange(7, dtype="d"), dest=1, tag=3)
    comm.send(list(range(5)), dest=1, tag=4)
    comm.Ssend(np.arange(3, dtype="i"), dest=1, tag=5)
    comm.Send(np.arange(20_000, dtype="i"), dest=1, tag=6)
    comm.send("done", dest=1, tag=7)
elif rank == 1:
    st = MPI.Status()
    comm.Probe(source=0, tag=3, status=st)
    print(
        "probe",
        st.Get_source(),
        st.Get_tag(),
        st.Get_count(),
        st.Get_count(MPI.DOUBLE),
        st.Get_count(MPI.INT),
    )
    buf = np.empty(st.Get_count(MPI.DOUBLE))
    comm.Recv(buf, source=0, tag=3)
    print("got", buf.tolist())
    print("probe obj", comm.probe(source=0, tag=4))
    print("obj", comm.recv(source=0, tag=4))
    comm.Probe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
    print("probe any", st.Get_source(), st.Get_tag(), st.Get_count(MPI.INT))
    comm.Recv(np.empty(3, "i"), source=0, tag=5)
    comm.Probe(source=0, tag=6, status=st)
    print(
        "probe big",
        st.Get_count(MPI.INT),
        st.Get_count(MPI.DOUBLE),
        st.Get_count(MPI.LONG) == MPI.UNDEFINED or st.Get_count(MPI.LONG),
    )
    big = np.empty(st.Get_count(MPI.INT), dtype="i")
    comm.Recv(big, source=0, tag=6)
    print("big sum", int(big.sum()))
    while not comm.Iprobe(source=0, tag=7):
        pass
    print("iprobe", comm.iprobe(source=0, tag=7), comm.iprobe(source=0, tag=99))
    print(comm.recv(source=0, tag=7))
