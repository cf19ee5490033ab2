"""Strict parsing: every rejection has its stable code; nothing crashes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pith_graph.errors import BundleError
from pith_graph.loader.parse import ENCODER_MAX_DEPTH, MAX_SAFE_INTEGER, InputLimits, parse_bundle

VECTORS = json.loads((Path(__file__).parent / "vectors" / "parse.json").read_text())


def _input(case: dict[str, Any]) -> bytes:
    if "input" in case:
        return str(case["input"]).encode("utf-8")
    head, opener, count, closer, count2, tail = case["input_repeat"]
    return (head + opener * count + closer * count2 + tail).encode()


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in VECTORS])
def test_parse_vectors(case: dict[str, Any]) -> None:
    data = _input(case)
    if case["code"] is None:
        assert isinstance(parse_bundle(data), dict)
    else:
        with pytest.raises(BundleError) as caught:
            parse_bundle(data)
        assert caught.value.code.value == case["code"]
        assert caught.value.message


def test_invalid_utf8_is_malformed() -> None:
    with pytest.raises(BundleError) as caught:
        parse_bundle(b'{"a":"\xff"}')
    assert caught.value.code.value == "malformed_json"


def test_size_limit_is_configurable() -> None:
    data = b'{"a":"' + b"x" * 100 + b'"}'
    assert parse_bundle(data, InputLimits(max_bytes=len(data)))
    with pytest.raises(BundleError) as caught:
        parse_bundle(data, InputLimits(max_bytes=len(data) - 1))
    assert caught.value.code.value == "too_large"


def test_the_default_size_limit_is_one_mebibyte() -> None:
    """The README's default for ``--max-bytes``: 1 MiB is accepted, one byte more is not."""
    data = b'{"a":"' + b"x" * ((1 << 20) - 8) + b'"}'
    assert len(data) == 1 << 20
    assert parse_bundle(data) == {"a": "x" * ((1 << 20) - 8)}
    with pytest.raises(BundleError) as caught:
        parse_bundle(data + b" ")
    assert caught.value.code.value == "too_large"


def test_depth_limit_is_configurable() -> None:
    data = b'{"a":{"b":{"c":1}}}'
    assert parse_bundle(data, InputLimits(max_depth=3))
    with pytest.raises(BundleError) as caught:
        parse_bundle(data, InputLimits(max_depth=2))
    assert caught.value.code.value == "too_deep"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    try:
        parsed = parse_bundle(data)
    except BundleError as err:
        code = err.code.value
    else:
        assert isinstance(parsed, dict)
        return
    assert code in {"malformed_json", "not_object", "duplicate_key", "too_deep", "schema_error"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=6), json_values, max_size=6), st.booleans())
def test_valid_objects_round_trip(value: dict[str, Any], pretty: bool) -> None:
    text = json.dumps(value, indent=2 if pretty else None, ensure_ascii=pretty)
    assert parse_bundle(text.encode()) == value


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.text(max_size=6), json_values, max_size=4),
    st.integers(MAX_SAFE_INTEGER + 1, 2**70) | st.integers(-(2**70), -MAX_SAFE_INTEGER - 1),
    st.booleans(),
    st.booleans(),
)
def test_every_unsafe_integer_is_a_schema_error(
    value: dict[str, Any], number: int, in_list: bool, pretty: bool
) -> None:
    """Wherever it is, written compact or not: integers outside ±(2**53 - 1) are not read the
    same by every JSON reader (past 2**64 orjson reads several texts as one float)."""
    value["n"] = [dict(value), [number]] if in_list else {"x": number}
    text = json.dumps(value, indent=2 if pretty else None)
    with pytest.raises(BundleError) as caught:
        parse_bundle(text.encode())
    assert caught.value.code.value == "schema_error"
    assert caught.value.message.startswith("bundle.n")


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


nested = st.recursive(
    st.integers(0, 3) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
    max_leaves=40,
)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.text(max_size=2), nested, max_size=3), st.integers(1, 8))
def test_depth_limit_is_exact(value: dict[str, Any], limit: int) -> None:
    """The fast indentation check agrees with a plain recursive depth count."""
    data = json.dumps(value).encode()
    if _depth(value) > limit:
        with pytest.raises(BundleError) as caught:
            parse_bundle(data, InputLimits(max_depth=limit))
        assert caught.value.code.value == "too_deep"
    else:
        assert parse_bundle(data, InputLimits(max_depth=limit)) == value


def test_nesting_past_the_encoders_limit_is_too_deep_whatever_the_limit() -> None:
    """orjson parses about 1,000 levels but encodes only ENCODER_MAX_DEPTH: a value between the
    two could be parsed but not hashed, so it is too deep even under a larger limit."""
    depth = ENCODER_MAX_DEPTH + 1
    data = b"[" * depth + b"]" * depth
    assert parse_bundle(
        b'{"a":' + b"[" * (depth - 2) + b"]" * (depth - 2) + b"}", InputLimits(max_depth=1000)
    )
    with pytest.raises(BundleError) as caught:
        parse_bundle(b'{"a":' + data + b"}", InputLimits(max_depth=1000))
    assert caught.value.code.value == "too_deep"
    with pytest.raises(BundleError) as caught:  # a duplicate key still says what it is
        parse_bundle(b'{"a":1,"a":' + data + b"}", InputLimits(max_depth=1000))
    assert caught.value.code.value == "duplicate_key"
