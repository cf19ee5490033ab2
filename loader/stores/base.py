"""The ``GraphStore`` seam: where verified papers are written, and what stores report.

Both implementations (:class:`~pith_graph.loader.stores.memory.MemoryStore`,
:class:`~pith_graph.loader.stores.neo4j.Neo4jStore`) apply batches under the update rules
of :mod:`pith_graph.loader.stores.rules` and answer the same behaviour suite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pith_graph.loader.rows import PaperRows
from pith_graph.loader.stores.rules import Outcome, SourceKey, StoredPaper
from pith_graph.schema.graph import NODES, RELATIONSHIPS

__all__ = [
    "AppliedBatch",
    "GraphCounts",
    "GraphExport",
    "GraphStore",
    "Outcome",
    "Unchanged",
    "schema_counts",
    "sorted_counts",
]

#: Papers as :meth:`GraphStore.papers_signed_with` read them: pith number → ``(builtAt, keyIds)``.
Unchanged = Mapping[str, tuple[str, list[str]]]


@dataclass(frozen=True, slots=True)
class AppliedBatch:
    """What applying a batch did: one outcome per input row, and the pith numbers of stored
    papers removed because a higher-ranked signer took their source id over or a newer record
    of their version superseded them."""

    outcomes: list[Outcome]
    removed: list[str] = field(default_factory=list)


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
        """Every stored ``bundleSha256``."""

    def known_bundles(self) -> dict[str, str]:
        """``bundleSha256`` → ``bundleKeyId`` of every stored paper that has one: a bundle with
        this digest whose ``bundle_signature`` names this key needs no verification (one with
        another key is a bundle of that key's signer, verified and ranked as such)."""

    def apply(self, batch: Sequence[PaperRows], rank: Callable[[str], int]) -> AppliedBatch:
        """Apply a batch atomically under the update rules (``rank`` ranks a key id: lower
        wins, see :meth:`~pith_graph.loader.keyring.Keyring.rank`)."""

    def remove_papers(self, pith_numbers: Sequence[str], unchanged: Unchanged | None = None) -> list[str]:
        """Remove these papers (and whatever is left without a paper) atomically; return the
        pith numbers that were there. With ``unchanged``, only the papers it holds as they still
        are: one a concurrent load has given another bundle since it was read stays."""

    def stored_papers(self, sources: Iterable[SourceKey]) -> list[StoredPaper]:
        """The stored papers of these source ids, as the update rules read them."""

    def papers_signed_with(self, key_ids: Sequence[str]) -> list[tuple[str, str, list[str]]]:
        """``(pithNumber, builtAt, keyIds)`` of every paper one of ``key_ids`` signed."""

    def counts(self) -> GraphCounts:
        """Nodes by label and edges by type."""

    def export(self) -> GraphExport:
        """The whole graph as plain data."""

    def close(self) -> None:
        """Release connections."""


def sorted_counts(pairs: Iterable[tuple[str, int]]) -> dict[str, int]:
    """A count dict in key order, for stable output."""
    return dict(sorted(pairs))


def schema_counts(nodes: Iterable[tuple[str, int]], edges: Iterable[tuple[str, int]]) -> GraphCounts:
    """Counts by label and by type with every label and type of the schema present, 0 for
    none (a zero count is a key, not a missing one), and any other label met kept."""
    return GraphCounts(
        sorted_counts({**dict.fromkeys(NODES, 0), **dict(nodes)}.items()),
        sorted_counts({**dict.fromkeys(RELATIONSHIPS, 0), **dict(edges)}.items()),
    )
