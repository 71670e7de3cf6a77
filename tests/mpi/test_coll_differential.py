"""Collectives, groups, communicators, topologies and intercommunicators print the same,
rank by rank, under pyopenib as under real Open MPI + mpi4py (skipped without mpirun)."""

import pytest

from .loopback_btl import make_loopback_btls
from .test_mpi_differential import PROGRAMS, _openib_btls, _our_output, _real_output

CASES = [
    ("coll_all.py", 3),  # not a power of two: Bruck barrier, folded recursive doubling
    ("coll_all.py", 4),  # a power of two: recursive doubling everywhere
    ("coll_comms.py", 2),
    ("coll_comms.py", 5),
    ("coll_op_table.py", 2),  # every predefined op on every predefined type: Open MPI's table
]


@pytest.mark.parametrize("program,nprocs", CASES, ids=[f"{p}-n{n}" for p, n in CASES])
def test_collective_program_prints_the_same_as_under_real_mpirun(program, nprocs):
    path = PROGRAMS / program
    ours = _our_output(path, nprocs, make_loopback_btls)
    assert ours == _real_output(path, nprocs)
    assert len(ours[0]) > 20  # the program ran to its end


def test_collectives_over_openib_print_the_same_as_over_loopback():
    """The openib BTL's QPs reorder sizes differently from the loopback: results hold."""
    path = PROGRAMS / "coll_all.py"
    assert _our_output(path, 4, _openib_btls()) == _our_output(path, 4, make_loopback_btls)
