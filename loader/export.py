"""Subgraphs from Neo4j into networkx: :func:`export_subgraph`.

Once the data lives in Neo4j (all of arXiv does not fit one process comfortably), scripts pull
the part they analyse out of it instead of verifying bundles themselves. The result has the
shape :func:`~pith_graph.loader.facade.load_graph` builds (node ids, labels, properties, edge
types: see :mod:`pith_graph.loader.stores.memory`), so the export of a whole
database equals ``load --save`` of the bundles loaded into it.

A :class:`Selection` picks papers — of a category, of an author and the coauthors within
``hops``, submitted in a date range, the newest version of each source id (``Paper.isLatest``)
only (all that are given must hold) — and the export holds
those papers and everything they touch: their authors, categories, aliases and signers, with
the edges between them. Node properties are the database's (``Signer.keyIds``,
``Author.name`` and ``Author.paperCount`` reflect the whole graph, not the subgraph: an
author's ``paperCount`` may exceed its ``AUTHORED`` edges in the export). Records stream
from the server in chunks of papers, so memory holds the graph being built and one chunk,
whatever the size.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import neo4j
import networkx as nx

from pith_graph.errors import StoreError, StoreErrorCode, UsageError, quoted
from pith_graph.loader.format import utc_text
from pith_graph.loader.identifiers import author_name_key
from pith_graph.loader.stores import cypher_export as cypher
from pith_graph.loader.stores.cypher_export import own_properties
from pith_graph.loader.stores.latest import IS_LATEST, bad_latest
from pith_graph.loader.stores.memory_graph import EdgeInterner, put
from pith_graph.loader.stores.memory_guard import check_built
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.schema.graph import LABEL_ATTRIBUTE, NODES, TYPE_ATTRIBUTE, node_id

__all__ = ["MAX_HOPS", "Selection", "export_subgraph"]

#: Longest coauthor chain an author export follows (papers in the chain).
MAX_HOPS = 6
CHUNK = 2000

#: What a ``hand_edited`` refusal of an export says first.
_HAND_EDITED = "the database holds what pith-graph never writes (serve --graph would refuse the export)"


#: A week without its day (``2019-W01``, ``2019W01``, and with a time: ``2019-W01T10:00``):
#: ISO 8601, but no single day.
_WEEK = re.compile(r"[+-]?\d{4,}-?W\d{2}(?:T.*)?", re.ASCII | re.DOTALL)


def _instant(text: str, what: str, *, end_of_day: bool = False, next_second: bool = False) -> str | None:
    """An ISO 8601 date or date-time as the UTC text papers store (``…Z``, whole seconds). A
    bare date, in any of ISO 8601's forms (``2020-12-31``, ``20201231``, ``2020-W53-4``), is the
    start of that day (``end_of_day``: of the next); a date-time is itself, a fraction of a
    second rounded up to the next whole second that papers can hold (``next_second``: one
    second after it, rounded down, making an exclusive bound of an inclusive one). None: a
    bound past the last second there is (``9999-12-31``), which every time stays before."""
    if _WEEK.fullmatch(text):  # date.fromisoformat takes a week for its Monday: --to dropped 6 days
        week = text.partition("T")[0]
        raise UsageError(
            f"{what} names a week, not a day: {quoted(text)} (add the day: {week}-1 to {week}-7)"
        )
    try:
        day: date | None = date.fromisoformat(text)
    except ValueError:
        day = None
    bare = day is not None
    try:
        if day is not None:
            moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
        else:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        stored = utc_text(moment)  # also refuses a moment outside the years 1 to 9999 in UTC
    except ValueError as err:
        raise UsageError(f"{what} is not an ISO 8601 date or date-time: {quoted(text)}") from err
    except OverflowError as err:  # an offset takes it past year 1 or 9999 in UTC
        raise UsageError(f"{what} is outside the years 1 to 9999 in UTC: {quoted(text)}") from err
    step = (
        timedelta(days=1)
        if bare and end_of_day
        else timedelta(seconds=1)
        if not bare and (next_second or moment.microsecond)
        else None
    )
    if step is None:
        return stored
    try:
        return utc_text(moment + step)
    except OverflowError:
        return None


#: Reads of a database that changes under them (Neo4j reads see each statement's committed
#: state, not one snapshot): an export whose listed papers are gone when read starts again.
EXPORT_ATTEMPTS = 5
#: A lower bound after every time a paper can hold (``…:59Z`` < ``…:60Z`` as text).
PAST_THE_END = "9999-12-31T23:59:60Z"


@dataclass(frozen=True, slots=True)
class Selection:
    """Which papers to export; every field given must hold (none given: the whole graph).

    ``author`` is a name (matched by name key, so case, spacing and Unicode form do not
    matter); ``hops`` = 1 exports the author's papers, 2 adds their coauthors' papers, and so
    on. ``submitted_from`` and ``submitted_to`` are dates or date-times, both inclusive (a
    bare ``to`` date includes that whole day). ``latest_versions`` (since 0.9.5) keeps the
    papers whose ``isLatest`` is true, as the other fields do: the hops go through all
    versions, then every field must hold of each paper exported (one written before 0.9.4,
    without ``isLatest``, is exported, and the export refused as without it). One that
    cannot be (a bad date, ``hops`` out of range or without an author) raises :class:`~pith_graph.errors.UsageError` when made,
    naming the dates as ``dates_named`` says: the Python API's parameters, or the command
    line's ``("from", "to")``.
    """

    category: str | None = None
    author: str | None = None
    hops: int = 1
    submitted_from: str | None = None
    submitted_to: str | None = None
    dates_named: tuple[str, str] = field(
        default=("submitted_from", "submitted_to"), compare=False, repr=False
    )
    latest_versions: bool = field(default=False, kw_only=True)

    def __post_init__(self) -> None:
        for name in ("category", "author", "submitted_from", "submitted_to"):
            if not isinstance(value := getattr(self, name), str | None):
                raise UsageError(f"{name}: expected a str, not a value of type {type(value).__name__}")
        if type(self.latest_versions) is not bool:
            raise UsageError(f"latest_versions: expected a bool, not {type(self.latest_versions).__name__}")
        if type(self.hops) is not int:
            raise UsageError(f"hops must be an integer, not {type(self.hops).__name__}")
        if not 1 <= self.hops <= MAX_HOPS:
            raise UsageError(f"hops must be between 1 and {MAX_HOPS}")
        if self.hops != 1 and self.author is None:
            raise UsageError("hops needs an author")
        self.bounds()  # a bad date is refused here, before anything connects

    @property
    def everything(self) -> bool:
        given = (self.category, self.author, self.submitted_from, self.submitted_to)
        return given == (None,) * 4 and not self.latest_versions

    def bounds(self) -> tuple[str | None, str | None]:
        """``[from, before)`` as stored texts (stored times have whole seconds); ``None``: no
        bound. A ``from`` past the last second there is gives :data:`PAST_THE_END`, which
        every stored time sorts before: nothing is selected (it used to be no bound)."""
        low = None
        if self.submitted_from is not None:
            low = _instant(self.submitted_from, self.dates_named[0]) or PAST_THE_END
        high = None
        if self.submitted_to is not None:
            high = _instant(self.submitted_to, self.dates_named[1], end_of_day=True, next_second=True)
        return low, high


def _new_graph() -> nx.DiGraph:
    return nx.DiGraph()


def _add_node(G: nx.DiGraph, label: str, props: dict[str, Any]) -> str:
    node = node_id(label, *(str(props[name]) for name in NODES[label].key))
    if node not in G:
        G.add_node(node, **{LABEL_ATTRIBUTE: label}, **own_properties(label, props))
    return node


def _add_edge(G: nx.DiGraph, start: str, kind: str, end: str, props: dict[str, Any]) -> None:
    G.add_edge(start, end, **{TYPE_ATTRIBUTE: kind}, **own_properties(kind, props))


def _whole(tx: neo4j.ManagedTransaction, G: nx.DiGraph, chunk: int) -> None:
    """Every paper with its edges and neighbours (every edge has a paper at one end), then
    the nodes no paper uses (none after a load or prune, which remove them with the paper;
    one left by hand makes the export refuse: :func:`export_subgraph`)."""
    everything = cypher.EXPORT_PAPERS_BETWEEN[False, False]
    _papers(tx, G, [r["pith"] for r in tx.run(everything, latest=False)], chunk)
    for label, props in tx.run(cypher.EXPORT_LONE_NODES):
        _add_node(G, label, props)


def _selected_papers(tx: neo4j.ManagedTransaction, selection: Selection) -> list[str]:
    low, high = selection.bounds()
    dates: dict[str, Any] = {"from": low, "before": high, "latest": selection.latest_versions}
    if selection.author is not None:
        authors = {author_name_key(selection.author)}
        seen: set[str] = set()
        frontier = set(authors)
        for hop in range(selection.hops):
            papers = {r["pith"] for r in tx.run(cypher.EXPORT_PAPERS_OF_AUTHORS, keys=sorted(frontier))}
            seen |= papers
            if hop + 1 == selection.hops:
                break
            found = {r["key"] for r in tx.run(cypher.EXPORT_AUTHORS_OF_PAPERS, piths=sorted(papers))}
            frontier = found - authors
            authors |= found
        piths = sorted(seen)
        return [
            r["pith"]
            for r in tx.run(cypher.EXPORT_FILTER_PAPERS, piths=piths, category=selection.category, **dates)
        ]
    if selection.category is not None:
        statement = _category_start(tx, selection.category, dates)
        return [r["pith"] for r in tx.run(statement, category=selection.category, **dates)]
    between = cypher.EXPORT_PAPERS_BETWEEN[low is not None, high is not None]
    return [r["pith"] for r in tx.run(between, **dates)]


def _category_start(tx: neo4j.ManagedTransaction, category: str, dates: dict[str, Any]) -> str:
    """The statement for a category's papers within the ``dates`` (the export's parameters):
    from the dates when they hold fewer papers than the category lists, else from the
    category (a month of a big one, or years of a small one). Both counts are cheap: the
    category's is the store's, the dates' reads the index no further than the category's size."""
    bounds = (dates["from"] is not None, dates["before"] is not None)
    if not any(bounds):
        return cypher.EXPORT_PAPERS_OF_CATEGORY
    size = tx.run(cypher.EXPORT_CATEGORY_SIZE, category=category).single(strict=True)["size"]
    held = tx.run(cypher.EXPORT_COUNT_BETWEEN[bounds], cap=size, **dates).single(strict=True)["size"]
    return (
        cypher.EXPORT_PAPERS_OF_CATEGORY_BETWEEN[bounds] if held < size else cypher.EXPORT_PAPERS_OF_CATEGORY
    )


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class _Changed(Exception):
    """Papers listed at the start of the export were gone when their chunk was read."""


def _papers(tx: neo4j.ManagedTransaction, G: nx.DiGraph, piths: Iterable[str], chunk: int) -> None:
    for part in _chunks(list(piths), chunk):
        # One record per paper, its edges and neighbours in lists: the driver decodes those
        # in one go, where a record per edge cost a round of Python per edge.
        read = 0
        for props, incoming, outgoing in tx.run(cypher.EXPORT_PAPERS, piths=part):
            read += 1
            paper = _add_node(G, "Paper", props)
            for kind, label, other_props, rel in incoming:
                _add_edge(G, _add_node(G, label, other_props), kind, paper, rel)
            for kind, label, other_props, rel in outgoing:
                _add_edge(G, paper, kind, _add_node(G, label, other_props), rel)
        if read < len(part):  # a load or prune replaced or removed them since they were listed
            raise _Changed(f"{len(part) - read} of the papers listed were gone when read")


def _advice(G: nx.DiGraph) -> str:
    """What a refusal of ``G`` tells to do: a paper without ``isLatest`` is one written before
    0.9.4 (``pith-graph schema`` gives it one), not an analyst's edit."""
    if any(data.get(LABEL_ATTRIBUTE) == "Paper" and IS_LATEST not in data for data in G._node.values()):
        return "; the database was written before 0.9.4: run pith-graph schema (or a load) first"
    return "; fix it in the database"


