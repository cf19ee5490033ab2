"""What the in-memory reader answers from: records of the graph's nodes and cached indexes.

The indexes are built on first use and kept: newest-first key lists (all papers, per
category, author, archive and signer), title words, lookups by paper attribute, each
source's papers by version, and the sorted categories, aliases and signers of papers with
many edges. A load or removal by pith-graph into the same graph has them forgotten
(:mod:`~pith_graph.loader.stores.memory_watchers`); after changing the graph with networkx's
own calls, :meth:`MemoryGraphView.refresh` forgets them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING, Any, TypeVar

import networkx as nx

from pith_graph.api.reads.recent import RECENT_KEPT, Recent
from pith_graph.api.reads.records import (
    AuthorRecord,
    CategoryRecord,
    SignerRecord,
)
from pith_graph.api.reads.text_index import TextIndex
from pith_graph.loader.stores.latest import version_key
from pith_graph.loader.stores.memory_watchers import watch
from pith_graph.schema.graph import (
    ALIAS,
    AUTHOR,
    AUTHORED,
    CATEGORY,
    IN_CATEGORY,
    LABEL_ATTRIBUTE,
    PAPER,
    SIGNED,
    SIGNER,
    TYPE_ATTRIBUTE,
    node_id,
)
from pith_graph.schema.rows import PaperRow

__all__ = ["KEPT_OVER", "NO_KEYS", "RECENT_KEPT", "Key", "Link", "MemoryGraphView", "Recent", "source_key"]

T = TypeVar("T")
#: A key list of nothing: what a lookup of a category, author, signer or archive the graph
#: does not hold answers, shared and never kept (never changed by its readers).
NO_KEYS: list[tuple[str, str]] = []

# Schema names the reader uses (checked at import).
LABEL = LABEL_ATTRIBUTE
TYPE = TYPE_ATTRIBUTE
PITH_NUMBER = PAPER.prop("pithNumber")
SHORT_PITH_NUMBER = PAPER.prop("shortPithNumber")
TITLE = PAPER.prop("title")
SUBMITTED_AT = PAPER.prop("submittedAt")
SOURCE_KIND = PAPER.prop("sourceKind")
SOURCE_ID = PAPER.prop("sourceId")
SOURCE_VERSION = PAPER.prop("sourceVersion")
BUILT_AT = PAPER.prop("builtAt")
NAME_KEY = AUTHOR.prop("nameKey")
NAME = AUTHOR.prop("name")
NAME_FOLDED = AUTHOR.prop("nameFolded")
CODE = CATEGORY.prop("code")
ARCHIVE = CATEGORY.prop("archive")
KIND = ALIAS.prop("kind")
VALUE = ALIAS.prop("value")
SIGNER_ID = SIGNER.prop("signerId")
SIGNER_TYPE = SIGNER.prop("signerType")
KEY_IDS = SIGNER.prop("keyIds")
EVENT_TYPES = SIGNED.prop("eventTypes")
SIGNED_BUNDLE = SIGNED.prop("signedBundle")
PRIMARY = IN_CATEGORY.prop("primary")

#: (submittedAt, pithNumber): lists are ascending and read backwards for newest first.
Key = tuple[str, str]
#: (node, edge attributes): one of a paper's categories, aliases or signers.
Link = tuple[str, dict[str, Any]]
#: Papers with more edges than this on one side (incoming: authors, aliases, signers;
#: outgoing: categories) keep their sorted lists of that side once read.
KEPT_OVER = 64


def source_key(kind: str, source_id: str) -> str:
    """The key of a source (an arXiv id) in :meth:`MemoryGraphView._versions`."""
    return f"{kind}\x00{source_id}"


class MemoryGraphView:
    """Records and cached indexes over a ``DiGraph`` written by
    :class:`~pith_graph.loader.stores.memory.MemoryStore`."""

    if TYPE_CHECKING:  # provided by MemoryDiscoveryReads

        def _text_index(self) -> tuple[TextIndex, list[str]]: ...

    def __init__(self, graph: nx.DiGraph) -> None:
        self.G = graph
        # networkx's own dicts: node -> attributes, node -> neighbour -> edge attributes
        # (read directly: the views cost a call per lookup, and these reads are the hot path).
        self._nodes: dict[str, dict[str, Any]] = graph._node
        self._succ: dict[str, dict[str, dict[str, Any]]] = graph._succ
        self._pred: dict[str, dict[str, dict[str, Any]]] = graph._pred
        self.refresh()
        watch(graph, self)  # a load into the graph has refresh() called

    def refresh(self) -> None:
        """Forget every index (after the graph changed)."""
        self._papers: dict[str, PaperRow] = {}
        self._indexes: dict[str, Any] = {}
        self._lists: dict[tuple[str, str], list[Key]] = {}
        self._rankings: dict[tuple[str, str], list[Any]] = {}
        # a client may name new combinations each request: the last few are kept
        self._recent_titles: Recent[list[Key]] = Recent(RECENT_KEPT)

    # -- nodes ---------------------------------------------------------------------------

    def _paper(self, pith_number: str) -> PaperRow | None:
        record = self._papers.get(pith_number)
        if record is None:
            data = self._nodes.get(node_id(PAPER.label, pith_number))
            if data is None or data.get(LABEL) != PAPER.label:
                return None
            # is_latest as latestVersions answers here (_latest), not the node's isLatest
            latest = pith_number in self._latest()
            record = self._papers[pith_number] = PaperRow.from_properties(data, latest)
        return record

    def _papers_of(self, keys: Iterable[Key]) -> list[PaperRow]:
        out = []
        for _, pith in keys:
            record = self._paper(pith)
            assert record is not None
            out.append(record)
        return out

    def _author(self, node: str, counts: bool = True) -> AuthorRecord:
        data = self._nodes[node]
        return AuthorRecord(data[NAME_KEY], data[NAME], len(self._succ[node]) if counts else None)

    def _category(self, node: str, counts: bool = True) -> CategoryRecord:
        data = self._nodes[node]
        return CategoryRecord(data[CODE], data[ARCHIVE], len(self._pred[node]) if counts else None)

    def _signer(self, node: str, counts: bool = True) -> SignerRecord:
        data = self._nodes[node]
        count = len(self._succ[node]) if counts else None
        return SignerRecord(data[SIGNER_ID], data[SIGNER_TYPE], tuple(data[KEY_IDS]), count)

    def unpinned_key_ids(self, pinned: Collection[str], most: int) -> list[str]:
        """As :meth:`~pith_graph.api.reads.reader.GraphReader.unpinned_key_ids`."""
        return sorted({key for key in self._signers_keys() if key not in pinned})[:most]

    def used_key_ids(self, keys: Collection[str]) -> list[str]:
        """As :meth:`~pith_graph.api.reads.reader.GraphReader.used_key_ids`."""
        return sorted({key for key in self._signers_keys() if key in keys})

    def _signers_keys(self) -> frozenset[str]:
        """The key ids on every Signer node: one scan of the nodes, kept (``serve`` asks twice)."""

        def build() -> frozenset[str]:
            signers = (data for data in self._nodes.values() if data.get(LABEL) == SIGNER.label)
            return frozenset(key for data in signers for key in data[KEY_IDS])

        found: frozenset[str] = self._index("signer keys", build)
        return found

    def _node(self, label: str, key: str) -> str | None:
        node = node_id(label, key)
        data = self._nodes.get(node)
        return node if data is not None and data.get(LABEL) == label else None

    def _records(self, label: str, keys: Sequence[str], record: Callable[[str], T]) -> dict[str, T]:
        """``record(node)`` for each key whose ``label`` node exists, by key."""
        found = {}
        for key in keys:
            node = self._node(label, key)
            if node is not None:
                found[key] = record(node)
        return found

    def _author_nodes_of(self, paper: str) -> list[str]:
        return [node for node, edge in self._pred[paper].items() if edge[TYPE] == AUTHORED.type]

    def _category_nodes(self) -> list[str]:
        def build() -> list[str]:
            return [n for n, d in self._nodes.items() if d.get(LABEL) == CATEGORY.label]

        found: list[str] = self._index("category nodes", build)
        return found

    def _paper_nodes(self) -> Iterable[tuple[str, dict[str, Any]]]:
        return ((n, d) for n, d in self._nodes.items() if d.get(LABEL) == PAPER.label)

    # -- indexes -------------------------------------------------------------------------

    def _index(self, name: str, build: Callable[[], Any]) -> Any:
        found = self._indexes.get(name)
        if found is None:
            found = self._indexes[name] = build()
        return found

    def _sorted_from(self, papers: Iterable[str]) -> list[Key]:
        """An ascending (submittedAt, pithNumber) list of the paper nodes ``papers``: their
        keys are :meth:`_paper_keys`' tuples, not copies (since 0.9.9)."""
        nodes, keys = self._nodes, self._paper_keys()
        return sorted(keys[nodes[paper][PITH_NUMBER]] for paper in papers)

    def _paper_keys(self) -> dict[str, Key]:
        """pithNumber -> the paper's (submittedAt, pithNumber) key; the one tuple of each
        paper that every kept key list holds (all papers, a category's, an author's...): a
        list of keys is 8 bytes a paper, where a tuple of its own was 64 more (since 0.9.9)."""

        def build() -> dict[str, Key]:
            keys = sorted((data[SUBMITTED_AT], data[PITH_NUMBER]) for _, data in self._paper_nodes())
            self._lists[("all", "")] = keys
            return {key[1]: key for key in keys}

        found: dict[str, Key] = self._index("paper keys", build)
        return found

    def _sorted_keys(self, kind: str, key: str, papers: Callable[[], Iterable[str]]) -> list[Key]:
        """:meth:`_sorted_from` ``papers()``, cached under (kind, key): only keys of the graph's
        own nodes (or words), so the cache is bounded by the graph."""
        found = self._lists.get((kind, key))
        if found is None:
            found = self._lists[(kind, key)] = self._sorted_from(papers())
        return found

    def _node_keys(
        self, kind: str, label: str, key: str, papers: Callable[[str], Iterable[str]]
    ) -> list[Key]:
        """:meth:`_sorted_keys` of the node ``label``/``key``'s ``papers``; :data:`NO_KEYS`,
        not kept, for a key no node has: a client naming new ones each request (100 a filter
        since 0.9.1) grew the kept lists without bound (70 KB a request, measured)."""
        node = self._node(label, key)
        if node is None:
            return NO_KEYS
        return self._sorted_keys(kind, key, lambda: papers(node))

    def _all_keys(self) -> list[Key]:
        self._paper_keys()  # builds the list of all
        return self._lists[("all", "")]

    def _category_keys(self, code: str) -> list[Key]:
        return self._node_keys("category", CATEGORY.label, code, lambda node: self._pred[node])

    def _author_keys(self, name_key: str) -> list[Key]:
        return self._node_keys("author", AUTHOR.label, name_key, lambda node: self._succ[node])

    def _signer_keys(self, signer_id: str, signed_bundle: bool | None = None) -> list[Key]:
        """The papers the signer signed anything of; with ``signed_bundle``, those whose
        SIGNED edge's ``signedBundle`` is that."""
        if signed_bundle is None:
            return self._node_keys("signer", SIGNER.label, signer_id, lambda node: self._succ[node])

        def papers(node: str) -> Iterable[str]:
            return (paper for paper, edge in self._succ[node].items() if edge[SIGNED_BUNDLE] == signed_bundle)

        return self._node_keys(f"signer {signed_bundle}", SIGNER.label, signer_id, papers)

    def _archive_keys(self, archive: str) -> list[Key]:
        if archive not in self._archives():
            return NO_KEYS

        def papers() -> set[str]:
            found: set[str] = set()
            for code in self._archives().get(archive, ()):
                found.update(self._pred[node_id(CATEGORY.label, code)])
            return found

        return self._sorted_keys(ARCHIVE, archive, papers)

    def _title_keys(self, terms: Sequence[str]) -> list[Key]:
        """The keys of the papers whose title has every word of ``terms``: the text index's
        title postings (its documents are the papers in pith-number order; since 0.9.9, where
        a title index of its own, the same postings as tuples of nodes, held 13 MB more at 95k
        papers), a word's kept, several words' intersected and kept the most recently asked."""
        index, papers = self._text_index()
        postings = sorted((index.documents(0, term) for term in terms), key=len)
        if not postings or not postings[0]:
            return []
        keys = self._paper_keys()
        if len(postings) == 1:
            found = self._lists.get((TITLE, terms[0]))
            if found is None:
                found = self._lists[(TITLE, terms[0])] = sorted(keys[papers[doc]] for doc in postings[0])
            return found
        return self._recent_titles.get_or_make(  # intersected only when not kept: a pass over the longer
            "\x00".join(sorted(terms)),
            lambda: sorted(keys[papers[doc]] for doc in set(postings[0]).intersection(*postings[1:])),
        )

    def _archives(self) -> dict[str, list[str]]:
        def build() -> dict[str, list[str]]:
            found: defaultdict[str, list[str]] = defaultdict(list)
            for data in self._nodes.values():
                if data.get(LABEL) == CATEGORY.label:
                    found[data[ARCHIVE]].append(data[CODE])
            return dict(found)

        result: dict[str, list[str]] = self._index("archives", build)
        return result

    def _short(self, short_pith_number: str) -> tuple[str, ...]:
        """The pith numbers of the papers of ``short_pith_number``, sorted: kept as one pith
        number string (the graph's own) per short one, a tuple only for the few shared (since
        0.9.9: a list each held 20 MB at 95k papers)."""

        def build() -> dict[str, str | tuple[str, ...]]:
            found: dict[str, str | tuple[str, ...]] = {}
            for _, data in self._paper_nodes():
                short, pith = data[SHORT_PITH_NUMBER], data[PITH_NUMBER]
                have = found.setdefault(short, pith)
                if have is not pith:
                    found[short] = tuple(sorted((have, pith) if isinstance(have, str) else (*have, pith)))
            return found

        kept: dict[str, str | tuple[str, ...]] = self._index("short", build)
        found = kept.get(short_pith_number, ())
        return (found,) if isinstance(found, str) else found

    # -- a paper's lists -----------------------------------------------------------------

    def _links(self, paper: str, relation: str) -> list[Link]:
        """The ``relation`` of ``paper`` (``"categories"``, ``"aliases"`` or ``"signatures"``)
        in its order: primary first, then by code; by kind, then value; by signer id. Kept
        for a paper with over :data:`KEPT_OVER` edges on that side, so that its first few
        are a slice however many it has: it is sorted once, not per read."""
        kept: dict[tuple[str, str], list[Link]] = self._index("links", dict)
        found = kept.get((paper, relation))
        if found is not None:
            return found
        nodes = self._nodes
        if relation == "categories":
            edges = self._succ.get(paper, {})
            found = [(node, edge) for node, edge in edges.items() if edge[TYPE] == IN_CATEGORY.type]
            found.sort(key=lambda link: (not link[1][PRIMARY], nodes[link[0]][CODE]))
        elif relation == "aliases":
            edges = self._pred.get(paper, {})
            found = [(node, edge) for node, edge in edges.items() if nodes[node][LABEL] == ALIAS.label]
            found.sort(key=lambda link: (nodes[link[0]][KIND], nodes[link[0]][VALUE]))
        else:
            edges = self._pred.get(paper, {})
            found = [(node, edge) for node, edge in edges.items() if edge[TYPE] == SIGNED.type]
            found.sort(key=lambda link: nodes[link[0]][SIGNER_ID])
        if len(edges) > KEPT_OVER:
            kept[(paper, relation)] = found
        return found

    def _versions(self) -> dict[str, list[str]]:
        """The pith numbers of each source's papers (keyed by :func:`source_key`), by version,
        then pith number, for the sources of several papers: built once, so a paper's first
        versions are a slice. A source of one paper is not kept (since 0.9.9): its paper has
        no other version."""

        def build() -> dict[str, list[str]]:
            order = itemgetter(SOURCE_KIND, SOURCE_ID, SOURCE_VERSION, PITH_NUMBER)
            papers = sorted((data for _, data in self._paper_nodes()), key=order)
            found: dict[str, list[str]] = {}
            for (kind, source), versions in groupby(papers, key=itemgetter(SOURCE_KIND, SOURCE_ID)):
                piths = [data[PITH_NUMBER] for data in versions]
                if len(piths) > 1:
                    found[source_key(kind, source)] = piths
            return found

        result: dict[str, list[str]] = self._index("versions", build)
        return result

    def _latest(self) -> frozenset[str]:
        """The pith number of each source's newest version, as ``paper(id:)`` picks it for
        an arXiv id without a version (greatest ``version_key``, the order writes mark
        ``Paper.isLatest`` by): built once, from the papers this graph holds (a saved export
        of a part marks none of a source whose newer version it left out)."""

        def build() -> frozenset[str]:
            newest: dict[str, tuple[int, str, str]] = {}
            for _, data in self._paper_nodes():
                key = version_key(data)
                source = source_key(data[SOURCE_KIND], data[SOURCE_ID])
                found = newest.get(source)
                if found is None or key > found:
                    newest[source] = key
            return frozenset(pith for _, _, pith in newest.values())

        result: frozenset[str] = self._index("latest versions", build)
        return result
