"""The Python API's helpers refuse wrong input as load_graph does: a :class:`UsageError`
(so a script catching :class:`PithGraphError` sees it) naming the parameter and what to pass.
``papers_of(None, a)``, ``coauthorship_graph([1, 2])`` or ``MemoryStore([1])`` raised a bare
``TypeError`` or ``AttributeError`` from inside; a ``MultiDiGraph`` was read, or copied by
``MemoryStore`` (which then wrote to the copy)."""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx
import pytest

from pith_graph import (
    SAMPLES,
    MemoryStore,
    PithGraphError,
    UsageError,
    coauthorship_graph,
    load_graph,
    papers_of,
)

_G = load_graph(SAMPLES, workers=1)[0]
_AUTHOR = next(node for node, label in _G.nodes(data="label") if label == "Author")

#: (case, call, exception type, the whole message).
CASES: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    (
        "papers_of None",
        lambda: papers_of(None, _AUTHOR),  # type: ignore[arg-type]
        UsageError,
        "G: expected a DiGraph load_graph built, not a value of type NoneType",
    ),
    (
        "papers_of undirected",
        lambda: papers_of(nx.Graph(_G), _AUTHOR),
        UsageError,
        "G: expected a DiGraph load_graph built, not a value of type Graph",
    ),
    (
        "papers_of MultiDiGraph",
        lambda: papers_of(nx.MultiDiGraph(_G), _AUTHOR),
        UsageError,
        "G: a MultiDiGraph (what earlier versions built): pass nx.DiGraph(G)",
    ),
    (
        "papers_of author a list",
        lambda: papers_of(_G, [_AUTHOR]),  # type: ignore[arg-type]
        UsageError,
        f"papers_of: [{_AUTHOR!r}] is not an Author node of the graph "
        '(it takes a node id, "Author:<nameKey>", not a name)',
    ),
    (
        "coauthorship_graph None",
        lambda: coauthorship_graph(None),  # type: ignore[arg-type]
        UsageError,
        "G: expected a DiGraph load_graph built, not a value of type NoneType",
    ),
    (
        "coauthorship_graph list",
        lambda: coauthorship_graph([1, 2]),  # type: ignore[arg-type]
        UsageError,
        "G: expected a DiGraph load_graph built, not a value of type list",
    ),
    (
        "coauthorship_graph undirected",
        lambda: coauthorship_graph(nx.Graph(_G)),
        UsageError,
        "G: expected a DiGraph load_graph built, not a value of type Graph",
    ),
    (
        "coauthorship_graph MultiDiGraph",
        lambda: coauthorship_graph(nx.MultiDiGraph(_G)),
        UsageError,
        "G: a MultiDiGraph (what earlier versions built): pass nx.DiGraph(G)",
    ),
    (
        "MemoryStore list",
        lambda: MemoryStore([1]),  # type: ignore[arg-type]
        UsageError,
        "graph: expected a DiGraph load_graph built, not a value of type list",
    ),
    (
        "MemoryStore undirected",
        lambda: MemoryStore(nx.Graph()),
        UsageError,
        "graph: expected a DiGraph load_graph built, not a value of type Graph",
    ),
    (
        "MemoryStore MultiDiGraph",
        lambda: MemoryStore(nx.MultiDiGraph(_G)),
        UsageError,
        "graph: a MultiDiGraph (what earlier versions built): pass nx.DiGraph(graph)",
    ),
]


@pytest.mark.parametrize(("call", "kind", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_helper_refuses_wrong_input_naming_its_parameter(
    call: Callable[[], object], kind: type[Exception], message: str
) -> None:
    with pytest.raises(PithGraphError) as raised:
        call()
    assert type(raised.value) is kind
    assert str(raised.value) == message
    assert raised.value.code == "usage"  # type: ignore[attr-defined]


def test_what_the_helpers_took_they_still_take() -> None:
    """A load's graph, a view of it (read, not written to), an empty graph."""
    view = _G.subgraph(list(_G))
    assert papers_of(view, _AUTHOR) == papers_of(_G, _AUTHOR) != []
    assert coauthorship_graph(view).number_of_edges() == coauthorship_graph(_G).number_of_edges()
    assert MemoryStore(_G).graph is _G and MemoryStore().graph.number_of_nodes() == 0
