"""Saving a matplotlib figure so that the same figure gives the same bytes, in every format.

matplotlib stamps SVG and PDF files with the creation date and gives SVG elements random
ids (``svg.hashsalt`` unset draws them from the clock): two same-seed runs would differ.
Every figure the project writes goes through ``save_figure``.
"""

from __future__ import annotations

__all__ = ["save_figure"]

_NO_DATE = {"svg": {"Date": None}, "pdf": {"CreationDate": None, "ModDate": None}}
_FIXED_IDS = {"svg.hashsalt": "pyopenib", "svg.id": None}


def save_figure(fig, path, fmt: str | None = None, **kwargs) -> None:
    """``fig.savefig(path, format=fmt, **kwargs)`` without dates and with stable ids."""
    import matplotlib  # the figure's caller already paid for it; importers of report do not

    kind = (fmt or str(path).rsplit(".", 1)[-1]).lower()
    metadata = _NO_DATE.get(kind)
    with matplotlib.rc_context(_FIXED_IDS):
        fig.savefig(path, format=fmt, metadata=metadata, **kwargs)
