"""The settings of a command that runs a job, resolved once before any work: the MCA
variables from the process (``OMPI_MCA_*``, parameter files, ``--mca`` pairs, a tool's
presets) and the device-params files they name, with their notices and warnings printed
once on stderr and an error refused. An application's concern, not config's: config
resolves and reports (``load_mca_from_process``, ``load_device_params``); printing to a
terminal and refusing a job belong to the command that runs it (``run``, ``scenario``,
``check``, ``bench``, ``perftest``), as they belong to ``mpirun`` in Open MPI.
"""

from __future__ import annotations

import click

from ..config.device_params import load_device_params
from ..config.effective import effective_settings
from ..config.limits import DeviceLimits, check_device
from ..config.mca import McaContext, load_mca_from_process

__all__ = ["job_settings", "check_job_devices", "echo_warnings", "ini_table", "param_files"]


def echo_warnings(ctx: McaContext) -> None:
    """The MCA notices of ``ctx`` (a deprecated synonym, an unknown variable), on stderr."""
    for warning in ctx.warnings:
        click.echo(f"pyopenib: warning: {warning.message}", err=True)


def param_files(ctx: McaContext) -> list[str]:
    """The device-params files ``btl_openib_device_param_files`` names, in order."""
    return [p for p in str(ctx.get("btl_openib_device_param_files")).split(":") if p]


def job_settings(cli_pairs=(), presets=()) -> McaContext:
    """The MCA settings of a command that runs a job (run, scenario, check, bench,
    perftest): ``OMPI_MCA_*``, parameter files, ``--mca`` pairs and the tool's
    ``presets``, resolved once in this process, as ``run`` always did. MCA notices and
    the device-params files' warnings (unknown key, repeated section) are printed here,
    once, before any work; an error in those files is refused here."""
    ctx = load_mca_from_process(list(cli_pairs), presets)
    echo_warnings(ctx)
    ini_table(ctx)
    return ctx


def ini_table(ctx: McaContext):
    """The device-params files ``ctx`` names, their warnings printed, an error refused."""
    table = load_device_params(param_files(ctx), strict=False)
    for diagnostic in table.diagnostics:
        if diagnostic.severity == "warning":
            click.echo(f"pyopenib: {diagnostic}", err=True)  # FILE:LINE: warning: ...
    table.raise_on_errors()
    return table


def check_job_devices(ctx: McaContext, models, min_largest: int = 0, what: str = "") -> list:
    """Every device model of the job against the settings it resolves (``check_device``),
    returned one per distinct model; prints Open MPI's *no device params found* warning for a device without an INI
    section unless btl_openib_warn_no_device_params_found is 0."""
    table = load_device_params(param_files(ctx))
    resolved = {}
    for model in models:
        if model.id in resolved:
            continue
        settings = effective_settings(ctx, model.vendor_id[0], model.vendor_part_ids[0], table)
        for note in settings.notes:
            click.echo(f"pyopenib: warning: device {model.id}: {note}", err=True)
        check_device(ctx, settings, DeviceLimits.of(model), min_largest, what)
        resolved[model.id] = settings
    return list(resolved.values())
