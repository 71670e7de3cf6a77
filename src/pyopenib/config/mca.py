"""MCA variable values and where each came from: Open MPI's ``mca_base_var`` sources.

Sources, lowest to highest: the registered default < parameter files (``name = value``
lines; ``mca_base_param_files``, default ``$HOME/.openmpi/mca-params.conf``; when several
files set a variable the leftmost file wins) < the environment (``OMPI_MCA_<name>``) <
``--mca <name> <value>`` on pyopenib's command line (source ``command line``; Open MPI
forwards mpirun's ``--mca`` through the environment and so reports ``environment``).

``load_mca`` is a pure function of its arguments: the environment and home directory
are passed in. ``load_mca_from_process`` is the one place that reads ``os.environ``.
Nothing here prints: deprecation and misspelling notices are collected as
``McaWarning`` objects for the caller to show.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from ..errors import TOPICS, PyopenibError
from . import topics  # noqa: F401  (registers the messages)
from .catalogue import openib_variables
from .keyval import Assignment, Problem, lex
from .variables import ConversionError, Variable, parse_value, render_value

__all__ = [
    "McaContext",
    "McaValue",
    "McaWarning",
    "Source",
    "SourceKind",
    "load_mca",
    "load_mca_from_process",
]

_ENV_PREFIX = "OMPI_MCA_"


class SourceKind(StrEnum):
    """The kinds of source, lowest to highest priority (a higher one wins); the value is
    Open MPI's label (``ompi_info``'s *source* column)."""

    DEFAULT = "default"
    PRESET = "preset"
    """A tool's own default (``default of pyopenib check``), below every user setting."""
    FILE = "file"
    ENVIRONMENT = "environment"
    COMMAND_LINE = "command line"


_PRIORITY = {kind: rank for rank, kind in enumerate(SourceKind)}


@dataclass(frozen=True, slots=True)
class Source:
    """Where a value came from; ``str()`` is Open MPI's label for it."""

    kind: SourceKind
    path: str | None = None
    """For ``file``, the file; for ``preset``, the tool whose default it is."""
    line: int | None = None

    def __str__(self) -> str:
        if self.kind is SourceKind.FILE:
            return f"file ({self.path}:{self.line})"
        if self.kind is SourceKind.PRESET:
            return f"default of {self.path}"
        return str(self.kind)


DEFAULT = Source(SourceKind.DEFAULT)


@dataclass(frozen=True, slots=True)
class McaValue:
    """A variable's typed value, its source, and the name it was given under."""

    variable: Variable
    value: object
    source: Source
    given_as: str


@dataclass(frozen=True, slots=True)
class McaWarning:
    """A notice for the user (deprecated name, unknown openib name); not fatal."""

    topic: str
    message: str


@dataclass(frozen=True, slots=True)
class _Setting:
    text: str
    source: Source
    given_as: str


class McaContext:
    """The resolved MCA variables of one process (every rank of a job shares them)."""

    def __init__(self, values: Mapping[str, McaValue], warnings: Iterable[McaWarning]):
        self._values = dict(values)
        self._names = {}
        for full_name, mca_value in self._values.items():
            var = mca_value.variable
            for alias in (full_name, var.long_name, *var.all_synonyms):
                self._names[alias] = full_name
        self.warnings: tuple[McaWarning, ...] = tuple(warnings)

    def variables(self) -> tuple[Variable, ...]:
        """Registered variables in registration order."""
        return tuple(v.variable for v in self._values.values())

    def value(self, name: str) -> McaValue:
        """The full record of ``name`` (full name, long name or synonym)."""
        try:
            return self._values[self._names[name]]
        except KeyError:
            raise PyopenibError("mca-unknown-variable", name=name, source="lookup") from None

    def get(self, name: str) -> object:
        """The typed value (bool, int, str; an enum's name, e.g. ``"own"``)."""
        return self.value(name).value

    def source(self, name: str) -> str:
        """Open MPI's source label: ``default``, ``file (PATH:LINE)``, ``environment``,
        ``command line``."""
        return str(self.value(name).source)

    def is_default(self, name: str) -> bool:
        return self.value(name).source.kind is SourceKind.DEFAULT

    def explicit_pairs(self) -> list[tuple[str, str]]:
        """Every variable set anywhere (preset, file, environment, command line) as
        ``(full name, text)`` in registration order: what a worker process or a Dask
        worker gets as its command line, so it resolves the same values without reading
        this process's environment or files. ``mca_base_param_files`` is left out: its
        files were read here."""
        pairs = []
        for full_name, mca_value in self._values.items():
            var = mca_value.variable
            if mca_value.source.kind is SourceKind.DEFAULT or full_name == "mca_base_param_files":
                continue
            value = mca_value.value - var.increment if var.increment else mca_value.value
            pairs.append((full_name, render_value(var, value)))
        return pairs


