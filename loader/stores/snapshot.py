"""A loaded graph saved as a snapshot, and read back several times faster than node-link JSON.

A snapshot is JSON (read with orjson: no code runs, whatever the file holds), laid out for
speed: one header line, then a body holding, per label, the property names once and one row
of values per node (its id follows from its key), and per relationship type, rows of
``[source index, target index, values...]``. Nodes or edges that do not fit that shape are
kept as they are, so any graph a :class:`~pith_graph.loader.stores.memory.MemoryStore` holds
round-trips exactly. The header names the format, its version, the counts and the SHA-256 of
the body: a truncated or altered file is refused (:class:`~pith_graph.errors.UsageError`),
never half-read. Edges read back share their attributes, as the store's own do
(:class:`~pith_graph.loader.stores.memory_graph.EdgeData`: equal attribute sets are one
read-only dict).

A snapshot can also carry indexes derived from the graph (``indexes``: plain JSON data
under names its writer chooses, such as the in-memory reader's text index), so that a
restart need not build them again. This module only stores them; whoever reads them checks
they still fit the graph.

A snapshot is *trusted*: reading it verifies no signature (that is its point: a restart
without verifying every bundle again). Keep it where only the loader writes.

>>> import networkx as nx, tempfile, pathlib
>>> G = nx.DiGraph()
>>> G.add_node("Author:ann", label="Author", nameKey="ann", name="Ann")
>>> G.add_node("Paper:p", label="Paper", pithNumber="p")
>>> G.add_edge("Author:ann", "Paper:p", type="AUTHORED")
>>> path = pathlib.Path(tempfile.mkdtemp()) / "graph.snapshot"
>>> save_snapshot(G, path)
>>> H = open_snapshot(path)
>>> nx.utils.graphs_equal(G, H)
True
"""

from __future__ import annotations

import gc
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import networkx as nx
import orjson

from pith_graph.errors import StoreError, StoreErrorCode, UsageError
from pith_graph.loader.stores.memory_graph import EdgeInterner
from pith_graph.schema.graph import LABEL_ATTRIBUTE, NODES, TYPE_ATTRIBUTE, node_id

__all__ = [
    "FORMAT",
    "Snapshot",
    "encode_snapshot",
    "is_snapshot",
    "open_snapshot",
    "read_snapshot",
    "save_snapshot",
    "write_beside",
    "writes_beside",
]

FORMAT = "pith-graph-snapshot"
VERSION = 3  # 1: MultiDiGraph edges with keys (before the graph became a DiGraph); 2: no indexes
_READS = (2, 3)


class Snapshot(NamedTuple):
    """What a snapshot holds: the graph, and the indexes saved with it (maybe none)."""

    graph: nx.DiGraph
    indexes: dict[str, Any]


_MAGIC = b'{"format":"' + FORMAT.encode()


def is_snapshot(path: str | Path) -> bool:
    """Whether ``path`` starts like a snapshot (else: node-link JSON, or something else)."""
    with open(path, "rb") as file:
        return file.read(len(_MAGIC)) == _MAGIC


def _node_id(label: str, data: dict[str, Any]) -> str | None:
    spec = NODES.get(label)
    if spec is None or not all(isinstance(data.get(key), str) for key in spec.key):
        return None
    return node_id(label, *(data[key] for key in spec.key))


def save_snapshot(graph: nx.DiGraph, path: str | Path, indexes: Mapping[str, Any] | None = None) -> None:
    """Write ``graph`` (as a MemoryStore holds it), and any ``indexes`` made from it, to
    ``path``: beside it first, then renamed over it, so a failed write never leaves a
    truncated file nor destroys the one there (:func:`write_beside`)."""
    write_beside(path, encode_snapshot(graph, indexes))


