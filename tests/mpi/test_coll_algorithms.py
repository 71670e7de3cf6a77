"""The fabric sees Open MPI's coll/tuned traffic: which rank sends to which, per
collective, for the algorithm its fixed decision rules pick at that size (see
``pyopenib.mpi.collectives``); and a nonblocking collective moves on while its rank
waits in another call (Open MPI's libnbc progress)."""

import io
import textwrap

from pyopenib.mpi import run_job
from pyopenib.pml.header import MATCH, MATCH_HDR, RNDV

from .loopback_btl import make_loopback_btls

WORLD_COLL_CTX = 1
"""COMM_WORLD's collective context id (context id 0: 2 * 0 + 1)."""


def _collective_sends(tmp_path, source: str, nprocs: int) -> list[tuple[int, int]]:
    """(sender, receiver) of every matching message on COMM_WORLD's collective context."""
    sent: list[tuple[int, int]] = []

    def make_btls(sim, n):
        btls = make_loopback_btls(sim, n)
        for btl in btls:
            inner = btl.send

            def send(peer, tag, payload, on_complete=None, high_priority=False, b=btl, f=inner):
                view = memoryview(payload)
                if view[0] in (MATCH, RNDV) and MATCH_HDR.unpack_from(view)[1] == WORLD_COLL_CTX:
                    sent.append((b.rank, peer))
                return f(peer, tag, payload, on_complete, high_priority)

            btl.send = send
        return btls

    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(source))
    err = io.StringIO()
    result = run_job(str(prog), nprocs, make_btls, stdout=io.StringIO(), stderr=err)
    assert result.exit_code == 0, err.getvalue()
    return sent


def _peers(sends, rank: int) -> list[int]:
    return [dst for src, dst in sends if src == rank]


def test_barrier_on_a_power_of_two_is_recursive_doubling(tmp_path):
    sends = _collective_sends(tmp_path, "from mpi4py import MPI\nMPI.COMM_WORLD.Barrier()", 8)
    for r in range(8):
        assert _peers(sends, r) == [r ^ 1, r ^ 2, r ^ 4]


def test_barrier_on_three_folds_the_extra_rank_and_on_four_to_seven_is_linear(tmp_path):
    """Open MPI 4.1.4: under 4 processes and from 8 to 63 recursive doubling (the ranks
    above the power of two check in with rank - pof2 first); 4 to 7, linear."""
    sends = _collective_sends(tmp_path, "from mpi4py import MPI\nMPI.COMM_WORLD.Barrier()", 3)
    assert _peers(sends, 2) == [0]
    assert _peers(sends, 0) == [1, 2]
    assert _peers(sends, 1) == [0]
    sends = _collective_sends(tmp_path, "from mpi4py import MPI\nMPI.COMM_WORLD.Barrier()", 5)
    assert _peers(sends, 0) == [1, 2, 3, 4]
    for r in range(1, 5):
        assert _peers(sends, r) == [0]


def test_small_bcast_is_a_binomial_tree_and_large_bcast_on_two_ranks_a_pipeline(tmp_path):
    small = """
        import numpy as np
        from mpi4py import MPI
        MPI.COMM_WORLD.Bcast(np.zeros(8, "i"), root=0)
    """
    sends = _collective_sends(tmp_path, small, 8)
    assert sorted(sends) == sorted([(0, 4), (0, 2), (0, 1), (4, 6), (4, 5), (2, 3), (6, 7)])
    large = """
        import numpy as np
        from mpi4py import MPI
        MPI.COMM_WORLD.Bcast(np.zeros(300_000, "b"), root=1)
    """
    # 300000 bytes: size 2 < 1.6134e-6 * 300000 + 2.1102, so 128 KiB segments: 3 messages
    assert _collective_sends(tmp_path, large, 2) == [(1, 0)] * 3


def test_small_allreduce_folds_the_extra_ranks_then_doubles(tmp_path):
    prog = """
        import numpy as np
        from mpi4py import MPI
        MPI.COMM_WORLD.Allreduce(np.ones(4), np.zeros(4))
    """
    sends = _collective_sends(tmp_path, prog, 6)
    # 6 = 4 + 2: ranks 0 and 2 fold onto 1 and 3, which double with 4 and 5 and return
    assert _peers(sends, 0) == [1]
    assert _peers(sends, 1) == [3, 4, 0]
    assert _peers(sends, 4) == [5, 1]


def test_large_commutative_allreduce_is_a_ring(tmp_path):
    prog = """
        import numpy as np
        from mpi4py import MPI
        MPI.COMM_WORLD.Allreduce(np.ones(4000), np.zeros(4000))
    """
    sends = _collective_sends(tmp_path, prog, 4)
    for r in range(4):  # reduce-scatter then allgather: 2 * (n - 1) steps to the right
        assert _peers(sends, r) == [(r + 1) % 4] * 6


def test_small_noncommutative_reduce_is_linear_at_the_root(tmp_path):
    prog = """
        import numpy as np
        from mpi4py import MPI
        op = MPI.Op.Create(lambda a, b, t: None, commute=False)
        MPI.COMM_WORLD.Reduce(np.ones(2), np.zeros(2), op, root=2)
    """
    sends = _collective_sends(tmp_path, prog, 5)
    assert sorted(sends) == [(0, 2), (1, 2), (3, 2), (4, 2)]


def test_alltoall_follows_open_mpi_4_1_4s_table(tmp_path):
    """Blocks under 8 KiB on 3 to 7 processes: linear (every send at once); on two
    processes: one pairwise exchange."""
    prog = """
        import numpy as np
        from mpi4py import MPI
        n = MPI.COMM_WORLD.size
        MPI.COMM_WORLD.Alltoall(np.zeros(n * 1000), np.zeros(n * 1000))
    """
    sends = _collective_sends(tmp_path, prog, 4)
    for r in range(4):
        assert _peers(sends, r) == [(r - 1) % 4, (r - 2) % 4, (r - 3) % 4]
    assert sorted(_collective_sends(tmp_path, prog, 2)) == [(0, 1), (1, 0)]


def test_a_nonblocking_collective_progresses_while_its_rank_blocks_in_recv(tmp_path):
    """Rank 2 forwards the binomial Ibcast to rank 3 while blocked in a Recv that only
    rank 3 can satisfy after its Ibcast completed: without progress hooks, a deadlock."""
    prog = tmp_path / "prog.py"
    prog.write_text(
        textwrap.dedent(
            """
            import numpy as np
            from mpi4py import MPI
            comm = MPI.COMM_WORLD
            buf = np.arange(3, dtype="i") if comm.rank == 0 else np.zeros(3, "i")
            req = comm.Ibcast(buf, root=0)
            if comm.rank == 2:
                got = np.zeros(1, "i")
                comm.Recv(got, source=3)
                print("rank 2 got", int(got[0]))
            if comm.rank == 3:
                req.Wait()
                comm.Send(np.array([buf.sum()], "i"), dest=2)
            req.Wait()
            """
        )
    )
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(prog), 4, make_loopback_btls, stdout=out, stderr=err)
    assert result.exit_code == 0, err.getvalue()
    assert out.getvalue() == "rank 2 got 3\n"
