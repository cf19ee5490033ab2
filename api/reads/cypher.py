"""The read Cypher of the GraphQL API: named, parameterised statements, one per reader call.

Only names from :mod:`pith_graph.schema` are ever formatted into a statement; every value is a
parameter. The writes and the schema statements are in :mod:`pith_graph.loader.stores.cypher`.

Statements fetch only what the caller selected (see
:class:`~pith_graph.api.reads.records.PaperSelection`), so most come in variants, each a
constant built here at import and kept in a dict:

* a paper is projected as ``[values, authors, categories]``: ``values`` are the properties
  named by the ``$props`` parameter, in that order; ``authors`` (``[nameKey, name(, count)]``
  each) and ``categories`` (``[code, archive, primary(, count)]`` each) are null unless the
  variant embeds them (:data:`EMBEDS`: ``None`` not embedded, ``False`` without paper
  counts, ``True`` with them);
* authors, categories and signers are lists (``[nameKey, name]``, ``[code, archive]``,
  ``[signerId, signerType, keyIds]``) ending with their paper count in the counted variant
  (dict key ``True``): the count is a ``COUNT`` subquery, run only when asked for;
* listings and pages sort and limit *before* they project, so only the papers returned are
  read beyond their order keys.
"""

from __future__ import annotations

from itertools import product

__all__ = [
    "EMBEDS",
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
    "READ_PAPERS_BY_IDENTIFIERS",
    "READ_PAPERS_OF_AUTHORS",
    "READ_PAPERS_OF_CATEGORIES",
    "READ_PAPERS_OF_SIGNERS",
    "READ_RELATED_PAPERS",
    "READ_RESOLVE_IDENTIFIERS",
    "READ_SIGNATURES_OF_PAPERS",
    "READ_SIGNERS",
    "READ_TOP_AUTHORS",
    "READ_VERSIONS_OF_PAPERS",
    "Embed",
]

# Used by :class:`pith_graph.api.reads.neo4j.Neo4jReader`. Every statement serves a whole batch
# (``UNWIND $keys AS key``) and returns one row per key found; orderings and tie-breaks are
# the ones :mod:`pith_graph.api.reads.reader` defines. Pages ask for ``$limit`` = first + 1 rows
# after the keyset position ``($afterAt, $afterPith)`` (both null for the first page).

#: (authors, categories) embedded with each paper: None (not), False (no counts), True (counts).
Embed = tuple[bool | None, bool | None]
_FLAGS = (None, False, True)
EMBEDS: tuple[Embed, ...] = tuple(product(_FLAGS, _FLAGS))
COUNTS = (False, True)


def _author(v: str, counts: bool) -> str:
    count = f", COUNT {{ ({v})-[:AUTHORED]->() }}" if counts else ""
    return f"[{v}.nameKey, {v}.name{count}]"


def _category(v: str, counts: bool) -> str:
    count = f", COUNT {{ ({v})<-[:IN_CATEGORY]-() }}" if counts else ""
    return f"[{v}.code, {v}.archive{count}]"


def _signer(v: str, counts: bool) -> str:
    count = f", COUNT {{ ({v})-[:SIGNED]->() }}" if counts else ""
    return f"[{v}.signerId, {v}.signerType, {v}.keyIds{count}]"


def _paper(v: str, embed: Embed = (None, None)) -> str:
    """``[values of $props, authors or null, categories or null]`` of the paper ``v``."""
    authors, categories = embed
    values = f"[_k IN $props | {v}[_k]]"
    embedded_authors = "null"
    if authors is not None:
        embedded_authors = f"[({v})<-[:AUTHORED]-(_a:Author) | {_author('_a', authors)}]"
    embedded_categories = "null"
    if categories is not None:
        link = f"{_category('_c', categories)} + [_r.primary]"
        embedded_categories = f"[({v})-[_r:IN_CATEGORY]->(_c:Category) | {link}]"
    return f"[{values}, {embedded_authors}, {embedded_categories}]"


_AFTER = (
    "($afterAt IS NULL OR p.submittedAt < $afterAt"
    " OR (p.submittedAt = $afterAt AND p.pithNumber < $afterPith))"
)
_NEWEST_FIRST = "ORDER BY p.submittedAt DESC, p.pithNumber DESC LIMIT $limit"

# -- papers by key --------------------------------------------------------------------------

READ_PAPERS = {
    embed: f"""
UNWIND $keys AS key
MATCH (p:Paper {{pithNumber: key}})
RETURN key, {_paper("p", embed)} AS paper
"""
    for embed in EMBEDS
}

_NAMED = """
UNWIND $keys AS key
CALL (key) {
  MATCH (p:Paper {pithNumber: key.value}) WHERE key.kind = 'pithNumber' RETURN p
  UNION
  MATCH (p:Paper {shortPithNumber: key.value}) WHERE key.kind = 'shortPithNumber' RETURN p
  UNION
  MATCH (:Alias {kind: key.kind, value: key.value})-[:IDENTIFIES]->(p:Paper) RETURN p
}
"""
READ_RESOLVE_IDENTIFIERS = (
    f"{_NAMED}RETURN key.kind AS kind, key.value AS value, collect(p.pithNumber) AS piths\n"
)
READ_PAPERS_BY_IDENTIFIERS = {
    embed: f"{_NAMED}RETURN key.kind AS kind, key.value AS value, collect({_paper('p', embed)}) AS papers\n"
    for embed in EMBEDS
}

