"""Title words: the fast path for plain ASCII titles splits exactly as the general one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pith_graph.api.reads.words import _title_words, title_words

ASCII = st.text(alphabet="abXY019:.',;- !\"_\t", max_size=40)


@settings(max_examples=3000, deadline=None)
@given(ASCII)
def test_ascii_titles_split_as_the_general_rules_say(text: str) -> None:
    assert title_words(text) == _title_words(text)


def test_long_tokens_are_cut_at_lucenes_length() -> None:
    text = "a" * 600 + " " + "1,2" * 200
    assert title_words(text) == _title_words(text)
    assert [len(word) for word in title_words(text)] == [255, 90, 255, 90]  # repeats dropped
