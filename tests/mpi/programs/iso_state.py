"""Each rank sets a helper module's global and checks it after every other rank has set
theirs: with shared modules the last writer wins; with privatization each keeps its own."""

import sys

import iso_helper
from mpi4py import MPI

comm = MPI.COMM_WORLD
iso_helper.claim(comm.rank)
comm.Barrier()
import iso_helper as again  # noqa: E402 - a second import finds the rank's copy

comm.Barrier()
print(
    comm.rank,
    iso_helper.OWNER,
    iso_helper.COUNT,
    again is iso_helper,
    sys.modules["iso_helper"] is iso_helper,
    sys.modules["__main__"].__file__ == __file__,
)
