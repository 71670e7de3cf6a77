"""Click parameter types the commands share: every number on a command line has a type
with a range, so a bad value is click's one-line usage error (exit 2) before any work,
never a traceback or silent nonsense later (``--timeout nan``, ``--cpu-scale -5``,
``--device ''``)."""

from __future__ import annotations

import math

import click

__all__ = [
    "CPU_SCALE",
    "DEVICE_NAME",
    "FiniteFloat",
    "REPLAY_TOKEN",
    "SECONDS",
    "DeviceName",
    "cpu_scale_option",
    "ReplayTokenText",
]


class FiniteFloat(click.ParamType):
    """A finite float (no ``nan``, no ``inf``) within ``[low, high]``; ``low_open``
    excludes ``low`` itself. click's FloatRange lets ``nan`` through (every comparison
    with nan is false)."""

    name = "float"

    def __init__(self, low: float | None = None, high: float | None = None, low_open=False):
        self.low, self.high, self.low_open = low, high, low_open

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            number = value
        else:
            try:
                number = float(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if self.low is not None and (number < self.low or (self.low_open and number == self.low)):
            bound = f"> {self.low:g}" if self.low_open else f">= {self.low:g}"
            self.fail(f"{value!r} is out of range: it must be {bound}", param, ctx)
        if self.high is not None and number > self.high:
            self.fail(f"{value!r} is out of range: it must be <= {self.high:g}", param, ctx)
        return number


class DeviceName(click.ParamType):
    """A device model id or alias from ``devices.toml``, checked when parsed (an empty
    or unknown name lists the valid ones)."""

    name = "device"

    def convert(self, value, param, ctx):
        from .errors import PyopenibError
        from .hw import get_device_model

        text = str(value).strip()
        if not text:
            self.fail("the device name is empty", param, ctx)
        try:
            get_device_model(text)
        except PyopenibError as exc:
            self.fail(str(exc), param, ctx)
        return text


SECONDS = FiniteFloat(0.0, high=1e9, low_open=True)
"""A positive number of seconds, at most 10^9 (about 32 years): simulated time is an
integer of picoseconds, and ``1e300`` seconds of it is no number at all."""

CPU_SCALE = FiniteFloat(0.0)
"""A finite factor >= 0 on the host model's costs (0: a free host)."""


def cpu_scale_option(f):
    """``--cpu-scale F`` of every command that runs a job: the host model's software
    costs (``data/hosts.toml``) times F, charged as simulated time."""
    return click.option(
        "--cpu-scale",
        type=CPU_SCALE,
        default=1.0,
        show_default=True,
        help="Host software costs (MPI, ob1, openib; data/hosts.toml) x F as simulated "
        "time; 0 = a free host.",
    )(f)


DEVICE_NAME = DeviceName()


class ReplayTokenText(click.ParamType):
    """``--replay TOKEN`` (check, scenario, run): the token decoded, a
    ``check.replay.ReplayToken``; a damaged token is a usage error naming why."""

    name = "token"

    def convert(self, value, param, ctx):
        from .check.replay import ReplayToken
        from .errors import PyopenibError

        if isinstance(value, ReplayToken):
            return value
        try:
            return ReplayToken.decode(str(value))
        except PyopenibError as exc:
            self.fail(str(exc).removeprefix("--replay: "), param, ctx)


REPLAY_TOKEN = ReplayTokenText()


# -- options several commands declare the same way -----------------------------------------
def mca_option(help_text: str = "Set an MCA variable (as mpirun --mca)."):
    """``--mca NAME VALUE``, repeatable: the pairs go to the one settings path."""
    return click.option("--mca", nargs=2, multiple=True, metavar="NAME VALUE", help=help_text)


def credits_qp_option(
    help_text: str = "btl_openib_credits_qp for every rank (default: MCA/INI resolution).",
):
    """``--credits-qp``: the policy enum of ``btl_openib_credits_qp``, for every rank."""
    choice = click.Choice(["auto", "smallest", "own"])
    return click.option("--credits-qp", type=choice, default=None, help=help_text)


def device_options(peer_help: str = "Device of the other ranks (mixed cluster)."):
    """``--device`` (default the T3, the seed's device) and ``--peer-device``."""

    def apply(f):
        f = click.option("--peer-device", type=DEVICE_NAME, default=None, help=peer_help)(f)
        return click.option(
            "--device",
            type=DEVICE_NAME,
            default="chelsio-t3",
            show_default=True,
            help="Device model id.",
        )(f)

    return apply


replay_option = click.option(
    "--replay",
    "token",
    type=REPLAY_TOKEN,
    default=None,
    metavar="TOKEN",
    help="Replay the execution of a `pyopenib check` counterexample (its token).",
)
"""``--replay TOKEN`` of check, scenario and run."""
