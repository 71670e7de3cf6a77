"""The layering rule of docs/ARCHITECTURE.md, read from the source with ``ast``.

What the rule is (docs/ARCHITECTURE.md, "Who may call whom"):

- Floors: ``sim``, ``config`` and ``errors.py`` may be imported by every package. ``errors``
  imports nothing; ``config`` imports only ``errors`` (no simulation, no layer); ``sim``
  imports only the other floors.
- The stack ``mpi -> pml -> btl -> verbs -> hw``: each layer imports the floors and the one
  layer directly below it, nothing else of the stack and nothing above it.
- ``report`` (trace exporters) reads the tracer's events as they are: floors only.
- The applications (``check``, ``bench``, ``apps``, and the top-level ``cli``, ``options``,
  ``outputs``, ``workers`` that only commands use) sit above everything and may import any
  of it.
- No layer reaches two floors down through the objects it holds: btl holds verbs objects
  and never touches their ``hw``/``nic``/``model`` parts; mpi holds the PML and never its
  ``btl``.
- No module touches another package's private names (``sim._loop``, ``proc._greenlet``,
  a ``_private`` module of another package).
- No layer probes another's objects for a capability (``getattr(btl, "limits", None)``,
  ``hasattr``): an interface declares what it offers.
- No module is named like a top-level package of another's (``btl/report.py`` beside the
  ``report`` package): a reader of ``from .report import`` must not have to check which.

Today's breaches are listed in ``KNOWN_VIOLATIONS``, each with the issue-12 bullet that
removes it. The test fails on any breach not listed, on a listed breach that occurs more
often than listed, and on a listed breach that no longer occurs (so the list only shrinks).
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "pyopenib"
DOC = Path(__file__).resolve().parents[1] / "docs" / "ARCHITECTURE.md"

FLOORS = ("errors", "config", "sim")
STACK = ("hw", "verbs", "btl", "pml", "mpi")  # each above the one before it
TOOLS = ("report",)
APPS = ("check", "bench", "apps", "cli", "options", "outputs", "workers")
FLOOR_IMPORTS = {"errors": (), "config": ("errors",), "sim": ("errors", "config")}

HW_HANDLES = ("hw", "nic", "model")
"""The verbs objects' handles on their hardware: ``Context.nic``, ``Context.model``,
``QueuePair.hw``, ``MemoryRegion.hw``, ``SharedReceiveQueue.hw``. Above verbs, reading
one is a reach two floors down (``test_hw_handles_are_what_verbs_calls_them`` keeps this
list true)."""

TWO_DOWN = {"btl": HW_HANDLES, "pml": HW_HANDLES, "mpi": HW_HANDLES + ("btl",)}
"""Per layer, the attributes that lead past the layer below it."""


@dataclass(frozen=True, order=True)
class Violation:
    """One kind of breach in one file: ``rule`` is ``import``, ``reach``, ``private``,
    ``probe`` or ``shadow``; ``target`` what was reached (a module, ``.attr``, a private name, or the
    probed name). Occurrences are counted separately, so line moves do not matter."""

    path: str
    rule: str
    target: str


KNOWN_VIOLATIONS: dict[Violation, tuple[int, str]] = {}
"""Every breach today: (how many occurrences at most, the issue-12 bullet that removes it).
Empty since issue 12 closed the last ones (btl's device lookup goes through verbs, mpi
waits and opens osc through the PML, MPI's error classes are ``mpi/error_classes.py``);
a breach that must be tolerated for a while is listed here with its bullet."""


# -- the checker -------------------------------------------------------------------------


def package_of(rel: str) -> str:
    """``btl/module.py`` -> ``btl``; a top-level module ``cli.py`` -> ``cli``."""
    first = rel.split("/", 1)[0]
    return first[:-3] if first.endswith(".py") else first


def _module_parts(rel: str) -> list[str]:
    parts = ["pyopenib", *rel[:-3].split("/")]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imported(rel: str, tree: ast.AST):
    """(node, absolute module, imported names) for every pyopenib import in the module,
    including those inside functions."""
    parts = _module_parts(rel)
    package = parts if rel.endswith("__init__.py") else parts[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "pyopenib" or module.startswith("pyopenib."):
                yield node, module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "pyopenib" or alias.name.startswith("pyopenib."):
                    yield node, alias.name, []


def _import_allowed(src: str, dst: str) -> bool:
    if src == dst or dst == "pyopenib":  # the root package holds only __version__
        return True
    if src in FLOORS:
        return dst in FLOOR_IMPORTS[src]
    if dst in FLOORS:
        return True
    if src in STACK:
        level = STACK.index(src)
        return level > 0 and dst == STACK[level - 1]
    if src in TOOLS:
        return False
    return src in APPS


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def defined_names(tree: ast.AST) -> set[str]:
    """Names a module defines for others to use: functions, classes, module- and
    class-level assignment targets, annotated fields, ``__slots__`` entries and attributes
    set anywhere (``obj.name = ...``). A function's local variables are not among them."""
    names: set[str] = set()

    def targets_of(node) -> list[ast.AST]:
        if isinstance(node, ast.Assign):
            return node.targets
        if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            return [node.target]
        return []

    def visit(body, in_function: bool) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                visit(node.body, isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))
                continue
            for target in targets_of(node):
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Attribute):
                        names.add(sub.attr)
                    elif isinstance(sub, ast.Name) and not in_function:
                        names.add(sub.id)
            if any(isinstance(t, ast.Name) and t.id == "__slots__" for t in targets_of(node)):
                if isinstance(node.value, (ast.Tuple, ast.List)):
                    names.update(
                        e.value
                        for e in node.value.elts
                        if isinstance(e, ast.Constant) and isinstance(e.value, str)
                    )
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    visit(inner, in_function)

    visit(tree.body, False)
    return names


