"""The ``mpi4py`` package a job installs: what ``import mpi4py`` gives (mpi4py 4.1.2's
``__init__``), ``mpi4py.rc`` as module and callable, and the submodule registry."""

import io
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pyopenib.apps.run_command import openib_btls
from pyopenib.mpi import run_job
from pyopenib.mpi.package import SUBMODULES

from .loopback_btl import make_loopback_btls
from .test_mpi_differential import _our_output, _real_output, _split_tagged, real_mpirun

MPI4PY_TESTS = Path("/tmp/mpi4py-sdist/mpi4py-4.1.2/test")
PROGRAMS = Path(__file__).parent / "programs"


def _run(tmp_path, source, nprocs=1, path=None):
    prog = path or tmp_path / "prog.py"
    if path is None:
        prog.write_text(textwrap.dedent(source))
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(prog), nprocs, make_loopback_btls, stdout=out, stderr=err)
    return result, out.getvalue(), err.getvalue()


def test_the_package_has_mpi4pys_version_file_path_include_and_config(tmp_path):
    result, out, err = _run(
        tmp_path,
        """
        import os, mpi4py
        inc = mpi4py.get_include()
        print(mpi4py.__version__, os.path.isfile(mpi4py.__file__), mpi4py.__path__ == [
              os.path.dirname(mpi4py.__file__)], mpi4py.__spec__.name, mpi4py.__all__)
        print(os.path.isfile(os.path.join(inc, "mpi4py", "mpi4py.h")), mpi4py.get_config())
        """,
    )
    assert result.exit_code == 0, err
    assert out.splitlines() == ["4.1.2 True True mpi4py ['MPI']", "True {}"]


def test_the_include_header_stops_a_c_build_saying_there_is_no_c_api(tmp_path):
    from pyopenib.mpi.package import get_include

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "ext.c"
    src.write_text("#include <mpi4py/mpi4py.h>\n")
    proc = subprocess.run(
        [cc, "-fsyntax-only", "-I", get_include(), str(src)], capture_output=True, text=True
    )
    assert proc.returncode != 0 and "no C API" in proc.stderr


def test_rc_is_a_module_a_callable_and_a_type_with_mpi4pys_options_and_errors(tmp_path):
    result, out, err = _run(
        tmp_path,
        """
        import mpi4py, mpi4py.rc, sys
        rc = mpi4py.rc
        print(sys.modules["mpi4py.rc"] is rc, repr(rc))
        print(rc.initialize, rc.threads, rc.thread_level, rc.finalize, rc.fast_reduce,
              rc.recv_mprobe, rc.irecv_bufsz, rc.errors)
        rc(thread_level="serialized", irecv_bufsz=1024)
        fresh = type(rc)(errors="abort")
        print(rc.thread_level, rc.irecv_bufsz, fresh.errors, fresh.thread_level)
        for bad in (lambda: rc(ABCXYZ=1), lambda: setattr(rc, "ABCXYZ", 1)):
            try:
                bad()
            except TypeError as exc:
                print("TypeError", exc)
        print(hasattr(rc, "ABCXYZ"))
        """,
    )
    assert result.exit_code == 0, err
    assert out.splitlines() == [
        "True <mpi4py.rc>",
        "True True multiple None True True 32768 exception",
        "serialized 1024 abort multiple",
        "TypeError unexpected argument 'ABCXYZ'",
        "TypeError object has no attribute 'ABCXYZ'",
        "False",
    ]


def test_profile_finds_the_library_as_mpi4py_does_and_warns_it_is_not_loaded(tmp_path):
    (tmp_path / "libprof.so").write_bytes(b"")
    result, out, err = _run(
        tmp_path,
        f"""
        import warnings, mpi4py
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mpi4py.profile("prof", path=[{str(tmp_path)!r}])
        print(caught[0].category.__name__, "not loaded" in str(caught[0].message))
        try:
            mpi4py.profile("@querty", path="/usr/lib")
        except ValueError as exc:
            print(exc)
        """,
    )
    assert result.exit_code == 0, err
    assert out.splitlines() == ["UserWarning True", "profiler '@querty' not found"]


