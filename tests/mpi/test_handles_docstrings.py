"""Every callable of ``mpi4py.MPI`` is documented as mpi4py documents its own, by the rules of
mpi4py 4.1.2's ``test/test_doc.py`` (run on the module in-process, so a new undocumented
method fails here in a second, not only in the mpi4py suite).

mpi4py's docstrings carry Cython's signature line, then the text: a summary line that is
one sentence starting with a capital, the whole ending with a period. The walk is
``test_doc``'s: the module, its classes of the MPI metaclass, and the functions,
class/static methods and properties in their own ``vars``."""

import textwrap
import types

from pyopenib.mpi.namespace import build_mpi_module
from pyopenib.mpi.surface import MpiClass

_CALLABLES = (types.FunctionType, types.MethodType, property)


def _docstrings(obj, out: dict, prefix: str = "") -> None:
    name = getattr(obj, "__name__", None)
    if name is None:
        return
    name = f"{prefix}.{name}" if prefix else name
    if isinstance(obj, types.ModuleType) or type(obj) is MpiClass:
        out[name] = obj.__doc__
        for value in vars(obj).values():
            if isinstance(value, classmethod | staticmethod):
                value = value.__get__(obj)
            _docstrings(value, out, name)
    elif isinstance(obj, _CALLABLES):
        doc = obj.__doc__
        if doc is not None:
            _, newline, doc = doc.partition("\n")  # the signature line
            if newline and doc.startswith("\n"):
                doc = textwrap.dedent(doc[1:])
        out[name] = doc


def _problems(name: str, doc: str | None) -> list[str]:
    short = name.rpartition(".")[2]
    if short in ("py2f", "f2py") or (not doc and short.startswith("_")):
        return []
    if doc is None or not doc.strip():
        return ["missing or empty"]
    found = []
    if doc.startswith("\n") != doc.endswith(" "):
        found.append("start and end whitespace differ")
    if doc.replace(" ", "").endswith("\n\n"):
        found.append("ends with blank lines")
    text = doc.strip()
    if text[0] == text[0].lower():
        found.append("starts with lowercase")
    if not text.endswith("."):
        found.append("does not end with '.'")
    if not text.partition("\n")[0].endswith("."):
        found.append("summary line does not end with '.'")
    return found


def test_every_public_callable_has_an_mpi4py_style_docstring():
    docs: dict = {}
    _docstrings(build_mpi_module(), docs)
    assert len(docs) > 500  # the walk reached the classes' methods
    bad = {name: p for name, doc in docs.items() if (p := _problems(name, doc))}
    assert not bad, "\n".join(f"{name}: {', '.join(p)}" for name, p in sorted(bad.items()))
