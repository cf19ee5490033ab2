"""Locking a source id's lock alias without its unique index entry (loads and removals).

A statement that writes seeks a unique index with a lock on the entry
(``NodeUniqueIndexSeek(Locking)``, shared when the node exists). A load's LOCK_SOURCES
(:mod:`~pith_graph.loader.stores.cypher`) took it and then waited for the alias node, which a
prune held and deleted (its last paper removed, the source's lock alias an orphan): the
deletion needs that entry exclusively, and one of the two deadlocked. So the alias is found
by a read and then locked by id, before any statement that seeks it in a write.
"""

from __future__ import annotations

__all__ = ["LOCK_NODES", "LOCK_PAPER_SIGNERS", "PAPER_IDS", "SOURCE_LOCK_IDS"]

#: The lock aliases of $sources (sorted ``[sourceKind, sourceId]``) that exist, in that order,
#: for LOCK_NODES: a read, which locks no index entry.
SOURCE_LOCK_IDS = """
UNWIND $sources AS source
MATCH (lock:Alias {kind: source[0], value: source[1]})
RETURN elementId(lock) AS id
"""

#: Lock the nodes of $ids (SOURCE_LOCK_IDS), in order, found by id: no index entry is locked.
#: A load locks its sources' aliases so before LOCK_SOURCES (whose MERGE then waits for no
#: one), a removal before its papers' (a load's order: sources, then papers). One deleted
#: meanwhile (the prune that held it emptied the source) is locked all the same, to no effect:
#: LOCK_SOURCES creates the alias again.
LOCK_NODES = """
UNWIND $ids AS id
MATCH (n)
WHERE elementId(n) = id
SET n._lock = true REMOVE n._lock
"""

#: Lock the signers of the papers of $piths (a removal's, once the papers are locked), in
#: ``signerId`` order: a load's order (LOCK_SIGNERS, then authors and categories). Unlocked, a
#: removal locked its papers' authors first (deleting their edges, judging orphans) and their
#: signer after, and deadlocked with a load of another source id holding that signer.
LOCK_PAPER_SIGNERS = """
UNWIND $piths AS pith
MATCH (:Paper {pithNumber: pith})<-[:SIGNED]-(s:Signer)
WITH DISTINCT s
ORDER BY s.signerId
SET s._lock = true REMOVE s._lock
"""

#: The papers of $piths that exist, for a removal's LOCK_PAPERS_TO_REMOVE: a read. Sought in
#: that statement, the pith of a paper not there had its index entry locked, which a load of
#: another source id writing that paper then waited for while holding the signer the removal
#: waits for (LOCK_PAPER_SIGNERS): a deadlock.
PAPER_IDS = """
UNWIND $piths AS pith
MATCH (p:Paper {pithNumber: pith})
RETURN elementId(p) AS id
"""
