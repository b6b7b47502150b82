"""Specs written with text in tests: the spec's types take ``Expr`` values (``tablets.spec.expr``),
parsed here from the strings a test writes, as the Python builder parses its strings."""

from tablets.spec import Clause as _Clause
from tablets.spec import MergeSpec as _MergeSpec
from tablets.spec.expr import Expr


def _e(v):
    return Expr.parse(v) if isinstance(v, str) else v


def Clause(category, action, condition=None, assignments=(), **kw):
    if "insert_values" in kw:
        kw["insert_values"] = tuple(_e(v) for v in kw["insert_values"])
    return _Clause(category, action, _e(condition), tuple((c, _e(v)) for c, v in assignments), **kw)


def MergeSpec(target, target_alias, source, source_alias, on, clauses, **kw):
    return _MergeSpec(target, target_alias, source, source_alias, _e(on), clauses, **kw)
