"""Every Cypher statement of pith-graph, as named constants and small builders.

All values travel as parameters (``$rows``, ``$piths``, ...); only names that come from
:mod:`pith_graph.schema` (labels, relationship types, constraint and index names) are ever formatted
into a statement. Writes are batched ``UNWIND $rows AS row ...`` statements, nodes before
relationships.

Sections:

* schema: constraints and indexes, in :mod:`~pith_graph.loader.stores.cypher_schema`;
* loader writes: what :class:`pith_graph.loader.stores.neo4j.Neo4jStore` runs inside one write
  transaction per batch, in this order: lock the batch's source ids and read their stored
  papers; lock (or create) the signers; merge and lock the authors and categories it links or
  detaches, in key order; detach the stored papers that will be replaced or removed and delete
  the removed ones (first reading an analyst's properties on the edges of those replaced);
  write each paper with its aliases and edges in one pass (with the ``isLatest`` the locks' read decided), then set those properties
  back; delete the nodes left without an edge; refresh ``Signer.keyIds``, ``Author.paperCount``
  and ``name``, and set ``Paper.isLatest`` where it changes on a stored paper;
* store reads: digests, counts, clear (exports: :mod:`~pith_graph.loader.stores.cypher_export`).

The API's read statements live with their reader (:mod:`pith_graph.api.reads.cypher`).
"""

from __future__ import annotations

from pith_graph.schema.graph import NODES, RELATIONSHIPS

#: The graph's own relationship types, and whether ``n`` is one of its nodes other than a
#: Paper. A database may hold an analyst's nodes and relationships too: loads keep them
#: (a paper written again keeps their relationships to it), exports leave them out.
OWN_TYPES = "|".join(RELATIONSHIPS)
OWN_NEIGHBOUR = " OR ".join(f"n:{label}" for label in NODES if label != "Paper")


def keyed(var: str, label: str, *, filled: tuple[str, ...] = ()) -> str:
    """``var`` (a ``label`` node) has its key and every property pith-graph always writes: a
    node of the graph's label without one (an analyst's ``(:Paper {title: …})`` or stub
    ``(:Paper {pithNumber: …})``) is the analyst's, not the graph's, and is neither read nor
    changed. ``filled``: properties an upgrade fills in (not yet required of the node).

    >>> keyed("c", "Category")
    'c.code IS NOT NULL AND c.archive IS NOT NULL'
    """
    filled = (*filled, *_DERIVED_SINCE.get(label, ()))
    required = [prop.name for prop in NODES[label].properties if prop.required and prop.name not in filled]
    return " AND ".join(f"{var}.{name} IS NOT NULL" for name in required)


#: Properties every write keeps that a database written before they existed lacks until its
#: upgrade (``pith-graph schema``, every load): not what tells the graph's nodes from an
#: analyst's (a prune or an export before the upgrade passed over every paper).
_DERIVED_SINCE = {"Paper": ("isLatest",)}


__all__ = [
    "CLEAR_NODES",
    "CLEAR_RELATIONSHIPS",
    "COUNT_EVERY_NODE",
    "DELETE_ORPHANS",
    "DELETE_PAPERS",
    "DETACH_PAPERS",
    "EDGE_EXTRAS",
    "KNOWN_BUNDLES",
    "KNOWN_BUNDLE_DIGESTS",
    "LOCK_SIGNERS",
    "LOCK_SOURCES",
    "MERGE_AUTHORS",
    "MERGE_CATEGORIES",
    "OWN_NEIGHBOUR",
    "OWN_TYPES",
    "PAPERS_SIGNED_WITH",
    "PAPER_AUTHOR_NAMES",
    "PING",
    "REFRESH_AUTHORS",
    "REFRESH_LATEST",
    "REFRESH_SIGNER_KEYS",
    "RESTORE_EDGE_EXTRAS",
    "SET_AUTHOR_NAMES",
    "SET_LATEST",
    "SET_SIGNER_KEYS",
    "SOURCE_PAPERS",
    "STORED_PAPERS",
    "WRITE_PAPERS",
    "count_edges",
    "count_nodes",
    "keyed",
]

#: The cheapest statement that proves the database answers.
PING = "RETURN 1 AS ok"