def test_util_is_a_package_and_unprovided_submodules_are_module_not_found(tmp_path):
    result, out, err = _run(
        tmp_path,
        """
        import importlib, mpi4py.util
        print(mpi4py.util.__name__, mpi4py.util.__path__)
        for name in ("mpi4py.futures.nothing", "mpi4py.nothing", "mpi4py.util.nothing"):
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as exc:
                print(exc.name, "pyopenib" in str(exc))
        """,
    )
    assert result.exit_code == 0, err
    assert out.splitlines() == [
        "mpi4py.util []",
        "mpi4py.futures.nothing True",
        "mpi4py.nothing True",
        "mpi4py.util.nothing True",
    ]


def test_registered_submodules_that_exist_import_under_their_mpi4py_names(tmp_path):
    import importlib.util

    present = [name for name, mod in SUBMODULES.items() if importlib.util.find_spec(mod)]
    if not present:
        pytest.skip("no registered submodule is implemented yet")
    result, out, err = _run(
        tmp_path,
        f"""
        import importlib, sys
        for name in {present!r}:
            module = importlib.import_module(name)
            parent, _, child = name.rpartition(".")
            print(sys.modules[name] is module, getattr(sys.modules[parent], child) is module,
                  module.__spec__.name.startswith("pyopenib."))
        """,
    )
    assert result.exit_code == 0, err
    assert out.splitlines() == ["True True True"] * len(present)


def test_a_real_mpi4py_the_host_imported_comes_back_after_the_job(tmp_path):
    pytest.importorskip("mpi4py")
    import mpi4py

    _run(tmp_path, "import mpi4py.util\nfrom mpi4py import MPI\n")
    assert sys.modules["mpi4py"] is mpi4py
    assert "mpi4py.util" not in sys.modules or sys.modules["mpi4py.util"].__file__


@pytest.mark.skipif(not MPI4PY_TESTS.is_dir(), reason="mpi4py 4.1.2's sdist is not unpacked")
def test_mpi4pys_own_toplevel_tests_pass_unmodified(tmp_path):
    result, _, err = _run(tmp_path, None, path=MPI4PY_TESTS / "test_toplevel.py")
    assert result.exit_code == 0, err
    assert "Ran 7 tests" in err and "\nOK" in err


def test_util_sync_sequential_counter_mutex_condition_print_what_real_open_mpi_prints():
    program = PROGRAMS / "util_sync_basic.py"
    assert _our_output(program, 3, make_loopback_btls) == _real_output(program, 3)


@pytest.mark.skipif(not MPI4PY_TESTS.is_dir(), reason="mpi4py 4.1.2's sdist is not unpacked")
def test_mpi4pys_util_pool_tests_pass_unmodified_on_one_rank():
    # at -n 1 each Pool spawns its workers, as under real mpirun
    out, err = io.StringIO(), io.StringIO()
    result = run_job(
        str(MPI4PY_TESTS / "test_util_pool.py"),
        1,
        openib_btls("mellanox-hermon", (), 1),
        stdout=out,
        stderr=err,
        add_btls=lambda btls, count: btls.add_processes(count),
    )
    err = err.getvalue()
    # test_apply_async_timeout times a task that calls time.sleep on a worker: the sleep
    # is simulated time (simtime), so the simulated timeout passes first, as on real MPI.
    assert result.exit_code == 0, err
    assert "Ran 40 tests" in err and err.rstrip().endswith("OK")


# -- python -m mpi4py, mpi4py.run, mpi4py.bench -------------------------------------------
_INNER_TAG = re.compile(r"(?<=.)\[\d+,\d+\]<stdout>:")
"""mpirun tags every chunk a rank writes; a line written in pieces (print's separate
writes reaching orted apart) comes back with a tag inside it: keep the first only."""


def _real_command(nprocs: int, args: list[str]):
    """``mpirun -n N python ARGS`` on real Open MPI + mpi4py: (exit status, per-rank
    stdout lines, stderr)."""
    proc = real_mpirun(nprocs, args)
    return proc.returncode, _split_tagged(_INNER_TAG.sub("", proc.stdout), nprocs), proc.stderr


