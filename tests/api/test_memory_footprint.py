"""The memory reader's big indexes stay lean (api/reads/memory_facets.py,
api/reads/memory_view.py, api/reads/memory_discovery.py) and hold what they stand for:
equal facet values are one object, papers' keys are one tuple a paper shared by every key
list, a short pith number keeps its papers' pith numbers, a source of several papers its
versions in order, typeahead equal words as one string, and title filters read the text
index's title postings: exactly the papers whose title has the word (since 0.9.9)."""

from __future__ import annotations

from collections import defaultdict

from apitest import corpus, memory_reader  # noqa: F401 (fixtures)

from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.memory_facets import SHARED_FACETS
from pith_graph.api.reads.memory_view import LABEL, PITH_NUMBER, SUBMITTED_AT, TITLE
from pith_graph.api.reads.records import PaperFilter
from pith_graph.api.reads.words import title_words
from pith_graph.schema.graph import PAPER


def _papers(reader: MemoryReader) -> dict[str, dict[str, object]]:
    return {
        data[PITH_NUMBER]: data for _, data in reader.G.nodes(data=True) if data.get(LABEL) == PAPER.label
    }


def test_equal_facet_values_are_one_tuple(memory_reader: MemoryReader) -> None:
    values = memory_reader._facet_values()
    rows = list(values.shared.values())
    assert len({id(row) for row in rows}) == len(set(rows)) < len(rows)  # the corpus repeats them
    for at, facet in enumerate(SHARED_FACETS):
        tuples = [row[at] for row in rows]
        assert len(set(tuples)) < len(tuples), facet
        assert len({id(found) for found in tuples}) == len(set(tuples)), facet
        assert list(values.every(facet)) == tuples
    papers = _papers(memory_reader)
    assert set(values.shared) == set(values.authors) == set(papers)
    for pith, data in papers.items():
        assert values.shared[pith][0] == (str(data[PAPER.prop("submittedYear")]),)
        assert values.shared[pith][1] == (data[PAPER.prop("license")],)


def test_key_lists_share_each_papers_key(memory_reader: MemoryReader) -> None:
    keys = memory_reader._paper_keys()
    papers = _papers(memory_reader)
    assert keys == {pith: (data[SUBMITTED_AT], pith) for pith, data in papers.items()}
    assert memory_reader._all_keys() == sorted(keys.values())
    code = memory_reader.all_categories()[0].code
    for listed in (memory_reader._all_keys(), memory_reader._category_keys(code)):
        assert listed and all(key is keys[key[1]] for key in listed)


def test_short_pith_numbers_and_versions_hold_their_papers(memory_reader: MemoryReader) -> None:
    papers = _papers(memory_reader)
    shorts: defaultdict[str, list[str]] = defaultdict(list)
    sources: defaultdict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for pith, data in papers.items():
        shorts[str(data[PAPER.prop("shortPithNumber")])].append(pith)
        source = (str(data[PAPER.prop("sourceKind")]), str(data[PAPER.prop("sourceId")]))
        sources[source].append((int(data[PAPER.prop("sourceVersion")]), pith))  # type: ignore[call-overload]
    for short, piths in shorts.items():
        assert memory_reader._short(short) == tuple(sorted(piths)), short
    assert memory_reader._short("pith:NOSUCH00") == ()
    several = {
        f"{kind}\x00{source}": [p for _, p in sorted(v)]
        for (kind, source), v in sources.items()
        if len(v) > 1
    }
    assert several and memory_reader._versions() == several


def test_typeahead_words_are_sorted_and_shared(memory_reader: MemoryReader) -> None:
    words, ranks, authors = memory_reader._typeahead()
    pairs = list(zip(words, ranks, strict=True))
    assert pairs == sorted(pairs) and len(authors) > 0
    assert len({id(word) for word in words}) == len(set(words)) < len(words)


def test_title_postings_are_the_titles_papers(memory_reader: MemoryReader) -> None:
    expected: defaultdict[str, set[str]] = defaultdict(set)
    for pith, data in _papers(memory_reader).items():
        for word in title_words(str(data[TITLE])):
            expected[word].add(pith)
    index, papers = memory_reader._text_index()
    assert set(index.fields[0].postings) == set(expected)
    for word, piths in expected.items():
        assert {papers[doc] for doc in index.documents(0, word)} == piths, word
        keys = memory_reader._title_keys((word,))
        assert keys == sorted(keys) and {pith for _, pith in keys} == piths, word
        assert memory_reader.count_papers(PaperFilter(title_terms=(word,))) == len(piths)
    first, second = sorted(expected, key=lambda word: -len(expected[word]))[:2]
    both = {pith for _, pith in memory_reader._title_keys((first, second))}
    assert both == expected[first] & expected[second]
