"""The house rules a newcomer relies on, checked: the schema names every name the Cypher
uses, modules stay small, production code never imports the testing tools, packages
export sorted, complete ``__all__`` lists."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import pith_graph.api.reads.cypher as read_cypher
import pith_graph.api.reads.cypher_discovery as discovery_cypher
import pith_graph.loader.stores.cypher as write_cypher
import pith_graph.loader.stores.cypher_export as export_cypher
import pith_graph.loader.stores.cypher_locks as locks_cypher
import pith_graph.loader.stores.cypher_schema as schema_cypher
from pith_graph.schema.graph import NODES, RELATIONSHIPS

PROJECT = Path(__file__).resolve().parents[1]
SOURCES = [
    path
    for folder in ("pith_graph", "loader", "schema", "api")
    for path in sorted((PROJECT / folder).rglob("*.py"))
    if "__pycache__" not in path.parts
]
MAX_MODULE_LINES = 420  # the house guideline is "about 400"


def _statements() -> list[str]:
    found: list[str] = []
    for module in (read_cypher, discovery_cypher, write_cypher, export_cypher, locks_cypher):
        for name, value in vars(module).items():
            if name.startswith("_"):
                continue
            if isinstance(value, str) and re.search(r"\b(MATCH|MERGE|CREATE)\b", value):
                found.append(value)
            elif isinstance(value, dict):
                found += [v for v in value.values() if isinstance(v, str)]
    found += schema_cypher.schema_statements()
    every_check = frozenset(discovery_cypher.FILTER_CHECKS)
    for start in discovery_cypher.LISTING_STARTS:
        found.append(discovery_cypher.count_statement(start, every_check))
        found.append(
            discovery_cypher.facets_statement(
                start, every_check, ("years", "licenses", "authors", "categories")
            )
        )
    found += [
        discovery_cypher.search_statement(order, every_check, after)
        for order in ("relevance", "newest")
        for after in (False, True)
    ]
    return found


def test_cypher_names_only_what_the_schema_declares() -> None:
    labels = set(NODES)
    types = set(RELATIONSHIPS)
    properties = {p.name for spec in NODES.values() for p in spec.properties}
    properties |= {p.name for spec in RELATIONSHIPS.values() for p in spec.properties}
    properties |= {"_lock"}  # the write lock's transient marker, set and removed at once
    statements = _statements()
    assert len(statements) > 30
    for statement in statements:
        statement = re.sub(r"\b(?:db|apoc|gds)(?:\.\w+)+", "", statement)  # procedure names
        for label in re.findall(r"\(\w*:(\w+)", statement):
            assert label in labels, (label, statement)
        for kind in re.findall(r"\[\w*:(\w+)", statement):
            assert kind in types, (kind, statement)
        variables = set(re.findall(r"[(\[](\w+):", statement))
        used = [
            prop for var, prop in re.findall(r"\b(\w+)\.([a-z]\w*)\b(?!\()", statement) if var in variables
        ]
        used += re.findall(r"[{,]\s*\.(\w+)", statement)  # map projections {.name, ...}
        used += re.findall(r"[(\[]\w*:\w+\s*\{(\w+):", statement)  # (n:Label {key: ...})
        for prop in used:
            assert prop in properties, (prop, statement)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PROJECT)))
def test_module_is_small_and_imports_only_the_package(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count("\n") <= MAX_MODULE_LINES, f"{path.name}: split it (one concept per module)"
    tree = ast.parse(text)
    production = "testing" not in path.relative_to(PROJECT).parts
    for node in ast.walk(tree):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            assert top not in ("loader", "schema", "api"), (
                f"{path.name} imports {name}: use pith_graph.{name}"
            )
            if production:
                assert not name.startswith("pith_graph.testing"), f"{path.name} imports test tooling"


@pytest.mark.parametrize(
    "package",
    ["pith_graph", "pith_graph.loader", "pith_graph.schema", "pith_graph.api.reads", "pith_graph.testing"],
)
def test_exported_members_are_sorted_and_complete(package: str) -> None:
    module = importlib.import_module(package)
    exported = list(module.__all__)
    assert exported == sorted(
        exported, key=lambda name: (0 if name.isupper() else 1 if name[0].isupper() else 2, name)
    )
    public = {name for name in dir(module) if not name.startswith("_")}  # dir: lazy names too
    public -= {"annotations"}
    imported_modules = {name for name, value in vars(module).items() if type(value).__name__ == "module"}
    assert set(exported) == public - imported_modules - {"__version__"}
