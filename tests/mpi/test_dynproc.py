"""Dynamic processes: ports, names and Accept/Connect behave as under real Open MPI +
mpi4py; Join pairs the two ends of a socket; Spawn adds ranks to the running simulation
that run their own program and world."""

import io
import textwrap

import pytest

from pyopenib.apps.run_command import openib_btls
from pyopenib.mpi import run_job

from .loopback_btl import make_loopback_btls
from .test_mpi_differential import PROGRAMS, _our_output, _real_output


@pytest.mark.parametrize("nprocs", [2, 4])
def test_accept_connect_and_name_service_behave_as_real_open_mpi(nprocs):
    path = PROGRAMS / "dynproc_ports.py"
    assert _our_output(path, nprocs, make_loopback_btls) == _real_output(path, nprocs)


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


def _spawning_job(tmp_path, parent: str, nprocs: int = 1, ppn: int = 1, **children):
    """Run ``parent`` on ``nprocs`` openib ranks that may spawn; ``children`` are more
    programs written next to it. Returns (result, stdout, stderr)."""
    for name, text in children.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
    prog = tmp_path / "parent.py"
    prog.write_text(textwrap.dedent(parent))
    out, err = io.StringIO(), io.StringIO()
    result = run_job(
        str(prog),
        nprocs,
        openib_btls("mellanox-hermon", (), ppn),
        ppn=ppn,
        tag_output=True,
        stdout=out,
        stderr=err,
        add_btls=lambda btls, count: btls.add_processes(count),
    )
    return result, out.getvalue(), err.getvalue()


def test_spawned_children_run_their_own_program_and_world_and_talk_back(tmp_path):
    result, out, err = _spawning_job(
        tmp_path,
        """
        import os, sys
        from mpi4py import MPI
        here = os.path.dirname(__file__)
        errcodes = []
        child = MPI.COMM_WORLD.Spawn(sys.executable, [os.path.join(here, "child.py"), "x"],
                                     maxprocs=3, errcodes=errcodes)
        print("sizes", child.Get_size(), child.Get_remote_size(), errcodes)
        child.send("ping", dest=2)
        print("sum", child.reduce(None, op=MPI.SUM, root=MPI.ROOT))
        merged = child.Merge()
        print("merged", merged.Get_rank(), merged.Get_size())
        child.Disconnect()
        """,
        child="""
        import sys
        from mpi4py import MPI
        parent = MPI.Comm.Get_parent()
        world = MPI.COMM_WORLD
        print("child", world.Get_rank(), world.Get_size(), sys.argv[1:],
              world.Get_attr(MPI.APPNUM), parent.Get_remote_size())
        if world.Get_rank() == 2:
            print("got", parent.recv(source=0))
        parent.reduce(world.Get_rank() + 1, op=MPI.SUM, root=0)
        merged = parent.Merge(high=True)
        print("merged", merged.Get_rank(), merged.Get_size())
        parent.Disconnect()
        print("after", parent == MPI.COMM_NULL, MPI.Comm.Get_parent() == MPI.COMM_NULL)
        """,
    )
    assert result.exit_code == 0, err
    lines = out.splitlines()
    assert "[1,0]<stdout>:sizes 1 3 [0, 0, 0]" in lines
    assert "[1,0]<stdout>:sum 6" in lines
    assert "[1,0]<stdout>:merged 0 4" in lines
    for r in range(3):
        assert f"[2,{r}]<stdout>:child {r} 3 ['x'] 0 1" in lines
        assert f"[2,{r}]<stdout>:merged {r + 1} 4" in lines
        assert f"[2,{r}]<stdout>:after True True" in lines
    assert "[2,2]<stdout>:got ping" in lines


def test_ranks_spawning_at_once_from_comm_self_each_get_their_own_children(tmp_path):
    """Two parents spawn from COMM_SELF at the same simulated time (mpi4py's
    TestSpawnMultipleSelf): building a child's BTL module costs the child's host time,
    never the parent's, so one spawn cannot start in the middle of the other and give two
    children one process index."""
    result, out, err = _spawning_job(
        tmp_path,
        """
        import os, sys
        from mpi4py import MPI
        here = os.path.dirname(__file__)
        child = MPI.COMM_SELF.Spawn(sys.executable, [os.path.join(here, "child.py")],
                                    maxprocs=3)
        child.Barrier()
        print("children", child.allreduce(MPI.COMM_WORLD.Get_rank(), op=MPI.SUM))
        child.Disconnect()
        """,
        nprocs=2,
        child="""
        from mpi4py import MPI
        parent = MPI.Comm.Get_parent()
        parent.Barrier()
        world = MPI.COMM_WORLD
        print("world", world.Get_rank(), world.Get_size(), world.allreduce(1))
        parent.allreduce(world.Get_rank(), op=MPI.SUM)
        parent.Disconnect()
        """,
    )
    assert result.exit_code == 0, err
    lines = out.splitlines()
    for parent in range(2):
        assert f"[1,{parent}]<stdout>:children 3" in lines
    assert sum("<stdout>:world " in line for line in lines) == 6
    assert all(line.endswith(" 3 3") for line in lines if "<stdout>:world " in line)


