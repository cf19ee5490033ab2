"""What ``serve`` warns of in a Neo4j database that an earlier version wrote and ``pith-graph
schema`` has not brought up to date yet: papers without ``isLatest`` (written before 0.9.4),
authors whose ``nameFolded`` is their display name's words, not their key's (before 0.9.8)."""

from __future__ import annotations

from pith_graph.api.reads import cypher
from pith_graph.api.reads.neo4j_base import Neo4jBase
from pith_graph.loader.stores.neo4j_names import REFOLD_SCAN, unfolded_authors

__all__ = ["Neo4jUpkeep"]


class Neo4jUpkeep(Neo4jBase):
    """The reads of ``serve``'s warnings of an out-of-date database."""

    def outdated(self) -> bool:
        """Whether the database holds a paper written before ``Paper.isLatest`` (0.9.4)."""
        return bool(self._rows(cypher.READ_OUTDATED_PAPER))

    def unfolded_author(self, scan: int = REFOLD_SCAN) -> str | None:
        """The ``nameKey`` of an author whose ``nameFolded`` is not its key's folded words
        (:func:`~pith_graph.loader.stores.names.folded_words`), if any: one a 0.9.7 load folded
        from its display name (``pith-graph schema`` folds them again). The scan of
        ``pith-graph schema``'s refold (:func:`~.neo4j_names.unfolded_authors`: only the names
        whose two folds can differ compared, ``scan`` authors a statement), stopped at the
        first statement that finds one (since 0.9.8)."""
        for rows in unfolded_authors(self._rows, scan):
            return str(rows[0][0])
        return None
