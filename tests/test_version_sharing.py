"""A paper the in-memory store writes takes a stored version's strings where its own are equal
(``sourceId``, ``title``, ``abstractExcerpt``, ``submittedAt``), and every paper of a year one
``submittedYear`` int (since 0.9.10): the graph holds a source's text once, however many of its
versions it holds (at 100k generated bundles, 24 MB less). The values are the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_store_behaviour import bundle, load, spec

from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.memory_extras import SHARED


def _papers(store: MemoryStore) -> list[dict[str, Any]]:
    found = [data for _, data in store.graph.nodes(data=True) if data["label"] == "Paper"]
    return sorted(found, key=lambda data: (data["sourceId"], data["sourceVersion"]))


@pytest.mark.parametrize("batch_size", [1, 1000])
def test_a_sources_versions_share_their_equal_strings(tmp_path: Path, batch_size: int) -> None:
    versions = [spec("2401.00007", version=n, title="Same title") for n in (1, 2)]
    changed = spec("2401.00007", version=3, title="Another title")
    other = spec("2401.00008", title="Same title")
    store = MemoryStore()
    report = load(
        store, tmp_path, [bundle(paper) for paper in [*versions, changed, other]], batch_size=batch_size
    )
    assert report.inserted == 4
    one, two, three, apart = _papers(store)
    for name in SHARED:
        assert two[name] == one[name] and two[name] is one[name], name
    assert three["title"] == "Another title" and three["abstractExcerpt"] is one["abstractExcerpt"]
    assert apart["title"] == one["title"] and apart["title"] is not one["title"]  # another source
    assert one["submittedYear"] == 2024 and all(
        p["submittedYear"] is one["submittedYear"] for p in (two, apart)
    )


def test_a_version_written_again_keeps_equal_values(tmp_path: Path) -> None:
    store = MemoryStore()
    first = spec("2401.00009", version=1)
    load(store, tmp_path, [bundle(first), bundle(spec("2401.00009", version=2))])
    before = {name: data[name] for data in _papers(store)[:1] for name in SHARED}
    load(store, tmp_path, [bundle(spec("2401.00009", version=1, built_at="2026-07-03T00:00:00Z"))])
    again = _papers(store)[0]
    assert {name: again[name] for name in SHARED} == before
    assert again["builtAt"] == "2026-07-03T00:00:00Z"
