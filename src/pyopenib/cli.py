"""The ``pyopenib`` command. Subcommands live beside the layer they drive and are
attached here; this module only wires them up and turns ``PyopenibError`` into a clean
message and exit code (a traceback only with ``--debug``)."""

from __future__ import annotations

import sys

import click

from . import __version__
from .errors import PyopenibError


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except PyopenibError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"pyopenib: {exc}", err=True)
            sys.exit(exc.exit_code)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="pyopenib")
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@click.pass_context
def main(ctx, debug):
    """Open MPI's openib BTL on simulated RDMA hardware."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def _attach_commands() -> None:
    """Attach each layer's commands; a layer that is not built yet simply has none."""
    from importlib import import_module

    for module_name, attr in _COMMANDS:
        module = import_module(module_name, __package__)
        main.add_command(getattr(module, attr))


_COMMANDS: list[tuple[str, str]] = [
    (".config.commands", "info"),
    (".config.commands", "ini"),
    (".mpi.commands", "run"),
    (".btl.commands", "scenario"),
    (".btl.commands", "demo"),
    (".check.commands", "check"),
    (".verbs.perftest_command", "perftest"),
    (".report.commands", "report"),
    (".bench.commands", "bench"),
]

_attach_commands()
