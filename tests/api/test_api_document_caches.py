"""The caches of query documents (parsed documents, validation results, plans) are bounded by
the memory they keep, not only by their count (since 0.9.3), over real HTTP to uvicorn
where it shows: documents sent by the hundred stay in memory up to the caches' bytes, a
small document is parsed once, big ones answer as small ones do, and a validation result is
never another document's."""

from __future__ import annotations

import gc
import uuid
from functools import partial
from typing import Any

import pytest
import strawberry
from apitest import Api, corpus, memory_api, memory_reader  # noqa: F401 (fixtures)
from graphql import DocumentNode, GraphQLError

import pith_graph.api.documents as documents
from pith_graph.api.documents import BYTES_PER_DOCUMENT, DOCUMENTS, DocumentCache, document_bytes
from pith_graph.api.lru import BoundedLRU, memory_of
from pith_graph.api.plan.compile import FieldPlan

#: The bytes of one cache. Documents are kept by the parse cache, by validation errors (which
#: point into them) and by plans, each counted a document's bytes (a plan half as much again):
#: two caches' bytes at most for documents refused by validation, or answered by plans.
CACHE = DOCUMENTS * BYTES_PER_DOCUMENT
PAPERS = "{ papers(first: 1) { totalCount } }"


def _ours(marker: str) -> list[DocumentNode]:
    """The documents alive in this process whose text holds ``marker``."""
    gc.collect()
    return [
        found
        for found in gc.get_objects()
        if isinstance(found, DocumentNode) and found.loc is not None and marker in found.loc.source.body
    ]