def test_spawn_multiple_runs_c_and_m_forms_with_their_appnum(tmp_path):
    result, out, err = _spawning_job(
        tmp_path,
        """
        import sys
        from mpi4py import MPI
        code = "from mpi4py import MPI; import sys; " \\
               "p = MPI.Comm.Get_parent(); " \\
               "p.send((MPI.COMM_WORLD.Get_attr(MPI.APPNUM), sys.argv), dest=0); " \\
               "p.Disconnect()"
        errcodes = []
        child = MPI.COMM_SELF.Spawn_multiple(
            [sys.executable, sys.executable],
            [["-c", code, "a"], ["-u", "-m", "childmod", "b"]],
            [1, 2], errcodes=errcodes)
        print("remote", child.Get_remote_size(), errcodes)
        got = sorted(child.recv(source=r) for r in range(3))
        for appnum, argv in got:
            print("from", appnum, argv[0] == "-c" or argv[0].endswith("childmod.py"), argv[1:])
        child.Disconnect()
        """,
        childmod="""
        import sys
        from mpi4py import MPI
        p = MPI.Comm.Get_parent()
        p.send((MPI.COMM_WORLD.Get_attr(MPI.APPNUM), sys.argv), dest=0)
        p.Disconnect()
        """,
    )
    assert result.exit_code == 0, err
    assert out.splitlines() == [
        "[1,0]<stdout>:remote 3 [[0], [0, 0]]",
        "[1,0]<stdout>:from 0 True ['a']",
        "[1,0]<stdout>:from 1 True ['b']",
        "[1,0]<stdout>:from 1 True ['b']",
    ]


def test_a_command_that_is_not_python_fails_with_err_spawn_at_every_rank(tmp_path):
    result, out, err = _spawning_job(
        tmp_path,
        """
        from mpi4py import MPI
        for command in ("/bin/true", "/no/such/program"):
            errcodes = []
            try:
                MPI.COMM_WORLD.Spawn(command, [], maxprocs=2, errcodes=errcodes)
            except MPI.Exception as exc:
                print(command, exc.Get_error_class() == MPI.ERR_SPAWN, errcodes)
        """,
        nprocs=2,
    )
    assert result.exit_code == 0, err
    for r in range(2):
        assert f"[1,{r}]<stdout>:/bin/true True []" in out.splitlines()
        assert f"[1,{r}]<stdout>:/no/such/program True []" in out.splitlines()
    assert "Executable: /bin/true" in err
    assert "is neither a Python interpreter nor a script" in err
    assert "could not access\nor execute an executable:\n\nExecutable: /no/such/program" in err
    assert err.count("Executable:") == 2  # mpirun reports once, not once per rank


def test_a_child_whose_script_is_missing_fails_the_job_as_python_and_mpirun_do(tmp_path):
    result, out, err = _spawning_job(
        tmp_path,
        """
        import sys
        from mpi4py import MPI
        MPI.COMM_SELF.Spawn(sys.executable, ["/no/such/script.py"])
        print("not reached")
        """,
    )
    assert result.exit_code == 2
    assert "not reached" not in out
    assert "can't open file '/no/such/script.py': [Errno 2] No such file or directory" in err
    assert "Process name: [[1,2],0]" in err


def test_spawn_info_keys_are_applied_or_refused_by_name(tmp_path):
    result, out, err = _spawning_job(
        tmp_path,
        """
        import sys
        from mpi4py import MPI
        info = MPI.Info.Create()
        info.Set("env", "A=1")
        try:
            MPI.COMM_SELF.Spawn(sys.executable, ["-c", "pass"], info=info)
        except MPI.Exception as exc:
            print("env", exc.Get_error_class() == MPI.ERR_SPAWN)
        info = MPI.Info.Create()
        info.Set("ompi_non_mpi", "true")
        child = MPI.COMM_SELF.Spawn(sys.executable, ["-c", "print('non-mpi child')"], info=info)
        print("non_mpi", child == MPI.COMM_NULL)
        """,
    )
    assert result.exit_code == 0, err
    assert "pyopenib cannot apply the spawn info key env='A=1'" in err
    assert "[1,0]<stdout>:env True" in out.splitlines()
    assert "[1,0]<stdout>:non_mpi True" in out.splitlines()
    assert "[2,0]<stdout>:non-mpi child" in out.splitlines()


