"""Snapshot bodies for tests: version 3's encoder (0.9.5's, whole groups: the oracle of the
streamed encoder until 0.9.7 wrote version 4, now the maker of version 3 files), and a body of
either version as one map and back, to edit it by hand."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import networkx as nx
import orjson

from pith_graph.schema.graph import LABEL_ATTRIBUTE, NODES, TYPE_ATTRIBUTE, node_id


def oracle(graph: nx.DiGraph, indexes: Mapping[str, Any] | None = None) -> bytes:
    """The encoder of 0.9.5: every group's rows built, encoded whole, the body joined."""

    def shape(data: Mapping[str, Any]) -> tuple[Any, list[str], int, list[Any]]:
        kind = data.get(TYPE_ATTRIBUTE)
        names = [name for name in data if name != TYPE_ATTRIBUTE]
        at = list(data).index(TYPE_ATTRIBUTE) if kind is not None else -1
        return kind, names, at, [data[name] for name in names]

    def derived(label: str, data: Mapping[str, Any]) -> str | None:
        spec = NODES.get(label)
        if spec is None or not all(isinstance(data.get(key), str) for key in spec.key):
            return None
        return node_id(label, *(data[key] for key in spec.key))

    labels: dict[str, dict[str, Any]] = {}
    irregular: list[tuple[str, str]] = []
    for node, data in graph.nodes(data=True):
        label = data.get(LABEL_ATTRIBUTE)
        group = labels.setdefault(str(label), {"properties": None, "at": 0, "rows": [], "other": []})
        names = [name for name in data if name != LABEL_ATTRIBUTE]
        at = list(data).index(LABEL_ATTRIBUTE) if label is not None else -1
        if group["properties"] is None:
            group["properties"], group["at"] = names, at
        if (
            label is not None
            and (names, at) == (group["properties"], group["at"])
            and derived(str(label), data) == node
        ):
            group["rows"].append(node)
        else:
            irregular.append((str(label), node))
    index = {
        node: at
        for at, node in enumerate([n for g in labels.values() for n in g["rows"]] + [n for _, n in irregular])
    }
    for label, node in irregular:
        labels[label]["other"].append([index[node], node, graph.nodes[node]])
    for group in labels.values():
        group["rows"] = [[graph.nodes[node][name] for name in group["properties"]] for node in group["rows"]]
    kinds: dict[str, dict[str, Any]] = {}
    for source, target, data in graph.edges(data=True):
        kind, names, at, values = shape(data)
        group = kinds.setdefault(str(kind), {"properties": names, "at": at, "rows": [], "other": []})
        if kind is not None and (names, at) == (group["properties"], group["at"]):
            group["rows"].append([index[source], index[target], *values])
        else:
            group["other"].append([index[source], index[target], dict(data)])
    body = b'{"nodes":' + orjson.dumps(labels) + b',"edges":' + orjson.dumps(kinds)
    body += b',"indexes":' + orjson.dumps(dict(indexes or {})) + b"}"
    header = {
        "format": "pith-graph-snapshot",
        "version": 3,
        "nodes": graph.number_of_nodes(),
        "edges": graph.number_of_edges(),
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    return orjson.dumps(header) + b"\n" + body


def as_document(body: bytes) -> dict[str, Any]:
    """A body of version 3, 4 or 5 as version 3's map (``nodes``, ``edges``: groups of
    ``properties``, ``at``, ``rows`` and ``other``; ``indexes``: of version 5, each index as
    the list of its pieces)."""
    if body.startswith(b'{"nodes":{'):  # version 3 (or 2)
        return dict(orjson.loads(body))
    data: dict[str, Any] = {"nodes": {}, "edges": {}, "indexes": {}}
    pieces: dict[str, list[Any]] = {}

    def group(kind: str, name: str, piece: Mapping[str, Any] | None = None) -> dict[str, Any]:
        made = {"properties": None, "at": 0, "rows": [], "other": []}
        if piece is not None:
            made |= {"properties": piece["properties"], "at": piece["at"]}
        found: dict[str, Any] = data[kind].setdefault(name, made)
        return found

    for line in body.splitlines():
        piece = orjson.loads(line)
        if "nodes" in piece:
            group("nodes", piece["nodes"], piece)["rows"] += piece["rows"]
        elif "edges" in piece:
            group("edges", piece["edges"], piece)["rows"] += piece["rows"]
        elif "other_nodes" in piece:
            for entry in piece["other_nodes"]:
                group("nodes", str(entry[2].get(LABEL_ATTRIBUTE)))["other"].append(entry)
        elif "other_edges" in piece:
            for entry in piece["other_edges"]:
                group("edges", str(entry[2].get(TYPE_ATTRIBUTE)))["other"].append(entry)
        elif "index" in piece:  # version 5
            pieces.setdefault(piece["index"], []).append(piece["piece"])
        else:
            data["indexes"] = pieces or piece["indexes"]  # (version 5: the pieces' counts)
    return data


def as_body(data: Mapping[str, Any], version: int) -> bytes:
    """Version 3's map (:func:`as_document`) as a body of ``version`` (4: a line per group's
    rows, one for the nodes and one for each type's edges kept as they are; 5: each index's
    pieces a line each, then their counts)."""
    if version < 4:
        return orjson.dumps(data)
    lines = []
    for label, group in data["nodes"].items():
        if group["rows"]:
            lines.append(
                {"nodes": label, "properties": group["properties"], "at": group["at"], "rows": group["rows"]}
            )
    others = sorted(
        (entry for group in data["nodes"].values() for entry in group["other"]), key=lambda e: e[0]
    )
    if others:
        lines.append({"other_nodes": others})
    for kind, group in data["edges"].items():
        if group["rows"]:
            lines.append(
                {"edges": kind, "properties": group["properties"], "at": group["at"], "rows": group["rows"]}
            )
        if group["other"]:
            lines.append({"other_edges": group["other"]})
    indexes = data.get("indexes", {})
    if version >= 5 and isinstance(indexes, dict):
        lines += [{"index": name, "piece": piece} for name, pieces in indexes.items() for piece in pieces]
        indexes = {name: len(pieces) for name, pieces in indexes.items()}
    lines.append({"indexes": indexes})
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def rewritten(raw: bytes, edit: Any, version: int) -> bytes:
    """The snapshot ``raw`` (of version 3, 4 or 5) with its body, as one map, changed by ``edit``,
    written as ``version``, its header made to match."""
    head, _, body = raw.partition(b"\n")
    data = as_document(body)
    edit(data)
    body = as_body(data, version)
    header = orjson.loads(head) | {"version": version, "sha256": hashlib.sha256(body).hexdigest()}
    return orjson.dumps(header) + b"\n" + body
