"""mpi4py's signature lines read off code objects (``mpi.surface``, a start-up fast path)
are the lines ``inspect.signature`` prints, for every function and property of the
namespace, and for the shapes of parameter lists Python has."""

from __future__ import annotations

import types

import pytest

from pyopenib.mpi import namespace, surface


def _callables():
    seen = set()
    for cls_name in surface.CLASS_NAMES:
        cls = getattr(namespace, cls_name, None)
        if not isinstance(cls, type):
            continue
        for name, attr in vars(cls).items():
            fn = attr.__func__ if isinstance(attr, classmethod | staticmethod) else attr
            if isinstance(attr, property):
                fn = attr.fget
            if isinstance(fn, types.FunctionType) and fn not in seen:
                seen.add(fn)
                yield name, attr, fn
    for name, value in vars(namespace).items():
        if isinstance(value, types.FunctionType) and value not in seen:
            seen.add(value)
            yield name, value, value


def test_the_namespace_has_many_plain_functions():
    # every one at import (433); fewer once a test has switched error routing on, which
    # wraps methods (``functools.wraps``: ``inspect`` follows ``__wrapped__``)
    assert sum(surface._plain(fn) for _, _, fn in _callables()) > 200


def test_every_plain_line_is_the_one_inspect_prints():
    for name, attr, fn in _callables():
        if not surface._plain(fn):
            continue
        if isinstance(attr, property):
            result = surface.inspect.signature(fn).return_annotation
            expected = name if result is surface.inspect.Signature.empty else f"{name}: {result}"
        else:
            expected = surface._inspect_signature_line(name, fn)
        assert surface.signature_line(name, attr) == expected, name


def _a(x, /, y: int, z=3, *args: str, k: bool = True, m, **kw: float) -> None: ...
def _b(x, y=(), /): ...
def _c(*, k=None): ...
def _d(self, *rest): ...
def _e(): ...
def _f(a: int = 1, /, *, b: str = "s", **kw) -> list[int]: ...


@pytest.mark.parametrize("fn", [_a, _b, _c, _d, _e, _f])
def test_parameter_shapes(fn):
    assert surface._plain(fn)
    assert surface._plain_signature_line("F", fn) == surface._inspect_signature_line("F", fn)
