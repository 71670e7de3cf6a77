"""Received bytes of rendezvous messages against real Open MPI + mpi4py, with
mpi_leave_pinned 0 and 1: sizes around the eager limit, 64 KiB, 256 KiB, 1 MiB, both
sides of min_rdma_pipeline_size and 4 MiB, contiguous, a vector datatype and a receive
buffer larger than the message (programs/rendezvous_sizes.py). Real Open MPI runs over
its own transport (vader), so this compares what arrived, not the traffic; the
protocol each size takes is pinned in tests/pml/test_rendezvous_protocols.py."""

import io
from pathlib import Path

import pytest

from pyopenib.apps.run_command import openib_btls
from pyopenib.mpi import run_job

from .test_mpi_differential import _split_tagged, real_mpirun

PROGRAM = Path(__file__).parent / "programs" / "rendezvous_sizes.py"
SIZES = "12000,12289,65536,262144,1048576,1060865,4194304"
T3_QUEUES = "P,128,256,192,128:P,65536,256,192,128"


@pytest.mark.parametrize("leave_pinned", ["0", "1"])
def test_received_bytes_match_real_open_mpi(monkeypatch, leave_pinned):
    monkeypatch.setenv("OMPI_MCA_mpi_leave_pinned", leave_pinned)
    proc = real_mpirun(2, [str(PROGRAM), SIZES])
    assert proc.returncode == 0, proc.stderr
    theirs = _split_tagged(
        "\n".join(line for line in proc.stdout.splitlines() if "]<stdout>:" in line), 2
    )
    mca = [("mpi_leave_pinned", leave_pinned), ("btl_openib_receive_queues", T3_QUEUES)]
    out, err = io.StringIO(), io.StringIO()
    make_btls = openib_btls("chelsio-t3", mca, 1)
    result = run_job(str(PROGRAM), 2, make_btls, [SIZES], tag_output=True, stdout=out, stderr=err)
    assert result.exit_code == 0, err.getvalue()
    ours = _split_tagged(out.getvalue(), 2)
    assert ours == theirs
    assert len(ours[0]) == len(ours[1]) == 7 * 5
