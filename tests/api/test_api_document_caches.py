"""The caches of query documents (parsed documents, validation results, plans) are bounded by
the memory they keep, not only by their count (since 0.9.3), over real HTTP to uvicorn
where it shows: documents sent by the hundred stay in memory up to the caches' bytes, a
small document is parsed once, big ones answer as small ones do, and a validation result is
never another document's."""

from __future__ import annotations

import gc
import uuid
from functools import partial

import pytest
import strawberry
from apitest import Api, corpus, memory_api, memory_reader  # noqa: F401 (fixtures)
from graphql import DocumentNode

import pith_graph.api.documents as documents
from pith_graph.api.documents import BYTES_PER_DOCUMENT, DOCUMENTS, DocumentCache, document_bytes
from pith_graph.api.lru import BoundedLRU

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