def _probe_name(node: ast.Call) -> str | None:
    """``getattr(x, "name", default)`` or ``hasattr(x, "name")`` -> ``name``."""
    func = node.func
    if not isinstance(func, ast.Name):
        return None
    wanted = {"getattr": 3, "hasattr": 2}.get(func.id)
    if wanted is None or len(node.args) != wanted:
        return None
    arg = node.args[1]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    return None


def check_sources(sources: dict[str, str]) -> Counter:
    """Every breach in ``sources`` (path relative to ``src/pyopenib`` -> text), counted."""
    trees = {rel: ast.parse(text, rel) for rel, text in sources.items()}
    defined: dict[str, set[str]] = {}
    for rel, tree in trees.items():
        defined.setdefault(package_of(rel), set()).update(defined_names(tree))

    def elsewhere(name: str, own: str) -> bool:
        return name not in defined.get(own, set()) and any(
            name in names for package, names in defined.items() if package != own
        )

    top_level = {package_of(rel) for rel in trees} | set(FLOORS + STACK + TOOLS + APPS)
    top_level = {name for name in top_level if not name.startswith("__")}
    found: Counter = Counter()
    for rel, tree in trees.items():
        own = package_of(rel)
        name = rel.rsplit("/", 1)[-1][:-3]
        if "/" in rel and name in top_level and name != own:
            found[Violation(rel, "shadow", name)] += 1
        for _node, module, names in _imported(rel, tree):
            parts = module.split(".")
            dst = parts[1] if len(parts) > 1 else "pyopenib"
            if not _import_allowed(own, dst):
                found[Violation(rel, "import", dst)] += 1
            if dst != own:
                if any(_is_private(p) for p in parts[2:]):
                    found[Violation(rel, "private", module)] += 1
                for name in names:
                    if _is_private(name):
                        found[Violation(rel, "private", name)] += 1
        reaches = TWO_DOWN.get(own, ())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                if node.attr in reaches:
                    found[Violation(rel, "reach", "." + node.attr)] += 1
                elif _is_private(node.attr) and elsewhere(node.attr, own):
                    found[Violation(rel, "private", node.attr)] += 1
            elif isinstance(node, ast.Call):
                name = _probe_name(node)
                if name and not name.startswith("__") and elsewhere(name, own):
                    found[Violation(rel, "probe", name)] += 1
    return found


