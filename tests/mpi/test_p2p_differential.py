"""Point-to-point families (send modes, Bsend, matched probe, cancel, persistent and
generalized requests, the Wait/Test families, Status) print the same under real Open MPI
+ mpi4py as under pyopenib, over the loopback test BTL and over the openib BTL."""

from pathlib import Path

from .loopback_btl import make_loopback_btls
from .test_mpi_differential import _openib_btls, _our_output, _real_output

PROGRAM = Path(__file__).parent / "programs" / "p2p_modes.py"


def test_p2p_modes_print_what_real_open_mpi_prints():
    assert _our_output(PROGRAM, 2, make_loopback_btls) == _real_output(PROGRAM, 2)


def test_p2p_modes_over_openib_print_what_they_print_over_loopback():
    assert _our_output(PROGRAM, 2, _openib_btls()) == _our_output(PROGRAM, 2, make_loopback_btls)
