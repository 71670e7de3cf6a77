"""mpi — the mpi4py-compatible MPI namespace and the job runner (ranks are greenlets).

``run_job`` runs an unmodified mpi4py program on N ranks over any ``BtlModule`` factory;
``pyopenib run`` (``commands``) is the same over the openib BTL."""

from .runner import EXIT_DEADLOCK, EXIT_TIMEOUT, EXIT_TRANSPORT, JobResult, run_job

__all__ = ["EXIT_DEADLOCK", "EXIT_TIMEOUT", "EXIT_TRANSPORT", "JobResult", "run_job"]