# --- loader writes ------------------------------------------------------------------------
# One write transaction per batch runs these in order. $piths and every $rows list are
# sorted by key, so concurrent loaders take their locks in the same order.

#: Lock each source id of the batch ($sources: sorted ``[sourceKind, sourceId]``) and read
#: its stored papers. The lock is the source id's own alias node (``Alias {kind: 'arxiv',
#: value: <id>}``, which its papers carry), merged on its uniqueness constraint: concurrent
#: loaders of one source id take turns from here, so the precedence and newest rules are
#: decided against everything committed, and so is each paper's isLatest (neo4j_latest). The
#: SET/REMOVE pair takes the write lock; a stored alias is locked before, by id (cypher_locks).
LOCK_SOURCES = """
UNWIND $sources AS source
MERGE (lock:Alias {kind: source[0], value: source[1]})
SET lock._lock = true REMOVE lock._lock
WITH source, lock
OPTIONAL MATCH (p:Paper {sourceId: source[1]})
WHERE p.sourceKind = source[0] AND p.sourceVersion IS NOT NULL
RETURN elementId(lock) AS lockId, source,
       collect([p.pithNumber, p.sourceVersion, p.builtAt, p.bundleSha256, p.bundleKeyId, p.keyIds,
                p.isLatest]) AS papers
"""

#: Create or lock the signers of the papers to write. Every paper of a corpus shares its
#: registry signer, so this serialises concurrent loaders' writes instead of letting them
#: deadlock on the nodes they share. The type is the keyring's (the same in every row of a
#: signer: loader.rows), set on each write so a re-pinned type reaches the stored signer; a
#: null type (a signer of a paper the batch detaches, locked with its own in signerId order:
#: cypher_locks.DETACHED_NEIGHBOURS) keeps the stored one. The lock comes first: read before
#: it (``coalesce(row.signerType, s.signerType)``), two loaders of one signer deadlocked on it.
LOCK_SIGNERS = """
UNWIND $rows AS row
MERGE (s:Signer {signerId: row.signerId})
ON CREATE SET s.keyIds = []
SET s._lock = true REMOVE s._lock
WITH s, row WHERE row.signerType IS NOT NULL
SET s.signerType = row.signerType
"""

#: Delete every edge of the papers about to be written; return the nodes they reached
#: (with ``signerId`` for signers, whose keyIds must then be recomputed, ``nameKey`` for
#: authors, whose paperCount must, and ``code`` for categories: DELETE_ORPHANS takes them in
#: a load's order). Their signers, authors and categories are locked already
#: (cypher_locks.DETACHED_NEIGHBOURS).
DETACH_PAPERS = f"""
UNWIND $piths AS pith
MATCH (:Paper {{pithNumber: pith}})-[r:{OWN_TYPES}]-(n)
DELETE r
RETURN DISTINCT elementId(n) AS id, n.signerId AS signerId, n.nameKey AS nameKey, n.code AS code
"""

#: The graph's edges of the papers about to be written again that carry a property not the
#: graph's ($own: each type's properties), to set back on the edge written anew
#: (RESTORE_EDGE_EXTRAS): an analyst's properties stay, as they do on the nodes.
EDGE_EXTRAS = f"""
UNWIND $piths AS pith
MATCH (:Paper {{pithNumber: pith}})-[r:{OWN_TYPES}]-(n)
WHERE any(key IN keys(r) WHERE NOT key IN $own[type(r)])
RETURN pith, type(r) AS type, elementId(n) AS other, properties(r) AS props
"""

#: $rows: ``{pith, type, other, props}`` (props: an analyst's only), after WRITE_PAPERS.
RESTORE_EDGE_EXTRAS = f"""
UNWIND $rows AS row
MATCH (:Paper {{pithNumber: row.pith}})-[r:{OWN_TYPES}]-(n)
WHERE type(r) = row.type AND elementId(n) = row.other
SET r += row.props
"""

#: Delete papers already detached (displaced by a higher-ranked signer, or pruned), with
#: any relationship of an analyst's to them.
DELETE_PAPERS = """
UNWIND $piths AS pith
MATCH (p:Paper {pithNumber: pith})
DETACH DELETE p
"""

