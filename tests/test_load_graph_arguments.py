"""``load_graph`` checks its arguments as the command line checks its options: a value out
of range, of the wrong kind, or a ``graph`` no load could have built is a
:class:`UsageError` naming the argument, before anything is read or written. They used to
surface as MemoryError (``max_bytes=10**12``), AttributeError, KeyError or TypeError from
deep inside, or to pass silently (``workers=-1``; ``max_bytes=-1`` rejected every bundle)."""

from __future__ import annotations

import typing
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from pith_graph import (
    SAMPLES,
    KeyringError,
    PithGraphError,
    StoreError,
    UsageError,
    export_graph,
    load_graph,
)
from pith_graph.loader.export import Selection
from pith_graph.loader.keyfiles import parse_keyring
from pith_graph.loader.stores.base import GraphCounts
from pith_graph.testing.corpus import corpus_signers


def _graph_without_paper_properties() -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_node("Paper:x", label="Paper")
    return graph


#: A graph a load built, to take views of (a view or a frozen graph passed the checks, then
#: failed with a bare TypeError from a view's FilterAtlas, or was silently added to, frozen).
_SAMPLE_GRAPH = load_graph(SAMPLES, workers=1)[0]


def _samples_without_an_author() -> nx.DiGraph:
    """The samples' graph, one author removed: its paper still names it (authorNames)."""
    graph = _SAMPLE_GRAPH.copy()
    graph.remove_node("Author:victor zhang")
    return graph


CASES: list[tuple[str, dict[str, Any], str]] = [
    ("huge max_bytes", {"max_bytes": 10**12}, "max_bytes: expected an int from 1 to 67108864"),
    ("negative max_bytes", {"max_bytes": -1}, "max_bytes: expected an int from 1"),
    ("max_bytes as text", {"max_bytes": "1000"}, "max_bytes: expected an int"),
    ("max_bytes as bool", {"max_bytes": True}, "max_bytes: expected an int"),
    ("negative workers", {"workers": -1}, "workers: expected None or an int from 1 to 128"),
    ("too many workers", {"workers": 100_000}, "workers: expected None or an int from 1 to 128"),
    ("one worker past the cap", {"workers": 129}, "workers: expected None or an int from 1 to 128"),
    (
        "max_bytes one past the cap",
        {"max_bytes": (64 << 20) + 1},
        "max_bytes: expected an int from 1 to 67108864",
    ),
    ("keys as dicts", {"trusted_keys": [{"key_id": "k"}]}, "trusted_keys: expected PinnedKey values"),
    ("keys as a number", {"trusted_keys": 7}, "trusted_keys: expected a Keyring, a file path"),
    ("graph without properties", {"graph": _graph_without_paper_properties()}, "graph: not one the loader"),
    ("graph of integers", {"graph": nx.DiGraph([(1, 2)])}, "graph: not one the loader could have built"),
    ("graph without an author", {"graph": _samples_without_an_author()}, "graph: not one the loader"),
    ("graph undirected", {"graph": nx.Graph()}, "graph: expected a DiGraph"),
    # a MultiDiGraph is a DiGraph to isinstance: it was taken, copied, and left empty
    ("graph a MultiDiGraph", {"graph": nx.MultiDiGraph()}, "graph: a MultiDiGraph"),
    ("graph a MultiDiGraph load built", {"graph": nx.MultiDiGraph(_SAMPLE_GRAPH)}, "graph: a MultiDiGraph"),
    (
        "graph a subgraph view",
        {"graph": _SAMPLE_GRAPH.subgraph(list(_SAMPLE_GRAPH))},
        "graph: a frozen graph or a view",
    ),
    (
        "graph a restricted view",
        {"graph": nx.restricted_view(_SAMPLE_GRAPH, [], [])},
        "graph: a frozen graph or a view",
    ),
    ("graph a reverse view", {"graph": nx.reverse_view(_SAMPLE_GRAPH)}, "graph: a frozen graph or a view"),
    ("graph frozen", {"graph": nx.freeze(_SAMPLE_GRAPH.copy())}, "graph: a frozen graph or a view"),
    ("graph frozen empty", {"graph": nx.freeze(nx.DiGraph())}, "graph: a frozen graph or a view"),
]


