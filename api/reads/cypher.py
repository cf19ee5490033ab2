"""The read Cypher of the GraphQL API: named, parameterised statements, one per reader call.

Only names from :mod:`pith_graph.schema` are ever formatted into a statement; every value is a
parameter. The writes and the schema statements are in :mod:`pith_graph.loader.stores.cypher`.
"""

from __future__ import annotations

__all__ = [
    "READ_ALIASES_OF_PAPERS",
    "READ_ALL_CATEGORIES",
    "READ_AUTHORS",
    "READ_AUTHORS_OF_PAPERS",
    "READ_AUTHOR_CATEGORIES",
    "READ_CATEGORIES",
    "READ_CATEGORIES_OF_PAPERS",
    "READ_COAUTHORS",
    "READ_COLLABORATION_PATH",
    "READ_COUNT_ALL_PAPERS",
    "READ_COUNT_PAPERS",
    "READ_CO_LISTED",
    "READ_LIST_PAPERS",
    "READ_PAPERS",
    "READ_PAPERS_OF_AUTHORS",
    "READ_PAPERS_OF_CATEGORIES",
    "READ_PAPERS_OF_SIGNERS",
    "READ_RELATED_PAPERS",
    "READ_RESOLVE_IDENTIFIERS",
    "READ_SIGNATURES_OF_PAPERS",
    "READ_SIGNERS",
    "READ_TOP_AUTHORS",
    "READ_VERSIONS_OF_PAPERS",
]

# Used by :class:`pith_graph.api.reads.neo4j.Neo4jReader`. Every statement serves a whole batch
# (``UNWIND $keys AS key``) and returns one row per key found; orderings and tie-breaks are
# the ones :mod:`pith_graph.api.reads.records` defines. Pages ask for ``$limit`` = first + 1 rows
# after the keyset position ``($afterAt, $afterPith)`` (both null for the first page).

_AUTHOR_MAP = "{.nameKey, .name, paperCount: COUNT { (_n)-[:AUTHORED]->() }}"
_CATEGORY_MAP = "{.code, .archive, paperCount: COUNT { (_n)<-[:IN_CATEGORY]-() }}"
_SIGNER_MAP = "{.signerId, .signerType, .keyIds, paperCount: COUNT { (_n)-[:SIGNED]->() }}"


def _map(variable: str, projection: str) -> str:
    """``variable {...}`` for one of the projections above."""
    return variable + " " + projection.replace("_n", variable)


_AFTER = (
    "($afterAt IS NULL OR p.submittedAt < $afterAt"
    " OR (p.submittedAt = $afterAt AND p.pithNumber < $afterPith))"
)
_NEWEST_FIRST = "ORDER BY p.submittedAt DESC, p.pithNumber DESC LIMIT $limit"

READ_PAPERS = """
UNWIND $keys AS key
MATCH (p:Paper {pithNumber: key})
RETURN key, p {.*} AS paper
"""

READ_RESOLVE_IDENTIFIERS = """
UNWIND $keys AS key
CALL (key) {
  MATCH (p:Paper {pithNumber: key.value}) WHERE key.kind = 'pithNumber' RETURN p
  UNION
  MATCH (p:Paper {shortPithNumber: key.value}) WHERE key.kind = 'shortPithNumber' RETURN p
  UNION
  MATCH (:Alias {kind: key.kind, value: key.value})-[:IDENTIFIES]->(p:Paper) RETURN p
}
RETURN key.kind AS kind, key.value AS value, collect(p.pithNumber) AS piths
"""

READ_AUTHORS_OF_PAPERS = f"""
UNWIND $keys AS key
MATCH (:Paper {{pithNumber: key}})<-[:AUTHORED]-(a:Author)
RETURN key, collect({_map("a", _AUTHOR_MAP)}) AS authors
"""

READ_CATEGORIES_OF_PAPERS = f"""
UNWIND $keys AS key
MATCH (:Paper {{pithNumber: key}})-[r:IN_CATEGORY]->(c:Category)
RETURN key, collect({{category: {_map("c", _CATEGORY_MAP)}, primary: r.primary}}) AS links
"""

