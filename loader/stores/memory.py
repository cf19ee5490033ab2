"""The embedded store: a networkx ``MultiDiGraph`` in this process.

Node ids are :func:`pith_graph.schema.graph.node_id` strings (``"Paper:pith:2019:BR75..."``,
``"Author:zoë smith"``, ``"Category:cs.LG"``, ``"Alias:doi:10.48550/..."``,
``"Signer:pith.science"``). Every node carries ``label`` plus its schema properties; every
edge carries ``type`` plus its properties, and its networkx key is the type, so two nodes
have at most one edge of each type. Edges point the way the schema says:
``Author→Paper``, ``Paper→Category``, ``Alias→Paper``, ``Signer→Paper``.

Save and load as networkx node-link JSON (:meth:`MemoryStore.save`, :meth:`MemoryStore.open`).
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import orjson

from pith_graph.errors import UsageError
from pith_graph.loader.rows import PaperRows
from pith_graph.loader.stores.base import AppliedBatch, GraphCounts, GraphExport, sorted_counts
from pith_graph.loader.stores.rules import SourceKey, StoredPaper, plan_batch
from pith_graph.schema.graph import (
    ALIAS,
    AUTHOR,
    AUTHORED,
    CATEGORY,
    IDENTIFIES,
    IN_CATEGORY,
    LABEL_ATTRIBUTE,
    PAPER,
    SIGNED,
    SIGNER,
    TYPE_ATTRIBUTE,
    node_id,
)

__all__ = ["MemoryStore"]

_LABEL, _TYPE = LABEL_ATTRIBUTE, TYPE_ATTRIBUTE
#: Labels whose nodes exist only while a paper uses them.
_DERIVED_LABELS = (AUTHOR.label, CATEGORY.label, ALIAS.label, SIGNER.label)
_PITH_NUMBER = PAPER.prop("pithNumber")
_SOURCE_KIND = PAPER.prop("sourceKind")
_SOURCE_ID = PAPER.prop("sourceId")
_PAPER_KEY_IDS = PAPER.prop("keyIds")
_BUNDLE_KEY_ID = PAPER.prop("bundleKeyId")
_BUILT_AT = PAPER.prop("builtAt")
_BUNDLE_SHA256 = PAPER.prop("bundleSha256")
_NAME = AUTHOR.prop("name")
_SIGNER_ID = SIGNER.prop("signerId")
_SIGNER_TYPE = SIGNER.prop("signerType")
_KEY_IDS = SIGNER.prop("keyIds")


class MemoryStore:
    """A :class:`~pith_graph.loader.stores.base.GraphStore` over a networkx ``MultiDiGraph``."""

    def __init__(self, graph: nx.MultiDiGraph | None = None) -> None:
        self.graph: nx.MultiDiGraph = graph if graph is not None else nx.MultiDiGraph()
        self._nodes: dict[str, dict[str, Any]] = self.graph._node
        self._succ: dict[str, dict[str, dict[str, dict[str, Any]]]] = self.graph._succ
        self._pred: dict[str, dict[str, dict[str, dict[str, Any]]]] = self.graph._pred
        self._bundles: set[str] = set()
        # (sourceKind, sourceId) -> its papers' pith numbers: the precedence rule's lookups.
        self._by_source: defaultdict[SourceKey, set[str]] = defaultdict(set)
        # signerId -> how many of its SIGNED edges use each key: Signer.keyIds stays exact.
        self._signer_keys: defaultdict[str, Counter[str]] = defaultdict(Counter)
        for _node, data in self.graph.nodes(data=True):
            if data.get(_LABEL) == PAPER.label:
                self._bundles.add(data[_BUNDLE_SHA256])
                self._by_source[(data[_SOURCE_KIND], data[_SOURCE_ID])].add(data[_PITH_NUMBER])
        for start, _end, data in self.graph.edges(data=True):
            if data.get(_TYPE) == SIGNED.type:
                signer = self.graph.nodes[start][_SIGNER_ID]
                self._signer_keys[signer].update(data[_KEY_IDS])

    # -- GraphStore ----------------------------------------------------------------------

    def ensure_schema(self) -> None:
        """Nothing to create: node ids are the keys."""

    def known_bundle_digests(self) -> set[str]:
        return set(self._bundles)

    def apply(self, batch: Sequence[PaperRows], rank: Callable[[str], int]) -> AppliedBatch:
        sources = {(rows.paper.source_kind, rows.paper.source_id) for rows in batch}
        stored = [self._stored(pith) for source in sources for pith in self._by_source.get(source, ())]
        plan = plan_batch(batch, stored, rank)
        for pith in plan.remove:
            self._remove(pith)
        for rows in plan.write:
            self._write(rows)
        nx._clear_cache(self.graph)  # the writes bypassed networkx's own cache invalidation
        return AppliedBatch(plan.outcomes, plan.remove)

    def remove_papers(self, pith_numbers: Sequence[str]) -> list[str]:
        removed = [pith for pith in sorted(set(pith_numbers)) if node_id(PAPER.label, pith) in self._nodes]
        for pith in removed:
            self._remove(pith)
        nx._clear_cache(self.graph)
        return removed

    def papers_signed_with(self, key_ids: Sequence[str]) -> list[tuple[str, str, list[str]]]:
        wanted = set(key_ids)
        return sorted(
            (data[_PITH_NUMBER], data[_BUILT_AT], list(data[_PAPER_KEY_IDS]))
            for _node, data in self.graph.nodes(data=True)
            if data.get(_LABEL) == PAPER.label and wanted.intersection(data[_PAPER_KEY_IDS])
        )

    def _stored(self, pith: str) -> StoredPaper:
        data = self._nodes[node_id(PAPER.label, pith)]
        return StoredPaper(
            pith,
            (data[_SOURCE_KIND], data[_SOURCE_ID]),
            data[_BUILT_AT],
            data[_BUNDLE_SHA256],
            data.get(_BUNDLE_KEY_ID),
            tuple(data[_PAPER_KEY_IDS]),
        )

    def counts(self) -> GraphCounts:
        nodes = Counter(label for _, label in self.graph.nodes(data=_LABEL))
        edges = Counter(kind for _, _, kind in self.graph.edges(keys=True))
        return GraphCounts(sorted_counts(nodes.items()), sorted_counts(edges.items()))

    def export(self) -> GraphExport:
        nodes = {node: dict(data) for node, data in self.graph.nodes(data=True)}
        edges = {
            (start, kind, end): {k: v for k, v in data.items() if k != _TYPE}
            for start, end, kind, data in self.graph.edges(keys=True, data=True)
        }
        return GraphExport(nodes, edges)

    def close(self) -> None:
        """Nothing to release."""

    # -- writing -------------------------------------------------------------------------

    def _detach_paper(self, paper: str) -> set[str]:
        """Remove every edge of ``paper``; return the nodes it was attached to."""
        graph = self.graph
        neighbours: set[str] = set()
        for start, _end, kind, data in list(graph.in_edges(paper, keys=True, data=True)):
            if kind == SIGNED.type:
                self._signer_keys[graph.nodes[start][_SIGNER_ID]].subtract(data[_KEY_IDS])
            neighbours.add(start)
            graph.remove_edge(start, paper, key=kind)
        for _start, end, kind in list(graph.out_edges(paper, keys=True)):
            neighbours.add(end)
            graph.remove_edge(paper, end, key=kind)
        return neighbours

    def _remove(self, pith: str) -> None:
        """Remove a paper, its edges and the nodes left without a paper."""
        paper = node_id(PAPER.label, pith)
        data = self._nodes[paper]
        self._bundles.discard(data[_BUNDLE_SHA256])
        self._by_source[(data[_SOURCE_KIND], data[_SOURCE_ID])].discard(pith)
        touched = self._detach_paper(paper)
        self.graph.remove_node(paper)
        self._tidy(touched)

    def _tidy(self, touched: set[str]) -> None:
        """Remove the touched nodes left without an edge; refresh the touched signers' keyIds."""
        graph = self.graph
        for node in touched:
            data = graph.nodes[node]
            if data[_LABEL] in _DERIVED_LABELS and not graph.pred[node] and not graph.succ[node]:
                if data[_LABEL] == SIGNER.label:
                    self._signer_keys.pop(data[_SIGNER_ID], None)
                graph.remove_node(node)
            elif data[_LABEL] == SIGNER.label:
                keys = self._signer_keys[data[_SIGNER_ID]]
                data[_KEY_IDS] = sorted(key for key, count in keys.items() if count > 0)

    def _node(self, node: str, label: str, props: dict[str, Any]) -> dict[str, Any]:
        """The attributes of ``node``, adding it first if it is new.

        Writes go straight to networkx's adjacency dicts (``_node``, ``_succ``, ``_pred``:
        the documented MultiDiGraph structure, with its default dict factories) instead of
        ``add_node``/``add_edge``, which check and copy more than a loader needs; this is
        the hot loop of an in-memory load. :meth:`apply` clears networkx's cache after.
        """
        data: dict[str, Any] | None = self._nodes.get(node)
        if data is None:
            data = {_LABEL: label, **props}
            self._nodes[node] = data
            self._succ[node] = {}
            self._pred[node] = {}
        return data

    def _edge(self, start: str, end: str, kind: str, data: dict[str, Any]) -> None:
        keydict = self._succ[start].get(end)
        if keydict is None:
            keydict = {}
            self._succ[start][end] = keydict
            self._pred[end][start] = keydict
        keydict[kind] = data

    def _write(self, rows: PaperRows) -> None:
        paper = node_id(PAPER.label, rows.pith_number)
        touched: set[str] = set()
        if paper in self._nodes:
            touched = self._detach_paper(paper)
            old = self._nodes[paper]
            self._bundles.discard(old[_BUNDLE_SHA256])
            old.clear()
            old[_LABEL] = PAPER.label
            old.update(rows.paper.properties())
        else:
            self._node(paper, PAPER.label, rows.paper.properties())
        self._bundles.add(rows.bundle_sha256)
        self._by_source[(rows.paper.source_kind, rows.paper.source_id)].add(rows.pith_number)

        for author in rows.authors:
            node = node_id(AUTHOR.label, author.name_key)
            data = self._node(node, AUTHOR.label, author.properties())
            if author.name < data[_NAME]:
                data[_NAME] = author.name
            self._edge(node, paper, AUTHORED.type, {_TYPE: AUTHORED.type})
        for category in rows.categories:
            node = node_id(CATEGORY.label, category.code)
            self._node(node, CATEGORY.label, category.node_properties())
            self._edge(paper, node, IN_CATEGORY.type, {_TYPE: IN_CATEGORY.type, **category.edge_properties()})
        for alias in rows.aliases:
            node = node_id(ALIAS.label, alias.kind, alias.value)
            self._node(node, ALIAS.label, alias.properties())
            self._edge(node, paper, IDENTIFIES.type, {_TYPE: IDENTIFIES.type})
        for signer in rows.signers:
            node = node_id(SIGNER.label, signer.signer_id)
            self._node(
                node,
                SIGNER.label,
                {_SIGNER_ID: signer.signer_id, _SIGNER_TYPE: signer.signer_type, _KEY_IDS: []},
            )
            self._edge(node, paper, SIGNED.type, {_TYPE: SIGNED.type, **signer.edge_properties()})
            self._signer_keys[signer.signer_id].update(signer.key_ids)
            touched.add(node)

        self._tidy(touched)

    # -- persistence ---------------------------------------------------------------------

    def save(self, path: str | Path) -> None:
        """Write the graph as networkx node-link JSON: beside ``path`` first, then renamed
        over it, so a failed save never leaves a truncated file nor destroys the one there.

        Raises :class:`~pith_graph.errors.UsageError` when it cannot be written.
        """
        target = Path(path)
        partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            partial.write_bytes(orjson.dumps(nx.node_link_data(self.graph, edges="edges")))
            os.replace(partial, target)
        except OSError as error:
            partial.unlink(missing_ok=True)
            raise UsageError(f"cannot write the graph to {path}: {error.strerror or error}") from error

    @classmethod
    def open(cls, path: str | Path) -> MemoryStore:
        """A store over a graph saved with :meth:`save`."""
        try:
            data = orjson.loads(Path(path).read_bytes())
            graph = nx.node_link_graph(data, directed=True, multigraph=True, edges="edges")
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as err:
            raise UsageError(f"cannot open saved graph {path}: {err}") from err
        return cls(graph)
