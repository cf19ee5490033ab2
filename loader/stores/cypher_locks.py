"""Locking a source id's lock alias without its unique index entry (loads and removals), a
removal's papers, and finding the signers, authors and categories a write detaches (to lock
them in a load's order, before it deletes an edge).

A statement that writes seeks a unique index with a lock on the entry
(``NodeUniqueIndexSeek(Locking)``, shared when the node exists). A load's LOCK_SOURCES
(:mod:`~pith_graph.loader.stores.cypher`) took it and then waited for the alias node, which a
prune held and deleted (its last paper removed, the source's lock alias an orphan): the
deletion needs that entry exclusively, and one of the two deadlocked. So the alias is found
by a read and then locked by id, before any statement that seeks it in a write.

Neo4j grants the lock on a node that the transaction holding it deleted, without an error: the
node then reads as deleted (a ``MATCH`` finds nothing, its properties are null). So what was
locked is read again where it matters (SOURCE_LOCK_IDS after LOCK_NODES, in a removal).
"""

from __future__ import annotations

__all__ = [
    "DETACHED_NEIGHBOURS",
    "LOCK_NODES",
    "LOCK_PAPERS_TO_REMOVE",
    "PAPER_IDS",
    "PAPER_SOURCES",
    "SOURCE_LOCK_IDS",
]

#: The lock aliases of $sources (sorted ``[sourceKind, sourceId]``) that exist, in that order,
#: for LOCK_NODES: a read, which locks no index entry. Read again once they are locked, by a
#: removal: a source whose alias is gone or another (deleted, then written again by a load,
#: while the removal waited) is not held, and none of its papers is removed.
SOURCE_LOCK_IDS = """
UNWIND $sources AS source
MATCH (lock:Alias {kind: source[0], value: source[1]})
RETURN source, elementId(lock) AS id
"""

#: Lock the nodes of $ids (SOURCE_LOCK_IDS), in order, found by id: no index entry is locked.
#: A load locks its sources' aliases so before LOCK_SOURCES (whose MERGE then waits for no
#: one), a removal before its papers' (a load's order: sources, then papers). One deleted
#: meanwhile (the prune that held it emptied the source) is locked all the same, to no effect:
#: a load's LOCK_SOURCES creates the alias again; a removal leaves that source's papers.
LOCK_NODES = """
UNWIND $ids AS id
MATCH (n)
WHERE elementId(n) = id
SET n._lock = true REMOVE n._lock
"""

#: The signers, authors and categories of the stored papers a batch or removal detaches
#: ($piths), by their keys (a read: one row of three lists): LOCK_SIGNERS, MERGE_AUTHORS and
#: MERGE_CATEGORIES lock them with the batch's own, each kind in key order, before any edge is
#: deleted. Detaching a paper locked its authors and signers in the order of its edges, and
#: DELETE_ORPHANS judged them in elementId order, while a load of another signer sharing them
#: held some of them (in key order) and waited for the rest: one of the two deadlocked (before
#: 0.9.7). None of them is deleted meanwhile: the papers' edges keep them, and those papers'
#: sources are held. A key not a string (an analyst's node) is not the graph's: left out.
DETACHED_NEIGHBOURS = """
UNWIND $piths AS pith
MATCH (p:Paper {pithNumber: pith})-[:SIGNED|AUTHORED|IN_CATEGORY]-(n)
USING INDEX p:Paper(pithNumber)
WITH DISTINCT n
RETURN collect(CASE WHEN n:Signer AND n.signerId IS :: STRING THEN n.signerId END) AS signers,
       collect(CASE WHEN n:Author AND n.nameKey IS :: STRING THEN n.nameKey END) AS authors,
       collect(CASE WHEN n:Category AND n.code IS :: STRING THEN n.code END) AS categories
"""

#: The papers of $piths that exist, for a removal's LOCK_PAPERS_TO_REMOVE: a read. Sought in
#: that statement, the pith of a paper not there had its index entry locked, which a load of
#: another source id writing that paper then waited for while holding the signer the removal
#: waits for (its LOCK_SIGNERS: DETACHED_NEIGHBOURS): a deadlock.
PAPER_IDS = """
UNWIND $piths AS pith
MATCH (p:Paper {pithNumber: pith})
RETURN elementId(p) AS id
"""


#: The sources of the papers of $piths (a removal's, locked before the papers).
PAPER_SOURCES = """
UNWIND $piths AS pith
MATCH (p:Paper {pithNumber: pith})
RETURN DISTINCT [p.sourceKind, p.sourceId] AS source
"""

#: Lock papers about to be removed (pruning); returns those that exist, as they are once locked,
#: with their sources (those whose isLatest the removal refreshes). Only a paper of a source
#: of $sources (those whose lock alias the removal holds) or of none (an analyst's, without a
#: text kind and id) is locked: one a load wrote after the removal read its papers' sources is
#: left (the prune judges it again), not removed beside that load without its lock; one deleted
#: while the removal waited for it (an analyst's, by another removal) is not returned.
#: By id ($ids: PAPER_IDS): no index entry of a paper not there is locked.
LOCK_PAPERS_TO_REMOVE = """
UNWIND $ids AS id
MATCH (p:Paper)
WHERE elementId(p) = id AND ([p.sourceKind, p.sourceId] IN $sources
   OR NOT (p.sourceKind IS :: STRING NOT NULL AND p.sourceId IS :: STRING NOT NULL))
SET p._lock = true REMOVE p._lock
WITH p
WHERE p.pithNumber IS NOT NULL
RETURN p.pithNumber AS pith, p.builtAt AS builtAt, p.keyIds AS keyIds,
       [p.sourceKind, p.sourceId] AS source
"""
