"""Fold the DOI aliases a Neo4j database written before 0.6 holds as their bundles spelled them.

Since 0.6 the loader stores a DOI with its ASCII letters in lower case
(:func:`~pith_graph.loader.identifiers.doi_key`), so all its spellings are one ``Alias`` node and
the API, which folds a pasted DOI the same way, finds every paper claiming it. An older
database may still hold ``Alias {kind: 'doi', value: '10.1103/PhysRevLett…'}``: no lookup finds
it, and a paper that also carries the lower-case spelling has two Alias nodes for one DOI.
:func:`fold_doi_aliases` (run by :meth:`~pith_graph.loader.stores.neo4j.Neo4jStore.ensure_schema`,
so by ``pith-graph schema`` and every load) merges each into its folded node: the folded node is
merged, takes the old node's ``IDENTIFIES`` edges, and the old node is deleted. Nothing to do,
one scan of the ``doi`` aliases, once the database is up to date.
"""

from __future__ import annotations

import logging
from typing import Any

import neo4j

from pith_graph.loader.identifiers import doi_key
from pith_graph.loader.stores import cypher_upgrades as cypher
from pith_graph.loader.stores.upgrade_batches import upgrade_batches

__all__ = ["fold_doi_aliases"]

log = logging.getLogger(__name__)

_BATCH = 5000


def _read(tx: neo4j.ManagedTransaction, limit: int) -> list[str]:
    return [record["value"] for record in tx.run(cypher.DOIS_TO_FOLD, limit=limit)]


def _write(tx: neo4j.ManagedTransaction, rows: list[list[Any]]) -> None:
    tx.run(cypher.FOLD_DOIS, rows=rows).consume()


def fold_doi_aliases(session: neo4j.Session, batch: int = _BATCH) -> int:
    """Merge every DOI alias not yet folded into its folded node, ``batch`` per transaction;
    the number merged."""
    done = 0
    for found in upgrade_batches(
        lambda: session.execute_read(_read, batch), lambda value: value, "DOI aliases"
    ):
        session.execute_write(_write, [[value, doi_key(value)] for value in found])
        done += len(found)
        log.info("folded %d DOI aliases to lower case", len(found))
    return done