def project_sources() -> dict[str, str]:
    return {p.relative_to(SRC).as_posix(): p.read_text() for p in sorted(SRC.rglob("*.py"))}


# -- the project -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def found() -> Counter:
    return check_sources(project_sources())


def ratchet(found: Counter, known: dict) -> tuple[list[str], list[str]]:
    """(breaches beyond ``known``: unlisted, or more often than listed; listed breaches
    that no longer occur)."""
    new = [
        f"{v.path}: {v.rule} {v.target} x{n}"
        + (f" (listed at most {known[v][0]})" if v in known else "")
        for v, n in sorted(found.items())
        if n > known.get(v, (0, ""))[0]
    ]
    fixed = [f"{v.path}: {v.rule} {v.target}" for v in sorted(known) if not found[v]]
    return new, fixed


def test_no_breach_beyond_the_known_ones(found):
    new, _ = ratchet(found, KNOWN_VIOLATIONS)
    assert not new, "breaks docs/ARCHITECTURE.md's layering:\n" + "\n".join(new)


def test_known_violations_are_still_there(found):
    _, fixed = ratchet(found, KNOWN_VIOLATIONS)
    assert not fixed, "fixed: remove from KNOWN_VIOLATIONS (and docs/ARCHITECTURE.md):\n" + (
        "\n".join(fixed)
    )


def test_the_list_only_shrinks():
    listed = Violation("btl/x.py", "reach", ".hw")
    gone = Violation("btl/y.py", "import", "hw")
    known = {listed: (1, "issue 12, 'x'"), gone: (1, "issue 12, 'y'")}
    found = Counter({listed: 2, Violation("pml/z.py", "probe", "limits"): 1})
    new, fixed = ratchet(found, known)
    assert new == [
        "btl/x.py: reach .hw x2 (listed at most 1)",
        "pml/z.py: probe limits x1",
    ]
    assert fixed == ["btl/y.py: import hw"]


def test_every_known_violation_names_its_issue_bullet():
    assert all(bullet.startswith("issue 12, '") for _, bullet in KNOWN_VIOLATIONS.values())


def test_every_package_is_placed_and_documented():
    packages = {package_of(p.relative_to(SRC).as_posix()) for p in SRC.glob("*")}
    packages = {p for p in packages if (SRC / p).is_dir() and (SRC / p / "__init__.py").exists()}
    placed = set(FLOORS) | set(STACK) | set(TOOLS) | set(APPS)
    assert packages <= placed, f"packages with no place in the layering: {packages - placed}"
    modules = {p.stem for p in SRC.glob("*.py") if p.name != "__init__.py"}
    assert modules <= placed, f"top-level modules with no place: {modules - placed}"
    doc = DOC.read_text()
    missing = sorted(p for p in packages | modules if f"`{p}" not in doc)
    assert not missing, f"docs/ARCHITECTURE.md does not mention: {missing}"
    listed = [f"{v.path}" for v in KNOWN_VIOLATIONS if f"`{v.path}`" not in doc]
    assert not listed, f"docs/ARCHITECTURE.md does not list these known violations: {listed}"


def _doc_references(pattern: str) -> list[str]:
    import re

    return sorted(
        {m for m in re.findall(r"`([^`\s]+)`", DOC.read_text()) if re.fullmatch(pattern, m)}
    )


def test_every_module_the_map_names_exists():
    """A module path on the page (``hw/nic.py``, ``tests/test_layering.py``) is a file of
    the tree: moving or renaming a module without its row fails here."""
    root = SRC.parents[1]
    missing = [
        path
        for path in _doc_references(r"[\w/]+\.py")
        if not (SRC / path).exists() and not (root / path).exists()
    ]
    assert not missing, f"docs/ARCHITECTURE.md names modules that do not exist: {missing}"


