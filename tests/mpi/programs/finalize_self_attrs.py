"""Finalize deletes COMM_SELF's attributes first: their delete_fn runs while MPI works."""

from mpi4py import MPI


def cleanup(comm, keyval, value):
    print("cleanup", value, comm == MPI.COMM_SELF, MPI.Is_finalized())


key = MPI.Comm.Create_keyval(delete_fn=cleanup)
MPI.COMM_SELF.Set_attr(key, "library state")
MPI.Finalize()
print("finalized", MPI.Is_finalized())
MPI.Finalize()
print("twice", MPI.Is_finalized())
