"""BM25 parity: on a corpus of 1,500 papers, the in-memory ranking is Neo4j's.

Loaded so that every paper is written once (only the bundles that win), Lucene's statistics
are exactly the papers' and the two readers answer every query identically: the same papers, the same
scores to the last bit, the same order. Loaded from every bundle in small batches, papers
replaced by a later bundle leave deleted documents that Lucene keeps counting (in ``N`` and ``n``, until it
merges segments): the sets stay identical and scores move by a fraction of a percent, so
only papers whose scores are that close may swap places.
"""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest
from apitest import loaded_neo4j

from pith_graph.api.reads.discovery import Listing, SearchPosition
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.records import PaperFilter
from pith_graph.api.reads.words import search_terms
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.format import bundle_digest
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.testing.corpus import corpus_signers, generate_bundles

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

SIZE = 1500  # ~62k hits over the queries below: enough; each 1,000 more costs ~15 s of the suite
SEED = 23
TOLERANCE = 0.02  # relative score difference within which papers may swap places


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Keyring]:
    folder = tmp_path_factory.mktemp("bm25")
    signer, builder = corpus_signers(SEED)
    keyring = folder / "keyring.json"
    keyring.write_bytes(orjson.dumps([signer.keyring_entry(), builder.keyring_entry()]))
    lines = generate_bundles(SIZE, signer=signer, seed=SEED, extra_signer=builder, extra_signer_every=40)
    path = folder / "bundles.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path, resolve_keyring(keyring)


@pytest.fixture(scope="module")
def memory(bundles: tuple[Path, Keyring]) -> MemoryReader:
    store = MemoryStore()
    run([str(bundles[0])], keyring=bundles[1], store=store, workers=1)
    return MemoryReader(store.graph)


@pytest.fixture(scope="module")
def winners(bundles: tuple[Path, Keyring], memory: MemoryReader) -> tuple[Path, Keyring]:
    """Only the bundles the stores keep: loading them writes every paper once."""
    kept = {memory._paper(pith).bundle_sha256 for _, pith in memory._all_keys()}  # type: ignore[union-attr]
    path = bundles[0].with_name("winners.jsonl")
    lines = bundles[0].read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(line for line in lines if bundle_digest(orjson.loads(line)) in kept))
    return path, bundles[1]


def _queries(memory: MemoryReader) -> list[Listing]:
    vocabulary = sorted(
        {term for paper in memory._papers_of(memory._all_keys()) for term in search_terms(paper.title)}
    )
    rng = random.Random(SEED)
    texts = [[word] for word in vocabulary]
    texts += [rng.sample(vocabulary, 2) for _ in range(120)]
    texts += [rng.sample(vocabulary, 3) for _ in range(60)]
    listings = [Listing(text=tuple(text)) for text in texts]
    listings += [
        Listing(PaperFilter(archive="cs", submitted_from="2018-01-01T00:00:00Z"), ("learning",)),
        Listing(PaperFilter(title_terms=("graphs",)), ("networks", "attention")),
        Listing(PaperFilter(category="hep-th"), ("anomalies",)),
    ]
    return listings


def _ranking(reader: MemoryReader | Neo4jReader, listing: Listing) -> list[tuple[str, float]]:
    page = reader.search_papers(listing, "relevance", SIZE * 2, None)
    return [(item.paper.pith_number, item.score) for item in page.items]


def test_papers_written_once_rank_identically(
    request: pytest.FixtureRequest, winners: tuple[Path, Keyring], memory: MemoryReader
) -> None:
    with loaded_neo4j(request, winners, timeout=60, batch_size=500) as neo4j:
        _check_identical(memory, neo4j)


def _check_identical(memory: MemoryReader, neo4j: Neo4jReader) -> None:
    queries = _queries(memory)
    assert len(queries) > 250
    hits = 0
    for listing in queries:
        expected = _ranking(memory, listing)
        assert _ranking(neo4j, listing) == expected, listing
        hits += len(expected)
    assert hits > 50_000
    # Pages of 25 after each edge's position walk the same ranking on both.
    for listing in queries[:: len(queries) // 12]:
        full = _ranking(memory, listing)
        for reader in (memory, neo4j):
            seen: list[tuple[str, float]] = []
            after: SearchPosition | None = None
            while True:
                page = reader.search_papers(listing, "relevance", 25, after)
                seen += [(item.paper.pith_number, item.score) for item in page.items]
                if not page.has_next:
                    break
                last = page.items[-1]
                after = SearchPosition(last.score, last.paper.submitted_at, last.paper.pith_number, len(seen))
            assert seen == full


def test_updates_move_scores_by_less_than_the_tolerance(
    request: pytest.FixtureRequest, bundles: tuple[Path, Keyring], memory: MemoryReader
) -> None:
    with loaded_neo4j(request, bundles, timeout=60, batch_size=100) as neo4j:
        worst = _check_close(memory, neo4j)
    assert 0 < worst < TOLERANCE


def _check_close(memory: MemoryReader, neo4j: Neo4jReader) -> float:
    worst = 0.0
    for listing in _queries(memory):
        expected = dict(_ranking(memory, listing))
        found = _ranking(neo4j, listing)
        assert {pith for pith, _ in found} == set(expected), listing
        for pith, score in found:
            worst = max(worst, abs(score - expected[pith]) / expected[pith])
        # A paper never comes after one whose in-memory score is lower beyond the tolerance.
        lowest = float("inf")
        for pith, _ in found:
            assert expected[pith] <= lowest * (1 + TOLERANCE), (listing, pith)
            lowest = min(lowest, expected[pith])
    return worst