def export_subgraph(
    store: Neo4jStore,
    selection: Selection | None = None,
    *,
    chunk: int = CHUNK,
) -> nx.DiGraph:
    """The selected subgraph of the database ``store`` reaches, as a networkx graph shaped
    as :func:`~pith_graph.loader.facade.load_graph` builds it (the whole graph by default).

    Raises :class:`~pith_graph.errors.StoreError` when the database fails, and (``hand_edited``)
    when it holds a node or relationship of the graph's that pith-graph never writes.
    """
    selection = selection if selection is not None else Selection()

    def read(tx: neo4j.ManagedTransaction) -> nx.DiGraph:
        G = _new_graph()
        if selection.everything:
            _whole(tx, G, chunk)
        else:
            _papers(tx, G, _selected_papers(tx, selection), chunk)
        return G

    for attempt in range(1, EXPORT_ATTEMPTS + 1):
        try:
            G = store.read(read, "exporting a subgraph")
        except _Changed as changed:
            gone = str(changed)
            continue
        # A load or prune between two chunks that moved a source's newest version shows as
        # two (or no) latest papers of one source: read again. One still wrong at the last
        # attempt is the database's, refused below as hand-edited.
        if attempt < EXPORT_ATTEMPTS and (flagged := bad_latest(G)) is not None:
            gone = f"the newest version of {quoted(flagged[0])}'s source changed while read"
            continue
        # equal edge attributes shared, read-only, as a load makes them (and checked once)
        shared = EdgeInterner()
        put(G, (), [(start, end, shared(data)) for start, end, data in G.edges(data=True)])
        # a file serve --graph would refuse is never written (an analyst's SET a.paperCount = '7')
        check_built(G, _HAND_EDITED, _advice(G))
        return G
    raise StoreError(
        StoreErrorCode.UNAVAILABLE,
        f"the database changed under the export {EXPORT_ATTEMPTS} times ({gone}): "
        "a load or prune is writing; export when none is",
    )
