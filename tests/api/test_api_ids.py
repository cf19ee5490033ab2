"""Identifier parsing, driven by the table in ``vectors/identifiers.json``."""

from __future__ import annotations

from typing import Any

import pytest
from apitest import load_vectors

from pith_graph.api.ids import parse_identifier
from pith_graph.errors import ApiError

VECTORS = [pytest.param(case, id=case["id"]) for case in load_vectors("identifiers.json")]


@pytest.mark.parametrize("case", VECTORS)
def test_parse_identifier(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(ApiError) as raised:
            parse_identifier(case["input"])
        assert raised.value.code == case["error"]
        return
    parsed = parse_identifier(case["input"])
    if case["keys"] is None:
        assert parsed is None
        return
    assert parsed is not None
    assert [list(key) for key in parsed.keys] == case["keys"]
    assert parsed.versions is case["versions"]
