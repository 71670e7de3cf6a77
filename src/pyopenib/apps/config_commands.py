"""``pyopenib info`` and ``pyopenib ini``: the commands that show the configuration.

``info`` prints the MCA variables like ``ompi_info --param btl openib --level N``
(optionally the effective settings of one device); ``ini check`` validates
device-params INI files; ``ini show`` resolves one device's INI values and says which
file, line and section each came from. The settings are read from the process
(``load_mca_from_process``), as ``ompi_info`` reads them.
"""

from __future__ import annotations

import click

from ..config.device_ids import DEVICES_TOML, device_ids
from ..config.device_params import load_device_params
from ..config.effective import effective_settings
from ..config.info import render_effective, render_human, render_parsable
from ..config.mca import load_mca_from_process
from ..config.variables import ConversionError, parse_integer
from ..errors import PyopenibError, register_topics
from .job_settings import echo_warnings, ini_table, param_files

__all__ = ["info", "ini"]

register_topics(
    {
        "info-invalid-level": "--level {level}: the level must be an integer from 1 to 9",
        "cli-bad-id": "{option} {value!r}: {reason}",
        "cli-device-choice": (
            "give either --device NAME or both --vendor-id and --part-id (got {given})"
        ),
    }
)


def _id(option: str, value: str | None) -> int | None:
    if value is None:
        return None
    try:
        number = parse_integer(value)
    except ConversionError as exc:
        raise PyopenibError("cli-bad-id", option=option, value=value, reason=exc.reason) from None
    if not 0 <= number < 2**32:
        raise PyopenibError("cli-bad-id", option=option, value=value, reason="out of range")
    return number


def _device_selection(device, vendor_id, part_id, devices_file) -> tuple[int, int] | None:
    vendor, part = _id("--vendor-id", vendor_id), _id("--part-id", part_id)
    if device is None and vendor is None and part is None:
        return None
    if device is not None and vendor is None and part is None:
        vendor, part, _ = device_ids(device, devices_file)
        return vendor, part
    if device is None and vendor is not None and part is not None:
        return vendor, part
    given = ", ".join(
        name
        for name, value in (("--device", device), ("--vendor-id", vendor), ("--part-id", part))
        if value is not None
    )
    raise PyopenibError("cli-device-choice", given=given)


def _device_options(func):
    func = click.option(
        "--devices-file",
        default=DEVICES_TOML,
        show_default=True,
        help="Device models file that maps --device names to PCI ids.",
    )(func)
    func = click.option("--part-id", help="PCI vendor part id (decimal or 0x hex).")(func)
    func = click.option("--vendor-id", help="PCI vendor id (decimal or 0x hex).")(func)
    func = click.option("--device", help="Device model name or alias (from --devices-file).")(func)
    return func


@click.command("info")
@click.option(
    "--level", default="9", show_default=True, help="Show variables up to this level (1-9)."
)
@click.option("--parsable", "--parseable", is_flag=True, help="ompi_info's --parsable format.")
@click.option("--all", "show_all", is_flag=True, help="Also show the generic MCA variables.")
@click.option("--mca", nargs=2, multiple=True, metavar="NAME VALUE", help="Set an MCA variable.")
@_device_options
def info(level, parsable, show_all, mca, device, vendor_id, part_id, devices_file):
    """MCA variables with value, source, level, type and help, like
    `ompi_info --param btl openib --level 9`; with a device, its effective settings."""
    try:
        level_number = int(level)
    except ValueError:
        level_number = 0
    if not 1 <= level_number <= 9:
        raise PyopenibError("info-invalid-level", level=level)
    selection = _device_selection(device, vendor_id, part_id, devices_file)
    ctx = load_mca_from_process(list(mca))
    echo_warnings(ctx)
    render = render_parsable if parsable else render_human
    for line in render(ctx, level_number, include_generic=show_all):
        click.echo(line)
    if selection is not None:
        settings = effective_settings(ctx, *selection, ini_table(ctx))
        if not parsable:
            click.echo()
        for line in render_effective(settings, parsable=parsable):
            click.echo(line)


@click.group("ini")
def ini():
    """Validate and query device-params INI files."""


@ini.command("check")
@click.argument("files", nargs=-1, required=True)
def check(files):
    """Report every error and warning in FILES (exit 1 if there is any)."""
    table = load_device_params(files, strict=False)
    for diagnostic in table.diagnostics:
        click.echo(str(diagnostic))
    if table.diagnostics:
        errors = len(table.errors)
        warnings = len(table.diagnostics) - errors
        click.echo(f"pyopenib: {errors} error(s), {warnings} warning(s)", err=True)
        raise SystemExit(1)
    click.echo(f"{len(files)} file(s) OK: {len(table.sections)} sections")


@ini.command("show")
@_device_options
@click.option(
    "--file",
    "files",
    multiple=True,
    help="INI file to read (repeatable; default: btl_openib_device_param_files).",
)
def show(device, vendor_id, part_id, devices_file, files):
    """The resolved INI values for one device and the file:line each came from."""
    selection = _device_selection(device, vendor_id, part_id, devices_file)
    if selection is None:
        raise PyopenibError("cli-device-choice", given="nothing")
    if not files:
        ctx = load_mca_from_process()
        echo_warnings(ctx)
        files = param_files(ctx)
    table = load_device_params(files)
    params = table.lookup(*selection)
    vendor, part = selection
    if params.found:
        click.echo(f"vendor 0x{vendor:04x} part {part}: section [{params.section}]")
    else:
        click.echo(f"vendor 0x{vendor:04x} part {part}: no section; [default] values apply")
    for key, value in params.items():
        via = " via [default]" if key in params.from_default else ""
        click.echo(f"  {key} = {_ini_text(value.value)}    ({value.where()}{via})")


def _ini_text(value: object) -> str:
    return str(int(value)) if isinstance(value, bool) else str(value)
