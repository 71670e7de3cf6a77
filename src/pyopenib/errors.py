"""The catalogue of user-facing errors: one topic per situation, filled with the facts.

Like Open MPI's help files (``help-mpi-btl-openib.txt``), the wording of every message a
user can see lives here, keyed by a topic, so tests assert on topics and the texts stay
consistent. ``PyopenibError`` is the one exception type the CLI turns into a clean
message and a non-zero exit (no traceback unless ``--debug``).
"""

from __future__ import annotations

__all__ = ["PyopenibError", "TOPICS", "register_topics"]

TOPICS: dict[str, str] = {}


def register_topics(topics: dict[str, str]) -> None:
    """Add a layer's topics to the catalogue (each topic name must be new)."""
    for name, text in topics.items():
        if name in TOPICS and TOPICS[name] != text:
            raise ValueError(f"help topic {name!r} registered twice")
        TOPICS[name] = text


class PyopenibError(Exception):
    """A user-facing error: ``topic`` names the situation, ``facts`` fill its text.

    ``exit_code`` is what the CLI exits with (1 = bad input; 3 = transport failure).
    """

    exit_code = 1

    def __init__(self, topic: str, exit_code: int | None = None, **facts):
        self.topic = topic
        self.facts = facts
        if exit_code is not None:
            self.exit_code = exit_code
        template = TOPICS.get(topic)
        if template is None:
            text = f"{topic}: " + ", ".join(f"{k}={v!r}" for k, v in facts.items())
        else:
            text = template.format(**facts)
        super().__init__(text)
