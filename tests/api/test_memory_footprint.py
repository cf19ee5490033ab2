"""The memory reader's big indexes stay lean (api/reads/memory_discovery.py,
api/reads/memory_view.py): equal facet value tuples are one object, and title postings are
tuples of distinct nodes, not sets, holding exactly the papers whose title has the word."""

from __future__ import annotations

from collections import defaultdict

from apitest import corpus, memory_reader  # noqa: F401 (fixtures)

from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.memory_view import LABEL, TITLE
from pith_graph.api.reads.words import title_words
from pith_graph.schema.graph import PAPER


def test_equal_facet_values_are_one_tuple(memory_reader: MemoryReader) -> None:
    values = memory_reader._facet_values()
    for facet in ("years", "licenses", "categories", "archives"):
        tuples = list(values[facet].values())
        assert len(set(tuples)) < len(tuples), facet  # the corpus repeats them
        assert len({id(found) for found in tuples}) == len(set(tuples)), facet


def test_title_postings_are_tuples_of_the_titles_papers(memory_reader: MemoryReader) -> None:
    expected: defaultdict[str, set[str]] = defaultdict(set)
    for node, data in memory_reader.G.nodes(data=True):
        if data.get(LABEL) == PAPER.label:
            for word in title_words(data[TITLE]):
                expected[word].add(node)
    index = memory_reader._index(TITLE, memory_reader._build_title_index)
    assert set(index) == set(expected)
    for word, nodes in index.items():
        assert type(nodes) is tuple, word
        assert len(nodes) == len(expected[word]) and set(nodes) == expected[word], word
