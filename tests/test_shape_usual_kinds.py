"""The kinds shape looks up before its regular expressions are kinds those expressions accept,
so the look-up changes no outcome."""

from __future__ import annotations

from pith_graph.loader.shape import _USUAL_ALIAS_KINDS, _USUAL_SOURCE_KINDS, ALIAS_KIND, SOURCE_KIND


def test_every_usual_kind_is_one_the_expressions_accept() -> None:
    assert all(ALIAS_KIND.fullmatch(kind) for kind in _USUAL_ALIAS_KINDS)
    assert all(SOURCE_KIND.fullmatch(kind) for kind in _USUAL_SOURCE_KINDS)
