"""The text index a snapshot's writer builds as it writes (``TextIndex.built_pieces``, since
0.9.10 a :class:`~pith_graph.api.reads.text_postings.BuiltField` a field): the very pieces of
the index built whole, in three bytes a posting where the reader's index holds six."""

from __future__ import annotations

import random
import tracemalloc

import pytest

from pith_graph.api.reads.text_index import PIECE_POSTINGS, PIECE_TERMS, TextIndex, _Field, _packed_postings
from pith_graph.api.reads.text_postings import BLOCK, BuiltField


def _documents(count: int, seed: int = 5) -> list[tuple[str, str]]:
    """Titles and abstracts of a few hundred words, some empty, two with a word past 255 and
    past 65,535 times (the reader's index holds at most 65,535)."""
    rng = random.Random(seed)
    words = ["graph", "neural", "o'brien", "3.5", "zoë", "李", *(f"w{n}" for n in range(300))]
    documents = []
    for doc in range(count):
        title = " ".join(rng.choice(words[:40]) for _ in range(rng.randint(0, 12)))
        abstract = " ".join(rng.choice(words) for _ in range(rng.randint(0, 120)))
        if doc == 7:
            abstract += " many" * 300
        if doc == count - 3:
            abstract = "most " * 70_000 + "rare"
        documents.append((title, abstract))
    return documents


def test_the_written_index_is_the_one_built_whole() -> None:
    documents = _documents(2_500)
    whole = list(TextIndex(documents).pieces())
    written = list(TextIndex.built_pieces(len(documents), lambda n: (texts[n] for texts in documents)))
    assert written == whole
    assert sum("docs" in piece for piece in whole) > 4  # (postings over several pieces)


@pytest.mark.parametrize("block", [1, 3, 1000, BLOCK])
def test_a_field_over_several_blocks_gives_the_same_pieces(block: int) -> None:
    """Documents past the first block are offsets from their block's first: joined again,
    they are the numbers the reader's index holds."""
    documents = _documents(2_100, seed=block)
    for number in (0, 1):
        whole, built = _Field(1.0), BuiltField(block)
        for doc, texts in enumerate(documents):
            whole.add(doc, texts[number])
            built.add(doc, texts[number])
        most = (PIECE_POSTINGS, PIECE_TERMS)
        assert list(built.pieces(number, _packed_postings, most)) == list(whole.pieces(number))


def test_a_block_holds_at_most_what_two_bytes_number() -> None:
    with pytest.raises(ValueError, match="a block holds"):
        BuiltField(BLOCK + 1)


def test_writing_holds_three_bytes_a_posting() -> None:
    """Built whole (array('i') documents, array('H') frequencies) a field's postings took six
    bytes each, over six in all with their arrays' spare room: at 100k bundles 32 MB of
    abstracts' postings beside the graph. Written, a field holds under four a posting (3.18
    here, 3.23 with 20,000 documents, which took four times as long under tracemalloc)."""
    rng = random.Random(3)
    words = [f"t{n}" for n in range(60)]
    documents = [("", " ".join(rng.sample(words, 50))) for _ in range(5_000)]
    postings = 50 * len(documents)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = 0
        for piece in TextIndex.built_pieces(len(documents), lambda n: (texts[n] for texts in documents)):
            if piece.get("field") == 1:  # the field is built, none of its postings written
                held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 0 < held < 4 * postings, (held, postings)