def load_mca_from_process(
    cli_pairs: Iterable[tuple[str, str]] = (), presets: Iterable[tuple[str, str, str]] = ()
) -> McaContext:
    """``load_mca`` with this process's environment and home directory: the one path
    every command (run, scenario, check, bench, perftest, info) resolves settings by."""
    return load_mca(
        cli_pairs, environ=dict(os.environ), home=os.path.expanduser("~"), presets=presets
    )


def load_mca(
    cli_pairs: Iterable[tuple[str, str]] = (),
    environ: Mapping[str, str] | None = None,
    home: str | os.PathLike | None = None,
    presets: Iterable[tuple[str, str, str]] = (),
) -> McaContext:
    """Resolve every registered variable from defaults, param files, ``environ`` and
    ``cli_pairs`` (``--mca`` name/value pairs, in order). ``environ=None`` is an empty
    environment and ``home=None`` means no home directory (no default param file).

    ``presets`` are ``(name, text, tool)``: a tool's own default (``pyopenib check``
    explores small queues), above the registered default and the device's INI value,
    below every setting of the user's; its source reads ``default of <tool>``."""
    environ = environ or {}
    home_str = os.fspath(home) if home is not None else None
    variables = openib_variables(home_str)
    names = _name_index(variables)
    warnings: list[McaWarning] = []
    settings: dict[str, list[_Setting]] = {v.full_name: [] for v in variables}

    for name, text, tool in presets:
        var, _ = names[name]
        settings[var.full_name].append(_Setting(text, Source(SourceKind.PRESET, tool), name))
    cli = _collect_cli(cli_pairs, names, warnings)
    env = _collect_env(environ, names, warnings)
    files_var = names["mca_base_param_files"][0]
    file_list = _param_file_list(files_var, cli, env, home_str)
    for full_name, found in _collect_files(file_list, names, warnings, home_str).items():
        settings[full_name].extend(found)
    for found in (env, cli):
        for full_name, setting in found.items():
            settings[full_name].append(setting)

    values: dict[str, McaValue] = {}
    resolved: dict[str, object] = {}
    warned: set[str] = set()
    for var in variables:
        chosen = _highest(var, settings[var.full_name])
        if chosen is None:
            default = var.default_fn(resolved) if var.default_fn else var.default
            mca_value = McaValue(var, default, DEFAULT, var.full_name)
        else:
            if chosen.given_as in var.deprecated_synonyms and chosen.given_as not in warned:
                warned.add(chosen.given_as)
                warnings.append(_deprecated(var, chosen))
            try:
                typed = parse_value(var, chosen.text, home_str)
            except ConversionError as exc:
                raise PyopenibError(
                    "mca-invalid-value",
                    name=_named(var, chosen.given_as),
                    value=chosen.text,
                    source=str(chosen.source),
                    reason=exc.reason,
                ) from None
            mca_value = McaValue(var, typed, chosen.source, chosen.given_as)
        if var.increment:
            # Open MPI changes the storage after registration (eager_rdma_num++), so
            # what ompi_info and the BTL read is the value plus the increment.
            mca_value = replace(mca_value, value=mca_value.value + var.increment)
        if var.floor_fn is not None:
            floor = var.floor_fn(resolved)
            if mca_value.value < floor:
                mca_value = replace(mca_value, value=floor)
        values[var.full_name] = mca_value
        resolved[var.full_name] = mca_value.value
    return McaContext(values, warnings)


def _name_index(variables: tuple[Variable, ...]) -> dict[str, tuple[Variable, bool]]:
    """Every accepted name -> (variable, is_synonym)."""
    index: dict[str, tuple[Variable, bool]] = {}
    for var in variables:
        index[var.full_name] = (var, False)
        index[var.long_name] = (var, False)
        for synonym in var.all_synonyms:
            index[synonym] = (var, True)
    return index


def _named(var: Variable, given_as: str) -> str:
    if given_as in (var.full_name, var.long_name):
        return var.full_name
    return f"{var.full_name} (given as {given_as})"


def _highest(var: Variable, found: list[_Setting]) -> _Setting | None:
    """The winning setting: the highest source; at equal source a synonym beats the
    variable's own name, because Open MPI resolves synonyms after the original."""
    best = None
    best_key = None
    for setting in found:
        key = (_PRIORITY[setting.source.kind], setting.given_as in var.all_synonyms)
        if best_key is None or key >= best_key:
            best, best_key = setting, key
    return best


def _deprecated(var: Variable, setting: _Setting) -> McaWarning:
    facts = {"old": setting.given_as, "new": var.full_name, "source": str(setting.source)}
    return McaWarning("mca-deprecated", TOPICS["mca-deprecated"].format(**facts))


