"""The in-memory reader keeps sorted key lists of what filters name; a client naming new
values each request must not grow them without bound (an attacker's review of 0.9.1: 100
codes a filter, each kept as an empty list, 70 KB a request)."""

from __future__ import annotations

import itertools

from pith_graph import SAMPLES, load_graph
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.memory_view import RECENT_KEPT
from pith_graph.api.reads.records import PaperFilter
from pith_graph.api.reads.words import search_terms


def _reader() -> MemoryReader:
    reader = MemoryReader(load_graph([SAMPLES])[0])
    reader.warm()
    return reader


def test_values_the_graph_does_not_hold_are_not_kept() -> None:
    reader = _reader()
    for code in ("cs.LG", "cs.DC"):  # kept as before: the graph's own
        reader.count_papers(PaperFilter(category=code))
    kept = dict(reader._lists)
    for i in range(200):
        unknown = PaperFilter(categories=(f"x.{i}", f"y.{i}"), exclude_categories=(f"z.{i}",))
        assert reader.count_papers(unknown) == 0
        assert reader.list_papers(unknown, 5, None).items == ()
        for where in (
            PaperFilter(category=f"c.{i}"),
            PaperFilter(author=f"a{i}"),
            PaperFilter(archive=f"r{i}"),
        ):
            assert reader.count_papers(where) == 0
        assert reader.papers_of_signers([f"signer-{i}"], 5, None)[f"signer-{i}"].items == ()
        assert (
            reader.papers_of_signers([f"signer-{i}"], 5, None, signed_bundle=True)[f"signer-{i}"].items == ()
        )
    assert reader._lists == kept
    excluded = PaperFilter(exclude_categories=("nothing.here",))  # excludes nothing
    assert reader.count_papers(excluded) == reader.count_papers(PaperFilter())


def test_combinations_of_title_words_and_of_categories_are_kept_a_few_at_a_time() -> None:
    reader = _reader()
    fresh = _reader()
    words = sorted(
        {
            word
            for record in reader.list_papers(PaperFilter(), 10, None).items
            for word in search_terms(record.title)
        }
    )
    pairs = list(itertools.combinations(words, 2))
    assert len(pairs) > 3 * RECENT_KEPT
    codes = sorted(code for code in reader._archives().get("cs", ()))
    code_pairs = list(itertools.combinations([*codes, "math.ST", "stat.ML", "x.unknown"], 2))
    for pair in pairs:
        assert reader.count_papers(PaperFilter(title_terms=pair)) >= 0
    for pair in code_pairs:
        reader.count_papers(PaperFilter(categories=tuple(sorted(pair))))
    assert len(reader._recent_titles) == RECENT_KEPT
    assert len(reader._unions) == min(RECENT_KEPT, len(code_pairs))
    for pair in pairs[:5] + pairs[-5:]:  # forgotten or kept, the same answers as a fresh reader's
        assert reader.count_papers(PaperFilter(title_terms=pair)) == fresh.count_papers(
            PaperFilter(title_terms=pair)
        )
