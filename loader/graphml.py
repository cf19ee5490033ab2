"""GraphML files for Gephi and Cytoscape: a graph written by networkx's GraphML writer
(:func:`save_graphml`, ``--save FILE.graphml`` of ``load``, ``prune`` and ``export``).

networkx's writer refuses list-valued attributes, which the graph has (the schema's
``list<…>`` properties: :data:`JSON_PROPERTIES`): each list is written as its JSON text
(``["cs.LG","stat.ML"]``), so ``json.loads`` gives it back; strings, integers and booleans
are written as GraphML's ``string``, ``long`` and ``boolean``. A character XML 1.0 cannot
hold (a control character but tab, newline and carriage return; U+FFFE, U+FFFF) is written
as U+FFFD in ids, names and values (in a list's JSON text a control character is a JSON
escape, kept). So a GraphML file is for reading elsewhere, not back: ``--graph`` refuses one
(:func:`refuse_graphml`), and the node-link JSON or snapshot stays pith-graph's own format.
Written as every graph file is (:mod:`~pith_graph.loader.stores.files`): beside its path, then
renamed over it; gzip-compressed when named ``*.graphml.gz``.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import networkx as nx

from pith_graph.errors import StoreError, StoreErrorCode, UsageError, quoted
from pith_graph.loader.stores.files import json_bytes, node_link_bytes, write_beside
from pith_graph.loader.stores.memory_guard import check_built, checked_graph
from pith_graph.schema.graph import NODES, RELATIONSHIPS

__all__ = [
    "GRAPHML_SUFFIXES",
    "JSON_PROPERTIES",
    "graph_file_bytes",
    "graphml_bytes",
    "is_graphml",
    "refuse_graphml",
    "save_graphml",
]

#: The names of a graph file written as GraphML (else node-link JSON), as ``.gz`` is gzip's.
GRAPHML_SUFFIXES = (".graphml", ".graphml.gz")

#: The schema's list-valued properties, written as JSON text (by label or relationship type).
JSON_PROPERTIES: dict[str, tuple[str, ...]] = {
    name: names
    for name, properties in [
        *((label, spec.properties) for label, spec in NODES.items()),
        *((kind, spec.properties) for kind, spec in RELATIONSHIPS.items()),
    ]
    if (names := tuple(p.name for p in properties if p.type.startswith("list<")))
}

#: What XML 1.0 cannot hold, even as a character reference.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def is_graphml(path: str | Path) -> bool:
    """Whether a graph file named ``path`` is written as GraphML (its name ends ``.graphml``
    or ``.graphml.gz``; case counts, as for ``.gz``)."""
    return Path(path).name.endswith(GRAPHML_SUFFIXES)


def refuse_graphml(path: str | Path, what: str, advice: str = "use the node-link JSON or snapshot") -> None:
    """:class:`UsageError` if ``path`` names a GraphML file (:func:`is_graphml`) where
    ``what`` (an option, a method) needs a file pith-graph reads back."""
    if is_graphml(path):
        raise UsageError(
            f"{what} {quoted(str(path))}: GraphML is written for Gephi and Cytoscape, not read back "
            f"(lists are JSON text in it, some characters replaced): {advice}"
        )


def _text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value) if _NOT_XML.search(value) else value


def _value(value: Any) -> Any:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, list | tuple | dict):
        return _text(json_bytes(value).decode())
    return value  # what networkx's writer cannot type (None, a set) it refuses: write_failed


def _attributes(data: Mapping[str, Any]) -> dict[str, Any]:
    return {_text(str(name)): _value(value) for name, value in data.items()}


def graphml_bytes(G: nx.DiGraph) -> bytes:
    """``G`` as GraphML (UTF-8), as :mod:`this module <pith_graph.loader.graphml>` says;
    ``write_failed`` if an attribute is of a type GraphML has none for (``None``, a set), or if two
    node ids differ only in characters XML cannot hold."""
    H = nx.DiGraph()
    H.graph.update(_attributes(G.graph))
    ids = {node: _text(str(node)) for node in G}
    if len(set(ids.values())) < len(ids):
        raise StoreError(
            StoreErrorCode.WRITE_FAILED,
            "the graph cannot be written as GraphML: two node ids differ only in characters XML cannot hold",
        )
    H.add_nodes_from((ids[node], _attributes(data)) for node, data in G.nodes(data=True))
    H.add_edges_from((ids[u], ids[v], _attributes(data)) for u, v, data in G.edges(data=True))
    out = io.BytesIO()
    try:
        nx.write_graphml(H, out, encoding="utf-8")
    except nx.NetworkXError as err:  # an attribute of a script's it cannot type (None, a set)
        raise StoreError(
            StoreErrorCode.WRITE_FAILED, f"the graph cannot be written as GraphML: {err}"
        ) from err
    return out.getvalue()


def graph_file_bytes(G: nx.DiGraph, path: str | Path) -> bytes:
    """What a graph file named ``path`` holds: GraphML (:func:`is_graphml`), else node-link JSON."""
    if is_graphml(path):
        return graphml_bytes(G)
    return node_link_bytes(G)


def save_graphml(G: nx.DiGraph, path: str | Path) -> None:
    """Write ``G`` as GraphML at ``path`` (any name; ``*.gz``: gzip-compressed), as
    :meth:`MemoryStore.save <pith_graph.loader.stores.memory.MemoryStore.save>` writes
    node-link JSON: only a graph a load could have built (``hand_edited`` otherwise), beside
    ``path`` and then renamed over it (``write_failed`` naming it when it cannot be).

    >>> import tempfile, networkx as nx
    >>> from pith_graph.loader import SAMPLES, load_graph
    >>> G, _ = load_graph([SAMPLES])
    >>> path = tempfile.mkdtemp() + "/samples.graphml"
    >>> save_graphml(G, path)
    >>> nx.read_graphml(path).number_of_nodes() == G.number_of_nodes()
    True
    """
    write_beside(path, graphml_bytes(check_built(checked_graph(G, "G"))))
