"""GraphML files for Gephi and Cytoscape: a graph written by a streaming GraphML writer of
pith-graph's own (:func:`save_graphml`, ``--save FILE.graphml`` of ``load``, ``prune`` and
``export``; the name's case does not count).

The document is written a node and an edge at a time into the file written beside the path
(:mod:`~pith_graph.loader.stores.files`: then renamed over it; gzip-compressed when named
``*.graphml.gz``), so its memory does not grow with the graph, and it is escaped with the
standard library only: the same graph makes the same bytes whatever is installed (networkx's
writer switched to lxml when it was there). Its keys are declared from :mod:`the schema
<pith_graph.schema.graph>`: one per property name of the nodes (``n_title``, ``n_keyIds``…) and
of the edges (``e_keyIds``…), typed as the schema says (``long``, ``boolean``, ``string``;
each ``list<…>`` property, :data:`JSON_PROPERTIES`, is its JSON text: ``["cs.LG","stat.ML"]``,
``json.loads`` gives it back), and ``n_label``/``e_type`` for each node's label and each edge's
type; a script's own attribute gets a key of its type (``double`` for a float; a list or map:
JSON text). No key id is ``d0``, ``d1``…: Gephi takes the key ``d3`` as the node label (yEd's
convention) and drops that column.

XML 1.0 cannot hold some characters (controls but tab, newline and carriage return; U+FFFE,
U+FFFF). In a node id each of them, and U+FFFD itself, is written as U+FFFD and its four hex
digits (``\x01`` → ``\ufffd0001``): no two ids become one. In a value or an attribute name
it is U+FFFD; in a list's JSON text it is a JSON escape (``\u0001``, ``\ufffe``), kept. A
carriage return is written ``&#13;``, so it reads back as one. So a GraphML file is for
reading elsewhere, not back: ``--graph`` refuses one (:func:`refuse_graphml`), and the
node-link JSON or snapshot stays pith-graph's own format.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import networkx as nx

from pith_graph.errors import StoreError, StoreErrorCode, UsageError, quoted
from pith_graph.loader.stores.files import json_bytes, node_link_chunks, write_beside
from pith_graph.loader.stores.memory_guard import check_built, checked_graph
from pith_graph.schema.graph import LABEL_ATTRIBUTE, NODES, RELATIONSHIPS, TYPE_ATTRIBUTE, PropertySpec

__all__ = [
    "GRAPHML_SUFFIXES",
    "JSON_PROPERTIES",
    "graph_file_chunks",
    "graphml_bytes",
    "graphml_chunks",
    "is_graphml",
    "refuse_graphml",
    "save_graphml",
]

#: The names of a graph file written as GraphML (else node-link JSON), in any case.
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
#: What a node id has escaped: what XML cannot hold, and the escape's own mark, U+FFFD.
_ID_ESCAPED = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffc\U00010000-\U0010ffff]")
#: What a node id needs changed: the above, and what an attribute value escapes (:data:`_ATTRIBUTE`).
_ID_SPECIAL = re.compile("[^\x20\x21\x23-\x25\x27-\x3b\x3d\x3f-\ud7ff\ue000-\ufffc\U00010000-\U0010ffff]")
#: What a text needs changed: what XML cannot hold, ``&<>``, and a carriage return, which XML
#: would read back as a newline (escaped ``&#13;``).
_TEXT = (
    re.compile("[^\t\n\x20-\x25\x27-\x3b\x3d\x3f-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"),
    {"\r": "&#13;"},
)
#: What an attribute value (a node id, a key's name) needs changed: the same, ``"``, tab and newline.
_ATTRIBUTE = (
    re.compile("[^\x20\x21\x23-\x25\x27-\x3b\x3d\x3f-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"),
    {'"': "&quot;", "\r": "&#13;", "\n": "&#10;", "\t": "&#9;"},
)
#: The GraphML type of each of the schema's property types (a list: its JSON text).
_SCHEMA_TYPES = {"string": "string", "integer": "long", "boolean": "boolean"}
#: Characters of the document written per piece of the file (a piece ends with the node or
#: edge that reaches it): the memory a save needs beyond the graph's, whatever its size.
_PIECE = 1 << 16

_HEADER = (
    "<?xml version='1.0' encoding='utf-8'?>\n"
    '<graphml xmlns="http://graphml.graphdrawing.org/xmlns" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    'xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns '
    'http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">\n'
)


def is_graphml(path: str | Path) -> bool:
    """Whether a graph file named ``path`` is written as GraphML (its name ends ``.graphml``
    or ``.graphml.gz``, in any case: ``UP.GRAPHML`` too)."""
    return Path(path).name.lower().endswith(GRAPHML_SUFFIXES)


def refuse_graphml(path: str | Path, what: str, advice: str = "use the node-link JSON or snapshot") -> None:
    """:class:`UsageError` if ``path`` names a GraphML file (:func:`is_graphml`) where
    ``what`` (an option, a method) needs a file pith-graph reads back."""
    if is_graphml(path):
        raise UsageError(
            f"{what} {quoted(str(path))}: GraphML is written for Gephi and Cytoscape, not read back "
            f"(lists are JSON text in it, some characters replaced): {advice}"
        )


def _declared(first: str, properties: Iterable[PropertySpec]) -> dict[str, str]:
    """The GraphML type of each property name, ``first`` (a string) leading; :class:`TypeError`
    if two labels (or types) give one name two types: one key cannot type both."""
    types = {first: "string"}
    schema: dict[str, str] = {first: "string"}
    for prop in properties:
        if schema.setdefault(prop.name, prop.type) != prop.type:
            raise TypeError(f"schema: {prop.name} is both {schema[prop.name]} and {prop.type}")
        types[prop.name] = _SCHEMA_TYPES.get(prop.type, "string")
    return types


_NODE_KEYS = _declared(LABEL_ATTRIBUTE, (p for spec in NODES.values() for p in spec.properties))
_EDGE_KEYS = _declared(TYPE_ATTRIBUTE, (p for spec in RELATIONSHIPS.values() for p in spec.properties))


def _text(value: str, where: tuple[re.Pattern[str], dict[str, str]] = _TEXT) -> str:
    """``value`` escaped for XML (a text, or ``where``: an attribute's value), each character
    XML cannot hold as U+FFFD."""
    special, entities = where
    if special.search(value) is None:
        return value
    return escape(_NOT_XML.sub("\ufffd", value), entities)


def _id(node: object) -> str:
    """A node id, escaped injectively: what XML cannot hold, and U+FFFD, as U+FFFD and 4 hex digits."""
    text = node if type(node) is str else str(node)
    if _ID_SPECIAL.search(text) is None:
        return text
    return _text(_ID_ESCAPED.sub(lambda found: f"\ufffd{ord(found[0]):04X}", text), _ATTRIBUTE)


def _json(value: object) -> str:
    """JSON text, escaped for XML; orjson escapes control characters, not U+FFFE or U+FFFF."""
    text = json_bytes(value).decode()
    if "\ufffe" in text or "\uffff" in text:
        text = text.replace("\ufffe", "\\ufffe").replace("\uffff", "\\uffff")
    return _text(text)


def _kind(value: object) -> str | None:
    """How ``value`` is written: its GraphML type, ``json`` (JSON text), or ``None``: it cannot be."""
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, numbers.Integral):
        return "long"
    if isinstance(value, numbers.Real):
        return "double"
    if isinstance(value, list | tuple | dict):
        return "json"
    return None


_FORMAT: dict[str, Callable[[Any], str]] = {
    "string": _text,
    "boolean": lambda value: "true" if value else "false",
    "long": lambda value: str(int(value)),
    "double": lambda value: repr(float(value)),
    "json": _json,
}


class _Keys:
    """The keys of one scope (``node``, ``edge``, ``graph``): the declared ones, then one per
    (name, type) of the graph's other attributes; :meth:`of` finds a value's by its class."""

    def __init__(self, scope: str, declared: Mapping[str, str]) -> None:
        self.scope, self.prefix = scope, scope[0]
        self.ids: dict[tuple[str, str], str] = {}
        self.lines: list[str] = []
        self.by_class: dict[tuple[object, type], tuple[str, Callable[[Any], str]]] = {}
        self.frozen = False  # the header is written: a key more would be one it does not declare
        for name, graphml_type in declared.items():
            self._add(name, graphml_type)

    def _add(self, name: str, graphml_type: str) -> str:
        if self.frozen:
            raise StoreError(StoreErrorCode.WRITE_FAILED, "the graph changed while it was written as GraphML")
        taken = set(self.ids.values())
        key = base = f"{self.prefix}_{_id(name)}"
        for serial in range(len(taken) + 1):  # the same name of another type: its type added
            if key not in taken:
                break
            key = f"{base}.{graphml_type}" + (f".{serial}" if serial else "")
        self.ids[name, graphml_type] = key
        self.lines.append(
            f'  <key id="{key}" for="{self.scope}" attr.name="{_text(name, _ATTRIBUTE)}" '
            f'attr.type="{graphml_type}"/>\n'
        )
        return key

    def of(self, name: object, value: object, what: object) -> tuple[str, Callable[[Any], str]]:
        """The ``<data>`` tag and formatter of attribute ``name`` of the ``what`` holding ``value``."""
        found = self.by_class.get((name, value.__class__))
        if found is not None:
            return found
        kind = _kind(value)
        if kind is None:
            raise StoreError(
                StoreErrorCode.WRITE_FAILED,
                f"the graph cannot be written as GraphML: {self.scope} {what!r} has {name!r} = {value!r}, "
                f"of a type GraphML has none for ({type(value).__name__})",
            )
        graphml_type = "string" if kind == "json" else kind
        key = self.ids.get((str(name), graphml_type)) or self._add(str(name), graphml_type)
        self.by_class[name, value.__class__] = found = (f'<data key="{key}">', _FORMAT[kind])
        return found

    def declare(self, items: Iterable[tuple[object, Mapping[Any, Any]]]) -> None:
        """A key for every attribute of ``items`` (``(node, attributes)``…) not typed yet: the
        first pass, since every key is declared before the graph."""
        by_class = self.by_class
        for what, data in items:
            for name, value in data.items():
                if (name, value.__class__) not in by_class:
                    self.of(name, value, what)
        self.frozen = True

    def data(self, attributes: Mapping[Any, Any], what: object) -> str:
        """``<data>`` elements of ``attributes``."""
        by_class, parts = self.by_class, []
        for name, value in attributes.items():
            tag, format_ = by_class.get((name, value.__class__)) or self.of(name, value, what)
            parts.append(f"{tag}{format_(value)}</data>")
        return "".join(parts)


def graphml_chunks(G: nx.DiGraph) -> Iterator[bytes]:
    """``G`` as GraphML (UTF-8), in pieces of about :data:`_PIECE` characters, as
    :mod:`this module <pith_graph.loader.graphml>` says. ``write_failed`` (before the first
    piece) if an attribute is of a type GraphML has none for (``None``, a set)."""
    scopes = _Keys("graph", {}), _Keys("node", _NODE_KEYS), _Keys("edge", _EDGE_KEYS)
    graph_keys, node_keys, edge_keys = scopes
    nodes = G.nodes(data=True)  # public views, read a node's (and a node's out-edges') dict at a time
    graph_keys.declare([("graph", G.graph)])
    node_keys.declare(nodes)
    edge_keys.declare(((u, v), data) for u, out in G.adjacency() for v, data in out.items())
    yield "".join([_HEADER, *(line for keys in scopes for line in keys.lines)]).encode()
    yield f'  <graph edgedefault="directed">{graph_keys.data(G.graph, "graph")}\n'.encode()
    parts: list[str] = []
    size = 0
    for node, data in nodes:
        parts.append(line := f'    <node id="{_id(node)}">{node_keys.data(data, node)}</node>\n')
        if (size := size + len(line)) >= _PIECE:
            yield "".join(parts).encode()
            parts.clear()
            size = 0
    for u, out in G.adjacency():
        source = _id(u)
        for v, data in out.items():
            parts.append(
                line
                := f'    <edge source="{source}" target="{_id(v)}">{edge_keys.data(data, (u, v))}</edge>\n'
            )
            if (size := size + len(line)) >= _PIECE:
                yield "".join(parts).encode()
                parts.clear()
                size = 0
    parts.append("  </graph>\n</graphml>\n")
    yield "".join(parts).encode()


def graphml_bytes(G: nx.DiGraph) -> bytes:
    """:func:`graphml_chunks` joined: the whole file in memory (a test's, a small graph's)."""
    return b"".join(graphml_chunks(G))


def graph_file_chunks(G: nx.DiGraph, path: str | Path) -> Iterator[bytes]:
    """What a graph file named ``path`` holds, in pieces: GraphML (:func:`is_graphml`),
    else node-link JSON (:func:`~pith_graph.loader.stores.files.node_link_chunks`); for :func:`~pith_graph.loader.stores.files.write_beside`."""
    if is_graphml(path):
        return graphml_chunks(G)
    return node_link_chunks(G)


def save_graphml(G: nx.DiGraph, path: str | Path) -> None:
    """Write ``G`` as GraphML at ``path`` (any name; ``*.gz``: gzip-compressed), as
    :meth:`MemoryStore.save <pith_graph.loader.stores.memory.MemoryStore.save>` writes
    node-link JSON: only a graph a load could have built (``hand_edited`` otherwise), beside
    ``path`` and then renamed over it (``write_failed`` naming it when it cannot be, or when
    ``path`` is a FIFO or a device). Written a node at a time: its memory does not grow with ``G``.

    >>> import tempfile, networkx as nx
    >>> from pith_graph.loader import SAMPLES, load_graph
    >>> G, _ = load_graph([SAMPLES])
    >>> path = tempfile.mkdtemp() + "/samples.graphml"
    >>> save_graphml(G, path)
    >>> nx.read_graphml(path).number_of_nodes() == G.number_of_nodes()
    True
    """
    write_beside(path, graphml_chunks(check_built(checked_graph(G, "G"))))
