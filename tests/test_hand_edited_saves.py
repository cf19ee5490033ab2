"""A graph a script edited is saved only if it is still one the loader could have built:
``MemoryStore(G).save`` and ``.save_snapshot`` refuse it (``hand_edited``, as ``export``
refuses a database's) and write nothing, where they wrote a node-link file
``MemoryStore.open`` then refused, or a snapshot ``serve --graph`` took and served wrongly
(an Author with ``paperCount`` 0). ``MemoryStore(G)`` over such a graph says the same,
where it raised a bare ``KeyError``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import networkx as nx
import pytest

from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.facade import SAMPLES, load_graph
from pith_graph.loader.stores.memory import MemoryStore

PAPER = "Paper:pith:2019:BR75OIUY7WDYHPO53K7WUNQ4NZ"
AUTHOR = "Author:arslan zulfiqar"
SIGNER = "Signer:pith.science"

#: (an edit of a copy of the samples' graph, what the refusal names)
SAVES = [
    pytest.param(lambda G: G.remove_node(PAPER), "no paper uses it", id="paper-removed"),
    pytest.param(lambda G: G.nodes[AUTHOR].update(paperCount=7.5), "paperCount is not", id="count-type"),
    pytest.param(lambda G: G.nodes[AUTHOR].update(paperCount=0), "paperCount 0 is below", id="count"),
    pytest.param(lambda G: G.remove_edge(SIGNER, PAPER), "SIGNED edges with signedBundle", id="unsigned"),
    pytest.param(lambda G: G.nodes[PAPER].pop("bundleSha256"), "no bundleSha256", id="no-digest"),
]

#: (an edit that made MemoryStore(G) raise a bare KeyError, what the refusal names)
STORES = [
    pytest.param(lambda G: G.nodes[PAPER].pop("bundleSha256"), "no bundleSha256", id="no-digest"),
    pytest.param(lambda G: G.nodes[SIGNER].pop("signerId"), "no signerId", id="no-signer-id"),
]


@pytest.fixture(scope="module")
def samples() -> nx.DiGraph:
    graph, _ = load_graph(SAMPLES)
    return graph


def _edited(samples: nx.DiGraph, edit: Callable[[nx.DiGraph], object]) -> nx.DiGraph:
    graph = samples.copy()
    edit(graph)
    return graph


@pytest.mark.parametrize("save", [MemoryStore.save, MemoryStore.save_snapshot], ids=["node-link", "snapshot"])
@pytest.mark.parametrize(("edit", "expected"), SAVES)
def test_a_graph_edited_out_of_shape_is_not_saved(
    samples: nx.DiGraph,
    tmp_path: Path,
    save: Callable[[MemoryStore, Path], None],
    edit: Callable[[nx.DiGraph], object],
    expected: str,
) -> None:
    store = MemoryStore(samples.copy())
    store.graph = _edited(samples, edit)  # (MemoryStore(edited) itself may refuse it: below)
    target = tmp_path / "edited"
    with pytest.raises(StoreError) as refused:
        save(store, target)
    assert refused.value.code is StoreErrorCode.HAND_EDITED
    assert expected in str(refused.value) and "not one a load could have built" in str(refused.value)
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize(("edit", "expected"), STORES)
def test_a_store_over_a_graph_edited_out_of_shape_says_so(
    samples: nx.DiGraph, edit: Callable[[nx.DiGraph], object], expected: str
) -> None:
    with pytest.raises(StoreError) as refused:
        MemoryStore(_edited(samples, edit))
    assert refused.value.code is StoreErrorCode.HAND_EDITED and expected in str(refused.value)


def test_a_graph_edited_within_shape_is_saved_and_opens(samples: nx.DiGraph, tmp_path: Path) -> None:
    """An attribute of a script's own on a copy is no reason to refuse it."""
    graph = _edited(samples, lambda G: G.nodes[AUTHOR].update(score=0.5))
    MemoryStore(graph).save(tmp_path / "g.json")
    MemoryStore(graph).save_snapshot(tmp_path / "g.snapshot")
    assert MemoryStore.open(tmp_path / "g.json").graph.nodes[AUTHOR]["score"] == 0.5
    assert MemoryStore.open(tmp_path / "g.snapshot").graph.number_of_nodes() == graph.number_of_nodes()