READ_ALIASES_OF_PAPERS = """
UNWIND $keys AS key
MATCH (:Paper {pithNumber: key})<-[:IDENTIFIES]-(a:Alias)
RETURN key, collect([a.kind, a.value]) AS aliases
"""

READ_SIGNATURES_OF_PAPERS = f"""
UNWIND $keys AS key
MATCH (:Paper {{pithNumber: key}})<-[r:SIGNED]-(s:Signer)
RETURN key, collect({{signer: {_map("s", _SIGNER_MAP)}, keyIds: r.keyIds,
                      eventTypes: r.eventTypes, signedBundle: r.signedBundle}}) AS signatures
"""

READ_VERSIONS_OF_PAPERS = """
UNWIND $keys AS key
MATCH (p:Paper {pithNumber: key})
MATCH (v:Paper)
WHERE v.sourceId = p.sourceId AND v.sourceVersion IS NOT NULL
  AND v.sourceKind = p.sourceKind AND v <> p
RETURN key, collect(v {.*}) AS versions
"""

READ_RELATED_PAPERS = """
UNWIND $keys AS key
MATCH (p:Paper {pithNumber: key})
CALL (p) {
  MATCH (p)<-[:AUTHORED]-(:Author)-[:AUTHORED]->(q:Paper)
  WHERE NOT (q.sourceKind = p.sourceKind AND q.sourceId = p.sourceId)
  WITH q, count(*) AS shared
  ORDER BY shared DESC, q.submittedAt DESC, q.pithNumber DESC
  LIMIT $first
  RETURN collect({paper: q {.*}, shared: shared}) AS related
}
RETURN key, related
"""

READ_AUTHORS = f"""
UNWIND $keys AS key
MATCH (a:Author {{nameKey: key}})
RETURN key, {_map("a", _AUTHOR_MAP)} AS author
"""

READ_PAPERS_OF_AUTHORS = f"""
UNWIND $keys AS key
MATCH (a:Author {{nameKey: key}})
CALL (a) {{
  MATCH (a)-[:AUTHORED]->(p:Paper)
  WHERE {_AFTER}
  WITH p {_NEWEST_FIRST}
  RETURN collect(p {{.*}}) AS papers
}}
RETURN key, papers
"""

READ_COAUTHORS = f"""
UNWIND $keys AS key
MATCH (a:Author {{nameKey: key}})
CALL (a) {{
  MATCH (a)-[:AUTHORED]->(:Paper)<-[:AUTHORED]-(c:Author)
  WHERE c <> a
  WITH c, count(*) AS shared
  ORDER BY shared DESC, c.nameKey ASC
  LIMIT $first
  RETURN collect({{author: {_map("c", _AUTHOR_MAP)}, count: shared}}) AS coauthors
}}
RETURN key, coauthors
"""

READ_AUTHOR_CATEGORIES = f"""
UNWIND $keys AS key
MATCH (a:Author {{nameKey: key}})-[:AUTHORED]->(:Paper)-[:IN_CATEGORY]->(c:Category)
WITH key, c, count(*) AS papers
RETURN key, collect({{category: {_map("c", _CATEGORY_MAP)}, count: papers}}) AS categories
"""

READ_CATEGORIES = f"""
UNWIND $keys AS key
MATCH (c:Category {{code: key}})
RETURN key, {_map("c", _CATEGORY_MAP)} AS category
"""

READ_ALL_CATEGORIES = f"""
MATCH (c:Category)
RETURN {_map("c", _CATEGORY_MAP)} AS category
ORDER BY c.code
"""

READ_PAPERS_OF_CATEGORIES = f"""
UNWIND $keys AS key
MATCH (c:Category {{code: key}})
CALL (c) {{
  MATCH (c)<-[:IN_CATEGORY]-(p:Paper)
  WHERE {_AFTER}
  WITH p {_NEWEST_FIRST}
  RETURN collect(p {{.*}}) AS papers
}}
RETURN key, papers
"""

READ_TOP_AUTHORS = f"""
UNWIND $keys AS key
MATCH (c:Category {{code: key}})
CALL (c) {{
  MATCH (c)<-[:IN_CATEGORY]-(:Paper)<-[:AUTHORED]-(a:Author)
  WITH a, count(*) AS papers
  ORDER BY papers DESC, a.nameKey ASC
  LIMIT $first
  RETURN collect({{author: {_map("a", _AUTHOR_MAP)}, count: papers}}) AS authors
}}
RETURN key, authors
"""

