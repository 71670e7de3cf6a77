"""Ranks are processes: each rank's own ``__main__`` (unittest.main, pickle), its own copies
of the program's modules (its threads and thread level: test_threads.py)."""

import io
import sys
import textwrap
from pathlib import Path

import greenlet
import pytest

from pyopenib.mpi import run_job
from pyopenib.mpi.isolation import is_private

from .loopback_btl import make_loopback_btls
from .test_mpi_differential import _our_output, _real_output

PROGRAMS = Path(__file__).parent / "programs"


def _run_file(path, nprocs=2, argv=(), **kw):
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(path), nprocs, make_loopback_btls, argv, stdout=out, stderr=err, **kw)
    return result, out.getvalue(), err.getvalue()


def _write(tmp_path, files: dict[str, str]) -> Path:
    for name, source in files.items():
        (tmp_path / name).write_text(textwrap.dedent(source))
    return tmp_path / "prog.py"


def test_each_rank_imports_its_own_copy_of_the_programs_helper_module():
    result, out, _ = _run_file(PROGRAMS / "iso_state.py", nprocs=3)
    assert result.exit_code == 0
    assert sorted(out.splitlines()) == [f"{r} {r} 1 True True True" for r in range(3)]


@pytest.mark.parametrize("program", ["iso_state.py", "iso_pickle.py"])
def test_isolation_programs_print_what_real_open_mpi_prints(program):
    path = PROGRAMS / program
    assert _our_output(path, 2, make_loopback_btls) == _real_output(path, 2)


def test_shared_modules_are_one_object_and_private_ones_one_per_rank(tmp_path):
    prog = _write(
        tmp_path,
        {
            "helper_a.py": "VALUE = []\n",
            "prog.py": """
                import fractions, sys
                import helper_a
                import numpy
                from mpi4py import MPI
                comm = MPI.COMM_WORLD
                mine = (id(fractions), id(numpy), id(helper_a), id(sys.modules["__main__"]))
                theirs = comm.sendrecv(mine, dest=1 - comm.rank, source=1 - comm.rank)
                print(*[a == b for a, b in zip(mine, theirs)])
            """,
        },
    )
    result, out, _ = _run_file(prog)
    assert result.exit_code == 0
    assert out.splitlines() == ["True True False False"] * 2


def test_a_private_module_that_blocks_in_mpi_while_importing_is_still_one_per_rank(tmp_path):
    prog = _write(
        tmp_path,
        {
            "slow_helper.py": """
                from mpi4py import MPI
                ROOT_SAYS = MPI.COMM_WORLD.bcast("hello" if MPI.COMM_WORLD.rank == 0 else None)
                OWNER = MPI.COMM_WORLD.rank
            """,
            "prog.py": """
                import slow_helper
                from mpi4py import MPI
                MPI.COMM_WORLD.Barrier()
                import slow_helper as again
                print(slow_helper.OWNER == MPI.COMM_WORLD.rank, again is slow_helper,
                      slow_helper.ROOT_SAYS)
            """,
        },
    )
    result, out, _ = _run_file(prog, nprocs=3)
    assert result.exit_code == 0
    assert out.splitlines() == ["True True hello"] * 3


def test_unittest_main_runs_the_programs_tests_on_every_rank():
    result, _, err = _run_file(PROGRAMS / "iso_unittest.py", tag_output=True)
    assert result.exit_code == 0
    for rank in range(2):
        assert f"[1,{rank}]<stderr>:Ran 3 tests in" in err
        assert f"[1,{rank}]<stderr>:OK" in err


def test_a_failing_unittest_makes_its_rank_and_the_job_exit_one():
    result, _, err = _run_file(PROGRAMS / "iso_unittest.py", argv=["FAIL=1"], tag_output=True)
    assert (result.exit_code, result.reason, result.rank) == (1, "failed", 1)
    assert "[1,1]<stderr>:FAILED (failures=1)" in err
    assert "Exit code:    1" in err


def test_a_class_defined_in_the_program_pickles_between_ranks():
    result, out, _ = _run_file(PROGRAMS / "iso_pickle.py")
    assert result.exit_code == 0
    assert out.splitlines() == ["True 7", "Point True Point(x=-4, y=3)"]


def test_the_job_leaves_no_private_module_and_restores_main_and_the_greenlet_trace(tmp_path):
    prog = _write(
        tmp_path, {"leftover_helper.py": "X = 1\n", "prog.py": "import leftover_helper\n"}
    )
    before = (sys.modules["__main__"], list(sys.meta_path), greenlet.gettrace())
    result, _, _ = _run_file(prog)
    assert result.exit_code == 0
    assert "leftover_helper" not in sys.modules
    assert (sys.modules["__main__"], list(sys.meta_path), greenlet.gettrace()) == before


def test_only_modules_outside_stdlib_site_packages_and_pyopenib_are_private(tmp_path):
    import importlib.util

    (tmp_path / "mine.py").write_text("")
    mine = importlib.util.spec_from_file_location("mine", tmp_path / "mine.py")
    assert is_private(mine)
    for shared in ("json", "numpy", "pyopenib.mpi.comm", "sys", "_socket"):
        assert not is_private(importlib.util.find_spec(shared)), shared


def test_a_rank_that_fails_at_once_still_lets_the_others_run_at_that_instant(tmp_path):
    prog = _write(
        tmp_path,
        {
            "prog.py": """
                import sys
                from mpi4py import MPI
                print("rank", MPI.COMM_WORLD.rank, "ran")
                if MPI.COMM_WORLD.rank == 0:
                    sys.exit(2)
            """
        },
    )
    result, out, err = _run_file(prog, nprocs=3)
    assert (result.exit_code, result.reason, result.rank) == (2, "failed", 0)
    assert sorted(out.splitlines()) == [f"rank {r} ran" for r in range(3)]
    assert err.count("Process name: [[1,1],0]") == 1
