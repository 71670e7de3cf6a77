"""Files a command writes (``--trace``, ``--json``, ``--plot``, ``report -o``): checked
before the work starts, written atomically, and reported without hiding the job's status.

Why before: a simulation can run for minutes, and a path that cannot be written (a
missing directory, a read-only one, a directory given as a file, an unknown format)
used to surface only at the end, as a traceback that replaced the job's own exit status.
``OutputFile.check`` (or ``output_file``) refuses such a path up front with the path and
the reason.

Why atomic: a reader (a CI job, ``pyopenib report``) must never see half a file. Each
writer writes a temporary file in the same directory (same file system, so ``os.replace``
is atomic) with the same suffix (matplotlib picks the format from it), which replaces
the target only once complete; on any failure the temporary file is removed and the
target is left as it was.

Why never hide the status: a job that TERMINATEd exits 3 and a program that called
``sys.exit(5)`` exits 5 even if its trace cannot be written; ``exit_status`` combines the
two, and the write failure is still printed (path and the operating system's reason).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .errors import PyopenibError, register_topics

__all__ = [
    "EXIT_INTERRUPTED",
    "OutputDir",
    "OutputFile",
    "TRACE_SUFFIXES",
    "exit_status",
    "output_dir",
    "output_file",
    "write_reporting",
]

EXIT_INTERRUPTED = 130
"""What a shell reports for a program stopped by Ctrl-C (128 + SIGINT)."""

TRACE_SUFFIXES = {
    ".jsonl": "jsonl",
    ".json": "perfetto",
    ".svg": "svg",
    ".png": "png",
    ".pdf": "pdf",
}
"""The trace formats ``report.write_trace`` writes, by file suffix."""

register_topics(
    {
        "output-no-format": (
            "{option} {path}: cannot tell the format from the file name; use one of: {valid}"
        ),
        "output-no-parent": "{option} {path}: the directory {parent} does not exist",
        "output-parent-not-dir": "{option} {path}: {parent} is not a directory",
        "output-not-writable": "{option} {path}: cannot write in {parent} ({reason})",
        "output-is-dir": "{option} {path}: is a directory; give a file name",
        "output-is-file": "{option} {path}: is a file; give a directory",
        "output-target-not-writable": "{option} {path}: the file cannot be replaced ({reason})",
        "output-empty": "{option}: the path is empty",
        "output-write-failed": "cannot write {option} {path}: {reason}",
    }
)


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _writable_dir(option: str, path: Path, parent: Path) -> None:
    """``parent`` exists, is a directory, and this process may create files in it."""
    facts = {"option": option, "path": str(path), "parent": str(parent)}
    if not parent.exists():
        raise PyopenibError("output-no-parent", **facts)
    if not parent.is_dir():
        raise PyopenibError("output-parent-not-dir", **facts)
    # access() is what the kernel would answer; creating a probe file would leave
    # traces in the user's directory if we were killed between create and unlink.
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PyopenibError("output-not-writable", **facts, reason="Permission denied")


@dataclass(frozen=True)
class OutputFile:
    """An output file that passed the checks; ``fmt`` is the format its suffix names."""

    option: str
    path: Path
    fmt: str

    @classmethod
    def check(cls, option: str, path: str | os.PathLike, formats: Mapping[str, str]) -> OutputFile:
        """Refuse ``path`` unless its suffix is one of ``formats`` (``{".json": "perfetto"}``),
        it is not a directory, an existing file may be replaced, and its directory exists
        and is writable. ``option`` names the option in messages (``--trace``)."""
        text = os.fspath(path)
        if not text.strip():
            raise PyopenibError("output-empty", option=option)
        target = Path(text)
        facts = {"option": option, "path": text}
        if target.is_dir():
            raise PyopenibError("output-is-dir", **facts)
        fmt = formats.get(target.suffix.lower())
        if fmt is None:
            raise PyopenibError("output-no-format", **facts, valid=", ".join(formats))
        parent = target.parent if str(target.parent) else Path(".")
        _writable_dir(option, target, parent)
        if target.exists() and not os.access(target, os.W_OK):
            # os.replace would succeed in a writable directory, but a user who made a file
            # read-only meant to keep it.
            raise PyopenibError("output-target-not-writable", **facts, reason="Permission denied")
        return cls(option, target, fmt)

    @contextmanager
    def atomic(self) -> Iterator[str]:
        """``with out.atomic() as tmp: writer(tmp)``: the writer writes ``tmp`` (same
        directory, same suffix), which replaces the target when the block ends cleanly.
        An ``OSError`` becomes ``output-write-failed`` naming the target."""
        parent = self.path.parent if str(self.path.parent) else Path(".")
        try:
            fd, tmp = tempfile.mkstemp(
                dir=parent, prefix=f".{self.path.name}.", suffix=f".tmp{self.path.suffix}"
            )
        except OSError as exc:
            raise self.failed(exc) from None
        os.close(fd)
        try:
            yield tmp
            _chmod_like_new_file(tmp)
            os.replace(tmp, self.path)
        except OSError as exc:
            _discard(tmp)
            raise self.failed(exc) from None
        except BaseException:
            _discard(tmp)
            raise

    def write(self, writer: Callable[[str], object]) -> None:
        """``writer(tmp_path)`` then the atomic rename (see ``atomic``)."""
        with self.atomic() as tmp:
            writer(tmp)

    def failed(self, exc: OSError) -> PyopenibError:
        return PyopenibError(
            "output-write-failed", option=self.option, path=str(self.path), reason=_reason(exc)
        )


@dataclass(frozen=True)
class OutputDir:
    """A directory a command fills (``bench --plot DIR``): it exists or can be created."""

    option: str
    path: Path

    @classmethod
    def check(cls, option: str, path: str | os.PathLike) -> OutputDir:
        text = os.fspath(path)
        if not text.strip():
            raise PyopenibError("output-empty", option=option)
        target = Path(text)
        if target.exists() and not target.is_dir():
            raise PyopenibError("output-is-file", option=option, path=text)
        if target.is_dir():
            _writable_dir(option, target, target)
        else:
            parent = target.parent if str(target.parent) else Path(".")
            _writable_dir(option, target, parent)
        return cls(option, target)

    def file(self, name: str, formats: Mapping[str, str]) -> OutputFile:
        """One file inside the directory (created now if it does not exist yet)."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PyopenibError(
                "output-write-failed", option=self.option, path=str(self.path), reason=_reason(exc)
            ) from None
        return OutputFile.check(self.option, self.path / name, formats)


def output_file(option: str, path, formats: Mapping[str, str]) -> OutputFile | None:
    """``OutputFile.check`` for an optional option (``None`` stays ``None``)."""
    return None if path is None else OutputFile.check(option, path, formats)


def output_dir(option: str, path) -> OutputDir | None:
    """``OutputDir.check`` for an optional option (``None`` stays ``None``)."""
    return None if path is None else OutputDir.check(option, path)


def write_reporting(out: OutputFile, writer: Callable[[str], object]) -> PyopenibError | None:
    """``out.write(writer)``; a failure is printed on stderr (path and reason) and
    returned instead of raised, so the caller still exits with the job's own status."""
    try:
        out.write(writer)
    except PyopenibError as exc:
        print(f"pyopenib: {exc}", file=sys.stderr)
        return exc
    return None


def exit_status(job_status: int, write_error: PyopenibError | None) -> int:
    """The status a command exits with after writing its outputs: the job's own status
    when it failed (3 for a transport failure, the program's code), else the write
    failure's."""
    if job_status != 0 or write_error is None:
        return job_status
    return write_error.exit_code


def _chmod_like_new_file(path: str) -> None:
    """mkstemp creates 0600; an output file gets the mode ``open()`` would give it."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def _discard(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
