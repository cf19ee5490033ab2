"""What ``serve`` warns of in a Neo4j database that an earlier version wrote and ``pith-graph
schema`` has not brought up to date yet: papers without ``isLatest`` (written before 0.9.4),
authors whose ``nameFolded`` is their display name's words, not their key's (before 0.9.8)."""

from __future__ import annotations

from pith_graph.api.reads import cypher
from pith_graph.api.reads.neo4j_base import Neo4jBase
from pith_graph.loader.stores import cypher_upgrades
from pith_graph.loader.stores.names import folded_words

__all__ = ["Neo4jUpkeep"]

#: Authors read (in ``nameKey`` order) per statement of :meth:`Neo4jUpkeep.unfolded_author`.
_SCAN = 100_000


class Neo4jUpkeep(Neo4jBase):
    """The reads of ``serve``'s warnings of an out-of-date database."""

    def outdated(self) -> bool:
        """Whether the database holds a paper written before ``Paper.isLatest`` (0.9.4)."""
        return bool(self._rows(cypher.READ_OUTDATED_PAPER))

    def unfolded_author(self, scan: int = _SCAN) -> str | None:
        """The ``nameKey`` of an author whose ``nameFolded`` is not its key's folded words
        (:func:`~pith_graph.loader.stores.names.folded_words`), if any: one a 0.9.7 load folded
        from its display name (``pith-graph schema`` folds them again). Only the names whose
        two folds can differ are compared (:data:`~.cypher_upgrades.AUTHOR_FOLDS`), ``scan``
        authors a statement, stopping at the first that differs (since 0.9.8)."""
        after: str = ""
        while True:
            (record,) = self._rows(
                cypher_upgrades.AUTHOR_FOLDS, after=after, scan=scan, pattern=cypher_upgrades.REFOLDED_PATTERN
            )
            for key, stored in record["rows"]:
                if folded_words(key) != stored:
                    return str(key)
            if record["last"] is None:
                return None
            after = record["last"]
