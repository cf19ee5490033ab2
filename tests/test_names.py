"""An author's name from its papers' spellings, counted (``loader/stores/names.py``): the
arithmetic as data, and a store that meets counts it never wrote."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest
from test_store_behaviour import bundle, load, spec

from pith_graph.loader.identifiers import author_name_key
from pith_graph.loader.stores import names
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.names import Settled, Spellings, settle, stored_spellings
from pith_graph.schema.graph import AUTHOR, node_id

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


def _spelt(i: int) -> str:
    """The ``i``-th of 1,024 spellings of one author (its letters' cases): one name key."""
    letters = "".join(c.upper() if i >> at & 1 else c for at, c in enumerate("annleezhou"))
    return f"{letters[:3]} {letters[3:6]} {letters[6:]}"


def test_a_batch_counts_each_author_s_spellings_into_its_name_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """300 papers, each spelling one author its own way (one signer can give an author
    thousands of spellings): a batch sorts the author's spellings once, not once per paper,
    which was quadratic in them; any batch size gives the same author."""
    settled: list[int] = []
    real = names.settle

    def counting(spellings: Counter[str], fallback: str | None = None) -> Settled:
        settled.append(len(spellings))
        return real(spellings, fallback)

    monkeypatch.setattr(names, "settle", counting)
    papers = [bundle(spec(f"2405.{i:05d}", authors=(_spelt(i), "Bo Chen"))) for i in range(1, 301)]
    store = MemoryStore()
    load(store, tmp_path, papers)
    assert sum(settled) <= 2 * len(papers), sum(settled)  # 45,000 when settled at every write
    author = store.graph.nodes[node_id(AUTHOR.label, author_name_key(_spelt(1)))]
    forms = sorted(_spelt(i) for i in range(1, 301))
    assert (author["name"], author["nameForms"], author["nameFormCounts"]) == (forms[0], forms, [1] * 300)
    assert author["paperCount"] == 300
    small = MemoryStore()
    load(small, tmp_path, papers, batch_size=7)
    assert small.export() == store.export()