READ_CO_LISTED = f"""
UNWIND $keys AS key
MATCH (c:Category {{code: key}})
CALL (c) {{
  MATCH (c)<-[:IN_CATEGORY]-(:Paper)-[:IN_CATEGORY]->(o:Category)
  WHERE o <> c
  WITH o, count(*) AS papers
  ORDER BY papers DESC, o.code ASC
  LIMIT $first
  RETURN collect({{category: {_map("o", _CATEGORY_MAP)}, count: papers}}) AS categories
}}
RETURN key, categories
"""

READ_SIGNERS = f"""
UNWIND $keys AS key
MATCH (s:Signer {{signerId: key}})
RETURN key, {_map("s", _SIGNER_MAP)} AS signer
"""

READ_PAPERS_OF_SIGNERS = f"""
UNWIND $keys AS key
MATCH (s:Signer {{signerId: key}})
CALL (s) {{
  MATCH (s)-[:SIGNED]->(p:Paper)
  WHERE {_AFTER}
  WITH p {_NEWEST_FIRST}
  RETURN collect(p {{.*}}) AS papers
}}
RETURN key, papers
"""

# Listings: one statement per starting point (the most selective filter given), the other
# filters checked on each paper. Null parameters switch their filter off.
_LISTING_FILTER = f"""
  {_AFTER}
  AND ($from IS NULL OR p.submittedAt >= $from)
  AND ($before IS NULL OR p.submittedAt < $before)
  AND ($license IS NULL OR p.license = $license)
  AND ($category IS NULL OR EXISTS {{ (p)-[:IN_CATEGORY]->(:Category {{code: $category}}) }})
  AND ($archive IS NULL OR EXISTS {{ (p)-[:IN_CATEGORY]->(:Category {{archive: $archive}}) }})
  AND ($author IS NULL OR EXISTS {{ (p)<-[:AUTHORED]-(:Author {{nameKey: $author}}) }})
"""
_LISTING_START = {
    "title": "CALL db.index.fulltext.queryNodes($index, $lucene) YIELD node AS p WITH p",
    "author": "MATCH (:Author {nameKey: $author})-[:AUTHORED]->(p:Paper) WITH p",
    "category": "MATCH (:Category {code: $category})<-[:IN_CATEGORY]-(p:Paper) WITH p",
    "archive": "MATCH (:Category {archive: $archive})<-[:IN_CATEGORY]-(p:Paper) WITH DISTINCT p",
    "all": "MATCH (p:Paper) WITH p",
}
#: start -> statement returning one page (``paper`` rows, newest first).
READ_LIST_PAPERS = {
    start: f"{match}\nWHERE {_LISTING_FILTER}\nRETURN p {{.*}} AS paper\n{_NEWEST_FIRST}\n"
    for start, match in _LISTING_START.items()
}
#: start -> statement counting the papers (one ``n`` row).
READ_COUNT_PAPERS = {
    start: f"{match}\nWHERE {_LISTING_FILTER.replace(_AFTER, 'true')}\nRETURN count(p) AS n\n"
    for start, match in _LISTING_START.items()
}
READ_COUNT_ALL_PAPERS = "MATCH (p:Paper) RETURN count(p) AS n"


def _collaboration_path(hops: int) -> str:
    """The shortest chains of at most ``hops`` papers, smallest key sequence first."""
    return f"""
MATCH (a:Author {{nameKey: $source}}), (b:Author {{nameKey: $target}})
MATCH path = allShortestPaths((a)-[:AUTHORED*..{2 * hops}]-(b))
WITH path, [n IN nodes(path) | coalesce(n.nameKey, n.pithNumber)] AS keys
ORDER BY keys
LIMIT 1
RETURN [n IN nodes(path) WHERE n:Author | {_map("n", _AUTHOR_MAP)}] AS authors,
       [n IN nodes(path) WHERE n:Paper | n {{.*}}] AS papers
"""


#: maxHops -> statement (variable-length bounds cannot be parameters, so one per value).
READ_COLLABORATION_PATH = {hops: _collaboration_path(hops) for hops in range(1, 7)}