def _unknown(name: str, source: Source) -> McaWarning:
    facts = {"name": name, "source": str(source)}
    return McaWarning("mca-unknown-openib-name", TOPICS["mca-unknown-openib-name"].format(**facts))


def _two_names(var: Variable, winner: _Setting, loser: _Setting) -> McaWarning:
    facts = {
        "name": var.full_name,
        "winner": winner.given_as,
        "winner_value": winner.text,
        "winner_source": str(winner.source),
        "loser": loser.given_as,
        "loser_value": loser.text,
        "loser_source": str(loser.source),
    }
    return McaWarning("mca-two-names", TOPICS["mca-two-names"].format(**facts))


def _no_effect(name: str, source: Source) -> McaWarning:
    facts = {"name": name, "source": str(source)}
    return McaWarning("mca-param-files-in-file", TOPICS["mca-param-files-in-file"].format(**facts))


def _collect_cli(pairs, names, warnings) -> dict[str, _Setting]:
    found: dict[str, _Setting] = {}
    given: dict[str, str] = {}
    source = Source(SourceKind.COMMAND_LINE)
    for name, text in pairs:
        if name in given:
            raise PyopenibError("mca-cli-pair-repeated", name=name, first=given[name], second=text)
        given[name] = text
        if len(text) >= 2 and text[0] == text[-1] == '"':
            text = text[1:-1]  # mpirun strips one pair of surrounding double quotes
        entry = names.get(name)
        if entry is None:
            warnings.append(_unknown(name, source))
            continue
        var, _ = entry
        _keep(found, var, _Setting(text, source, name), warnings)
    return found


def _collect_env(environ: Mapping[str, str], names, warnings) -> dict[str, _Setting]:
    found: dict[str, _Setting] = {}
    source = Source(SourceKind.ENVIRONMENT)
    for key in sorted(environ):
        if not key.startswith(_ENV_PREFIX):
            continue
        name = key[len(_ENV_PREFIX) :]
        entry = names.get(name)
        if entry is None:
            if name.startswith("btl_openib_"):
                warnings.append(_unknown(key, source))
            continue
        var, _ = entry
        _keep(found, var, _Setting(environ[key], source, name), warnings)
    return found


def _keep(found: dict[str, _Setting], var: Variable, setting: _Setting, warnings) -> None:
    """Keep one setting per variable and source: a synonym beats the own name, and the
    long name (``opal_...``) beats the short one, as Open MPI looks them up. Two names
    of one variable in one source is reported: Open MPI silently keeps one of them."""
    current = found.get(var.full_name)
    if current is not None and current.given_as != setting.given_as:
        winner, loser = (current, setting)
        if _rank(var, setting.given_as) >= _rank(var, current.given_as):
            winner, loser = setting, current
        warnings.append(_two_names(var, winner, loser))
    if current is None or _rank(var, setting.given_as) >= _rank(var, current.given_as):
        found[var.full_name] = setting


def _rank(var: Variable, given_as: str) -> int:
    if given_as in var.all_synonyms:
        return 2
    return 1 if given_as == var.long_name else 0


def _param_file_list(files_var, cli, env, home) -> tuple[list[str], Source]:
    setting = cli.get(files_var.full_name) or env.get(files_var.full_name)
    if setting is None:
        text, source = files_var.default, DEFAULT
    else:
        text, source = setting.text, setting.source
    text = parse_value(files_var, text, home)
    if text.strip() == "none":
        return [], source
    return [p.strip() for p in text.split(",") if p.strip()], source


def _collect_files(file_list, names, warnings, home) -> dict[str, list[_Setting]]:
    paths, list_source = file_list
    found: dict[str, list[_Setting]] = {}
    # Leftmost wins: read left to right and keep only the first file's value.
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            if list_source.kind is SourceKind.DEFAULT:
                continue  # the default home file need not exist
            raise PyopenibError(
                "mca-param-file-missing",
                path=path,
                reason=exc.strerror or type(exc).__name__,
                source=f"mca_base_param_files from {list_source}",
            ) from None
        in_this_file: dict[str, _Setting] = {}
        for item in lex(text, sections=False):
            if isinstance(item, Problem):
                raise PyopenibError(
                    "mca-param-file-syntax", path=path, line=item.line, reason=item.reason
                )
            assert isinstance(item, Assignment)
            source = Source(SourceKind.FILE, path, item.line)
            entry = names.get(item.key)
            if entry is None:
                if item.key.startswith("btl_openib_"):
                    warnings.append(_unknown(item.key, source))
                continue
            var, _ = entry
            if var.full_name == "mca_base_param_files":
                warnings.append(_no_effect(item.key, source))
                continue
            _keep(in_this_file, var, _Setting(item.value, source, item.key), warnings)
        for full_name, setting in in_this_file.items():
            if full_name not in found:
                found[full_name] = [setting]
    return found
