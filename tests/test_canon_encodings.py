"""The digests' encodings, each part of a bundle encoded once: byte-identical to encoding
each covered value whole (verification hashes these bytes)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pith_graph.loader.canon import ascii_escaped, canon, encoding_matches, sha256_hex
from pith_graph.loader.format import (
    EVENT_UNSIGNED,
    bundle_body,
    bundle_encoding,
    event_content,
    event_encodings,
    state_body,
    state_encodings,
)

text_with_everything = st.text(
    alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=("Cs",)),
    max_size=8,
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False)
    | text_with_everything,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text_with_everything, inner, max_size=3),
    max_leaves=15,
)
#: The keys the encodings treat apart, also nested and as values, mixed with any others.
special_keys = st.sampled_from(
    [*sorted(EVENT_UNSIGNED), "payload", "current", "state_sha256", "events", "state", "bundle_signature"]
)
objects = st.dictionaries(special_keys | text_with_everything, json_values | st.builds(dict), max_size=8)


@settings(max_examples=400, deadline=None)
@given(objects, objects)
def test_event_encodings_are_the_content_and_the_whole_event(
    event: dict[str, Any], payload: dict[str, Any]
) -> None:
    for value in (event, {**event, "payload": payload}, {**event, "payload": [payload]}):
        assert event_encodings(value) == (canon(event_content(value)), canon(value))


@settings(max_examples=400, deadline=None)
@given(objects, objects)
def test_state_encodings_are_the_body_and_the_whole_state(
    state: dict[str, Any], current: dict[str, Any]
) -> None:
    for value in (state, {**state, "current": current}, {**state, "current": "x"}):
        assert state_encodings(value) == (canon(state_body(value)), canon(value))


@settings(max_examples=300, deadline=None)
@given(objects, st.lists(objects, max_size=3), objects)
def test_bundle_encoding_is_the_body_encoded_whole(
    rest: dict[str, Any], events: list[dict[str, Any]], state: dict[str, Any]
) -> None:
    bundle = {**rest, "events": events, "state": state}
    encoded = bundle_encoding(bundle, [event_encodings(e)[1] for e in events], state_encodings(state)[1])
    assert encoded == canon(bundle_body(bundle))


@settings(max_examples=200, deadline=None)
@given(objects)
def test_the_bodies_keep_every_other_member_in_order(value: dict[str, Any]) -> None:
    assert list(event_content(value).items()) == [(k, v) for k, v in value.items() if k not in EVENT_UNSIGNED]
    assert list(state_body(value).items()) == [(k, v) for k, v in value.items() if k != "state_sha256"]
    assert list(bundle_body(value).items()) == [(k, v) for k, v in value.items() if k != "bundle_signature"]


def test_encoding_matches_either_form_only() -> None:
    raw = canon({"name": "Zoë", "n": [1, None]})
    assert encoding_matches(raw, sha256_hex(raw))
    assert encoding_matches(raw, sha256_hex(ascii_escaped(raw)))
    assert not encoding_matches(raw, sha256_hex(raw + b" "))