#: The stored papers of each source id of $sources (``[sourceKind, sourceId]``), as
#: LOCK_SOURCES reads them, without its locks: a load checks the bundles it skipped as stored.
STORED_PAPERS = """
UNWIND $sources AS source
MATCH (p:Paper {sourceId: source[1]})
WHERE p.sourceKind = source[0] AND p.sourceVersion IS NOT NULL
RETURN source, p.pithNumber AS pith, p.sourceVersion AS version, p.builtAt AS builtAt,
       p.bundleSha256 AS digest, p.bundleKeyId AS keyId, p.keyIds AS keyIds
"""

#: The graph's papers any of $keys signed (for pruning revoked keys): an analyst's stub
#: ``(:Paper {pithNumber: …, keyIds: […]})`` (:func:`keyed`) is theirs, left alone.
PAPERS_SIGNED_WITH = f"""
MATCH (p:Paper)
WHERE any(key IN p.keyIds WHERE key IN $keys) AND {keyed("p", "Paper")}
RETURN p.pithNumber AS pith, p.builtAt AS builtAt, p.keyIds AS keyIds
ORDER BY pith
"""

# Node rows are lists (``[key, value, ...]``): cheaper to encode than maps.

#: Create or lock the batch's authors ($rows: ``[nameKey, name, nameFolded]``, the batch's smallest
#: spelling per key, which a new author is created with), and those of the papers it detaches
#: (cypher_locks.DETACHED_NEIGHBOURS), in one statement before any edge is deleted: every
#: author a write touches is locked here, in nameKey order; REFRESH_AUTHORS names them.
MERGE_AUTHORS = """
UNWIND $rows AS row
MERGE (a:Author {nameKey: row[0]})
ON CREATE SET a.name = row[1], a.nameFolded = row[2], a.paperCount = 0
SET a._lock = true REMOVE a._lock
"""

#: Each paper's spellings of its authors ($piths: papers about to be detached), read before
#: they go; one written before 0.8 has none and spells each author as it is named now.
PAPER_AUTHOR_NAMES = """
UNWIND $piths AS pith
MATCH (p:Paper {pithNumber: pith})
RETURN coalesce(p.authorNames, [(a:Author)-[:AUTHORED]->(p) | a.name]) AS names
"""

#: $rows: ``[code, archive]``. Each is created or locked, as authors are (those of the papers
#: detached too, after the authors): a concurrent batch cannot delete it as an orphan before
#: WRITE_PAPERS (a MATCH) links this batch's papers to it.
MERGE_CATEGORIES = """
UNWIND $rows AS row
MERGE (c:Category {code: row[0]})
ON CREATE SET c.archive = row[1]
SET c._lock = true REMOVE c._lock
"""

#: Write each winning paper and all its edges in one pass: its properties replace the stored
#: ones (it was detached above if it existed): ``props`` holds every property the schema gives
#: a Paper, null for those the paper lacks, so ``+=`` removes those and keeps an analyst's
#: own (``SET p = row.props`` erased them); then one unit subquery per relationship type
#: creates its edges from the paper in hand (no second lookup of the paper). Authors,
#: categories and signers were merged above (in key order); aliases are merged here: all but
#: a shared journal DOI belong to the paper's own source id, which LOCK_SOURCES holds.
#: $rows: ``{props, authors: [nameKey], categories: [[code, primary]], aliases: [[kind,
#: value]], signers: [[signerId, keyIds, eventTypes, signedBundle]]}``, by pithNumber.
#: Returns each paper that lacks an author, category or signer edge: the node was deleted by
#: a transaction that held it when this one's MERGE found it (cypher_locks), to write again.
WRITE_PAPERS = """
UNWIND $rows AS row
MERGE (p:Paper {pithNumber: row.props.pithNumber})
SET p += row.props
WITH p, row
CALL (p, row) {
  UNWIND row.authors AS key
  MATCH (a:Author {nameKey: key})
  CREATE (a)-[:AUTHORED]->(p)
  RETURN count(*) AS authored
}
CALL (p, row) {
  UNWIND row.categories AS item
  MATCH (c:Category {code: item[0]})
  CREATE (p)-[:IN_CATEGORY {primary: item[1]}]->(c)
  RETURN count(*) AS categorised
}
CALL (p, row) {
  UNWIND row.aliases AS item
  MERGE (a:Alias {kind: item[0], value: item[1]})
  CREATE (a)-[:IDENTIFIES]->(p)
}
CALL (p, row) {
  UNWIND row.signers AS item
  MATCH (s:Signer {signerId: item[0]})
  CREATE (s)-[:SIGNED {keyIds: item[1], eventTypes: item[2], signedBundle: item[3]}]->(p)
  RETURN count(*) AS signed
}
WITH row, authored, categorised, signed
WHERE authored <> size(row.authors) OR categorised <> size(row.categories) OR signed <> size(row.signers)
RETURN row.props.pithNumber AS pith
"""

