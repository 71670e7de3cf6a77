"""``python -m mpi4py.futures <pyfile | -m mod | -c cmd> [arg] ...``: a shared pool.

Rank 0 of ``COMM_WORLD`` runs the program; the other ranks serve every
``MPIPoolExecutor`` it makes (``_core.SharedPoolCtx``). A failure aborts the job as
``python -m mpi4py`` does (``mpi4py.run.set_abort_status``). Run as each rank's
``__main__`` (``package.PROGRAM_MODULES``); importing it as ``mpi4py.futures.__main__``
runs nothing."""

import os
import sys
import textwrap

_PROGRAM = "mpi4py.futures"


class UsageExit(SystemExit):
    """A usage message's exit (not an abort)."""


def usage(error=None):
    python = os.path.basename(sys.executable)
    text = textwrap.dedent(f"""
    usage: {python} -m {_PROGRAM} <pyfile> [arg] ...
       or: {python} -m {_PROGRAM} -m <module> [arg] ...
       or: {python} -m {_PROGRAM} -c <string> [arg] ...
    """).strip()
    if error:
        print(error, file=sys.stderr)
        print(text, file=sys.stderr)
    else:
        print(text, file=sys.stdout)
    raise UsageExit(1 if error else 0)


def check_command_line():
    args = sys.argv[1:]
    if not args:
        usage("No path specified for execution")
    elif args[0] == "-":
        pass
    elif args[0] in ("-h", "--help"):
        usage()
    elif args[0] in ("-m", "-c"):
        if len(args) < 2:
            usage(f"Argument expected for option: {args[0]}")
    elif args[0].startswith("-"):
        usage(f"Unknown option: {args[0]}")
    elif not os.path.exists(args[0]):
        usage(f"Path does not exist: {args[0]}")


def main():
    from mpi4py.futures._core import SharedPoolCtx
    from mpi4py.run import run_command_line, set_abort_status

    try:
        with SharedPoolCtx() as pool:
            if pool is not None:
                check_command_line()
                run_command_line()
    except UsageExit:
        raise
    except (SystemExit, KeyboardInterrupt) as exc:
        set_abort_status(exc)
        raise
    except BaseException:
        set_abort_status(1)
        raise


if __name__ == "__main__":
    main()
