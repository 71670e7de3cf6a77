"""pyopenib — Open MPI's openib BTL rebuilt in Python on simulated RDMA hardware.

Layers (each talks only to the one below): ``mpi`` > ``pml`` > ``btl`` > ``verbs`` > ``hw``
> ``sim``; ``config`` is pure and imported by all; ``check`` and ``report`` sit beside.
See ``docs/`` and the README for the tour.
"""

__version__ = "0.1.0"
