"""Groups, topologies and Split_type: corner cases and error classes as real Open MPI
4.1 + mpi4py have them, and shared-memory splits by the simulated node (``--ppn``)."""

import io
import textwrap

import pytest

from pyopenib.mpi import run_job

from .loopback_btl import make_loopback_btls
from .test_mpi_differential import PROGRAMS, _our_output, _real_output


@pytest.mark.parametrize("nprocs", [1, 3])
def test_group_and_topology_corner_cases_match_real_open_mpi(nprocs):
    path = PROGRAMS / "group_topo.py"
    ours = _our_output(path, nprocs, make_loopback_btls)
    assert ours == _real_output(path, nprocs)
    assert len(ours[0]) > 20


def test_split_type_shared_groups_the_ranks_of_each_simulated_node(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        textwrap.dedent(
            """
            from mpi4py import MPI
            w = MPI.COMM_WORLD
            node = w.Split_type(MPI.COMM_TYPE_SHARED, key=-w.rank)
            core = w.Split_type(MPI.OMPI_COMM_TYPE_CORE)
            job = w.Split_type(MPI.OMPI_COMM_TYPE_CLUSTER)
            try:
                w.Split_type(MPI.COMM_TYPE_HW_GUIDED)
            except MPI.Exception as exc:
                guided = exc.Get_error_class() == MPI.ERR_ARG
            members = node.Get_group().Translate_ranks(None, w.Get_group())
            print(w.rank, members, node.rank, core.size, job.size, guided)
            """
        )
    )
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(prog), 6, make_loopback_btls, ppn=3, stdout=out, stderr=err)
    assert result.exit_code == 0, err.getvalue()
    lines = sorted(out.getvalue().splitlines())
    assert lines == [
        "0 [2, 1, 0] 2 1 6 True",
        "1 [2, 1, 0] 1 1 6 True",
        "2 [2, 1, 0] 0 1 6 True",
        "3 [5, 4, 3] 2 1 6 True",
        "4 [5, 4, 3] 1 1 6 True",
        "5 [5, 4, 3] 0 1 6 True",
    ]
