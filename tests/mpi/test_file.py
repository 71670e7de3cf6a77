"""MPI-IO (``MPI.File``): every access family reads back what real Open MPI + mpi4py reads
back, the bytes land in the real file system, and I/O costs simulated time."""

import io
import textwrap

import pytest

from pyopenib.mpi import run_job
from pyopenib.mpi.file import IO_LATENCY_PS, IO_PS_PER_BYTE

from .loopback_btl import make_loopback_btls
from .test_mpi_differential import PROGRAMS, _our_output, _real_output


def _run(tmp_path, source: str, nprocs: int, argv=()):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(source))
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(prog), nprocs, make_loopback_btls, argv, stdout=out, stderr=err)
    return result, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("nprocs", [2, 3])
def test_every_io_family_reads_back_what_real_open_mpi_reads_back(nprocs):
    path = PROGRAMS / "io_modes.py"
    ours = _our_output(path, nprocs, make_loopback_btls)
    assert ours == _real_output(path, nprocs)
    assert len(ours[0]) >= 30


def test_written_bytes_are_in_the_real_file_in_view_order(tmp_path):
    target = tmp_path / "out.bin"
    result, out, err = _run(
        tmp_path,
        """
        import sys
        import numpy as np
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        fh = MPI.File.Open(comm, sys.argv[1], MPI.MODE_WRONLY | MPI.MODE_CREATE)
        # each rank owns every other 2-byte block
        ftype = MPI.BYTE.Create_vector(3, 2, 2 * comm.size).Commit()
        fh.Set_view(2 * comm.rank, MPI.BYTE, ftype)
        fh.Write_all(np.full(6, 65 + comm.rank, "u1"))
        fh.Close()
        ftype.Free()
        """,
        2,
        argv=[str(target)],
    )
    assert result.exit_code == 0, err
    assert target.read_bytes() == b"AABBAABBAABB"


def test_io_charges_its_rank_simulated_time(tmp_path):
    result, out, err = _run(
        tmp_path,
        """
        import sys
        import numpy as np
        from mpi4py import MPI
        fh = MPI.File.Open(MPI.COMM_SELF, sys.argv[1], MPI.MODE_RDWR | MPI.MODE_CREATE)
        t0 = MPI.Wtime()
        fh.Write_at(0, np.zeros(1 << 20, "u1"))
        t1 = MPI.Wtime()
        fh.Close()
        print(round((t1 - t0) * 1e12))
        """,
        1,
        argv=[str(tmp_path / "t.bin")],
    )
    assert result.exit_code == 0, err
    assert int(out) == IO_LATENCY_PS + (1 << 20) * IO_PS_PER_BYTE


def test_file_null_and_handles_behave_as_mpi4py(tmp_path):
    result, out, err = _run(
        tmp_path,
        """
        import pickle, sys
        from mpi4py import MPI
        print(MPI.File() == MPI.FILE_NULL, bool(MPI.FILE_NULL))
        print(MPI.FILE_NULL.Get_errhandler() == MPI.ERRORS_RETURN)
        fh = MPI.File.Open(MPI.COMM_WORLD, sys.argv[1], MPI.MODE_RDWR | MPI.MODE_CREATE
                           | MPI.MODE_DELETE_ON_CLOSE)
        print(fh.Get_errhandler() == MPI.ERRORS_RETURN, fh.Get_type_extent(MPI.DOUBLE))
        print(fh.atomicity, fh.group_size, fh.group_rank)
        fh.atomicity = True
        print(fh.Get_atomicity(), MPI.Group.Compare(fh.group, MPI.COMM_WORLD.Get_group()))
        try:
            pickle.dumps(fh)
        except ValueError:
            print("no pickle")
        try:
            fh.Set_view(0, MPI.INT, MPI.INT, "external32")
        except MPI.Exception as exc:
            print(exc.Get_error_class() == MPI.ERR_UNSUPPORTED_DATAREP)
        try:
            fh.Read_all_end(bytearray(4))
        except MPI.Exception as exc:
            print("end without begin", exc.Get_error_class() == MPI.ERR_OTHER)
        fh.Close()
        print(fh == MPI.FILE_NULL)
        """,
        1,
        argv=[str(tmp_path / "h.bin")],
    )
    assert result.exit_code == 0, err
    assert out.splitlines() == [
        "True False",
        "True",
        "True 8",
        "False 1 0",
        f"True {0}",
        "no pickle",
        "True",
        "end without begin True",
        "True",
    ]
    assert not (tmp_path / "h.bin").exists()