#: Remove the detached neighbours that no paper uses any more (an analyst's relationships to
#: them go with them; their own nodes are never removed); returns the removed authors' keys.
#: $ids in a load's lock order (signers by signerId, authors by nameKey, categories by code;
#: the signers, authors and categories are held already: cypher_locks.DETACHED_NEIGHBOURS; elementId
#: order, before 0.9.7, was not a load's). Each is locked before it is judged: a concurrent loader that gives it an edge holds its lock
#: from MERGE_AUTHORS or LOCK_SIGNERS on, so the check sees that edge committed, or the loader
#: waits and finds the node gone (EntityNotFound: its batch runs again). Only relationships of
#: types not the graph's are deleted with it, then the node by a plain DELETE: an edge of the
#: graph's left on it fails the commit instead of going with it (a DETACH DELETE, or deleting
#: whatever the statement saw after an unlocked check, took a concurrent loader's committed
#: AUTHORED edges with them, silently: 1,000 papers lost their author in a review's run).
DELETE_ORPHANS = f"""
UNWIND $ids AS id
MATCH (n)
WHERE elementId(n) = id AND ({OWN_NEIGHBOUR})
SET n._lock = true REMOVE n._lock
WITH n
WHERE NOT EXISTS {{ (n)-[:{OWN_TYPES}]-(:Paper) }}
CALL (n) {{
  MATCH (n)-[theirs]-()
  WHERE NOT type(theirs) IN [{", ".join(f"'{kind}'" for kind in RELATIONSHIPS)}]
  DELETE theirs
}}
WITH n, n.nameKey AS key
DELETE n
RETURN key
"""

#: ``Signer.keyIds`` = the union of its SIGNED edges' keyIds, returned per signer for
#: SET_SIGNER_KEYS to write sorted by code point, as every store sorts (Cypher's ORDER BY
#: compares UTF-16 code units: ``k-𝒜`` before ``k-Ａ``). Candidates are the stored keys plus the
#: batch's ($rows: {signerId, keyIds}); each is kept if an edge still carries it (the check
#: stops at the first such edge). Each signer is locked before it is read: a signer this batch
#: only detached may be a concurrent batch's, with keys to keep.
REFRESH_SIGNER_KEYS = """
UNWIND $rows AS row
MATCH (s:Signer {signerId: row.signerId})
SET s._lock = true REMOVE s._lock
WITH s, row
CALL (s, row) {
  UNWIND s.keyIds + row.keyIds AS key
  WITH DISTINCT key
  WHERE EXISTS { (s)-[r:SIGNED]->() WHERE key IN r.keyIds }
  RETURN collect(key) AS keys
}
RETURN s.signerId AS signerId, keys
"""

SET_SIGNER_KEYS = """
UNWIND $rows AS row
MATCH (s:Signer {signerId: row.signerId})
SET s.keyIds = row.keyIds
"""

#: ``Author.paperCount`` = its AUTHORED edges, for the authors a batch touched ($rows, by key:
#: ``[nameKey, the one spelling the batch adds (or null), whether its spellings need a look]``;
#: those deleted as orphans are skipped). Each author is locked before it is counted, so a
#: concurrent batch's edges are counted once it has committed, never missed. Returned, with
#: what it held before (its count, name and forms), is each author whose name the batch may
#: change (:mod:`~pith_graph.loader.stores.names`); SET_AUTHOR_NAMES writes the new ones.
REFRESH_AUTHORS = """
UNWIND $rows AS row
MATCH (a:Author {nameKey: row[0]})
SET a._lock = true REMOVE a._lock
WITH a, row, a.paperCount AS before
SET a.paperCount = COUNT { (a)-[:AUTHORED]->() }
WITH a, row, before
WHERE row[2] OR a.nameForms IS NOT NULL OR (row[1] IS NOT NULL AND a.name <> row[1])
RETURN row[0] AS key, before, a.name AS name, a.nameForms AS forms, a.nameFormCounts AS counts
"""