@pytest.mark.parametrize(("arguments", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_an_argument_the_command_line_would_refuse_is_a_usage_error(
    arguments: dict[str, Any], message: str
) -> None:
    graph = arguments.get("graph")
    before = None if not isinstance(graph, nx.DiGraph) else nx.node_link_data(graph, edges="edges")
    with pytest.raises(UsageError) as raised:
        load_graph(SAMPLES, **arguments)
    assert str(raised.value).startswith(message), raised.value
    assert "\n" not in str(raised.value)
    if before is not None:
        assert nx.node_link_data(graph, edges="edges") == before  # left as it was


def test_a_copy_of_a_view_or_frozen_graph_loads_as_the_message_says() -> None:
    for copied in (
        _SAMPLE_GRAPH.subgraph(list(_SAMPLE_GRAPH)).copy(),
        nx.DiGraph(nx.freeze(_SAMPLE_GRAPH.copy())),
    ):
        graph, report = load_graph(SAMPLES, graph=copied, workers=1)
        assert graph is copied and report.duplicate == 3 and not nx.is_frozen(graph)


@pytest.mark.parametrize("paths", [b"/tmp", 123, [SAMPLES, 5], [""], {"a": 1}], ids=repr)
def test_paths_must_be_paths(paths: Any) -> None:
    with pytest.raises(UsageError, match=r"^paths: expected "):
        load_graph(paths)


def test_what_the_command_line_accepts_still_loads(tmp_path: Path) -> None:
    keys = parse_keyring([corpus_signers(1)[0].keyring_entry()], "test")
    graph, report = load_graph([Path(SAMPLES)], max_bytes=1 << 20, workers=1, trusted_keys=keys)
    assert report.accepted == 3
    again, report = load_graph(iter([SAMPLES]), graph=graph, max_bytes=64 << 20, workers=128)
    assert again is graph and report.duplicate == 3


def test_the_report_load_graph_returns_is_typed_with_its_counts() -> None:
    """README's example prints ``report.counts.nodes``, which mypy --strict refused while the
    report load_graph is typed to return said ``counts: GraphCounts | None`` (None only for
    ``verify``, which builds no graph)."""
    graph_type, report_type = typing.get_args(typing.get_type_hints(load_graph)["return"])
    assert graph_type is nx.DiGraph
    assert typing.get_type_hints(report_type)["counts"] is GraphCounts
    _, report = load_graph(SAMPLES, workers=1)
    assert isinstance(report, report_type)
    assert report.counts.nodes["Paper"] == 3 and report.as_dict()["nodes"] == report.counts.nodes


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"submitted_from": 2020}, "submitted_from: expected a str, not a value of type int"),
        ({"category": ["cs.LG"]}, "category: expected a str, not a value of type list"),
        ({"author": "x", "hops": "2"}, "hops must be an integer, not str"),
        ({"author": "x", "hops": 7}, "hops must be between 1 and 6"),
        (
            {"submitted_to": date(2020, 1, 1), "submitted_from": "yesterday"},
            "submitted_from is not an ISO 8601 date",
        ),
    ],
)
def test_export_graph_checks_its_selection_before_connecting(arguments: dict[str, Any], message: str) -> None:
    """Refused before any connection is tried (the URI names nothing that answers)."""
    with pytest.raises(UsageError) as raised:
        export_graph("bolt://127.0.0.1:1", password="unused", **arguments)
    assert str(raised.value).startswith(message), raised.value


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"uri": 5}, "uri: expected None or a string, not a value of type int"),
        ({"uri": "bolt://[::1"}, "bad Neo4j URI 'bolt://[::1': Invalid IPv6 URL"),
        ({"user": 5}, "user: expected None or a string, not a value of type int"),
        ({"password": b"secret"}, "password: expected None or a string, not a value of type bytes"),
        ({"database": 5}, "database: expected None or a string, not a value of type int"),
    ],
)
def test_export_graph_checks_its_connection_before_connecting(
    arguments: dict[str, Any], message: str
) -> None:
    """As the command line checks them: ``uri=5`` was an AttributeError from the driver,
    ``user=5`` a login refused, ``database=5`` ``write_failed`` on a read."""
    with pytest.raises(UsageError) as raised:
        export_graph(**{"uri": "bolt://127.0.0.1:1", "password": "unused", **arguments})
    assert str(raised.value) == message


def test_export_dates_may_be_date_values() -> None:
    """A ``date`` or ``datetime`` is read as its ISO 8601 text (it was a TypeError)."""
    low = Selection(submitted_from=date(2020, 1, 2).isoformat()).bounds()
    assert low == Selection(submitted_from="2020-01-02").bounds()
    with pytest.raises(StoreError):  # past the selection's checks: nothing answers there
        export_graph("bolt://127.0.0.1:1", password="unused", submitted_from=date(2020, 1, 2))
    with pytest.raises(StoreError):
        export_graph(
            "bolt://127.0.0.1:1", password="unused", submitted_to=datetime(2020, 1, 2, 3, 4, tzinfo=UTC)
        )


@pytest.mark.parametrize(
    ("arguments", "kind", "code"),
    [
        ({"paths": ["/nonexistent/pith-graph/bundles"]}, UsageError, "usage"),
        ({"paths": [SAMPLES], "workers": 0}, UsageError, "usage"),
        ({"paths": [SAMPLES], "trusted_keys": "/nonexistent/keyring.json"}, KeyringError, "keyring"),
    ],
)
def test_every_refusal_carries_a_code_as_the_rest_of_the_tree_does(
    arguments: dict[str, Any], kind: type[Exception], code: str
) -> None:
    """A script that catches :class:`PithGraphError` tells refusals apart by ``code`` alone,
    as it does for ``BundleError`` and ``StoreError`` (``UsageError`` had no ``code``)."""
    with pytest.raises(PithGraphError) as caught:
        load_graph(**arguments)
    assert type(caught.value) is kind
    assert caught.value.code == code  # type: ignore[attr-defined]