def encode_snapshot(graph: nx.DiGraph, indexes: Mapping[str, Any] | None = None) -> bytes:
    """The snapshot of ``graph`` (as a MemoryStore holds it) and any ``indexes`` made from it."""
    labels: dict[str, dict[str, Any]] = {}
    rows_of: dict[str, list[str]] = {}  # label -> its nodes stored as rows, in order
    irregular: list[tuple[str, str]] = []  # (group, node) stored as they are
    for node, data in graph.nodes(data=True):
        label = data.get(LABEL_ATTRIBUTE)
        group = labels.setdefault(str(label), {"properties": None, "at": 0, "rows": [], "other": []})
        names = [name for name in data if name != LABEL_ATTRIBUTE]
        at = list(data).index(LABEL_ATTRIBUTE) if label is not None else -1
        if group["properties"] is None:
            group["properties"], group["at"] = names, at
        regular = names == group["properties"] and at == group["at"]
        if label is not None and regular and _node_id(str(label), data) == node:
            group["rows"].append([data[name] for name in names])
            rows_of.setdefault(str(label), []).append(node)
        else:
            irregular.append((str(label), node))
    # Indexes in the order open_snapshot meets the nodes: every label's rows, then the rest.
    index: dict[str, int] = {}
    for label in labels:
        for node in rows_of.get(label, ()):
            index[node] = len(index)
    for label, node in irregular:
        index[node] = len(index)
        labels[label]["other"].append([index[node], node, graph.nodes[node]])
    types: dict[str, dict[str, Any]] = {}
    for source, target, data in graph.edges(data=True):
        kind = data.get(TYPE_ATTRIBUTE)
        group = types.setdefault(str(kind), {"properties": None, "at": 0, "rows": [], "other": []})
        names = [name for name in data if name != TYPE_ATTRIBUTE]
        at = list(data).index(TYPE_ATTRIBUTE) if kind is not None else -1
        if group["properties"] is None:
            group["properties"], group["at"] = names, at
        if kind is not None and names == group["properties"] and at == group["at"]:
            group["rows"].append([index[source], index[target], *(data[name] for name in names)])
        else:
            group["other"].append([index[source], index[target], dict(data)])
    body = orjson.dumps({"nodes": labels, "edges": types, "indexes": dict(indexes or {})})
    header = {
        "format": FORMAT,
        "version": VERSION,
        "nodes": graph.number_of_nodes(),
        "edges": graph.number_of_edges(),
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    return orjson.dumps(header) + b"\n" + body


def write_beside(path: str | Path, data: bytes) -> None:
    """Write ``data`` beside ``path`` first, then rename it over ``path``: a failed write
    leaves neither a partial file nor a damaged one where ``path`` was.

    Raises :class:`~pith_graph.errors.StoreError` (``write_failed``) naming ``path`` when the
    file cannot be written or renamed (a full disk, a folder in the way).
    """
    with writes_beside() as write:
        write(path, data)


@contextmanager
def writes_beside() -> Iterator[Callable[[str | Path, bytes], None]]:
    """Files written together: each ``write(path, data)`` goes to a file beside ``path``
    (flushed to disk), and only when the block ends without an error are they all renamed
    over their paths, in order. A failure before that (a full disk, an error in the block)
    removes what was written and leaves every path as it was; a rename that fails (a
    folder put in the way) removes the files not renamed yet, and its error names the
    paths already replaced. Raises :class:`~pith_graph.errors.StoreError` (``write_failed``)
    naming the path."""
    staged: list[tuple[Path, Path]] = []

    def write(path: str | Path, data: bytes) -> None:
        target = Path(path)
        partial = target.with_name(f".{target.name}.{os.getpid()}.{len(staged)}.tmp")
        staged.append((target, partial))
        try:
            with open(partial, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())  # the data is on disk before the rename shows it
        except OSError as error:
            raise _write_failed(target, error) from error

    try:
        yield write
    except BaseException:
        for _target, partial in staged:
            partial.unlink(missing_ok=True)
        raise
    for done, (target, partial) in enumerate(staged):
        try:
            os.replace(partial, target)
        except OSError as error:
            for _, left in staged[done:]:
                left.unlink(missing_ok=True)
            raise _write_failed(target, error, [path for path, _ in staged[:done]]) from error
    _sync_folders({target.parent for target, _ in staged})


def _write_failed(target: Path, error: OSError, replaced: list[Path] | None = None) -> StoreError:
    also = f" ({', '.join(map(str, replaced))} already replaced)" if replaced else ""
    return StoreError(
        StoreErrorCode.WRITE_FAILED, f"cannot write the graph to {target}: {error.strerror or error}{also}"
    )


def _sync_folders(folders: set[Path]) -> None:
    """Flush the renames to disk (best effort: not every system opens a folder)."""
    for folder in folders:
        try:
            handle = os.open(folder, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(handle)
        except OSError:
            pass
        finally:
            os.close(handle)


def open_snapshot(path: str | Path) -> nx.DiGraph:
    """The graph saved at ``path``; :class:`UsageError` if it is not an intact snapshot."""
    return read_snapshot(path).graph


def read_snapshot(path: str | Path) -> Snapshot:
    """The graph and indexes saved at ``path``; :class:`UsageError` if it is not an intact
    snapshot (of this version or the one before, which held no indexes)."""
    try:
        raw = Path(path).read_bytes()
        head, _, body = raw.partition(b"\n")
        header = orjson.loads(head)
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise ValueError("not a pith-graph snapshot")
        if header.get("version") not in _READS:
            raise ValueError(f"snapshot version {header.get('version')!r}, this reads {list(_READS)}")
        if hashlib.sha256(body).hexdigest() != header.get("sha256"):
            raise ValueError("the body does not match its SHA-256 (truncated or altered)")
        snapshot = _build(body)
        graph = snapshot.graph
        if (graph.number_of_nodes(), graph.number_of_edges()) != (header.get("nodes"), header.get("edges")):
            raise ValueError("its counts do not match its header")
    except (OSError, ValueError) as err:
        raise UsageError(f"cannot open saved graph {path}: {err}") from err
    except (TypeError, KeyError, IndexError, AttributeError) as err:
        raise UsageError(
            f"cannot open saved graph {path}: a malformed body ({type(err).__name__}: {err})"
        ) from err
    return snapshot


def _build(body: bytes) -> Snapshot:
    """The graph of a body, written into networkx's own dicts (as MemoryStore does:
    ``add_node``/``add_edge`` check and copy more than a trusted, regular file needs), and
    its indexes."""
    enabled = gc.isenabled()
    gc.disable()  # a million new objects, none in a cycle: collections would only cost time
    try:
        data = orjson.loads(body)
        indexes = data.get("indexes", {})
        if not isinstance(indexes, dict):
            raise ValueError("its indexes are not a map")
        return Snapshot(_fill(nx.DiGraph(), data), indexes)
    finally:
        if enabled:
            gc.enable()


def _fill(graph: nx.DiGraph, data: dict[str, Any]) -> nx.DiGraph:
    nodes: dict[str, dict[str, Any]] = graph._node
    succ: dict[str, dict[str, Any]] = graph._succ
    pred: dict[str, dict[str, Any]] = graph._pred
    ids: list[str] = []
    for label, group in data["nodes"].items():
        names: list[str] = group["properties"] or []
        rows = group["rows"]
        if not rows:
            continue
        keys = [names.index(key) for key in NODES[label].key]
        width = len(names)
        if any(len(row) != width for row in rows):
            raise ValueError(f"a {label} row does not have {width} values")
        if len(keys) == 1:  # most labels: the id is the label and one key
            prefix, at = label + ":", keys[0]
            made = [prefix + row[at] for row in rows]
        else:
            made = [":".join((label, *(row[at] for at in keys))) for row in rows]
        place = _placer(LABEL_ATTRIBUTE, label, names, group["at"])
        for node, row in zip(made, rows, strict=True):
            nodes[node] = place(row)
            succ[node] = {}
            pred[node] = {}
        ids += made
    others = [entry for group in data["nodes"].values() for entry in group["other"]]
    for at, node, attributes in sorted(others, key=lambda entry: int(entry[0])):
        if at != len(ids) or not isinstance(node, str) or not isinstance(attributes, dict):
            raise ValueError("a node out of order, or not an id and a map")
        nodes[node] = attributes
        succ[node] = {}
        pred[node] = {}
        ids.append(node)
    if len(ids) != len(nodes):
        raise ValueError("two nodes share an id")
    shared = EdgeInterner()
    edges = 0
    for kind, group in data["edges"].items():
        names = group["properties"] or []
        rows = group["rows"]
        width = len(names) + 2
        if any(len(row) != width for row in rows):
            raise ValueError(f"a {kind} row does not have {width} values")
        place = _placer(TYPE_ATTRIBUTE, kind, names, group["at"])
        plain = shared({TYPE_ATTRIBUTE: kind})
        for row in rows:
            attributes = shared(place(row[2:])) if names else plain
            source, target = ids[row[0]], ids[row[1]]
            succ[source][target] = attributes
            pred[target][source] = attributes
        for source, target, attributes in group["other"]:
            if not isinstance(attributes, dict):
                raise ValueError("an edge's attributes are not a map")
            succ[ids[source]][ids[target]] = pred[ids[target]][ids[source]] = shared(attributes)
        edges += len(rows) + len(group["other"])
    if edges != sum(len(out) for out in succ.values()):
        raise ValueError("two edges join the same two nodes")
    return graph


def _placer(name: str, value: str, names: list[str], at: int) -> Any:
    """Attributes from a row of values, with ``name: value`` at its place among them."""
    if at == 0:

        def first(row: list[Any]) -> dict[str, Any]:
            attributes = {name: value}
            attributes.update(zip(names, row, strict=False))
            return attributes

        return first

    def placed(row: list[Any]) -> dict[str, Any]:
        pairs = list(zip(names, row, strict=False))
        pairs.insert(at, (name, value))
        return dict(pairs)

    return placed
