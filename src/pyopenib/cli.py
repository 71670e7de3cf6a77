"""The ``pyopenib`` command. Subcommands live in the applications (``apps``, ``check``,
``bench``) and are attached here, each loaded when it is used; this module only wires them up and turns any error into
a clean message and exit code (a traceback only with ``--debug``)."""

from __future__ import annotations

import _thread
import sys
from contextlib import contextmanager
from importlib import import_module

import click

from . import __version__
from .errors import PyopenibError

EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130


class _Group(click.Group):
    """Every error a command lets through ends here: a ``PyopenibError`` is its message
    and exit code; Ctrl-C is ``interrupted`` and 130 (what a shell reports for SIGINT);
    anything else is a bug of pyopenib's, shown as one line that says so. The traceback
    only with ``--debug``."""

    def list_commands(self, ctx) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx, name: str):
        """The command ``name``, its module imported on first use (``_COMMANDS``)."""
        command = self.commands.get(name)
        if command is None and name in _COMMANDS:
            module_name, attr = _COMMANDS[name]
            command = getattr(import_module(module_name, __package__), attr)
            self.add_command(command, name)
        return command

    def invoke(self, ctx):
        try:
            with keeping_ctrl_c():
                return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except PyopenibError as exc:
            if _debug(ctx):
                raise
            click.echo(f"pyopenib: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            if _debug(ctx):
                raise
            click.echo("pyopenib: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except Exception as exc:  # noqa: BLE001 - the last line of defence, see above
            if _debug(ctx):
                raise
            where = _innermost(exc)
            click.echo(
                f"pyopenib: internal error: {type(exc).__name__}: {exc}{where} (a bug in "
                "pyopenib; rerun with --debug for the traceback and please report it)",
                err=True,
            )
            sys.exit(EXIT_INTERNAL)


_interrupt_main = _thread.interrupt_main
_start_os_thread = _thread.start_new_thread
"""The real ones, taken before a job can put simulated threads under ``_thread``."""


@contextmanager
def keeping_ctrl_c():
    """A Ctrl-C is never lost. Python raises ``KeyboardInterrupt`` in whatever code runs
    when the signal is handled; when that is a weakref callback or a ``__del__`` (the
    simulator drops objects all the time: a request's entry in a ``WeakValueDictionary``),
    Python prints "Exception ignored in ..." with a traceback and carries on, and the job
    runs forever. Inside this block such a swallowed interrupt is delivered again, silently.

    Not from the hook itself: the interpreter handles a pending signal right after the
    call that sets it, which would still be inside the hook (and swallowed again). An OS
    thread sets it instead; it needs the GIL first, which the main thread gives up only
    after the hook has returned, so the interrupt lands in ordinary code (and should it
    land in another finalizer, the same happens once more)."""
    previous = sys.unraisablehook

    def redeliver(unraisable) -> None:
        if issubclass(unraisable.exc_type, KeyboardInterrupt):
            _start_os_thread(_interrupt_main, ())
        else:
            previous(unraisable)

    sys.unraisablehook = redeliver
    try:
        yield
    finally:
        sys.unraisablehook = previous


def _debug(ctx) -> bool:
    return bool(ctx.obj and ctx.obj.get("debug"))


def _innermost(exc: BaseException) -> str:
    tb = exc.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return f" at {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="pyopenib")
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@click.pass_context
def main(ctx, debug):
    """Open MPI's openib BTL on simulated RDMA hardware."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


_COMMANDS: dict[str, tuple[str, str]] = {
    "info": (".apps.config_commands", "info"),
    "ini": (".apps.config_commands", "ini"),
    "run": (".apps.run_command", "run"),
    "scenario": (".apps.scenario_commands", "scenario"),
    "demo": (".apps.scenario_commands", "demo"),
    "check": (".check.commands", "check"),
    "perftest": (".apps.perftest_command", "perftest"),
    "report": (".apps.report_command", "report"),
    "bench": (".bench.commands", "bench"),
}
"""Every subcommand: its name, the module that defines it and the command's name there.
``main`` imports a module only when its command is asked for (``_Group.get_command``):
``pyopenib run`` never loads check's search, bench's tables or the report exporters."""