def test_documents_refused_by_validation_are_kept_up_to_the_caches_bytes(memory_api: Api) -> None:
    """1,990 unknown fields in 19 KB parse to 1.3 MB of tokens and nodes; parsed and cached
    before validation refused them, 600 of them grew a server by 390 MB (256 kept, and the
    validation cache's errors kept their documents too): 40 of them here kept 40."""
    marker = uuid.uuid4().hex
    for i in range(40):
        answer = memory_api.post(f"# {marker}\n{{ " + " ".join(f"f{i}_{j}" for j in range(1990)) + " }")
        assert (
            answer["data"] is None
            and answer["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
        )
    kept = sum(document_bytes(document) for document in _ours(marker))
    assert kept <= 2 * CACHE, f"{kept / 2**20:.0f} MiB of documents kept"  # 51 MiB before, 15 now


def test_big_valid_documents_are_kept_up_to_the_caches_bytes_and_answer(memory_api: Api) -> None:
    """64 KB of comment holding one emoji is a text of 250 KB in Python, kept by the parse
    cache and by the plan that answers it: 200 of them here kept 200 (50 MB of text)."""
    marker = uuid.uuid4().hex
    expected = memory_api.data(PAPERS)
    for i in range(200):
        comment = f"# {marker} {i} \U0001f600\n" + ("#" + "x" * 3900 + "\n") * 16
        assert memory_api.data(comment + PAPERS) == expected
    kept = sum(document_bytes(document) for document in _ours(marker))
    assert kept <= 2 * CACHE, f"{kept / 2**20:.0f} MiB of documents kept"  # 63 MiB before, 16 now


def test_a_small_document_is_parsed_once(memory_api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    parse, parsed = documents.parse, []  # each text parsed, by the cache
    monkeypatch.setattr(
        documents, "parse", lambda query, **options: (parsed.append(query), parse(query, **options))[1]
    )
    # A directive: no plan answers it, so the view parses (or finds) it every time.
    query = f"{{ a{uuid.uuid4().hex}: papers(first: 1) @include(if: true) {{ totalCount }} }}"
    answers = [memory_api.data(query) for _ in range(3)]
    assert answers[0] == answers[1] == answers[2] and len(answers[0]) == 1
    assert parsed.count(query) == 1, "parsed again: the cache missed"


def test_a_validation_result_is_never_another_documents(memory_api: Api) -> None:
    """graphql-core's nodes compare equal by their fields and offsets: keyed by the document,
    the validation cache took ``{   x }`` for ``{\\n  x }`` and answered its error at line 2."""
    field = "unknown" + uuid.uuid4().hex
    first = memory_api.post(f"{{\n  {field} }}")["errors"][0]["locations"]
    second = memory_api.post(f"{{   {field} }}")["errors"][0]["locations"]
    assert (first, second) == ([{"line": 2, "column": 3}], [{"line": 1, "column": 5}])


@strawberry.type
class _Query:
    hello: str = "world"


def test_a_document_larger_than_the_cache_is_parsed_each_time_and_answers() -> None:
    schema = strawberry.Schema(_Query, extensions=[partial(DocumentCache, 4, 50_000)])
    small, big = "{ hello }", "# " + "\U0001f600" * 20_000 + "\n{ hello }"  # 80 KB of text
    for query in (small, big, big, small):
        result = schema.execute_sync(query, root_value=_Query())
        assert result.errors is None and result.data == {"hello": "world"}
    cache = DocumentCache(4, 50_000).cache
    assert len(cache) == 1 and 0 < cache.bytes <= 50_000


def test_the_bytes_bound_evicts_the_least_recently_used_first() -> None:
    cache: BoundedLRU[str, int] = BoundedLRU(10, 100)
    for key in "abc":
        cache.put(key, ord(key), 30)
    assert cache.get("a") == ord("a")  # now the most recently used
    cache.put("d", 4, 30)  # 120 bytes: b, the least recently used, goes
    assert [key for key in "abcd" if key in cache] == ["a", "c", "d"] and cache.bytes == 90
    cache.put("e", 5, 70)  # c goes, then a (read after c was put)
    assert [key for key in "acde" if key in cache] == ["d", "e"] and cache.bytes == 100


def _post(api: Api, query: str, operation: str) -> dict[str, Any]:
    response = api.client.post("/graphql", json={"query": query, "operationName": operation})
    assert response.status_code == 200, response.text[:500]
    answer: dict[str, Any] = response.json()
    return answer


def test_validation_errors_quoting_the_document_are_counted_with_their_messages(memory_api: Api) -> None:
    """A fragment spread into 100 operations that uses a variable none defines is refused with
    100 errors, each quoting the variable's name: a 32,000-character name makes 3.2 MB of
    messages from a 32 KB request. Counted 1 KiB an error, 10 of them stayed in the validation
    cache (32 MB, and a review grew a server by 185 MB with 100); counted with their messages,
    the cache's bytes hold."""
    marker = uuid.uuid4().hex
    for i in range(10):
        variable = f"v{marker}{i}" + "v" * 32_000
        operations = " ".join(f"query o{n} {{ ...F }}" for n in range(101))
        query = f"fragment F on Query {{ paper(id: ${variable}) {{ id }} }} {operations}"
        answer = _post(memory_api, query, "o0")
        assert answer["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    gc.collect()
    kept = sum(
        memory_of(found.message)
        for found in gc.get_objects()
        if isinstance(found, GraphQLError) and marker in found.message
    )
    assert kept <= CACHE, f"{kept / 2**20:.0f} MiB of messages kept"  # 32 MiB before, 13 now


def _spread_fragments(marker: str) -> str:
    """1,600 characters whose fragments, spread into one another, plan 7,110 fields."""
    paper = "id pithNumber shortPithNumber title abstractExcerpt license submittedAt authorCount authorNames"
    levels = ["fragment L0 on Paper { ...S }"]
    for k in range(1, 4):
        inner = f"papers(first: 1) {{ nodes {{ ...L{k - 1} }} }}"
        levels.append(
            f"fragment L{k} on Paper {{ ...S primaryCategory {{ {inner} }} versions {{ __typename }} "
            f"authors(first: 1) {{ {inner} }} }}"
        )
    roots = " ".join(f'a{i}: paper(id: "x") {{ ...L3 }}' for i in range(30))
    return f"# {marker}\nquery Q {{ {roots} }} fragment S on Paper {{ {paper} }} " + " ".join(levels)


def test_plans_are_counted_by_the_fields_they_plan(memory_api: Api) -> None:
    """Fragments are planned where they are spread: a plan of 1,600 characters held 7,110 field
    plans (2.75 MB) and was counted as its document and half again (506 KB): 12 of them stayed
    in the plan cache (a review grew a server by 98 MB with 300)."""

    def field_plans() -> int:
        gc.collect()
        return sum(isinstance(found, FieldPlan) for found in gc.get_objects())

    before = field_plans()
    for i in range(12):
        answer = _post(memory_api, _spread_fragments(f"{uuid.uuid4().hex} {i}"), "Q")
        assert answer == {"data": {f"a{n}": None for n in range(30)}}
    grown = field_plans() - before
    # 387 bytes a field plan, measured: 32 MiB before (12 plans kept), 13 MiB now
    assert grown * 387 <= CACHE, f"{grown} field plans kept"
