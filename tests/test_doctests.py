"""Every docstring example in the package runs, in every module (``api`` included)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import pith_graph

#: Modules with no examples yet are fine; these must keep theirs (a doctest that silently
#: disappears is a lost test).
MUST_HAVE_EXAMPLES = {
    "pith_graph",
    "pith_graph.loader.facade",
    "pith_graph.loader.canon",
    "pith_graph.loader.identifiers",
    "pith_graph.schema.graph",
    "pith_graph.api.ids",
    "pith_graph.api.closing",
    "pith_graph.numbers",
    "pith_graph.interrupts",
    "pith_graph.loader.analysis",
}


def _modules() -> list[str]:
    names = ["pith_graph"]
    for info in pkgutil.walk_packages(pith_graph.__path__, "pith_graph."):
        names.append(info.name)
    for sub in ("loader", "schema", "api"):  # mapped folders: walk them through their package
        package = importlib.import_module(f"pith_graph.{sub}")
        names += [info.name for info in pkgutil.walk_packages(package.__path__, f"pith_graph.{sub}.")]
    return sorted(set(names) - {"pith_graph.__main__"})


MODULES = _modules()


def test_every_room_is_walked() -> None:
    for room in ("pith_graph.loader.verify", "pith_graph.schema.graph", "pith_graph.api.app"):
        assert room in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
    if name in MUST_HAVE_EXAMPLES:
        assert result.attempted > 0, f"{name} lost its examples"
