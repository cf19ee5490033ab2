"""``Paper.isLatest`` on Neo4j: given to the papers of a database written before 0.9.4
(:func:`upgrade_latest`, run by :meth:`~pith_graph.loader.stores.neo4j.Neo4jStore.ensure_schema`,
so by ``pith-graph schema`` and every load), then kept by every write. A load decides it in
the batch's transaction from what LOCK_SOURCES read under the sources' locks
(:func:`latest_updates`: its written papers carry the flag, a stored one is set where it
changes); a removal, and a source a load cannot rank here, run ``cypher.REFRESH_LATEST``."""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import neo4j

from pith_graph.loader.stores import cypher, cypher_upgrades
from pith_graph.loader.stores.latest import row_version_key
from pith_graph.loader.stores.rules import Candidate, SourceKey
from pith_graph.loader.stores.upgrade_batches import upgrade_batches

__all__ = ["LatestUpdates", "StoredVersion", "latest_updates", "upgrade_latest"]

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


#: A stored paper of a source as LOCK_SOURCES reads it: ``[pithNumber, sourceVersion,
#: builtAt, isLatest]``, any of them missing (or of another type: an analyst's paper).
StoredVersion = Sequence[Any]


@dataclass
class LatestUpdates:
    """What a batch does to ``isLatest``: ``written`` (pith number: flag) for the papers it
    writes, ``stored`` ``[pithNumber, flag]`` for those it leaves whose flag changes, and
    ``refresh``: the sources decided by ``cypher.REFRESH_LATEST`` after the writes instead."""

    written: dict[str, bool] = field(default_factory=dict)
    stored: list[list[Any]] = field(default_factory=list)
    refresh: list[list[str]] = field(default_factory=list)


def _rankable(pith: Any, version: Any, built_at: Any) -> bool | None:
    """Whether REFRESH_LATEST ranks this stored paper (a key, a version and a build time:
    ``cypher.SOURCE_PAPERS``); ``None``: it does, but Python could not order it as Cypher does
    (not an int version and ASCII strings, which compare alike in both)."""
    if pith is None or version is None or built_at is None:
        return False
    typed = type(version) is int and type(pith) is str and type(built_at) is str
    return (pith != "" if pith.isascii() and built_at.isascii() else None) if typed else None


def latest_updates(
    stored: Mapping[SourceKey, Iterable[StoredVersion]],
    written: Sequence[Candidate],
    removed: Collection[str],
) -> LatestUpdates:
    """``isLatest`` of every ranked paper of each source of ``stored`` (those of the batch, read
    under their locks), once ``written`` are written and ``removed`` deleted: true for the
    greatest ``(sourceVersion, builtAt, pithNumber)``, as REFRESH_LATEST sets it."""
    updates = LatestUpdates()
    moved = {row.pith_number for row in written} | set(removed)
    by_source: dict[SourceKey, list[Candidate]] = {}
    for row in written:
        by_source.setdefault(row.source, []).append(row)
    for source, papers in stored.items():
        kept: list[tuple[tuple[int, str, str], Any]] = []
        for pith, version, built_at, flag in papers:
            rankable = _rankable(pith, version, built_at)
            if rankable is None:
                break
            if rankable and pith not in moved:
                kept.append(((version, built_at, pith), flag))
        else:
            new = [(row_version_key(row), row) for row in by_source.get(source, ())]
            newest = max([key for key, _ in kept] + [key for key, _ in new], default=None)
            updates.stored += [[key[2], key == newest] for key, flag in kept if flag is not (key == newest)]
            updates.written.update((row.pith_number, key == newest) for key, row in new)
            continue
        updates.refresh.append(list(source))
    return updates
