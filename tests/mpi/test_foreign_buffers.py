"""DLPack and CUDA-array-interface objects as buffers, against real Open MPI + mpi4py.

mpi4py takes any object with ``__dlpack__`` or ``__cuda_array_interface__`` where it takes
a buffer (``pack.foreign``); GPU libraries' arrays reach MPI this way. The program sends,
reduces, takes addresses and wraps such objects, and triggers mpi4py's errors for
read-only, non-contiguous and not-CPU-accessible memory: pyopenib prints what real prints.
"""

from pathlib import Path

from .loopback_btl import make_loopback_btls
from .test_mpi_differential import _our_output, _real_output

PROGRAM = Path(__file__).parent / "programs" / "foreign_buffers.py"


def test_dlpack_and_cuda_array_interface_buffers_behave_as_under_real_mpirun():
    assert _our_output(PROGRAM, 2, make_loopback_btls) == _real_output(PROGRAM, 2)