def test_every_dotted_name_the_map_names_resolves():
    """A dotted name of three parts or more that starts with a package
    (``config.mca.load_mca_from_process``, ``hw.nic.Nic.raise_async``) is importable:
    the walk from ``--mca`` to the wire names code that exists. (Two-part names on the
    page are mostly the breaches it describes, ``sim._loop``, and are not checked.)"""
    import importlib

    packages = set(FLOORS + STACK + TOOLS + APPS)
    unresolved = []
    for dotted in _doc_references(r"[a-z_]+(\.[A-Za-z_]\w*){2,}"):
        parts = dotted.split(".")
        if parts[0] not in packages:
            continue
        obj = importlib.import_module(f"pyopenib.{parts[0]}")
        for i, part in enumerate(parts[1:], start=1):
            if hasattr(obj, part):
                obj = getattr(obj, part)
                continue
            try:
                obj = importlib.import_module("pyopenib." + ".".join(parts[: i + 1]))
            except ImportError:
                unresolved.append(dotted)
                break
    assert not unresolved, f"docs/ARCHITECTURE.md names what does not exist: {unresolved}"


def test_report_states_the_control_message_size_the_btl_sends():
    """``report.messages`` states the wire size of a control message itself (it may not
    import the BTL); this keeps its statement equal to the BTL's structs."""
    from pyopenib.btl.eager_rdma import FOOTER_LEN
    from pyopenib.btl.frag import CREDIT_BODY, HEADER
    from pyopenib.report.messages import CONTROL_MAX_BYTES

    assert CONTROL_MAX_BYTES == HEADER.size + CREDIT_BODY.size + 8
    assert HEADER.size + CREDIT_BODY.size + FOOTER_LEN <= CONTROL_MAX_BYTES


def test_hw_handles_are_what_verbs_calls_them():
    verbs = defined_names(ast.parse((SRC / "verbs" / "_objects.py").read_text()))
    assert set(HW_HANDLES) <= verbs


# -- the checker catches each kind of breach ------------------------------------------------


def _only(sources: dict[str, str]) -> set[tuple[str, str, str]]:
    return {(v.path, v.rule, v.target) for v in check_sources(sources)}


def test_checker_catches_an_import_two_layers_down():
    assert _only({"btl/x.py": "from ..hw import Nic\n"}) == {("btl/x.py", "import", "hw")}


def test_checker_catches_an_import_from_a_floor_above():
    got = _only({"verbs/x.py": "from pyopenib.btl.frag import HEADER\n"})
    assert got == {("verbs/x.py", "import", "btl")}


def test_checker_catches_a_layer_importing_an_application():
    assert _only({"btl/x.py": "def f():\n    from ..report import write_trace\n"}) == {
        ("btl/x.py", "import", "report")
    }


def test_checker_catches_config_importing_a_layer_or_the_simulator():
    got = _only({"config/x.py": "from ..sim import Tracer\nfrom ..hw import Nic\n"})
    assert got == {("config/x.py", "import", "sim"), ("config/x.py", "import", "hw")}


def test_checker_catches_the_exporters_reading_a_layer():
    got = _only({"report/x.py": "from ..btl.frag import HEADER\n"})
    assert got == {("report/x.py", "import", "btl")}


def test_checker_allows_floors_and_the_layer_below():
    sources = {
        "btl/x.py": "from ..verbs import QueuePair\nfrom ..sim import Tracer\n"
        "from ..config import McaContext\nfrom ..errors import PyopenibError\n"
        "from . import frag\n",
        "config/y.py": "from ..errors import PyopenibError\nfrom .. import __version__\n",
        "check/z.py": "from ..apps.scenarios import SCENARIOS\nfrom ..report import write_trace\n",
    }
    assert _only(sources) == set()


