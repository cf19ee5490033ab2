"""The bulk import's CSV rows, written in one piece where nothing needs escaping (since
0.9.6), are byte for byte the rows the field-by-field encoding writes, whatever the values
hold (quotes, line breaks, the array delimiter, any Unicode); and an author name in ASCII
gets the key and display form the Unicode normalisations give it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pith_graph.errors import UsageError
from pith_graph.loader.bulk import csvfiles
from pith_graph.loader.bulk.csvfiles import (
    ARRAY_DELIMITER,
    PAPER_COLUMNS,
    alias_id,
    encode,
    line,
    quoted_rows,
)
from pith_graph.loader.bulk.spill import SLOTS, _segments
from pith_graph.loader.identifiers import author_display_name, author_name_key, split_authors
from pith_graph.loader.keyring import default_keyring
from pith_graph.loader.parse import parse_bundle
from pith_graph.loader.rows import PaperRows, build_rows
from pith_graph.loader.verify import verify_bundle
from pith_graph.schema.rows import AliasRow, AuthorRow

ROOT = Path(__file__).resolve().parents[1]
text = st.text(
    alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=("Cs",)), max_size=6
)
#: Strings made mostly of what CSV or the importer treat apart.
awkward = st.text(
    alphabet=st.sampled_from(['"', "\n", "\r", ",", ARRAY_DELIMITER, "a", "é", " "]), max_size=6
)
strings = text | awkward


def reference_line(values: Sequence[Any]) -> tuple[bytes, bool]:
    """0.9.5's encoding of a row: each field by ``encode``, joined, encoded."""
    fields = ",".join(map(reference_encode, values)) + "\n"
    return fields.encode("utf-8"), "\n" in fields[:-1] or "\r" in fields


def reference_encode(value: Any) -> str:
    """0.9.5's ``encode`` of one field, as a match."""
    match value:
        case None:
            return ""
        case str():
            return '"' + value.replace('"', '""') + '"'
        case bool():
            return str(value).lower()
        case int():
            return str(value)
    items = [item if type(item) is not int else str(item) for item in value]
    if not items or any(ARRAY_DELIMITER in item for item in items):
        raise ValueError("refused")
    return '"' + ARRAY_DELIMITER.join(item.replace('"', '""') for item in items) + '"'


def reference_segments(rows: PaperRows) -> list[bytes]:
    """0.9.5's CSV segments of a spilled record: a row at a time."""
    parts: list[list[bytes]] = [[] for _ in range(SLOTS)]
    pith = rows.pith_number

    def add(target: int, values: list[Any]) -> None:
        encoded, multiline = reference_line(values)
        parts[2 * target + multiline].append(encoded)

    properties = rows.paper_properties()
    add(0, [properties.get(name) for name in PAPER_COLUMNS])
    for author in rows.authors:
        add(1, [author.name_key, pith])
    for category in rows.categories:
        add(2, [pith, category.code, category.primary])
    for alias in rows.aliases:
        add(3, [alias_id(alias.kind, alias.value), pith])
    for signer in rows.signers:
        add(4, [signer.signer_id, pith, signer.key_ids, signer.stored_event_types, signer.signed_bundle])
    return [b"".join(part) for part in parts]


def _sample_rows() -> list[PaperRows]:
    keyring = default_keyring()
    return [
        build_rows(verify_bundle(parse_bundle(path.read_bytes()), keyring), keyring)
        for path in sorted((ROOT / "loader" / "samples").glob("*.json"))
    ]


SAMPLE_ROWS = _sample_rows()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.none() | st.booleans() | st.integers() | strings | st.lists(strings | st.integers()), max_size=6
    )
)
def test_a_row_is_encoded_as_field_by_field(values: list[Any]) -> None:
    try:
        expected: tuple[bytes, bool] | type[Exception] = reference_line(values)
    except (ValueError, TypeError):
        expected = Exception
    try:
        found: tuple[bytes, bool] | type[Exception] = line(values)
    except Exception:
        found = Exception
    assert found == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(strings, max_size=5), strings)
def test_keyed_rows_in_one_piece_are_the_rows_one_by_one(keys: list[str], tail: str) -> None:
    rest = "," + encode(tail)
    rows = [reference_line([key, tail]) for key in keys]
    found = quoted_rows(keys, rest)
    if found is None:  # only when a row needs escaping or is multi-line
        assert any(multiline or b'""' in encoded for encoded, multiline in rows)
    else:
        assert found == b"".join(encoded for encoded, _ in rows)
        assert not any(multiline for _, multiline in rows)


def test_the_samples_records_segments_are_the_row_by_row_ones() -> None:
    assert SAMPLE_ROWS
    for rows in SAMPLE_ROWS:
        assert _segments(rows)[0] == reference_segments(rows)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(strings, strings), max_size=4), st.lists(st.tuples(strings, strings), max_size=4))
def test_awkward_authors_and_aliases_are_encoded_as_row_by_row(
    authors: list[tuple[str, str]], aliases: list[tuple[str, str]]
) -> None:
    rows = SAMPLE_ROWS[0]._replace(
        authors=tuple(AuthorRow(key, name, key) for key, name in authors),
        aliases=tuple(AliasRow(kind, value) for kind, value in aliases),
    )
    assert _outcome(lambda: _segments(rows)[0]) == _outcome(lambda: reference_segments(rows))


def _outcome(encode_rows: Callable[[], list[bytes]]) -> list[bytes] | str:
    try:
        return encode_rows()
    except Exception:  # a list holding the delimiter (authorNames): refused by both
        return "refused"


def test_an_empty_list_or_one_holding_the_delimiter_is_still_refused() -> None:
    for value in ([], ["a", "b\x1fc"], ["\x1f"]):
        with pytest.raises(UsageError, match="Neo4j's importer"):
            csvfiles.encode(value)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(max_codepoint=127), max_size=12), max_size=4))
def test_ascii_author_names_split_as_the_normalisations_give(names: list[str]) -> None:
    expected: dict[str, str] = {}
    for name in names:
        display = author_display_name(name.replace(",", " "))
        key = author_name_key(display)
        if display and key and key not in expected:
            expected[key] = display
    assert split_authors(",".join(name.replace(",", " ") for name in names)) == list(expected.items())


def test_a_records_head_holds_plain_lists() -> None:
    from pith_graph.loader.bulk.spill import encode_record

    head = orjson.loads(encode_record(SAMPLE_ROWS[0]).split(b"\n", 1)[0])
    authors, _, aliases, _ = head[-1]
    assert authors == [list(author) for author in SAMPLE_ROWS[0].authors]
    assert aliases == [list(alias) for alias in SAMPLE_ROWS[0].aliases]
