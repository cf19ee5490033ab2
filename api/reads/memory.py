"""The :class:`~pith_graph.api.reads.reader.GraphReader` over the in-memory networkx graph.

Reads go straight to the graph where an adjacency answers them (a paper's authors, an
alias's papers); the rest uses small indexes built on first use and kept: the newest-first
key lists (all papers, per category, author, archive and signer), title words, short pith
numbers, arXiv versions, and per-category rankings. The graph must not change after the
first read; call :meth:`MemoryReader.refresh` if it does.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from pith_graph.api.reads.memory_discovery import MemoryDiscoveryReads
from pith_graph.api.reads.memory_view import (
    CODE,
    EVENT_TYPES,
    KEY_IDS,
    KIND,
    LABEL,
    NAME_KEY,
    PITH_NUMBER,
    PRIMARY,
    SHORT_PITH_NUMBER,
    SIGNED_BUNDLE,
    VALUE,
    Key,
)
from pith_graph.api.reads.records import (
    AliasRecord,
    AuthorCount,
    AuthorRecord,
    CategoryCount,
    CategoryLink,
    CategoryRecord,
    Coauthor,
    IdentifierKey,
    Page,
    PaperFilter,
    PaperKey,
    PathStep,
    RelatedPaper,
    SignatureRecord,
    SignerRecord,
)
from pith_graph.schema.graph import ALIAS, AUTHOR, CATEGORY, PAPER, SIGNED, SIGNER, node_id
from pith_graph.schema.rows import PaperRow

__all__ = ["MemoryReader"]


class MemoryReader(MemoryDiscoveryReads):
    """Batched reads over a ``MultiDiGraph`` written by :class:`~pith_graph.loader.stores.memory.MemoryStore`."""

    def ping(self) -> None:
        """Always ready."""

    def close(self) -> None:
        """Nothing to release."""

    # -- identifiers ---------------------------------------------------------------------

    def papers_by_ids(self, pith_numbers: Sequence[str]) -> dict[str, PaperRow]:
        found = {}
        for pith in pith_numbers:
            record = self._paper(pith)
            if record is not None:
                found[pith] = record
        return found

    def resolve_identifiers(self, keys: Sequence[IdentifierKey]) -> dict[IdentifierKey, list[str]]:
        result: dict[IdentifierKey, list[str]] = {}
        for kind, value in keys:
            if kind == "pithNumber":
                names = [value] if self._paper(value) is not None else []
            elif kind == "shortPithNumber":
                names = self._by_attribute("short", lambda d: d[SHORT_PITH_NUMBER]).get(value, [])
            else:
                alias = node_id(ALIAS.label, kind, value)
                data = self.G.nodes.get(alias)
                names = []
                if data is not None and data.get(LABEL) == ALIAS.label:
                    names = sorted(self.G.nodes[paper][PITH_NUMBER] for paper in self.G.succ[alias])
            result[(kind, value)] = list(names)
        return result

    # -- listings ------------------------------------------------------------------------

    def _candidates(self, where: PaperFilter) -> list[Key]:
        if where.title_terms:
            return self._title_keys(where.title_terms)
        if where.author is not None:
            return self._author_keys(where.author)
        if where.category is not None:
            return self._category_keys(where.category)
        if where.archive is not None:
            return self._archive_keys(where.archive)
        return self._all_keys()

    def _predicate(self, where: PaperFilter) -> Callable[[Key], bool] | None:
        """The checks the candidate list does not already guarantee (None: nothing)."""
        checks: list[Callable[[Key], bool]] = []
        anchored = False

        def member(keys: list[Key]) -> Callable[[Key], bool]:
            pool = {pith for _, pith in keys}
            return lambda key: key[1] in pool

        if where.title_terms:
            anchored = True
        if where.author is not None:
            if anchored:
                checks.append(member(self._author_keys(where.author)))
            anchored = True
        if where.category is not None:
            if anchored:
                checks.append(member(self._category_keys(where.category)))
            anchored = True
        if where.archive is not None and anchored:
            checks.append(member(self._archive_keys(where.archive)))
        if (where.submitted_from, where.submitted_before, where.license) != (None, None, None):
            checks.append(lambda key: where.admits(self._paper(key[1])))  # type: ignore[arg-type]
        if not checks:
            return None
        return lambda key: all(check(key) for check in checks)

    def _page(
        self, keys: list[Key], first: int, after: PaperKey | None, keep: Callable[[Key], bool] | None
    ) -> Page:
        start = len(keys) if after is None else bisect_left(keys, (after.submitted_at, after.pith_number))
        picked: list[Key] = []
        index = start - 1
        while index >= 0 and len(picked) <= first:
            key = keys[index]
            if keep is None or keep(key):
                picked.append(key)
            index -= 1
        return Page(tuple(self._papers_of(picked[:first])), len(picked) > first)

    def list_papers(self, where: PaperFilter, first: int, after: PaperKey | None) -> Page:
        return self._page(self._candidates(where), first, after, self._predicate(where))

    def count_papers(self, where: PaperFilter) -> int:
        keys = self._candidates(where)
        keep = self._predicate(where)
        return len(keys) if keep is None else sum(1 for key in keys if keep(key))

    # -- papers' relations ---------------------------------------------------------------

    def authors_of_papers(self, pith_numbers: Sequence[str]) -> dict[str, list[AuthorRecord]]:
        result = {}
        for pith in pith_numbers:
            paper = node_id(PAPER.label, pith)
            if paper in self.G:
                authors = [self._author(node) for node in self._author_nodes_of(paper)]
                result[pith] = sorted(authors, key=lambda a: (a.name, a.name_key))
            else:
                result[pith] = []
        return result

    def categories_of_papers(self, pith_numbers: Sequence[str]) -> dict[str, list[CategoryLink]]:
        result = {}
        for pith in pith_numbers:
            paper = node_id(PAPER.label, pith)
            links = []
            if paper in self.G:
                for node, edges in self.G.succ[paper].items():
                    if "IN_CATEGORY" in edges:
                        links.append(CategoryLink(self._category(node), bool(edges["IN_CATEGORY"][PRIMARY])))
            result[pith] = sorted(links, key=lambda link: (not link.primary, link.category.code))
        return result

    def aliases_of_papers(self, pith_numbers: Sequence[str]) -> dict[str, list[AliasRecord]]:
        result = {}
        nodes = self.G.nodes
        for pith in pith_numbers:
            paper = node_id(PAPER.label, pith)
            aliases = []
            if paper in self.G:
                for node in self.G.pred[paper]:
                    data = nodes[node]
                    if data[LABEL] == ALIAS.label:
                        aliases.append(AliasRecord(data[KIND], data[VALUE]))
            result[pith] = sorted(aliases, key=lambda a: (a.kind, a.value))
        return result

    def signatures_of_papers(self, pith_numbers: Sequence[str]) -> dict[str, list[SignatureRecord]]:
        result = {}
        for pith in pith_numbers:
            paper = node_id(PAPER.label, pith)
            found = []
            if paper in self.G:
                for node, edges in self.G.pred[paper].items():
                    edge = edges.get(SIGNED.type)
                    if edge is not None:
                        found.append(
                            SignatureRecord(
                                self._signer(node),
                                tuple(edge[KEY_IDS]),
                                tuple(edge[EVENT_TYPES]),
                                bool(edge[SIGNED_BUNDLE]),
                            )
                        )
            result[pith] = sorted(found, key=lambda s: s.signer.signer_id)
        return result

    def versions_of_papers(self, pith_numbers: Sequence[str]) -> dict[str, list[PaperRow]]:
        by_source = self._by_attribute("source", lambda d: f"{d['sourceKind']}\x00{d['sourceId']}")
        result: dict[str, list[PaperRow]] = {}
        for pith in pith_numbers:
            record = self._paper(pith)
            if record is None:
                result[pith] = []
                continue
            others = [
                self._paper(other)
                for other in by_source.get(f"{record.source_kind}\x00{record.source_id}", [])
                if other != pith
            ]
            result[pith] = sorted(
                (paper for paper in others if paper is not None),
                key=lambda p: (p.source_version, p.pith_number),
            )
        return result

    def related_papers(self, pith_numbers: Sequence[str], first: int) -> dict[str, list[RelatedPaper]]:
        result: dict[str, list[RelatedPaper]] = {}
        for pith in pith_numbers:
            record = self._paper(pith)
            if record is None:
                result[pith] = []
                continue
            shared: Counter[str] = Counter()
            for author in self._author_nodes_of(node_id(PAPER.label, pith)):
                shared.update(iter(self.G.succ[author]))
            related = []
            for node, count in shared.items():
                other = self._paper(self.G.nodes[node][PITH_NUMBER])
                assert other is not None
                if (other.source_kind, other.source_id) != (record.source_kind, record.source_id):
                    related.append(RelatedPaper(other, count))
            related.sort(
                key=lambda r: (r.shared_authors, r.paper.submitted_at, r.paper.pith_number),
                reverse=True,
            )
            result[pith] = related[:first]
        return result

    # -- authors -------------------------------------------------------------------------

    def authors_by_keys(self, name_keys: Sequence[str]) -> dict[str, AuthorRecord]:
        return self._records(AUTHOR.label, name_keys, self._author)

    def papers_of_authors(
        self, name_keys: Sequence[str], first: int, after: PaperKey | None
    ) -> dict[str, Page]:
        return {key: self._page(self._author_keys(key), first, after, None) for key in name_keys}

    def coauthors(self, name_keys: Sequence[str], first: int) -> dict[str, list[Coauthor]]:
        result = {}
        for key in name_keys:
            node = self._node(AUTHOR.label, key)
            counts: Counter[str] = Counter()
            if node is not None:
                for paper in self.G.succ[node]:
                    counts.update(self._author_nodes_of(paper))
                del counts[node]
            ranked = sorted(counts.items(), key=lambda item: (-item[1], self.G.nodes[item[0]][NAME_KEY]))
            result[key] = [Coauthor(self._author(other), count) for other, count in ranked[:first]]
        return result

    def author_categories(self, name_keys: Sequence[str]) -> dict[str, list[CategoryCount]]:
        result = {}
        for key in name_keys:
            node = self._node(AUTHOR.label, key)
            counts: Counter[str] = Counter()
            if node is not None:
                for paper in self.G.succ[node]:
                    counts.update(c for c, edges in self.G.succ[paper].items() if "IN_CATEGORY" in edges)
            result[key] = self._category_counts(counts, len(counts))
        return result

    def _category_counts(self, counts: Counter[str], first: int) -> list[CategoryCount]:
        ranked = sorted(counts.items(), key=lambda item: (-item[1], self.G.nodes[item[0]][CODE]))
        return [CategoryCount(self._category(node), count) for node, count in ranked[:first]]

    # -- categories ----------------------------------------------------------------------

    def categories_by_codes(self, codes: Sequence[str]) -> dict[str, CategoryRecord]:
        return self._records(CATEGORY.label, codes, self._category)

    def all_categories(self) -> list[CategoryRecord]:
        categories = [
            self._category(node)
            for node, data in self.G.nodes(data=True)
            if data.get(LABEL) == CATEGORY.label
        ]
        return sorted(categories, key=lambda c: c.code)

    def papers_of_categories(
        self, codes: Sequence[str], first: int, after: PaperKey | None
    ) -> dict[str, Page]:
        return {code: self._page(self._category_keys(code), first, after, None) for code in codes}

    def _ranking(self, kind: str, code: str, build: Callable[[str], list[Any]]) -> list[Any]:
        found = self._rankings.get((kind, code))
        if found is None:
            node = self._node(CATEGORY.label, code)
            found = self._rankings[(kind, code)] = build(node) if node is not None else []
        return found

    def top_authors(self, codes: Sequence[str], first: int) -> dict[str, list[AuthorCount]]:
        def build(category: str) -> list[AuthorCount]:
            counts: Counter[str] = Counter()
            for paper in self.G.pred[category]:
                counts.update(self._author_nodes_of(paper))
            ranked = sorted(counts.items(), key=lambda item: (-item[1], self.G.nodes[item[0]][NAME_KEY]))
            return [AuthorCount(self._author(node), count) for node, count in ranked]

        return {code: self._ranking("top", code, build)[:first] for code in codes}

    def co_listed(self, codes: Sequence[str], first: int) -> dict[str, list[CategoryCount]]:
        def build(category: str) -> list[CategoryCount]:
            counts: Counter[str] = Counter()
            for paper in self.G.pred[category]:
                counts.update(c for c, edges in self.G.succ[paper].items() if "IN_CATEGORY" in edges)
            del counts[category]
            return self._category_counts(counts, len(counts))

        return {code: self._ranking("co", code, build)[:first] for code in codes}

    # -- signers -------------------------------------------------------------------------

    def signers_by_ids(self, signer_ids: Sequence[str]) -> dict[str, SignerRecord]:
        return self._records(SIGNER.label, signer_ids, self._signer)

    def papers_of_signers(
        self, signer_ids: Sequence[str], first: int, after: PaperKey | None
    ) -> dict[str, Page]:
        return {sid: self._page(self._signer_keys(sid), first, after, None) for sid in signer_ids}

    # -- paths ---------------------------------------------------------------------------

    def _neighbours(self, node: str) -> list[str]:
        if self.G.nodes[node][LABEL] == AUTHOR.label:
            return list(self.G.succ[node])
        return self._author_nodes_of(node)

    def _sort_key(self, node: str) -> str:
        data = self.G.nodes[node]
        return str(data[NAME_KEY] if data[LABEL] == AUTHOR.label else data[PITH_NUMBER])

    def collaboration_path(self, source: str, target: str, max_hops: int) -> list[PathStep] | None:
        start, goal = self._node(AUTHOR.label, source), self._node(AUTHOR.label, target)
        if start is None or goal is None:
            return None
        if start == goal:
            return []
        # Breadth first from the goal until the layer holding the start is complete.
        distance = {goal: 0}
        layer = [goal]
        depth = 0
        while layer and start not in distance and depth < 2 * max_hops:
            depth += 1
            following = []
            for node in layer:
                for other in self._neighbours(node):
                    if other not in distance:
                        distance[other] = depth
                        following.append(other)
            layer = following
        if start not in distance:
            return None
        # Walk from the start, always to the smallest key one step closer to the goal.
        nodes = [start]
        current = start
        while current != goal:
            step = distance[current] - 1
            current = min(
                (n for n in self._neighbours(current) if distance.get(n) == step), key=self._sort_key
            )
            nodes.append(current)
        steps = []
        for index in range(0, len(nodes) - 2, 2):
            paper = self._paper(self.G.nodes[nodes[index + 1]][PITH_NUMBER])
            assert paper is not None
            steps.append(PathStep(self._author(nodes[index]), paper, self._author(nodes[index + 2])))
        return steps