def test_abort_in_a_child_ends_the_whole_run_with_its_code(tmp_path):
    result, out, err = _spawning_job(
        tmp_path,
        """
        import sys
        from mpi4py import MPI
        child = MPI.COMM_SELF.Spawn(sys.executable, ["-c", "from mpi4py import MPI; "
                                    "MPI.COMM_WORLD.Abort(7)"])
        child.Barrier()
        """,
    )
    assert result.exit_code == 7
    assert "MPI_ABORT was invoked" in err


def test_spawn_is_refused_clearly_with_several_processes_per_node(tmp_path):
    result, out, err = _spawning_job(
        tmp_path,
        """
        import sys
        from mpi4py import MPI
        try:
            MPI.COMM_WORLD.Spawn(sys.executable, ["-c", "pass"])
        except MPI.Exception as exc:
            print(exc.Get_error_class() == MPI.ERR_SPAWN)
        """,
        nprocs=2,
        ppn=2,
    )
    assert result.exit_code == 0, err
    assert out.splitlines() == ["[1,0]<stdout>:True", "[1,1]<stdout>:True"]
    assert "--ppn 2: pyopenib adds spawned processes only to a job of one process per node" in err


def test_join_connects_the_two_ranks_at_the_ends_of_a_tcp_connection(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        textwrap.dedent(
            """
            import socket
            from mpi4py import MPI
            world = MPI.COMM_WORLD
            if world.rank == 0:
                server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                server.bind(("127.0.0.1", 0))
                server.listen(0)
                world.send(server.getsockname(), dest=1)
                conn = server.accept()[0]  # blocks this rank only, until rank 1 connects
            else:
                conn = socket.create_connection(world.recv(source=0))
            inter = MPI.Comm.Join(conn.fileno())
            conn.close()
            print(inter.Get_size(), inter.Get_remote_size(),
                  inter.bcast("hi" if world.rank == 0 else None,
                              root=MPI.ROOT if world.rank == 0 else 0))
            inter.Free()
            """
        )
    )
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(prog), 2, make_loopback_btls, tag_output=True, stdout=out, stderr=err)
    assert result.exit_code == 0, err.getvalue()
    assert sorted(out.getvalue().splitlines()) == [
        "[1,0]<stdout>:1 1 None",
        "[1,1]<stdout>:1 1 hi",
    ]


def test_without_a_growable_btl_factory_spawn_fails_with_err_spawn(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        textwrap.dedent(
            """
            import sys
            from mpi4py import MPI
            print(MPI.Comm.Get_parent() == MPI.COMM_NULL)
            try:
                MPI.COMM_SELF.Spawn(sys.executable, ["-c", "pass"])
            except MPI.Exception as exc:
                print(exc.Get_error_class() == MPI.ERR_SPAWN)
            """
        )
    )
    out, err = io.StringIO(), io.StringIO()
    result = run_job(str(prog), 1, make_loopback_btls, stdout=out, stderr=err)
    assert result.exit_code == 0, err.getvalue()
    assert out.getvalue().split() == ["True", "True"]
    assert "cannot add processes to a running job" in err.getvalue()


def test_m_runs_a_packages_main_and_mpi4pys_own_program_and_a_missing_module_fails(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "__main__.py").write_text(
        "from mpi4py import MPI\nMPI.Comm.Get_parent().send(__name__, dest=0)\n"
    )
    result, out, err = _spawning_job(
        tmp_path,
        """
        import os, sys
        from mpi4py import MPI
        child = MPI.COMM_SELF.Spawn(sys.executable, ["-m", "pkg"])
        print("pkg", child.recv(source=0))
        script = os.path.join(os.path.dirname(__file__), "script.py")
        child = MPI.COMM_SELF.Spawn(sys.executable, ["-m", "mpi4py", script, "q"])
        print("mpi4py", child.recv(source=0))
        MPI.COMM_SELF.Spawn(sys.executable, ["-m", "no_such_module"])
        """,
        script="""
        import sys
        from mpi4py import MPI
        MPI.Comm.Get_parent().send(sys.argv[1:], dest=0)
        """,
    )
    assert result.exit_code == 1
    assert out.splitlines() == ["[1,0]<stdout>:pkg __main__", "[1,0]<stdout>:mpi4py ['q']"]
    assert "No module named no_such_module" in err
    assert "Process name: [[1,4],0]" in err