READ_VERSIONS_OF_PAPERS = {
    embed: f"""
UNWIND $keys AS key
MATCH (p:Paper {{pithNumber: key}})
MATCH (v:Paper)
WHERE v.sourceId = p.sourceId AND v.sourceVersion IS NOT NULL
  AND v.sourceKind = p.sourceKind AND v <> p
RETURN key, collect({_paper("v", embed)}) AS versions
"""
    for embed in EMBEDS
}

READ_RELATED_PAPERS = {
    embed: f"""
UNWIND $keys AS key
MATCH (p:Paper {{pithNumber: key}})
CALL (p) {{
  MATCH (p)<-[:AUTHORED]-(:Author)-[:AUTHORED]->(q:Paper)
  WHERE NOT (q.sourceKind = p.sourceKind AND q.sourceId = p.sourceId)
  WITH q, count(*) AS shared
  ORDER BY shared DESC, q.submittedAt DESC, q.pithNumber DESC
  LIMIT $first
  RETURN collect([{_paper("q", embed)}, shared]) AS related
}}
RETURN key, related
"""
    for embed in EMBEDS
}


def _page_of(start: str, step: str, member: str, embed: Embed) -> str:
    """A newest-first page of the papers ``step`` reaches from the ``start`` node ``n`` of
    each key. Two ways, whichever reads fewer papers: a node with few papers has them all
    read and sorted; one holding a large share of all papers (its degree squared above
    ``$limit`` times the number of papers: about where the costs cross) has the papers
    scanned newest first on the ``submittedAt`` index until ``$limit`` of them are its
    (``member``) — a page of cs.LG costs 51 papers' worth, not 12,000. The unused way's range
    is empty (``newest`` is ``''``), so it reads nothing."""
    return f"""
UNWIND $keys AS key
MATCH {start}
WITH key, n, COUNT {{ {step.replace("(p:Paper)", "()")} }} AS size, COUNT {{ (:Paper) }} AS papers
CALL (n, size, papers) {{
  WITH n, CASE WHEN size * size > $limit * papers THEN coalesce($afterAt, '\\uffff') ELSE '' END AS newest
  MATCH (p:Paper)
  WHERE p.submittedAt <= newest AND {_AFTER} AND {member}
  WITH p {_NEWEST_FIRST}
  RETURN p
  UNION
  WITH n WHERE size * size <= $limit * papers
  MATCH {step}
  WHERE {_AFTER}
  WITH p {_NEWEST_FIRST}
  RETURN p
}}
RETURN key, collect({_paper("p", embed)}) AS papers
"""


READ_PAPERS_OF_AUTHORS = {
    e: _page_of("(n:Author {nameKey: key})", "(n)-[:AUTHORED]->(p:Paper)", "(n)-[:AUTHORED]->(p)", e)
    for e in EMBEDS
}
READ_PAPERS_OF_CATEGORIES = {
    e: _page_of(
        "(n:Category {code: key})", "(n)<-[:IN_CATEGORY]-(p:Paper)", "(p)-[:IN_CATEGORY]->(n)", e
    )
    for e in EMBEDS
}
READ_PAPERS_OF_SIGNERS = {
    e: _page_of("(n:Signer {signerId: key})", "(n)-[:SIGNED]->(p:Paper)", "(n)-[:SIGNED]->(p)", e)
    for e in EMBEDS
}

# -- relations of papers --------------------------------------------------------------------

READ_AUTHORS_OF_PAPERS = {
    counts: f"""
UNWIND $keys AS key
MATCH (:Paper {{pithNumber: key}})<-[:AUTHORED]-(a:Author)
RETURN key, collect({_author("a", counts)}) AS authors
"""
    for counts in COUNTS
}

READ_CATEGORIES_OF_PAPERS = {
    counts: f"""
UNWIND $keys AS key
MATCH (:Paper {{pithNumber: key}})-[r:IN_CATEGORY]->(c:Category)
RETURN key, collect({_category("c", counts)} + [r.primary]) AS links
"""
    for counts in COUNTS
}

READ_ALIASES_OF_PAPERS = """
UNWIND $keys AS key
MATCH (:Paper {pithNumber: key})<-[:IDENTIFIES]-(a:Alias)
RETURN key, collect([a.kind, a.value]) AS aliases
"""

READ_SIGNATURES_OF_PAPERS = {
    counts: f"""
UNWIND $keys AS key
MATCH (:Paper {{pithNumber: key}})<-[r:SIGNED]-(s:Signer)
RETURN key, collect([{_signer("s", counts)}, r.keyIds, r.eventTypes, r.signedBundle]) AS signatures
"""
    for counts in COUNTS
}