#: $rows: ``[nameKey, name, nameFolded, nameForms, nameFormCounts]`` (null forms: none).
#: ``nameFolded`` is the key's (since 0.9.8), the same whatever the name: written again with
#: a new one all the same, so a database a 0.9.7 name left it stale in mends as it changes.
SET_AUTHOR_NAMES = """
UNWIND $rows AS row
MATCH (a:Author {nameKey: row[0]})
SET a.name = row[1], a.nameFolded = row[2], a.nameForms = row[3], a.nameFormCounts = row[4]
"""

#: The graph's papers of a source (``source``: ``[sourceKind, sourceId]``) that
#: ``Paper.isLatest`` ranks: those with a key, a version and a build time (the API's
#: ``latestVersions`` compared the same papers, before 0.9.4, per read).
SOURCE_PAPERS = (
    "MATCH (p:Paper {sourceId: source[1]}) WHERE p.sourceKind = source[0] AND size(p.pithNumber) > 0"
    " AND p.sourceVersion IS NOT NULL AND p.builtAt IS NOT NULL"
)

#: ``Paper.isLatest`` of every paper of each source of $sources (``[sourceKind, sourceId]``,
#: sorted): true for the greatest ``(sourceVersion, builtAt, pithNumber)``, false for the rest
#: (written only where it changes): a removal's, the upgrade's and a load's of a source it cannot
#: rank itself (neo4j_latest). The source's lock alias (LOCK_SOURCES) is locked first: a
#: load holds it already; a removal (prune) and the upgrade take it here, so two writes of one
#: source's papers never decide its newest from each other's uncommitted state. Strings compare
#: as in memory: ``builtAt`` and ``pithNumber`` are ASCII.
REFRESH_LATEST = f"""
UNWIND $sources AS source
OPTIONAL MATCH (lock:Alias {{kind: source[0], value: source[1]}})
SET lock._lock = true REMOVE lock._lock
WITH DISTINCT source
CALL (source) {{
  {SOURCE_PAPERS}
  WITH p ORDER BY p.sourceVersion DESC, p.builtAt DESC, p.pithNumber DESC
  WITH collect(p) AS papers
  UNWIND range(0, size(papers) - 1) AS at
  WITH papers[at] AS p, at = 0 AS latest
  WHERE p.isLatest IS NULL OR p.isLatest <> latest
  SET p.isLatest = latest
}}
"""

#: $rows: ``[pithNumber, isLatest]``, a load's stored papers whose flag changes (neo4j_latest).
SET_LATEST = """
UNWIND $rows AS row
MATCH (p:Paper {pithNumber: row[0]})
SET p.isLatest = row[1]
"""

# --- store reads --------------------------------------------------------------------------

KNOWN_BUNDLE_DIGESTS = "MATCH (p:Paper) RETURN p.bundleSha256 AS digest"

KNOWN_BUNDLES = """
MATCH (p:Paper) WHERE p.bundleKeyId IS NOT NULL
RETURN p.bundleSha256 AS digest, p.bundleKeyId AS keyId
"""

#: Delete everything (tests), in auto-committed chunks: relationships first, so that no
#: chunk holds a dense node's every edge; constraints and indexes stay.
CLEAR_RELATIONSHIPS = """
MATCH ()-[r]->()
CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS
"""
CLEAR_NODES = """
MATCH (n)
CALL (n) { DELETE n } IN TRANSACTIONS OF 10000 ROWS
"""


#: Every node, whatever its labels (an analyst's own too): what makes a database not empty.
COUNT_EVERY_NODE = "MATCH (n) RETURN count(n) AS count"


def count_nodes(label: str) -> str:
    """Count one label's nodes (answered from Neo4j's count store)."""
    if label not in NODES:
        raise ValueError(f"unknown label {label!r}")
    return f"MATCH (n:{label}) RETURN count(n) AS count"


def count_edges(kind: str) -> str:
    """Count one relationship type (answered from Neo4j's count store)."""
    if kind not in RELATIONSHIPS:
        raise ValueError(f"unknown relationship type {kind!r}")
    return f"MATCH ()-[r:{kind}]->() RETURN count(r) AS count"
