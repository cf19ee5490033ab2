"""Title words: tokens longer than Lucene's limit are cut as its StandardTokenizer cuts them."""

from __future__ import annotations

from pith_graph.api.reads.words import title_words


def test_long_tokens_are_cut_at_lucenes_length() -> None:
    text = "a" * 600 + " " + "1,2" * 200
    assert [len(word) for word in title_words(text)] == [255, 90, 255, 90]  # repeats dropped
