"""Every field and argument of the schema says what it is (GraphiQL and codegen show it)."""

from __future__ import annotations

from typing import Any

from graphql import graphql_sync

from pith_graph.api.schema import build_schema

_QUERY = """
{ __schema { types { name kind
    fields { name description args { name description } }
    inputFields { name description } } } }
"""


def _undescribed(types: list[dict[str, Any]]) -> list[str]:
    """``Type.field`` and ``Type.field(arg:)`` of every field and argument without a description."""
    missing: list[str] = []
    for kind in types:
        if kind["name"].startswith("__"):
            continue
        for field in (kind["fields"] or []) + (kind["inputFields"] or []):
            where = f"{kind['name']}.{field['name']}"
            if not (field["description"] or "").strip():
                missing.append(where)
            missing += [
                f"{where}({arg['name']}:)"
                for arg in field.get("args", [])
                if not (arg["description"] or "").strip()
            ]
    return missing


def test_every_field_and_argument_has_a_description() -> None:
    result = graphql_sync(build_schema()._schema, _QUERY)  # introspection, as GraphiQL asks
    assert result.errors is None
    assert result.data is not None
    assert _undescribed(result.data["__schema"]["types"]) == []


def test_the_check_names_what_lacks_one() -> None:
    types = [
        {
            "name": "__Type",
            "fields": [{"name": "name", "description": None, "args": []}],
            "inputFields": None,
        },
        {
            "name": "Q",
            "fields": [{"name": "f", "description": " ", "args": [{"name": "first", "description": None}]}],
            "inputFields": None,
        },
    ]
    assert _undescribed(types) == ["Q.f", "Q.f(first:)"]


def test_a_first_shown_as_null_gives_its_default_in_its_description() -> None:
    """A default that follows the server's page cap is no constant the SDL could show: its
    ``first`` reads ``= null`` (null is that default) and its description says what it is."""
    fields = build_schema()._schema.type_map
    nulls = {
        f"{name}.{field_name}": field.args["first"].description or ""
        for name, kind in fields.items()
        for field_name, field in getattr(kind, "fields", {}).items()
        if "first" in getattr(field, "args", {}) and field.args["first"].default_value is None
    }
    assert len(nulls) == 11  # the pages, the ranked lists and Paper.authors
    for where, description in nulls.items():
        default = "the page cap" if where == "Paper.authors" else "20"
        assert f"null or left out is {default}" in description, where
