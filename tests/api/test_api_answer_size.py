"""An answer's size in bytes is bounded, not only its objects (``PITH_API_MAX_ANSWER_BYTES``,
:mod:`pith_graph.api.answer_size`): ``papersById`` answers each of its identifiers, repeats
included, under each alias, so one signed paper with a long title made a 10 KB request of
cost 4,000 ask for a 2 GB answer, which the server built. Measured before it is encoded,
exactly for the answers below, on both backends and both executions."""

from __future__ import annotations

import ctypes
import itertools
import sys
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from apitest import (  # noqa: F401 (fixtures)
    Api,
    corpus,
    memory_reader,
    neo4j_corpus,
    neo4j_reader,
    served_as_serve_does,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from pith_graph.api import answer_size
from pith_graph.api.answer_size import python_answer_bytes
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.reader import GraphReader

ANSWERS: list[Any] = [
    {"data": {"a": "x", "b": ["é", "𝒜", "\u2028"], "c": {"d": "y" * 500, "e": ["z" * 100] * 3}}},
    {"papers": [{"title": "t" * 70, "abstract": "Zoë " * 40, "authors": [{"name": "Bo Chen"}]}] * 5},
    ["a", ["b", ["c", 'long \\ "quoted" text ' * 9]]],
    {"empty": [[], {}, [{}], {"a": []}], "": ""},
    # short strings JSON escapes: control characters (6 bytes each), quotes, backslashes
    {
        "names": [{"name": "\x01" * 64}, {"name": 'a"b\\c\nd'}, {"name": "\x7f\u2028é"}],
        "list": ["\x00\x1f"] * 3,
    },
    {"authorNames": [["Zoë Smith", "x" * 300, "\x02"], ["Bo Chen", "Ann Lee"], []]},
]


Measure = Callable[[object, int], int]


def test_the_rust_measure_is_built() -> None:
    """The install builds it (a Rust toolchain is on this machine): without it the suite would
    check only the Python measure, and the server measure ten times slower."""
    assert answer_size.NATIVE
    assert answer_size.answer_bytes is not python_answer_bytes


@pytest.fixture(params=["rust", "python"])
def measure(request: pytest.FixtureRequest) -> Measure:
    """Each of the two implementations of the one measure."""
    return answer_size.answer_bytes if request.param == "rust" else python_answer_bytes


@pytest.mark.parametrize("answer", ANSWERS)
def test_an_answer_of_strings_is_measured_exactly(measure: Measure, answer: Any) -> None:
    size = len(orjson.dumps(answer))
    assert measure(answer, 1 << 30) == size
    assert measure(answer, size) == size  # not past the limit: measured to the end
    assert size - 1 < measure(answer, size - 1) <= size  # past it: stops there (or at the end)


def test_numbers_and_nulls_are_counted_at_most_what_they_may_take(measure: Measure) -> None:
    answer = {"n": [None, True, -(2**53), 1.5e300, 0]}
    assert len(orjson.dumps(answer)) <= measure(answer, 1 << 30)


def test_the_rust_measure_counts_integers_booleans_null_and_any_key_exactly() -> None:
    answer = {"n": [None, True, False, 0, 7, -1, 10, 99, -100, 2**63 - 1, -(2**63)], "t": ("a", 1)}
    assert answer_size.answer_bytes(answer, 1 << 30) == len(orjson.dumps(answer))
    keys = {'\x1f"\\é𝒜': 1, "": [{"\n": None}]}  # the Python measure takes keys for GraphQL names
    assert answer_size.answer_bytes(keys, 1 << 30) == len(orjson.dumps(keys))


#: What an answer may hold: strings of any characters (escaped ones, every UTF-8 width), integers
#: of 64 bits, booleans and null, in lists and objects of them, nested; objects may repeat. Its
#: keys are GraphQL names (response names: fields and aliases).
_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=300)
_LEAVES = st.one_of(_TEXT, st.integers(-(2**63), 2**63 - 1), st.booleans(), st.none())
_ANSWERS = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.dictionaries(st.from_regex(r"[_A-Za-z][_0-9A-Za-z]{0,15}", fullmatch=True), inner, max_size=6),
        inner.map(lambda value: [value] * 3),  # one object held three times
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(answer=_ANSWERS, short=st.integers(0, 50))
def test_both_measures_agree_with_the_encoding(answer: Any, short: int) -> None:
    size = len(orjson.dumps(answer))
    assert answer_size.answer_bytes(answer, 1 << 40) == size
    assert python_answer_bytes(answer, 1 << 40) >= size  # numbers: at most what they may take
    if not any(type(leaf) in (int, bool) or leaf is None for leaf in _leaves(answer)):
        assert python_answer_bytes(answer, 1 << 40) == size
    limit = max(size - 1 - short, 0)
    for measured in (answer_size.answer_bytes(answer, limit), python_answer_bytes(answer, limit)):
        assert measured > limit  # past it, both say so (wherever they stop)


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def test_a_string_repeated_is_encoded_once_by_python(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[int] = []
    real = orjson.dumps
    monkeypatch.setattr(
        "pith_graph.api.answer_size.orjson.dumps", lambda value: encoded.append(len(value)) or real(value)
    )
    title = "a long title " * 1000
    assert python_answer_bytes({"p": [{"title": title}] * 500}, 1 << 40) == len(
        real({"p": [{"title": title}] * 500})
    )
    assert encoded == [len(title)]


@pytest.fixture(params=["memory", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def reader(request: pytest.FixtureRequest) -> GraphReader:
    found: GraphReader = request.getfixturevalue(f"{request.param}_reader")
    return found


@pytest.fixture
def ids(memory_reader: MemoryReader) -> list[str]:
    """Ten papers' pith numbers, each asked for 20 times."""
    piths = sorted(d["pithNumber"] for _, d in memory_reader.G.nodes(data=True) if d["label"] == "Paper")
    return piths[:10] * 20


#: papersById runs on the resolvers; a page of papers is planned (``api/plan``) once seen.
QUERIES = [
    "query($ids: [String!]!) { papersById(ids: $ids) { pithNumber title abstractExcerpt authorNames } }",
    "{ a: papers(first: 100) { nodes { title abstractExcerpt authorNames } }"
    " b: papers(first: 50) { nodes { pithNumber title abstractExcerpt } } }",
]
_SENT = itertools.count()


def _serve(reader: GraphReader, limit: int) -> Any:
    return served_as_serve_does(reader, limits=RequestLimits(max_answer_bytes=limit))


def _twice(api: Api, query: str, ids: list[str]) -> Iterator[dict[str, Any]]:
    """The answers of the resolvers (a text new to the server), then of its plan if it has one."""
    text = f"{query} # {next(_SENT)}"
    for _ in range(2):
        yield api.post(text, {"ids": ids} if "$ids" in query else None)


@pytest.mark.parametrize("query", QUERIES, ids=["resolvers", "plan"])
def test_an_answer_over_the_limit_is_refused_by_both_executions(
    reader: GraphReader, ids: list[str], query: str
) -> None:
    with _serve(reader, RequestLimits().max_answer_bytes) as api:
        whole = next(_twice(api, query, ids))
    assert "errors" not in whole, whole["errors"]
    size = len(orjson.dumps(whole["data"]))
    with _serve(reader, size) as api:  # the limit it just reaches: answered, by both
        assert list(_twice(api, query, ids)) == [whole, whole]
    with _serve(reader, size - 1) as api:
        text = f"{query} # {next(_SENT)}"
        for _ in range(2):  # asking for graphql-response+json: not a request error, no 400
            response = api.client.post(
                "/graphql",
                json={"query": text, "variables": {"ids": ids} if "$ids" in query else None},
                headers={"accept": "application/graphql-response+json"},
            )
            assert (response.status_code, response.json()["data"]) == (200, None), response.text
        for answer in _twice(api, query, ids):
            assert answer["data"] is None
            (error,) = answer["errors"]
            assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
            assert error["message"] == (
                f"The answer would hold more than {size - 1} bytes of JSON, the limit of an answer."
            )


def _legacy_string(text: str) -> str:
    """``text`` as a legacy string of Python 3.11 (``PyUnicode_FromUnicode``: its storage is
    made on first use), which no answer holds today but C code may still make."""
    make = ctypes.pythonapi.PyUnicode_FromUnicode
    make.restype, make.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_ssize_t]
    legacy: str = make(None, len(text))
    wide = ctypes.pythonapi.PyUnicode_AsUnicode
    wide.restype, wide.argtypes = ctypes.c_void_p, [ctypes.py_object]
    buffer = wide(legacy)
    for index, char in enumerate(text):
        ctypes.c_uint32.from_address(buffer + 4 * index).value = ord(char)
    return legacy


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="legacy strings are gone from Python 3.12")
@pytest.mark.filterwarnings("ignore:PyUnicode_FromUnicode:DeprecationWarning")
def test_the_rust_measure_readies_a_legacy_string() -> None:
    """Read through the storage macros, a string not yet readied was empty: 8 bytes counted
    for 100,008 (review of the diff)."""
    answer = {"t": _legacy_string("é" * 1000 + "A" * 99_000)}
    assert answer_size.answer_bytes(answer, 1 << 30) == len(orjson.dumps(answer)) == 101_008
