"""The in-memory reader's rankings and traversals: coauthors, top authors, co-listed and
related papers, an author's categories, collaboration paths. Category rankings are computed
once per category and kept (see :class:`~pith_graph.api.reads.memory_view.MemoryGraphView`).

The work of coauthors, related papers, an author's categories and paths grows with the data
(related papers: ids × authors × their papers), so it is counted on a
:class:`~pith_graph.api.reads.deadline.Steps` and stops soon after the request's time limit.
A category's ranking is not: it is built once (linear in the category's papers) and kept, and
a build cut short would be built again, and cut again, by every request that wants it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from pith_graph.api.reads.deadline import STEP, Steps, ranked
from pith_graph.api.reads.memory_view import CODE, LABEL, NAME_KEY, PITH_NUMBER, TYPE, MemoryGraphView
from pith_graph.api.reads.records import (
    EVERYTHING,
    AuthorCount,
    CategoryCount,
    Coauthor,
    PaperSelection,
    PathStep,
    RelatedPaper,
    category_rank,
    ranked_after,
)
from pith_graph.schema.graph import AUTHOR, CATEGORY, IN_CATEGORY, PAPER, node_id

__all__ = ["MemoryRankings"]

T = TypeVar("T")


def _after(
    steps: Steps, items: Collection[T], rank: Callable[[T], Any], at: Any, *, reverse: bool = False
) -> list[T]:
    """The ``items`` ranked after the position ``at`` (by ``rank``, ascending or ``reverse``);
    none when ``at`` counts 0, which ranks after every item: each counts at least one."""
    if at[0] == 0:
        return []
    each = items if len(items) <= STEP else steps.iterate(items)
    return [item for item in each if (rank(item) < at if reverse else rank(item) > at)]


_IN_CATEGORY = IN_CATEGORY.type


def _page(ranking: list[T], rank: Callable[[T], tuple[int, str]], first: int, after: str | None) -> list[T]:
    """The first ``first`` of a kept ranking (of a category: built in full) after the item
    whose key is ``after`` (one not in it: after all)."""
    return ranking[:first] if after is None else ranked_after(ranking, rank, after)[:first]


class MemoryRankings(MemoryGraphView):
    """Rankings and paths over the graph (the ``GraphReader`` methods that count)."""

    def coauthors(
        self, name_keys: Sequence[str], first: int, counts: bool = True, after: str | None = None
    ) -> dict[str, list[Coauthor]]:
        result = {}
        nodes = self._nodes
        steps, left = Steps(), STEP

        def rank(item: tuple[str, int]) -> tuple[int, str]:
            return (-item[1], nodes[item[0]][NAME_KEY])

        for key in name_keys:
            node = self._node(AUTHOR.label, key)
            shared: Counter[str] = Counter()
            if node is not None:
                for paper in self._succ[node]:
                    authors = self._author_nodes_of(paper)
                    left -= len(authors)
                    if left < 0:
                        left = steps.check()
                    shared.update(authors)
                del shared[node]
            items: Collection[tuple[str, int]] = shared.items()
            if after is not None:  # after where that author ranks (0: after all, see rank_pages)
                other = self._node(AUTHOR.label, after)
                at = (-shared.get(other, 0), after) if other is not None else (0, after)
                items = _after(steps, items, rank, at)
            top = ranked(steps, first, items, rank)
            result[key] = [Coauthor(self._author(other, counts), count) for other, count in top]
        return result

    def author_categories(
        self, name_keys: Sequence[str], counts: bool = True
    ) -> dict[str, list[CategoryCount]]:
        result = {}
        succ = self._succ
        steps, left = Steps(), STEP
        for key in name_keys:
            node = self._node(AUTHOR.label, key)
            found: Counter[str] = Counter()
            if node is not None:
                for paper in succ[node]:
                    links = succ[paper]
                    left -= len(links)
                    if left < 0:
                        left = steps.check()
                    found.update(c for c, edge in links.items() if edge[TYPE] == _IN_CATEGORY)
            result[key] = self._category_counts(found, len(found), counts)
        return result

    def _category_counts(self, found: Counter[str], first: int, counts: bool) -> list[CategoryCount]:
        ranked = sorted(found.items(), key=lambda item: (-item[1], self._nodes[item[0]][CODE]))
        return [CategoryCount(self._category(node, counts), count) for node, count in ranked[:first]]

    def _ranking(self, kind: str, code: str, build: Callable[[str], list[Any]]) -> list[Any]:
        found = self._rankings.get((kind, code))
        if found is None:  # built in full (no deadline: see the module docstring), then kept
            node = self._node(CATEGORY.label, code)
            found = self._rankings[(kind, code)] = build(node) if node is not None else []
        return found

    def top_authors(
        self, codes: Sequence[str], first: int, counts: bool = True, after: str | None = None
    ) -> dict[str, list[AuthorCount]]:
        def rank(a: AuthorCount) -> tuple[int, str]:
            return (-a.count, a.author.name_key)

        def build(category: str) -> list[AuthorCount]:
            found: Counter[str] = Counter()
            for paper in self._pred[category]:
                found.update(self._author_nodes_of(paper))
            ranked = sorted(found.items(), key=lambda item: (-item[1], self._nodes[item[0]][NAME_KEY]))
            return [AuthorCount(self._author(node), count) for node, count in ranked]

        result = {}
        for code in codes:
            ranked = _page(self._ranking("top", code, build), rank, first, after)
            if not counts:
                ranked = [AuthorCount(replace(a.author, paper_count=None), a.count) for a in ranked]
            result[code] = ranked
        return result

    def co_listed(
        self, codes: Sequence[str], first: int, counts: bool = True, after: str | None = None
    ) -> dict[str, list[CategoryCount]]:
        def build(category: str) -> list[CategoryCount]:
            found: Counter[str] = Counter()
            for paper in self._pred[category]:
                found.update(c for c, edge in self._succ[paper].items() if edge[TYPE] == _IN_CATEGORY)
            del found[category]
            return self._category_counts(found, len(found), True)

        result = {}
        for code in codes:
            ranked = _page(self._ranking("co", code, build), category_rank, first, after)
            if not counts:
                ranked = [CategoryCount(replace(c.category, paper_count=None), c.count) for c in ranked]
            result[code] = ranked
        return result

    def related_papers(
        self,
        pith_numbers: Sequence[str],
        first: int,
        want: PaperSelection = EVERYTHING,
        after: str | None = None,
    ) -> dict[str, list[RelatedPaper]]:
        def rank(r: RelatedPaper) -> tuple[int, str, str]:
            return (r.shared_authors, r.paper.submitted_at, r.paper.pith_number)

        result: dict[str, list[RelatedPaper]] = {}
        succ = self._succ
        steps, left = Steps(), STEP
        for pith in pith_numbers:
            record = self._paper(pith)
            if record is None:
                result[pith] = []
                continue
            shared: Counter[str] = Counter()
            authors = self._author_nodes_of(node_id(PAPER.label, pith))
            left -= len(authors)
            for author in authors:
                papers = succ[author]
                left -= len(papers)
                if left < 0:
                    left = steps.check()
                shared.update(iter(papers))
            left -= len(shared)
            if left < 0:
                left = steps.check()
            # A record made per related paper: a long list is counted as it is made.
            items = shared.items() if len(shared) <= STEP else steps.iterate(shared.items())
            related: list[RelatedPaper] = []
            at: tuple[int, str, str] | None = None
            for node, count in items:
                other = self._paper(self._nodes[node][PITH_NUMBER])
                assert other is not None
                if (other.source_kind, other.source_id) != (record.source_kind, record.source_id):
                    related.append(RelatedPaper(other, count))
                    if other.pith_number == after:
                        at = rank(related[-1])
            if after is not None:  # after where that paper ranks (0: after all, see rank_pages)
                related = _after(steps, related, rank, at or (0, "", after), reverse=True)
            result[pith] = ranked(steps, first, related, rank, reverse=True)
        return result

    # -- paths ---------------------------------------------------------------------------

    def _neighbours(self, node: str) -> list[str]:
        if self._nodes[node][LABEL] == AUTHOR.label:
            return list(self._succ[node])
        return self._author_nodes_of(node)

    def _sort_key(self, node: str) -> str:
        data = self._nodes[node]
        return str(data[NAME_KEY] if data[LABEL] == AUTHOR.label else data[PITH_NUMBER])

    def collaboration_path(
        self,
        source: str,
        target: str,
        max_hops: int,
        want: PaperSelection = EVERYTHING,
        counts: bool = True,
    ) -> list[PathStep] | None:
        start, goal = self._node(AUTHOR.label, source), self._node(AUTHOR.label, target)
        if start is None or goal is None:
            return None
        if start == goal:
            return []
        # Breadth first from the goal until the layer holding the start is complete.
        clock, left = Steps(), STEP
        distance = {goal: 0}
        layer = [goal]
        depth = 0
        while layer and start not in distance and depth < 2 * max_hops:
            depth += 1
            following = []
            for node in layer:
                neighbours = self._neighbours(node)
                left -= len(neighbours) + 1
                if left < 0:
                    left = clock.check()
                for other in neighbours:
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
            neighbours = self._neighbours(current)
            clock(len(neighbours))
            current = min((n for n in neighbours if distance.get(n) == step), key=self._sort_key)
            nodes.append(current)
        steps = []
        for index in range(0, len(nodes) - 2, 2):
            paper = self._paper(self._nodes[nodes[index + 1]][PITH_NUMBER])
            assert paper is not None
            steps.append(
                PathStep(self._author(nodes[index], counts), paper, self._author(nodes[index + 2], counts))
            )
        return steps
