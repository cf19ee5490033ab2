"""The embedded store: a networkx ``DiGraph`` in this process.

Node ids are :func:`pith_graph.schema.graph.node_id` strings (``"Paper:pith:2019:BR75..."``,
``"Author:zoë smith"``, ``"Category:cs.LG"``, ``"Alias:doi:10.48550/..."``, ``"Signer:pith.science"``).
Every node carries ``label`` plus its schema properties; every edge ``type`` plus its properties.
Two nodes share at most one edge (each pair of labels has one relationship type), so the graph is
a ``DiGraph``: edges have no keys. Edges point as the schema says (``Author→Paper``,
``Paper→Category``, ``Alias→Paper``, ``Signer→Paper``). Edge attributes are shared and read-only
(:mod:`.memory_graph`); node ids used by many edges (authors, categories, signers) are interned.

Saved as node-link JSON (:meth:`MemoryStore.save`) or a snapshot (:meth:`~MemoryStore.save_snapshot`):
:meth:`MemoryStore.open` reads either, and the ``MultiDiGraph`` of earlier versions.
"""

from __future__ import annotations

import signal
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import networkx as nx

from pith_graph.errors import UsageError
from pith_graph.interrupts import interrupts_held
from pith_graph.loader.graphml import refuse_graphml
from pith_graph.loader.rows import AUTHOR_NAMES, PaperRows
from pith_graph.loader.stores.base import AppliedBatch, GraphCounts, GraphExport, Unchanged, schema_counts
from pith_graph.loader.stores.files import node_link_bytes, node_link_chunks, read_node_link, write_beside
from pith_graph.loader.stores.latest import fill_latest, mark_latest
from pith_graph.loader.stores.memory_extras import edge_extras, paper_properties, rewrite_paper, with_extras
from pith_graph.loader.stores.memory_graph import EdgeData, EdgeInterner, check_structure, check_types, put
from pith_graph.loader.stores.memory_guard import built_or_refused, check_built, checked_graph
from pith_graph.loader.stores.memory_watchers import changed
from pith_graph.loader.stores.names import PendingNames, Spellings, fill_authors
from pith_graph.loader.stores.node_link import from_node_link
from pith_graph.loader.stores.rules import SourceKey, StoredPaper, plan_batch
from pith_graph.loader.stores.snapshot import Snapshot, is_snapshot, read_snapshot, save_snapshot
from pith_graph.loader.stores.snapshot_pieces import MALFORMED as SNAPSHOT_MALFORMED
from pith_graph.loader.stores.snapshot_pieces import SKIP_INDEXES, IndexReaders
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

__all__ = ["MemoryStore", "open_graph", "open_saved"]

_LABEL, _TYPE = LABEL_ATTRIBUTE, TYPE_ATTRIBUTE
#: Labels whose nodes exist only while a paper uses them.
_DERIVED_LABELS = (AUTHOR.label, CATEGORY.label, ALIAS.label, SIGNER.label)
_PITH_NUMBER = PAPER.prop("pithNumber")
_SOURCE_KIND = PAPER.prop("sourceKind")
_SOURCE_ID = PAPER.prop("sourceId")
_SOURCE_VERSION = PAPER.prop("sourceVersion")
_PAPER_KEY_IDS = PAPER.prop("keyIds")
_BUNDLE_KEY_ID = PAPER.prop("bundleKeyId")
_BUILT_AT = PAPER.prop("builtAt")
_BUNDLE_SHA256 = PAPER.prop("bundleSha256")
_NAME, _NAME_KEY = AUTHOR.prop("name"), AUTHOR.prop("nameKey")
_NAME_FORMS = AUTHOR.prop("nameForms")
_PAPER_COUNT = AUTHOR.prop("paperCount")
_KIND, _VALUE = ALIAS.prop("kind"), ALIAS.prop("value")
_CODE, _ARCHIVE = CATEGORY.prop("code"), CATEGORY.prop("archive")
_SIGNER_ID = SIGNER.prop("signerId")
_SIGNER_TYPE = SIGNER.prop("signerType")
_KEY_IDS = SIGNER.prop("keyIds")


def _as_digraph(graph: nx.DiGraph | nx.MultiDiGraph) -> nx.DiGraph:
    if not graph.is_directed():
        raise UsageError("pith-graph's graph is directed (an nx.DiGraph)")
    if graph.is_multigraph():  # saved by an earlier version: the edge key was the type
        return nx.DiGraph(graph)
    return graph