# -- authors --------------------------------------------------------------------------------

READ_AUTHORS = {
    counts: f"""
UNWIND $keys AS key
MATCH (a:Author {{nameKey: key}})
RETURN key, {_author("a", counts)} AS author
"""
    for counts in COUNTS
}

READ_COAUTHORS = {
    counts: f"""
UNWIND $keys AS key
MATCH (a:Author {{nameKey: key}})
CALL (a) {{
  MATCH (a)-[:AUTHORED]->(:Paper)<-[:AUTHORED]-(c:Author)
  WHERE c <> a
  WITH c, count(*) AS shared
  ORDER BY shared DESC, c.nameKey ASC
  LIMIT $first
  RETURN collect([{_author("c", counts)}, shared]) AS coauthors
}}
RETURN key, coauthors
"""
    for counts in COUNTS
}

READ_AUTHOR_CATEGORIES = {
    counts: f"""
UNWIND $keys AS key
MATCH (a:Author {{nameKey: key}})-[:AUTHORED]->(:Paper)-[:IN_CATEGORY]->(c:Category)
WITH key, c, count(*) AS papers
RETURN key, collect([{_category("c", counts)}, papers]) AS categories
"""
    for counts in COUNTS
}

# -- categories -----------------------------------------------------------------------------

READ_CATEGORIES = {
    counts: f"""
UNWIND $keys AS key
MATCH (c:Category {{code: key}})
RETURN key, {_category("c", counts)} AS category
"""
    for counts in COUNTS
}

READ_ALL_CATEGORIES = {
    counts: f"""
MATCH (c:Category)
RETURN {_category("c", counts)} AS category
ORDER BY c.code
"""
    for counts in COUNTS
}

READ_TOP_AUTHORS = {
    counts: f"""
UNWIND $keys AS key
MATCH (c:Category {{code: key}})
CALL (c) {{
  MATCH (c)<-[:IN_CATEGORY]-(:Paper)<-[:AUTHORED]-(a:Author)
  WITH a, count(*) AS papers
  ORDER BY papers DESC, a.nameKey ASC
  LIMIT $first
  RETURN collect([{_author("a", counts)}, papers]) AS authors
}}
RETURN key, authors
"""
    for counts in COUNTS
}

READ_CO_LISTED = {
    counts: f"""
UNWIND $keys AS key
MATCH (c:Category {{code: key}})
CALL (c) {{
  MATCH (c)<-[:IN_CATEGORY]-(:Paper)-[:IN_CATEGORY]->(o:Category)
  WHERE o <> c
  WITH o, count(*) AS papers
  ORDER BY papers DESC, o.code ASC
  LIMIT $first
  RETURN collect([{_category("o", counts)}, papers]) AS categories
}}
RETURN key, categories
"""
    for counts in COUNTS
}

# -- signers --------------------------------------------------------------------------------

READ_SIGNERS = {
    counts: f"""
UNWIND $keys AS key
MATCH (s:Signer {{signerId: key}})
RETURN key, {_signer("s", counts)} AS signer
"""
    for counts in COUNTS
}

# -- listings -------------------------------------------------------------------------------

# One statement per starting point (the most selective filter given), the other filters
# checked on each paper. Null parameters switch their filter off.
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
#: (start, embed) -> statement returning one page (``paper`` rows, newest first): sorted and
#: limited first, then projected.
READ_LIST_PAPERS = {
    (start, embed): f"{match}\nWHERE {_LISTING_FILTER}\nWITH p {_NEWEST_FIRST}\n"
    f"RETURN {_paper('p', embed)} AS paper\n"
    for start, match in _LISTING_START.items()
    for embed in EMBEDS
}
#: start -> statement counting the papers (one ``n`` row).
READ_COUNT_PAPERS = {
    start: f"{match}\nWHERE {_LISTING_FILTER.replace(_AFTER, 'true')}\nRETURN count(p) AS n\n"
    for start, match in _LISTING_START.items()
}
READ_COUNT_ALL_PAPERS = "MATCH (p:Paper) RETURN count(p) AS n"


def _collaboration_path(hops: int, counts: bool) -> str:
    """The shortest chains of at most ``hops`` papers, smallest key sequence first."""
    return f"""
MATCH (a:Author {{nameKey: $source}}), (b:Author {{nameKey: $target}})
MATCH path = allShortestPaths((a)-[:AUTHORED*..{2 * hops}]-(b))
WITH path, [n IN nodes(path) | coalesce(n.nameKey, n.pithNumber)] AS keys
ORDER BY keys
LIMIT 1
RETURN [n IN nodes(path) WHERE n:Author | {_author("n", counts)}] AS authors,
       [n IN nodes(path) WHERE n:Paper | {_paper("n")}] AS papers
"""


#: (maxHops, counts) -> statement (variable-length bounds cannot be parameters: one per value).
READ_COLLABORATION_PATH = {
    (hops, counts): _collaboration_path(hops, counts) for hops in range(1, 7) for counts in COUNTS
}