def _our_command(nprocs: int, args: list[str]):
    """``pyopenib run -n N python ARGS``, in process: (exit status, per-rank stdout, stderr)."""
    from pyopenib.mpi.package import program_command

    path, argv = program_command("python", args)
    out, err = io.StringIO(), io.StringIO()
    result = run_job(
        path, nprocs, make_loopback_btls, argv, tag_output=True, stdout=out, stderr=err
    )
    return result.exit_code, _split_tagged(out.getvalue(), nprocs), err.getvalue()


_ARGV_PROGRAM = """\
import sys
from mpi4py import MPI
comm = MPI.COMM_WORLD
print(comm.rank, sys.argv[1:], __name__, sys.path[0] == {dir!r})
comm.Barrier()
if "fail" in sys.argv and comm.rank == 1:
    raise RuntimeError("rank 1 fails")
comm.Barrier()
"""


@pytest.mark.parametrize(
    "form",
    [
        ["prog.py", "a", "-b"],
        ["-c", "from mpi4py import MPI; import sys; print(MPI.COMM_WORLD.rank, sys.argv)", "z"],
        ["--version"],
        ["-m", "mpi4py.bench", "ringtest", "-q"],
    ],
    ids=["file", "command", "version", "module"],
)
def test_python_m_mpi4py_prints_what_real_mpirun_prints(tmp_path, form):
    (tmp_path / "prog.py").write_text(_ARGV_PROGRAM.format(dir=str(tmp_path)))
    args = ["-m", "mpi4py", *[str(tmp_path / a) if a == "prog.py" else a for a in form]]
    ours = _our_command(2, args)
    real = _real_command(2, args)
    assert ours[:2] == real[:2], ours[2]


def test_python_m_mpi4py_aborts_the_job_with_the_tracebacks_status_as_real_mpirun(tmp_path):
    (tmp_path / "prog.py").write_text(_ARGV_PROGRAM.format(dir=str(tmp_path)))
    args = ["-m", "mpi4py", str(tmp_path / "prog.py"), "fail"]
    ours, real = _our_command(2, args), _real_command(2, args)
    assert ours[0] == real[0] == 1  # MPI_Abort's errorcode is mpirun's exit status
    assert "RuntimeError: rank 1 fails" in ours[2] and "RuntimeError: rank 1 fails" in real[2]
    # (real mpirun's own abort report is garbled under --tag-output: ORTE_ERROR_LOG)
    assert "MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD" in ours[2]


def test_mpi4py_bench_helloworld_prints_what_real_mpirun_prints_but_the_host_names():
    ours = _our_command(3, ["-m", "mpi4py.bench", "helloworld"])
    real = _real_command(3, ["-m", "mpi4py.bench", "helloworld"])
    assert ours[0] == real[0] == 0

    def strip_host(out):
        return {r: [line.rpartition(" on ")[0] for line in lines] for r, lines in out.items()}

    assert strip_host(ours[1]) == strip_host(real[1])
    assert ours[1][2] == ["Hello, World! I am process 2 of 3 on node002."]


def test_pyopenib_run_takes_an_interpreter_and_names_what_it_cannot_run():
    from pyopenib.errors import PyopenibError
    from pyopenib.mpi.package import PACKAGE_DIR, program_command

    assert program_command("python3", ["-m", "mpi4py.run", "x.py"]) == (
        os.path.join(PACKAGE_DIR, "run.py"),
        ["x.py"],
    )
    assert program_command("prog.py", ["-m", "y"]) == ("prog.py", ["-m", "y"])
    with pytest.raises(PyopenibError, match="python -m numpy"):
        program_command("python", ["-m", "numpy"])
    with pytest.raises(PyopenibError, match="expected a Python file"):
        program_command("python", ["-X", "dev", "prog.py"])


@pytest.mark.skipif(not MPI4PY_TESTS.is_dir(), reason="mpi4py 4.1.2's sdist is not unpacked")
def test_mpi4pys_package_tests_pass_unmodified(tmp_path):
    result, out, err = _run(tmp_path, None, path=MPI4PY_TESTS / "test_package.py")
    assert result.exit_code == 0, err
    assert "Ran 18 tests" in err and "\nOK" in err
