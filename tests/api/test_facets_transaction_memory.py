"""A listing's facets fit the transaction memory its papers need, and a read that does not
fit is told to the client as a limit, not masked as a bug.

Neo4j charges a query's memory to its transaction and refuses past
``db.memory.transaction.max``. The facets statement collects the listing's papers once; an
operator that holds rows (a Sort, a Top) after that is charged the whole collected list for
every row it holds: on 238k papers, the authors facet of one archive (166k papers) asked for
more than the 687 MiB a 1 GB heap allows and answered ``INTERNAL_SERVER_ERROR``. The facets
are now counted without ordering in Neo4j (``_RANKS`` in ``api/reads/cypher_discovery.py``).

Here a private server allows 2 MiB per transaction (about the least it starts with). A
listing of 300 papers of 10 authors each (1,000 authors in all), 100 years and 100 licenses
answers every facet, equal to the memory backend's answer, where the old statement did not
fit (measured with PROFILE on similar listings: 2,000 papers of 2 authors, 0.06 MiB against
9 MiB; 300 papers of 40 authors each, 2.2 MiB against 429 MiB). Typeahead over 2,000
matching authors fits too. A listing whose 16k authors alone need more than 2 MiB answers
``LIMIT_EXCEEDED`` with a suggestion, over real HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from apitest import Api, api_of, memory_reader_of, signed_jsonl

from pith_graph.api.reads.discovery import FACETS, Listing
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.records import PaperFilter
from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.pipeline import run
from pith_graph.testing.signer import PaperSpec

# Its own server only (2 MiB per transaction): scripts/test runs it beside the Java tests, in the
# other half (the Java half was the longer by 48-93 s in CI; this module takes about 44 s).
pytestmark = [pytest.mark.neo4j, pytest.mark.own_server]

TX_MEMORY = "2m"
NARROW, WIDE = "math.NT", "hep-ex"
NARROW_PAPERS, NARROW_POOL, WIDE_PAPERS, WIDE_AUTHORS = 300, 1000, 400, 40

FACETS_QUERY = """query ($category: String!) {
  papers(filter: {category: $category}) {
    totalCount
    facets(first: 100) {
      years { value count } licenses { value count } authors { value count }
      categories { value count } archives { value count }
    }
  }
}"""


def _narrow() -> list[PaperSpec]:
    return [
        PaperSpec.example(
            f"2402.{10000 + i}",
            authors=[f"Pool Author {(i * 37 + k * k * 11) % NARROW_POOL:04d}" for k in range(10)],
            primary_cat=NARROW,
            license=f"http://licenses.example/{i % 100:03d}",
            submitted_at=f"{1901 + (i * 13) % 100}-03-0{1 + i % 9}T12:00:00Z",
        )
        for i in range(NARROW_PAPERS)
    ]


def _wide() -> list[PaperSpec]:
    return [
        PaperSpec.example(
            f"2403.{10000 + i}",
            authors=[f"Wide {i:03d} Person {k:02d}" for k in range(WIDE_AUTHORS)],
            primary_cat=WIDE,
        )
        for i in range(WIDE_PAPERS)
    ]


@pytest.fixture(scope="module")
def narrow(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Keyring]:
    return signed_jsonl(tmp_path_factory.mktemp("narrow"), _narrow(), seed=23)


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Keyring]:
    return signed_jsonl(tmp_path_factory.mktemp("wide"), _wide(), seed=23)


@pytest.fixture(scope="module")
def tight(
    start_neo4j: Callable[..., Any], narrow: tuple[Path, Keyring], wide: tuple[Path, Keyring]
) -> Iterator[Any]:
    """A private server allowing :data:`TX_MEMORY` per transaction, both listings loaded, in
    batches that fit it."""
    server = start_neo4j(NEO4J_TX_MEMORY=TX_MEMORY)
    store = server.connect()
    try:
        store.ensure_schema()
        for (path, keyring), batch in ((narrow, 8), (wide, 4)):
            report = run([str(path)], keyring=keyring, store=store, workers=1, batch_size=batch)
            assert report.rejected == 0, report.rejections
    finally:
        store.close()
    try:
        yield server
    finally:
        server.script("stop", timeout=180)


@pytest.fixture(scope="module")
def api(tight: Any, narrow: tuple[Path, Keyring]) -> Iterator[Api]:
    store = tight.connect()
    try:
        with api_of(store, narrow[1]) as served:
            yield served
    finally:
        store.close()


def test_a_large_listings_facets_fit_the_memory_its_papers_need(
    api: Api, narrow: tuple[Path, Keyring]
) -> None:
    answer = api.data(FACETS_QUERY, category=NARROW)["papers"]
    assert answer["totalCount"] == NARROW_PAPERS
    facets = answer["facets"]
    assert [len(facets[name]) for name in ("years", "licenses", "authors")] == [100, 100, 100]
    memory = memory_reader_of(narrow)
    expected = memory.facet_counts(Listing(PaperFilter(category=NARROW)), FACETS, 100)
    for facet in FACETS:
        assert facets[facet] == [{"value": c.value, "count": c.count} for c in expected[facet]], facet


def test_a_read_past_the_transaction_memory_is_a_limit_the_client_is_told(
    api: Api, tight: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING", "pith_graph.api"):
        body = api.post(FACETS_QUERY, {"category": WIDE})
    assert body["data"] is None
    (error,) = {
        (e["extensions"]["code"], e["message"], e["extensions"].get("suggestion")) for e in body["errors"]
    }
    assert error == (
        "LIMIT_EXCEEDED",
        "The answer needs more memory than the graph database lets one query hold.",
        "Narrow the query: a filter, fewer values (first).",
    )
    assert "ran out of transaction memory" in caplog.text
    assert "MemoryPoolOutOfMemoryError" not in str(body)  # the server's words stay in the log
    # The reader's own error names the settings to raise.
    reader = Neo4jReader.connect(tight.uri, tight.user, tight.password, tight.database, timeout=30)
    try:
        with pytest.raises(StoreError) as caught:
            reader.facet_counts(Listing(PaperFilter(category=WIDE)), ["authors"], 100)
    finally:
        reader.close()
    assert caught.value.code is StoreErrorCode.MEMORY
    assert "db.memory.transaction.max" in caught.value.message
    # The same server still answers the listing itself.
    count = "query ($category: String!) { papers(filter: {category: $category}) { totalCount } }"
    assert api.data(count, category=WIDE) == {"papers": {"totalCount": WIDE_PAPERS}}


def test_typeahead_over_thousands_of_matches_fits_too(api: Api, wide: tuple[Path, Keyring]) -> None:
    """2,000 authors match "1 3" (a word starting 1, another 3: ``Wide 1xx Person 3x``), fewer
    than the full-text index's cap: ranked in Neo4j, their old statement held 100 rows each
    charged with the 2,000 matches (48 MiB at 3,000 on the 238k corpus); now 0.4 MiB there."""
    query = "query ($prefix: String!) { authors(prefix: $prefix, first: 100) { name paperCount } }"
    found = api.data(query, prefix="1 3")["authors"]
    expected = memory_reader_of(wide).authors_by_prefix(["1", "3"], 100)
    assert [(a["name"], a["paperCount"]) for a in found] == [(a.name, a.paper_count) for a in expected]
    assert len(found) == 100 and found[0]["name"] == "Wide 100 Person 30"