def test_checker_catches_btl_reaching_hw_through_verbs_objects():
    src = "def f(ctx, qp, mr):\n    return ctx.model.mtu, qp.hw.rq, ctx.nic.lid, mr.hw\n"
    got = check_sources({"btl/x.py": src})
    assert got == Counter(
        {
            Violation("btl/x.py", "reach", ".model"): 1,
            Violation("btl/x.py", "reach", ".hw"): 2,
            Violation("btl/x.py", "reach", ".nic"): 1,
        }
    )


def test_checker_catches_mpi_reaching_past_the_pml():
    got = _only({"mpi/x.py": "def f(pml):\n    pml.btl.wait_for_activity()\n"})
    assert got == {("mpi/x.py", "reach", ".btl")}


def test_checker_catches_private_names_of_another_package():
    sources = {
        "sim/k.py": "class S:\n    def __init__(self):\n        self._loop = None\n",
        "btl/m.py": "def f(sim, proc):\n    return sim._loop, proc._own\n"
        "class E:\n    def __init__(self):\n        self._own = 1\n",
        "mpi/r.py": "from ..sim._kernel import Simulator\nfrom ..sim import _helper\n",
    }
    assert _only(sources) == {
        ("btl/m.py", "private", "_loop"),
        ("mpi/r.py", "private", "pyopenib.sim._kernel"),
        ("mpi/r.py", "private", "_helper"),
    }


def test_checker_catches_capability_probes_across_layers():
    sources = {
        "btl/i.py": "class Btl:\n    def limits(self, peer):\n        return 1\n",
        "pml/o.py": "def f(btl, buf):\n    a = getattr(btl, 'limits', None)\n"
        "    b = hasattr(btl, 'limits')\n    c = getattr(buf, '__array_interface__', None)\n"
        "    return a, b, c, getattr(btl, 'unknown_here', None)\n",
    }
    got = check_sources(sources)
    assert got == Counter({Violation("pml/o.py", "probe", "limits"): 2})


def test_checker_catches_a_layer_or_a_floor_importing_the_applications():
    sources = {
        "verbs/x.py": "from ..apps.perftest import run_perftest\n",
        "config/y.py": "def f():\n    from ..apps.job_settings import job_settings\n",
        "report/z.py": "from ..cli import main\n",
        "apps/ok.py": "from ..hw import get_device_model\nfrom ..mpi.runner import run_job\n",
    }
    assert _only(sources) == {
        ("verbs/x.py", "import", "apps"),
        ("config/y.py", "import", "apps"),
        ("report/z.py", "import", "cli"),
    }


def test_checker_catches_each_breach_issue_12_names():
    """The breaches issue 12 found, each as a synthetic module: mpi taking the BTL's
    exception class, btl setting a hook on a hardware MR, btl reading the peer NIC's work
    queue, btl importing the report package, the exporters importing the BTL's frags,
    a module shadowing a package. (perftest importing hw from inside verbs is legal for
    verbs; it was a breach because perftest is an application, and it moved to apps.)"""
    sources = {
        "mpi/runner.py": "from ..btl import TransportError\n",
        "btl/eager.py": "def watch(mr, cb):\n    mr.hw.on_remote_write = cb\n",
        "btl/rep.py": "def queued(qp):\n    return len(qp.hw.wq.fifo)\n",
        "btl/cmd.py": "from ..report import write_trace\n",
        "report/messages.py": "from ..btl.frag import HEADER\n",
        "btl/report.py": "",
    }
    assert _only(sources) == {
        ("mpi/runner.py", "import", "btl"),
        ("btl/eager.py", "reach", ".hw"),
        ("btl/rep.py", "reach", ".hw"),
        ("btl/cmd.py", "import", "report"),
        ("report/messages.py", "import", "btl"),
        ("btl/report.py", "shadow", "report"),
    }


def test_checker_allows_a_module_named_like_its_own_package_or_a_plain_name():
    sources = {"report/report.py": "", "btl/credits.py": "", "apps/stats.py": ""}
    assert _only(sources) == set()
