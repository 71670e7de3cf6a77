"""The ``key = value`` lexer shared by MCA parameter files and device-params INI files.

Open MPI reads both with flex lexers of one style (``keyval_lex.l``, ``btl_openib_lex.l``):
blank lines, ``#`` and ``//`` comment lines, ``/* ... */`` block comments, ``[section]``
headers (INI only) and ``name = value`` lines where the value is the rest of the line
with surrounding blanks trimmed (so a ``#`` after a value belongs to the value). Names are
made of ``[A-Za-z0-9_.-]``.

Unlike Open MPI, which skips to the next token after a problem and (since 2014) forgets
to say where it was, every problem here is kept with its line number so callers can
report ``file:line``. This module only splits text; what the names mean is the caller's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Assignment", "Problem", "Section", "lex"]

_BLANKS = " \t\f\v"
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
_SECTION = re.compile(r"\[[ \t\f\v]*([A-Za-z0-9_.\-\\/ \t\f\v]*[A-Za-z0-9_.\-\\/])[ \t\f\v]*\]")


@dataclass(frozen=True, slots=True)
class Section:
    """A ``[name]`` header."""

    name: str
    line: int


@dataclass(frozen=True, slots=True)
class Assignment:
    """A ``key = value`` line (value trimmed; may be empty)."""

    key: str
    value: str
    line: int


@dataclass(frozen=True, slots=True)
class Problem:
    """A line the lexer could not read, with the reason in words."""

    line: int
    reason: str


def lex(text: str, *, sections: bool) -> list[Section | Assignment | Problem]:
    """Split ``text`` into headers, assignments and problems, in file order.

    ``sections`` says whether ``[name]`` headers are allowed (INI files) or a problem
    (parameter files have none).
    """
    items: list[Section | Assignment | Problem] = []
    in_block_comment = False
    comment_opened = 0
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw[:-1] if raw.endswith("\r") else raw
        if in_block_comment:
            end = line.find("*/")
            if end < 0:
                continue
            in_block_comment = False
            line = line[end + 2 :]
        stripped = line.strip(_BLANKS)
        if not stripped or stripped.startswith(("#", "//")):
            continue
        if stripped.startswith("/*"):
            end = stripped.find("*/", 2)
            if end < 0:
                in_block_comment, comment_opened = True, number
                continue
            stripped = stripped[end + 2 :].strip(_BLANKS)
            if not stripped:
                continue
        items.append(_lex_line(stripped, number, sections))
    if in_block_comment:
        items.append(Problem(comment_opened, "/* comment is never closed"))
    return items


def _lex_line(stripped: str, number: int, sections: bool) -> Section | Assignment | Problem:
    if stripped.startswith("["):
        if not sections:
            return Problem(number, f"unexpected section header {stripped!r} in a parameter file")
        match = _SECTION.fullmatch(stripped)
        if match is None:
            return Problem(number, f"malformed section header {stripped!r}")
        return Section(match.group(1), number)
    match = _NAME.match(stripped)
    if match is None:
        return Problem(number, f"unexpected text {stripped!r} (expected 'name = value')")
    key = match.group(0)
    rest = stripped[match.end() :].lstrip(_BLANKS)
    if not rest.startswith("="):
        return Problem(number, f"expected '=' after {key!r}, found {rest or '<end of line>'!r}")
    return Assignment(key, rest[1:].strip(_BLANKS), number)
