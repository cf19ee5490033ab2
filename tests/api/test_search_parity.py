"""BM25 parity: on a corpus of 1,500 papers, the in-memory ranking is Neo4j's.

Loaded so that every paper is written once (only the bundles that win), Lucene's statistics
are exactly the papers' and the two readers answer every query identically: the same papers, the same
scores to the last bit, the same order. Loaded from every bundle in small batches, papers
replaced by a later bundle leave deleted documents that Lucene keeps counting (in ``N``, ``n`` and
``avgdl``, until it merges segments, which happens when it happens): the sets stay identical, and
every score lies between the scores with none and with all of the replaced documents counted.
"""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest
from apitest import loaded_neo4j

from pith_graph.api.reads.bm25 import FieldScorer, avg_field_length, f32, idf
from pith_graph.api.reads.discovery import Listing, SearchPosition
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.records import PaperFilter
from pith_graph.api.reads.text_index import TextIndex
from pith_graph.api.reads.words import search_terms, tokens
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.format import bundle_digest
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.verify import newest_snapshot
from pith_graph.testing.corpus import corpus_signers, generate_bundles

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

SIZE = 1500  # ~62k hits over the queries below: enough; each 1,000 more costs ~15 s of the suite
SEED = 23


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


def test_updates_move_scores_only_as_far_as_replaced_documents_allow(
    request: pytest.FixtureRequest, bundles: tuple[Path, Keyring], memory: MemoryReader
) -> None:
    bounds = _Bounds(memory, bundles[0])
    with loaded_neo4j(request, bundles, timeout=60, batch_size=100) as neo4j:
        moved = _check_within_bounds(memory, neo4j, bounds)
    assert moved > 0  # some replaced documents were still counted: the bounds were exercised


class _Bounds:
    """Each hit's score range while Lucene still counts some of the replaced documents.

    Which of them it counts depends on when it merged segments, so the test does not guess:
    for every term and field it takes the statistics with none and with all of the *ghosts*
    counted: the titles and abstracts of every input bundle but the one each paper kept (a
    superset of the documents written and then replaced). BM25 grows with ``idf`` (up with
    ``N``, down with ``n``) and with ``avgdl``, and Lucene's float rounding is monotone, so
    the lowest and highest statistics give the lowest and highest score Neo4j may answer.
    """

    def __init__(self, memory: MemoryReader, path: Path) -> None:
        self.index, self.piths = memory._text_index()  # type: ignore[attr-defined]
        kept = {memory._paper(pith).bundle_sha256 for pith in self.piths}  # type: ignore[union-attr]
        texts = _ghost_texts(path, kept)
        self.ghost_fields = TextIndex(texts).fields
        self.avgdl = [
            _mean_range(live.total_terms, live.doc_count, [len(tokens(text[at])) for text in texts])
            for at, live in enumerate(self.index.fields)
        ]

    def scores(self, terms: tuple[str, ...]) -> dict[str, tuple[float, float]]:
        """Pith number -> (lowest, highest) score, for every paper holding each term."""
        low, high = self._search(terms, 0), self._search(terms, 1)
        return {self.piths[doc]: (low[doc], high[doc]) for doc in low}

    def _search(self, terms: tuple[str, ...], end: int) -> dict[int, float]:
        sums: dict[int, float] | None = None
        for term in terms:
            title, abstract = (self._field_scores(at, term, end) for at in range(len(self.index.fields)))
            both = {doc: f32(score + abstract[doc]) for doc, score in title.items() if doc in abstract}
            matched = {**title, **abstract, **both}
            sums = (
                matched
                if sums is None
                else {doc: s + matched[doc] for doc, s in sums.items() if doc in matched}
            )
        return {doc: f32(total) for doc, total in (sums or {}).items()}

    def _field_scores(self, at: int, term: str, end: int) -> dict[int, float]:
        live, ghost = self.index.fields[at], self.ghost_fields[at]
        found = live.postings.get(term)
        if found is None:
            return {}
        docs, freqs = found
        with_term = len(ghost.postings.get(term, ((), ()))[0])
        if end == 0:  # every ghost holding the term counted, no other
            term_idf = idf(len(docs) + with_term, live.doc_count + with_term)
        else:  # every ghost counted but none holding the term
            term_idf = idf(len(docs), live.doc_count + ghost.doc_count)
        scorer = FieldScorer(live.boost, term_idf, self.avgdl[at][end])
        return {doc: scorer.score(freq, live.norms[doc]) for doc, freq in zip(docs, freqs, strict=True)}


def _ghost_texts(path: Path, kept: set[str]) -> list[tuple[str, str]]:
    """(title, abstract excerpt) of every bundle of ``path`` but the first of each kept one."""
    texts = []
    for line in path.read_bytes().splitlines():
        bundle = orjson.loads(line)
        digest = bundle_digest(bundle)
        if digest in kept:
            kept = kept - {digest}
            continue
        paper = newest_snapshot(bundle)["payload"]["graph_snapshot"]["paper"]
        texts.append((paper["title"], paper["abstract_excerpt"]))
    return texts


def _mean_range(total: int, count: int, lengths: list[int]) -> tuple[float, float]:
    """The lowest and highest ``avgdl`` with any subset of the ghosts' field lengths counted
    (Lucene does not count an empty field), rounded as Lucene rounds it. The lowest adds the
    shortest lengths while each is below the mean; the highest the longest while above."""
    counted = sorted(n for n in lengths if n)
    low_total, low_count = total, count
    for n in counted:
        if n * low_count >= low_total:
            break
        low_total, low_count = low_total + n, low_count + 1
    high_total, high_count = total, count
    for n in reversed(counted):
        if n * high_count <= high_total:
            break
        high_total, high_count = high_total + n, high_count + 1
    return avg_field_length(low_total, low_count), avg_field_length(high_total, high_count)


def _check_within_bounds(memory: MemoryReader, neo4j: Neo4jReader, bounds: _Bounds) -> int:
    """Checks every query's hits; returns how many scores differ from the in-memory ones."""
    moved = 0
    for listing in _queries(memory):
        expected = dict(_ranking(memory, listing))
        found = _ranking(neo4j, listing)
        assert {pith for pith, _ in found} == set(expected), listing
        ranges = bounds.scores(listing.text)
        for pith, score in found:
            low, high = ranges[pith]
            assert low <= expected[pith] <= high, (listing, pith)  # the bounds hold the exact score
            assert low <= score <= high, (listing, pith, low, score, high)
            moved += score != expected[pith]
        # Neo4j ranks by its own scores.
        assert [score for _, score in found] == sorted((score for _, score in found), reverse=True), listing
    return moved
