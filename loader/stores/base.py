"""The ``GraphStore`` seam and the update rules both stores share.

A store receives batches of :class:`~pith_graph.loader.rows.PaperRows` and decides, against what it
already holds, what each one does:

* a pith number it has never seen is ``inserted``;
* the same ``bundleSha256`` again is a ``duplicate`` and changes nothing;
* a bundle whose ``(builtAt, bundleSha256)`` is greater than the stored one ``replaced`` the
  paper's properties and edges (the digest breaks ties so the winner never depends on input
  order);
* a smaller one is ``stale`` and changes nothing.

After a replacement, any Author, Category, Alias or Signer left without a paper is removed,
so nodes, edges and properties are a function of the set of winning bundles, whatever the
order of arrival — with one documented exception: ``Author.name`` is the smallest display
form seen since the author's node was created, which may come from a bundle later replaced
(names of one ``nameKey`` differ at most in case and compatibility forms).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pith_graph.loader.rows import PaperRows

__all__ = [
    "GraphCounts",
    "GraphExport",
    "GraphStore",
    "Outcome",
    "decide",
    "plan_batch",
]


class Outcome(enum.StrEnum):
    """What applying one bundle did."""

    INSERTED = "inserted"
    REPLACED = "replaced"
    DUPLICATE = "duplicate"
    STALE = "stale"


def decide(existing: tuple[str, str] | None, rows: PaperRows) -> Outcome:
    """The outcome of ``rows`` against the stored ``(builtAt, bundleSha256)`` of its paper."""
    if existing is None:
        return Outcome.INSERTED
    if existing[1] == rows.bundle_sha256:
        return Outcome.DUPLICATE
    if (rows.built_at, rows.bundle_sha256) > existing:
        return Outcome.REPLACED
    return Outcome.STALE


def plan_batch(
    batch: Sequence[PaperRows], stored: dict[str, tuple[str, str]]
) -> tuple[list[PaperRows], list[Outcome]]:
    """Decide a whole batch: the rows to write (one per paper) and one outcome per input.

    ``stored`` maps pith numbers to the stored ``(builtAt, bundleSha256)``; it needs to hold
    only the batch's papers. Several bundles of one paper in the batch reduce to the
    greatest; the others are duplicates or stale.
    """
    best: dict[str, PaperRows] = {}
    for rows in batch:
        current = best.get(rows.pith_number)
        if current is None or (rows.built_at, rows.bundle_sha256) > (
            current.built_at,
            current.bundle_sha256,
        ):
            best[rows.pith_number] = rows
    to_write: list[PaperRows] = []
    verdict: dict[str, Outcome] = {}
    for pith, rows in best.items():
        verdict[pith] = decide(stored.get(pith), rows)
        if verdict[pith] in (Outcome.INSERTED, Outcome.REPLACED):
            to_write.append(rows)
    outcomes: list[Outcome] = []
    for rows in batch:
        winner = best[rows.pith_number]
        if rows is winner:
            outcomes.append(verdict[rows.pith_number])
        elif rows.bundle_sha256 == winner.bundle_sha256:
            outcomes.append(Outcome.DUPLICATE)
        else:
            outcomes.append(Outcome.STALE)
    return to_write, outcomes


@dataclass(frozen=True, slots=True)
class GraphCounts:
    """Node counts by label and edge counts by type."""

    nodes: dict[str, int] = field(default_factory=dict)
    edges: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GraphExport:
    """A whole graph as plain data, for comparing stores.

    ``nodes``: node id (:func:`pith_graph.schema.graph.node_id`) → ``{"label": ..., **properties}``;
    ``edges``: ``(start id, type, end id)`` → properties.
    """

    nodes: dict[str, dict[str, Any]]
    edges: dict[tuple[str, str, str], dict[str, Any]]


@runtime_checkable
class GraphStore(Protocol):
    """Where verified papers are written. Implemented by ``MemoryStore`` and ``Neo4jStore``."""

    def ensure_schema(self) -> None:
        """Create constraints and indexes (idempotent); a no-op where there are none."""

    def known_bundle_digests(self) -> set[str]:
        """Every stored ``bundleSha256``: bundles with these need no verification."""

    def apply(self, batch: Sequence[PaperRows]) -> list[Outcome]:
        """Apply a batch atomically under the update rules; one outcome per input row."""

    def counts(self) -> GraphCounts:
        """Nodes by label and edges by type."""

    def export(self) -> GraphExport:
        """The whole graph as plain data."""

    def close(self) -> None:
        """Release connections."""


def sorted_counts(pairs: Iterable[tuple[str, int]]) -> dict[str, int]:
    """A count dict in key order, for stable output."""
    return dict(sorted(pairs))
