"""Give the papers of a Neo4j database written before 0.9.4 their ``Paper.isLatest``
(:func:`upgrade_latest`, run by :meth:`~pith_graph.loader.stores.neo4j.Neo4jStore.ensure_schema`,
so by ``pith-graph schema`` and every load). Loads keep it from then on
(``cypher.REFRESH_LATEST``, in each batch's transaction)."""

from __future__ import annotations

import logging
from typing import Any

import neo4j

from pith_graph.loader.stores import cypher, cypher_upgrades
from pith_graph.loader.stores.upgrade_batches import upgrade_batches

__all__ = ["upgrade_latest"]

log = logging.getLogger(__name__)

_BATCH = 5000


def _read(tx: neo4j.ManagedTransaction, after: str | None, limit: int) -> list[list[str]]:
    found = tx.run(cypher_upgrades.SOURCES_WITHOUT_LATEST, after=after, limit=limit)
    return [record["source"] for record in found]


def _write(tx: neo4j.ManagedTransaction, sources: list[list[Any]]) -> None:
    tx.run(cypher.REFRESH_LATEST, sources=sources).consume()


def upgrade_latest(session: neo4j.Session, batch: int = _BATCH) -> int:
    """Set ``isLatest`` on the papers of every source that has a paper without it, ``batch``
    sources per transaction, in sourceId order (each read goes on from the last source
    written); the number of sources brought up to date."""
    after: list[str | None] = [None]

    def read() -> list[list[str]]:
        found = session.execute_read(_read, after[0], batch)
        if found:
            after[0] = found[-1][1]
        return found

    done = 0
    for found in upgrade_batches(read, tuple, "sources' papers"):
        session.execute_write(_write, sorted(found))
        done += len(found)
        log.info("gave the papers of %d sources their isLatest", len(found))
    return done
