"""Dynamic processes: ports, names and Accept/Connect between ranks of the job behave as
under real Open MPI + mpi4py; Spawn and Join raise NotImplementedError when called."""

import io
import textwrap

import pytest

from pyopenib.mpi import run_job

from .loopback_btl import make_loopback_btls
from .test_mpi_differential import PROGRAMS, _our_output, _real_output


@pytest.mark.parametrize("nprocs", [2, 4])
def test_accept_connect_and_name_service_behave_as_real_open_mpi(nprocs):
    path = PROGRAMS / "dynproc_ports.py"
    assert _our_output(path, nprocs, make_loopback_btls) == _real_output(path, nprocs)


def test_spawn_and_join_raise_not_implemented_at_the_call(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        textwrap.dedent(
            """
            import sys
            from mpi4py import MPI
            print(MPI.Comm.Get_parent() == MPI.COMM_NULL)
            for call in (lambda: MPI.COMM_SELF.Spawn(sys.executable, ["-c", "pass"], 1),
                         lambda: MPI.COMM_WORLD.Spawn_multiple([sys.executable], None, [1]),
                         lambda: MPI.Comm.Join(0)):
                try:
                    call()
                except NotImplementedError as exc:
                    print(str(exc).split(":")[0])
            print(MPI.COMM_WORLD.Get_attr(MPI.UNIVERSE_SIZE))
            """
        )
    )
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(prog), 1, make_loopback_btls, stdout=out, stderr=err)
    assert result.exit_code == 0, err.getvalue()
    assert out.getvalue().splitlines() == [
        "True",
        "mpi4py.MPI.Intracomm.Spawn",
        "mpi4py.MPI.Intracomm.Spawn_multiple",
        "mpi4py.MPI.Comm.Join",
        "1",
    ]


def test_connect_to_an_unknown_port_and_bad_unpublish_fail_as_open_mpi(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        textwrap.dedent(
            """
            from mpi4py import MPI
            for call in (lambda: MPI.COMM_SELF.Connect("no-such-port"),
                         lambda: MPI.Unpublish_name("nothing", "no-port"),
                         lambda: MPI.Close_port("no-port")):
                try:
                    call()
                except MPI.Exception as exc:
                    print(exc.Get_error_class())
            """
        )
    )
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(prog), 1, make_loopback_btls, stdout=out, stderr=err)
    assert result.exit_code == 0, err.getvalue()
    assert out.getvalue().split() == ["43", "48", "43"]
