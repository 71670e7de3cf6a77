"""unittest.main() in a rank: runs this file's tests; FAIL=1 in argv makes one fail."""

import sys
import unittest

from mpi4py import MPI

FAIL = "FAIL=1" in sys.argv


class TestRank(unittest.TestCase):
    def test_rank_in_range(self):
        comm = MPI.COMM_WORLD
        self.assertTrue(0 <= comm.rank < comm.size)

    def test_allreduce(self):
        comm = MPI.COMM_WORLD
        self.assertEqual(comm.allreduce(1), comm.size)

    def test_maybe_fails(self):
        self.assertFalse(FAIL and MPI.COMM_WORLD.rank == 1, "rank 1 was told to fail")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]])
