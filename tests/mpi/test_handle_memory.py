"""An object's handle lives in the memory ``MPI._addressof`` returns, as mpi4py's objects
are their ``MPI_Xxx`` field: C code (ctypes here) that writes a handle there changes the
object, and a change made from Python (``Free``) shows in that memory."""

import io
import textwrap

from pyopenib.mpi import run_job

from .loopback_btl import make_loopback_btls


def test_a_handle_written_into_an_objects_memory_makes_it_that_handles_object(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        textwrap.dedent(
            """
            import ctypes
            from mpi4py import MPI

            def cell(obj):
                return ctypes.c_uint64.from_address(MPI._addressof(obj))

            dup = MPI.COMM_WORLD.Dup()
            comm = MPI.Comm()
            cell(comm).value = cell(dup).value
            print(comm == dup, comm.Get_size(), comm.allreduce(comm.Get_rank()))
            dtype = MPI.Datatype()
            cell(dtype).value = MPI._handleof(MPI.DOUBLE)
            print(dtype == MPI.DOUBLE, dtype.Get_size())
            op = MPI.Op()
            cell(op).value = cell(MPI.MAX).value
            print(comm.allreduce(comm.Get_rank(), op=op))
            info = MPI.Info.Create()
            other = MPI.Info()
            cell(other).value = cell(info).value
            other.Set("key", "value")
            print(info.Get("key"))
            memory = cell(dup)
            dup.Free()
            print(memory.value == MPI._handleof(MPI.COMM_NULL), comm == dup)
            info.Free()
            """
        )
    )
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(prog), 2, make_loopback_btls, stdout=out, stderr=err)
    assert result.exit_code == 0, err.getvalue()
    expected = ["True 2 1", "True 8", "1", "value", "True False"] * 2
    assert sorted(out.getvalue().splitlines()) == sorted(expected)
