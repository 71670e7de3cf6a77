"""apps — the applications above the stack: the ``pyopenib`` subcommands and the
workloads and tables they run and print.

Each module here is a client of the stack, never a part of it: ``run_command`` (``pyopenib
run``, Open MPI's ``mpirun``) assembles a job from the BTL and the MPI layer;
``scenario_commands`` and ``scenarios`` drive BTL modules the way a PML would;
``perftest`` and ``perftest_command`` are perftest's ``ib_*`` tools on the verbs API;
``stats`` tabulates what each rank's openib module did; ``config_commands`` is
``ompi_info`` and the INI tools; ``report_command`` turns a trace into files;
``job_settings`` resolves the MCA settings every job-running command starts from. A layer
never imports this package (docs/ARCHITECTURE.md, ``tests/test_layering.py``).
"""
