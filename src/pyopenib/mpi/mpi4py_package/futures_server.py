"""``python -m mpi4py.futures.server``: a worker that ``MPIPoolExecutor`` spawned.

Run as each spawned rank's ``__main__`` (``package.PROGRAM_MODULES``), so it imports
``mpi4py.futures`` absolutely (the package's finder serves it); importing it as the module
``mpi4py.futures.server`` runs nothing."""

from mpi4py.futures import _core


def main() -> None:
    """Serve the parent that spawned this process until it stops the workers."""
    from mpi4py.run import set_abort_status

    try:
        _core.server_main()
    except BaseException:
        set_abort_status(1)
        raise


if __name__ == "__main__":
    main()
