"""``mpi4py.typing`` is written twice, as mpi4py ships it: the module a program imports
(``typing.py``, documented) and the stub a type checker reads (``typing.pyi``; mpi4py's
``test_package`` wants a ``.pyi`` beside every module). The stub cannot import the
module's definitions (a stub is read, not run), so this keeps the two the same: the same
exported names, the same alias expressions, the same protocol signatures."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "pyopenib" / "mpi" / "mpi4py_package"


def _declarations(path: Path) -> dict[str, str]:
    """Name -> the declaration's shape: an alias's expression, a class's bases and its
    methods' signatures (decorators, arguments, annotations; bodies and docstrings are
    what the two files may differ in)."""
    out = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            out[ast.unparse(node.targets[0])] = ast.unparse(node.value)
        elif isinstance(node, ast.ClassDef):
            methods = [
                f"{[ast.unparse(d) for d in m.decorator_list]} {m.name}({ast.unparse(m.args)})"
                f" -> {ast.unparse(m.returns) if m.returns else None}"
                for m in node.body
                if isinstance(m, ast.FunctionDef)
            ]
            out[node.name] = f"class({[ast.unparse(b) for b in node.bases]}) {methods}"
    return out


def test_the_stub_declares_what_the_module_defines():
    module = _declarations(PACKAGE / "typing.py")
    stub = _declarations(PACKAGE / "typing.pyi")
    assert module == stub
    assert len(module) > 20  # the aliases, the protocols, __all__ and the type variables