class MemoryStore:
    """A :class:`~pith_graph.loader.stores.base.GraphStore` over a networkx ``DiGraph``."""

    def __init__(self, graph: nx.DiGraph | None = None) -> None:
        self.graph: nx.DiGraph = nx.DiGraph() if graph is None else checked_graph(graph, "graph")
        self._edge_data = EdgeInterner()
        self._bundles: dict[str, str | None] = {}  # bundleSha256 -> bundleKeyId of every paper
        # (sourceKind, sourceId) -> its papers' pith numbers: the precedence rule's lookups
        # (a tuple: most source ids have one or two versions, and a set costs 216 bytes).
        self._by_source: dict[SourceKey, tuple[str, ...]] = {}
        # signerId -> how many of its SIGNED edges use each key: Signer.keyIds stays exact.
        self._signer_keys: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self._names = PendingNames()  # a batch's spellings, counted into names at its end
        with built_or_refused(self.graph):  # (a graph a script edited: hand_edited, not a KeyError)
            fill_authors(self.graph)
            fill_latest(self.graph)
            for _node, data in self.graph.nodes(data=True):
                if data.get(_LABEL) == PAPER.label:
                    self._bundles[data[_BUNDLE_SHA256]] = data.get(_BUNDLE_KEY_ID)
                    self._add_source((data[_SOURCE_KIND], data[_SOURCE_ID]), data[_PITH_NUMBER])
            for start, _end, data in self.graph.edges(data=True):
                if data.get(_TYPE) == SIGNED.type:
                    signer = self.graph.nodes[start][_SIGNER_ID]
                    self._signer_keys[signer].update(data[_KEY_IDS])

    # -- GraphStore ----------------------------------------------------------------------

    def ensure_schema(self) -> None:
        """Nothing to create: node ids are the keys."""

    def known_bundle_digests(self) -> set[str]:
        return set(self._bundles)

    def known_bundles(self) -> dict[str, str]:
        return {digest: key for digest, key in self._bundles.items() if key is not None}

    def apply(self, batch: Sequence[PaperRows], rank: Callable[[str], int]) -> AppliedBatch:
        plan = plan_batch(batch, self.stored_papers(rows.source for rows in batch), rank)
        self._change(plan.remove, plan.write)
        return AppliedBatch(plan.outcomes, plan.remove)

    def remove_papers(self, pith_numbers: Sequence[str], unchanged: Unchanged | None = None) -> list[str]:
        removed = [pith for pith in sorted(set(pith_numbers)) if node_id(PAPER.label, pith) in self.graph]
        if unchanged is not None:
            stored = {pith: self._stored(pith) for pith in removed}
            removed = [
                p for p in removed if unchanged.get(p) == (stored[p].built_at, list(stored[p].key_ids))
            ]
        self._change(removed, ())
        return removed

    def stored_papers(self, sources: Iterable[SourceKey]) -> list[StoredPaper]:
        return [self._stored(pith) for source in set(sources) for pith in self._by_source.get(source, ())]

    def papers_signed_with(self, key_ids: Sequence[str]) -> list[tuple[str, str, list[str]]]:
        wanted = set(key_ids)
        return sorted(
            (data[_PITH_NUMBER], data[_BUILT_AT], list(data[_PAPER_KEY_IDS]))
            for _node, data in self.graph.nodes(data=True)
            if data.get(_LABEL) == PAPER.label and wanted.intersection(data[_PAPER_KEY_IDS])
        )

    def _stored(self, pith: str) -> StoredPaper:
        data = self.graph.nodes[node_id(PAPER.label, pith)]
        return StoredPaper(
            pith,
            (data[_SOURCE_KIND], data[_SOURCE_ID]),
            data[_SOURCE_VERSION],
            data[_BUILT_AT],
            data[_BUNDLE_SHA256],
            data.get(_BUNDLE_KEY_ID),
            tuple(data[_PAPER_KEY_IDS]),
        )

    def counts(self) -> GraphCounts:
        nodes = Counter(label for _, label in self.graph.nodes(data=_LABEL))
        edges = Counter(kind for _, _, kind in self.graph.edges(data=_TYPE))
        return schema_counts(nodes.items(), edges.items())

    def export(self) -> GraphExport:
        nodes = {node: dict(data) for node, data in self.graph.nodes(data=True)}
        edges = {
            (start, data[_TYPE], end): {
                k: list(v) if isinstance(v, tuple) else v for k, v in data.items() if k != _TYPE
            }
            for start, end, data in self.graph.edges(data=True)
        }
        return GraphExport(nodes, edges)

    def close(self) -> None:
        """Nothing to release."""

    # -- writing -------------------------------------------------------------------------

    def _add_source(self, source: SourceKey, pith: str) -> None:
        known = self._by_source.get(source, ())
        if pith not in known:
            self._by_source[source] = (*known, pith)

    def _spell_as_named_now(self, piths: list[str]) -> None:
        """Give the stored papers of ``piths`` (about to be replaced or removed) that were
        written before 0.8, without ``authorNames``, their authors' names as they are before
        the batch changes any: what they count as (Neo4j reads the same, PAPER_AUTHOR_NAMES)."""
        nodes = self.graph._node
        for pith in piths:
            paper = node_id(PAPER.label, pith)
            data = nodes.get(paper)
            if data is not None and AUTHOR_NAMES not in data:
                authors = [nodes[a] for a in self.graph._pred[paper] if nodes[a][_LABEL] == AUTHOR.label]
                if authors:
                    data[AUTHOR_NAMES] = [author[_NAME] for author in authors]

    def _change(self, remove: Sequence[str], write: Sequence[PaperRows]) -> None:
        """Remove papers, then write papers, Ctrl-C and SIGTERM held (interrupts_held); authors renamed last."""
        with interrupts_held(signal.SIGTERM):
            self._spell_as_named_now([*remove, *(rows.pith_number for rows in write)])
            nodes = self.graph._node
            sources = {rows.source for rows in write} | {self._stored(pith).source for pith in remove}
            try:
                for pith in remove:
                    self._remove(pith)
                for rows in write:
                    self._write(rows)
                for source in sources:  # each source's papers: their isLatest (stores.latest)
                    mark_latest(nodes, self._by_source.get(source, ()))
            finally:
                self._names.settle_into(self._author)
                changed(self.graph)  # readers of the graph forget their indexes (memory_watchers)

    def _author(self, key: str) -> dict[str, Any] | None:
        return cast("dict[str, Any] | None", self.graph._node.get(node_id(AUTHOR.label, key)))

    def _detach_paper(self, paper: str, spellings: Spellings) -> set[str]:
        """Remove every edge of ``paper``, counting its spellings of its authors out of
        ``spellings``; return the nodes it was attached to."""
        graph = self.graph
        spellings.remove(graph.nodes[paper].get(AUTHOR_NAMES, ()))
        neighbours: set[str] = set()
        for start, _end, data in list(graph.in_edges(paper, data=True)):
            if data[_TYPE] == SIGNED.type:
                self._signer_keys[graph.nodes[start][_SIGNER_ID]].subtract(data[_KEY_IDS])
            neighbours.add(start)
            graph.remove_edge(start, paper)
        for _start, end in list(graph.out_edges(paper)):
            neighbours.add(end)
            graph.remove_edge(paper, end)
        return neighbours

    def _remove(self, pith: str) -> None:
        """Remove a paper, its edges and the nodes left without a paper."""
        paper = node_id(PAPER.label, pith)
        data = self.graph.nodes[paper]
        self._bundles.pop(data[_BUNDLE_SHA256], None)
        source = (data[_SOURCE_KIND], data[_SOURCE_ID])
        left = tuple(other for other in self._by_source.get(source, ()) if other != pith)
        if left:
            self._by_source[source] = left
        else:
            self._by_source.pop(source, None)
        spellings = Spellings()
        touched = self._detach_paper(paper, spellings)
        self.graph.remove_node(paper)
        self._tidy(touched, spellings)

    def _tidy(self, touched: set[str], spellings: Spellings) -> None:
        """Remove the touched nodes left without an edge; refresh the touched signers' keyIds,
        and the touched authors' paperCount and name (:mod:`~pith_graph.loader.stores.names`:
        the write's ``spellings`` counted into the stored ones)."""
        graph = self.graph
        for node in touched:
            data = graph.nodes[node]
            if data[_LABEL] in _DERIVED_LABELS and not graph.pred[node] and not graph.succ[node]:
                if data[_LABEL] == SIGNER.label:
                    self._signer_keys.pop(data[_SIGNER_ID], None)
                elif data[_LABEL] == AUTHOR.label:
                    self._names.forget(data[_NAME_KEY])
                graph.remove_node(node)
            elif data[_LABEL] == AUTHOR.label:
                if spellings.changes:  # (most writes of a first load change no name)
                    self._names.count(data, spellings)
                data[_PAPER_COUNT] = len(graph.succ[node])  # an author's edges are its AUTHORED ones
            elif data[_LABEL] == SIGNER.label:
                keys = self._signer_keys[data[_SIGNER_ID]]
                data[_KEY_IDS] = sorted(key for key, count in keys.items() if count > 0)

    def _write(self, rows: PaperRows) -> None:
        graph = self.graph
        nodes = graph.nodes
        paper = node_id(PAPER.label, rows.pith_number)
        touched: set[str] = set()
        spellings = Spellings()
        new: list[tuple[str, dict[str, Any]]] = []
        edges: list[tuple[str, str, EdgeData]] = []
        props = paper_properties(rows, graph._node, self._by_source.get(rows.source, ()))
        old = nodes.get(paper)
        kept = edge_extras(graph, paper) if old is not None else {}  # a script's, as Neo4j keeps them
        if old is not None:
            touched = self._detach_paper(paper, spellings)
            self._bundles.pop(old[_BUNDLE_SHA256], None)
            rewrite_paper(old, props)
        else:
            new.append((paper, {_LABEL: PAPER.label, **props}))
        self._bundles[rows.bundle_sha256] = sys.intern(rows.paper.bundle_key_id)
        self._add_source((sys.intern(rows.paper.source_kind), rows.paper.source_id), rows.pith_number)

        def node(label: str, key: str, props: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
            name = sys.intern(node_id(label, key))
            data = nodes.get(name)
            if data is None:
                new.append((name, {_LABEL: label, **props}))
            return name, data

        authors = []
        names = props.get(AUTHOR_NAMES, ())
        for at, author in enumerate(rows.authors):
            name, data = node(AUTHOR.label, author.name_key, {**author.properties(), _PAPER_COUNT: 0})
            if data is not None:  # (a new one is named by this paper alone, as created)
                usual = data[_NAME] == author.name  # (its name before the batch, if it changes one)
                if old is not None or not usual or _NAME_FORMS in data or author.name_key in self._names:
                    spellings.add(author.name_key, author.name)
                if usual:
                    names[at] = data[_NAME]  # one string object for the author's usual spelling
            edges.append((name, paper, self._edge_data({_TYPE: AUTHORED.type})))
            authors.append(name)
        for category in rows.categories:
            name, _ = node(CATEGORY.label, category.code, {_CODE: category.code, _ARCHIVE: category.archive})
            edges.append(
                (paper, name, self._edge_data({_TYPE: IN_CATEGORY.type, **category.edge_properties()}))
            )
        for alias in rows.aliases:
            name = node_id(ALIAS.label, alias.kind, alias.value)
            if nodes.get(name) is None:
                new.append((name, {_LABEL: ALIAS.label, _KIND: sys.intern(alias.kind), _VALUE: alias.value}))
            edges.append((name, paper, self._edge_data({_TYPE: IDENTIFIES.type})))
        for signer in rows.signers:
            props = {_SIGNER_ID: signer.signer_id, _SIGNER_TYPE: signer.signer_type, _KEY_IDS: []}
            name, data = node(SIGNER.label, signer.signer_id, props)
            if data is not None:  # the keyring's type (as Neo4j's LOCK_SIGNERS sets it)
                data[_SIGNER_TYPE] = signer.signer_type
            edges.append((name, paper, self._edge_data({_TYPE: SIGNED.type, **signer.edge_properties()})))
            self._signer_keys[signer.signer_id].update(signer.key_ids)
            touched.add(name)
        put(graph, new, with_extras(edges, kept) if kept else edges)
        self._tidy(touched.union(authors), spellings)

    def compact(self) -> None:
        """Share equal edge attributes (a graph read from a file has a dict per edge)."""
        put(self.graph, (), [(u, v, self._edge_data(data)) for u, v, data in self.graph.edges(data=True)])

    # -- persistence ---------------------------------------------------------------------

    def save(self, path: str | Path) -> None:
        """Write the graph as networkx node-link JSON: beside ``path`` first, then renamed
        over it, so a failed save never leaves a truncated file nor destroys the one there.

        Raises :class:`~pith_graph.errors.StoreError` (``write_failed``) when it cannot be
        written: the graph is built, storing it failed, or ``path`` is a FIFO or a device
        (since 0.9.5; it was replaced by a file); ``hand_edited`` (since 0.8.7) when
        it is not one a load could have built (:func:`.memory_guard.check_built`); a path
        named ``*.graphml`` is a :class:`UsageError` (since 0.9.5: :func:`.graphml.save_graphml`)."""
        refuse_graphml(path, "MemoryStore.save", "write GraphML with pith_graph.save_graphml")
        write_beside(path, node_link_chunks(check_built(self.graph)))  # a few nodes at a time

    def node_link_json(self) -> bytes:
        """The graph as networkx node-link JSON (what :meth:`save` writes)."""
        return node_link_bytes(self.graph)

    def save_snapshot(self, path: str | Path, indexes: Mapping[str, Iterable[Any]] | None = None) -> None:
        """Write the graph as a snapshot (:mod:`~pith_graph.loader.stores.snapshot`): read
        back several times faster than node-link JSON; with ``indexes`` made from it, if given.
        Raises as :meth:`save` does (``hand_edited``, ``*.graphml`` too)."""
        refuse_graphml(path, "MemoryStore.save_snapshot", "name a GraphML file in save_graphml")
        save_snapshot(check_built(self.graph), path, indexes)

    @classmethod
    def open(cls, path: str | Path) -> MemoryStore:
        """A store over a graph saved with :meth:`save` or :meth:`save_snapshot` (or as an
        earlier ``MultiDiGraph``): :class:`UsageError` naming ``path`` if it cannot be, or if
        it is not a graph a load builds (a snapshot too: writes rely on its structure)."""
        graph = open_saved(path, checked=True, readers=SKIP_INDEXES).graph
        try:
            return cls(graph)
        except _MALFORMED as err:
            raise UsageError(f"cannot open saved graph {path}: {type(err).__name__}: {err}") from err


def _is_snapshot(path: str | Path) -> bool:
    try:
        return is_snapshot(path)
    except OSError as err:
        raise UsageError(f"cannot open saved graph {path}: {err.strerror or err}") from err


def open_graph(path: str | Path) -> nx.DiGraph:
    """A graph saved as a snapshot (its indexes let go as read) or as node-link JSON, its edges
    sharing their attributes as a loaded graph's do; an earlier ``MultiDiGraph`` comes back a ``DiGraph``."""
    return open_saved(path, readers=SKIP_INDEXES).graph


#: What reading a malformed node-link file raises (not JSON, nodes not a list of maps, a value
#: nested too deep, ...): what a snapshot of another shape raises, and more.
_MALFORMED = (OSError, ValueError, *SNAPSHOT_MALFORMED, nx.NetworkXException)


def open_saved(path: str | Path, *, checked: bool = False, readers: IndexReaders | None = None) -> Snapshot:
    """As :func:`open_graph`, with the indexes a snapshot holds (read by ``readers``, as :func:`read_snapshot`
    reads them; none from node-link JSON). A snapshot's structure is trusted (only its types are
    checked) unless ``checked``: for a graph to write to, whose edits by hand could make a write fail or loop."""
    try:
        if _is_snapshot(path):
            snapshot = read_snapshot(path, readers)
            fill_latest(snapshot.graph)  # (saved before 0.9.4)
            fill_authors(snapshot.graph)  # (nameFolded saved before 0.9.8)
            (check_structure if checked else check_types)(snapshot.graph)
            return snapshot
        data = read_node_link(path)
        if not isinstance(data, dict) or not isinstance(data.get("graph", {}), dict):
            raise TypeError("expected a node-link JSON object, its graph attributes a map")
        graph = _as_digraph(from_node_link(data))
        fill_authors(graph)  # what older files lack, before it is checked
        fill_latest(graph)
        check_structure(graph)
        store = MemoryStore(graph)
        store.compact()
    except _MALFORMED as err:
        raise UsageError(f"cannot open saved graph {path}: {type(err).__name__}: {err}") from err
    return Snapshot(store.graph, {})
