"""An author's name from its papers' spellings, counted (``loader/stores/names.py``): the
arithmetic as data, and a store that meets counts it never wrote."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest
from test_store_behaviour import bundle, load, spec

from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.names import Settled, Spellings, settle, stored_spellings

#: (stored name, paperCount, nameForms, nameFormCounts), the write's (spelling, +1/-1) changes,
#: and the author's properties after it.
CASES = [
    pytest.param(
        ("Ann Lee", 3, None, None), [("Ann Lee", 1)], Settled("Ann Lee", None, None), id="more-of-one"
    ),
    pytest.param(
        ("Ann Lee", 3, None, None),
        [("ANN LEE", 1)],
        Settled("ANN LEE", ["ANN LEE", "Ann Lee"], [1, 3]),
        id="a-second-spelling-smaller",
    ),
    pytest.param(
        ("ANN LEE", 4, ["ANN LEE", "Ann Lee"], [1, 3]),
        [("ANN LEE", -1), ("Ann Lee", 1)],
        Settled("Ann Lee", None, None),
        id="respelt-back-to-one",
    ),
    pytest.param(
        ("ANN LEE", 4, ["ANN LEE", "Ann Lee"], [1, 3]),
        [("ANN LEE", -1), ("ANN LEE", 1)],
        Settled("ANN LEE", ["ANN LEE", "Ann Lee"], [1, 3]),
        id="replaced-by-the-same-spelling",
    ),
    pytest.param(
        ("Ann Lee", 0, None, None),  # created by this write (a MERGE's count of 0)
        [("ann lee", 1), ("Ann Lee", 1), ("ann lee", 1)],
        Settled("Ann Lee", ["Ann Lee", "ann lee"], [1, 2]),
        id="new-with-two-spellings",
    ),
    pytest.param(
        ("ANN LEE", 2, ["ANN LEE", "Ann Lee"], [0, 0]),  # counts no writer wrote
        [("Ann Lee", -1)],
        Settled("ANN LEE", None, None),
        id="nothing-left-to-count-keeps-the-name",
    ),
]


@pytest.mark.parametrize(("stored", "changes", "expected"), CASES)
def test_a_write_counts_its_spellings_into_the_stored_ones(
    stored: tuple[str, int, list[str] | None, list[int] | None],
    changes: list[tuple[str, int]],
    expected: Settled,
) -> None:
    spellings = Spellings()
    for spelling, change in changes:
        if change > 0:
            spellings.add("ann lee", spelling)
        else:
            spellings.remove([spelling])
    assert spellings.apply("ann lee", stored_spellings(*stored), stored[0]) == expected


def test_an_author_without_a_spelling_has_no_name_to_settle() -> None:
    with pytest.raises(ValueError, match="without a spelling"):
        settle(Counter({"Ann Lee": 0}))


def test_a_store_meeting_counts_no_writer_wrote_keeps_loading(tmp_path: Path) -> None:
    """A snapshot is trusted as to its structure (only its types are checked on open): one
    edited to count no spelling of an author does not stop a later load with a traceback."""
    store = MemoryStore()
    first = spec("2405.00001", authors=("Ann Lee",), title="First")
    load(store, tmp_path, [bundle(first), bundle(spec("2405.00002", authors=("Ann Lee",), title="Second"))])
    author = store.graph.nodes["Author:ann lee"]
    author["nameForms"], author["nameFormCounts"] = ["ANN LEE", "Ann Lee"], [0, 0]
    dropped = dataclasses.replace(first, authors=("Bo Chen",), built_at="2026-07-03T00:00:00Z")
    report = load(store, tmp_path, [bundle(dropped)])  # counts Ann Lee's spelling out: none left
    assert (report.replaced, report.rejected) == (1, 0)
    author = store.graph.nodes["Author:ann lee"]
    assert (author["name"], author["paperCount"], "nameForms" in author) == ("Ann Lee", 1, False)
