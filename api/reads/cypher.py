"""The read Cypher of the GraphQL API: named, parameterised statements, one per reader call.

Only names from :mod:`pith_graph.schema` are ever formatted into a statement; every value is a
parameter. The writes and the schema statements are in :mod:`pith_graph.loader.stores.cypher`.

Statements fetch only what the caller selected (see
:class:`~pith_graph.api.reads.records.PaperSelection`), so most come in variants, each a
constant built here at import and kept in a dict:

* a paper is projected as ``[values, authors, categories]``: ``values`` are the properties
  named by the ``$props`` parameter, in that order; ``authors`` (``[count, [[nameKey,
  name(, count)], ...]]``, the first ``$authorsFirst``) and ``categories`` (``[code,
  archive(, count), primary]`` each, the first ``$categoriesFirst``) are null unless the
  variant embeds them (:data:`EMBEDS`: ``None`` not embedded, ``False`` without paper
  counts, ``True`` with them);
* a paper's lists (authors, categories, aliases, signatures, versions) are sorted and cut
  to ``$first`` by the statement, so no more of them leave the server than are shown;
* authors, categories and signers are lists (``[nameKey, name]``, ``[code, archive]``,
  ``[signerId, signerType, keyIds]``) ending with their paper count in the counted variant
  (dict key ``True``): the count is a ``COUNT`` subquery, run only when asked for;
* a statement about papers it was given by pith number (their authors, categories, aliases,
  signatures, versions, related papers) also returns each paper's ``stamp``
  (:data:`~pith_graph.api.reads.cypher_parts.STAMP`), and a paper projected ends with its
  own: read once in a WITH right after the paper is found, before anything else of it
  (:func:`~pith_graph.api.reads.cypher_parts.stamp_before`), and again last, for the reader
  to check that the statement read one state of the paper, the one the request's earlier
  statements read;
* listings and pages sort and limit *before* they project, so only the papers returned are
  read beyond their order keys (:mod:`pith_graph.api.reads.cypher_pages`; the projections are
  :mod:`pith_graph.api.reads.cypher_parts`).
"""

from __future__ import annotations

from pith_graph.api.reads.cypher_pages import (
    LISTING_CHECKS,
    READ_AUTHOR_FIRST_PAGES,
    READ_AUTHOR_PAGES,
    READ_COUNT_ALL_PAPERS,
    READ_LIST_PAPERS,
    READ_LIST_PAPERS_OLDEST,
    READ_PAPERS_OF_AUTHORS,
    READ_PAPERS_OF_AUTHORS_OLDEST,
    READ_PAPERS_OF_CATEGORIES,
    READ_PAPERS_OF_CATEGORIES_OLDEST,
    READ_PAPERS_OF_SIGNERS,
    READ_PAPERS_OF_SIGNERS_BY_BUNDLE,
    READ_PAPERS_OF_SIGNERS_BY_BUNDLE_OLDEST,
    READ_PAPERS_OF_SIGNERS_OLDEST,
    list_papers_statement,
    papers_of_statement,
)
from pith_graph.api.reads.cypher_parts import (
    COUNTS,
    EMBEDS,
    STAMP,
    Embed,
    author_row,
    category_links,
    category_row,
    paper_row,
    signer_row,
    stamp_before,
)
from pith_graph.api.reads.cypher_ranked import (
    READ_CO_LISTED_AFTER,
    READ_COAUTHORS_AFTER,
    READ_RELATED_PAPERS_AFTER,
    READ_TOP_AUTHORS_AFTER,
)

__all__ = [
    "EMBEDS",
    "LISTING_CHECKS",
    "READ_ALIASES_OF_PAPERS",
    "READ_ALL_CATEGORIES",
    "READ_AUTHORS",
    "READ_AUTHOR_CATEGORIES",
    "READ_AUTHOR_FIRST_PAGES",
    "READ_AUTHOR_NAMES_OF_PAPERS",
    "READ_AUTHOR_PAGES",
    "READ_CATEGORIES",
    "READ_CATEGORIES_OF_PAPERS",
    "READ_COAUTHORS",
    "READ_COAUTHORS_AFTER",
    "READ_COLLABORATION_PATH",
    "READ_COUNT_ALL_PAPERS",
    "READ_CO_LISTED",
    "READ_CO_LISTED_AFTER",
    "READ_LIST_PAPERS",
    "READ_LIST_PAPERS_OLDEST",
    "READ_NAME_FORMS",
    "READ_PAPERS",
    "READ_PAPERS_BY_IDENTIFIERS",
    "READ_PAPERS_OF_AUTHORS",
    "READ_PAPERS_OF_AUTHORS_OLDEST",
    "READ_PAPERS_OF_CATEGORIES",
    "READ_PAPERS_OF_CATEGORIES_OLDEST",
    "READ_PAPERS_OF_SIGNERS",
    "READ_PAPERS_OF_SIGNERS_BY_BUNDLE",
    "READ_PAPERS_OF_SIGNERS_BY_BUNDLE_OLDEST",
    "READ_PAPERS_OF_SIGNERS_OLDEST",
    "READ_RELATED_PAPERS",
    "READ_RELATED_PAPERS_AFTER",
    "READ_RESOLVE_IDENTIFIERS",
    "READ_SIGNATURES_OF_PAPERS",
    "READ_SIGNERS",
    "READ_TOP_AUTHORS",
    "READ_TOP_AUTHORS_AFTER",
    "READ_VERSIONS_OF_PAPERS",
    "Embed",
    "list_papers_statement",
    "papers_of_statement",
]

# Used by :class:`pith_graph.api.reads.neo4j.Neo4jReader`. Every statement serves a whole batch
# (``UNWIND $keys AS key``) and returns one row per key found; orderings and tie-breaks are
# the ones :mod:`pith_graph.api.reads.reader` defines. Pages ask for ``$limit`` = first + 1 rows
# after the keyset position ``($afterAt, $afterPith)`` (both null for the first page).

# -- papers by key --------------------------------------------------------------------------

READ_PAPERS = {
    embed: f"""
UNWIND $keys AS key
MATCH (p:Paper {{pithNumber: key}})
WITH key, {stamp_before("p")}
RETURN key, {paper_row("p", embed)} AS paper
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
# Each key's papers are chosen on their signing key alone (``$ranks``: rank by key id, a key
# not in it ranks ``$unranked``): only those of its highest-ranked signer are read whole, so
# however many papers a lower-ranked signer has claim an identifier, they cost a property each.
READ_PAPERS_BY_IDENTIFIERS = {
    embed: f"{_NAMED}WITH key, p, coalesce($ranks[p.bundleKeyId], $unranked) AS rank\n"
    "WITH key, min(rank) AS best, collect([rank, p]) AS found\n"
    "UNWIND [f IN found WHERE f[0] = best | f[1]] AS p\n"
    f"WITH key, {stamp_before('p')}\n"
    f"RETURN key.kind AS kind, key.value AS value, collect({paper_row('p', embed)}) AS papers\n"
    for embed in EMBEDS
}

READ_VERSIONS_OF_PAPERS = {
    embed: f"""
UNWIND $keys AS key
MATCH (p:Paper {{pithNumber: key}})
WITH key, {stamp_before("p")}
RETURN key, COLLECT {{
  MATCH (v:Paper)
  WHERE v.sourceId = p.sourceId AND v.sourceVersion IS NOT NULL
    AND v.sourceKind = p.sourceKind AND v <> p
  WITH v ORDER BY v.sourceVersion, v.pithNumber LIMIT $first
  WITH {stamp_before("v")}
  RETURN {paper_row("v", embed)}
}} AS versions, {STAMP} AS stamp
"""
    for embed in EMBEDS
}

READ_RELATED_PAPERS = {
    embed: f"""
UNWIND $keys AS key
MATCH (p:Paper {{pithNumber: key}})
WITH key, {stamp_before("p")}
CALL (p) {{
  MATCH (p)<-[:AUTHORED]-(:Author)-[:AUTHORED]->(q:Paper)
  WHERE NOT (q.sourceKind = p.sourceKind AND q.sourceId = p.sourceId)
  WITH q, count(*) AS shared
  ORDER BY shared DESC, q.submittedAt DESC, q.pithNumber DESC
  LIMIT $first
  WITH shared, {stamp_before("q")}
  RETURN collect([{paper_row("q", embed)}, shared]) AS related
}}
RETURN key, related, {STAMP} AS stamp
"""
    for embed in EMBEDS
}


# -- relations of papers --------------------------------------------------------------------

# A paper's categories, aliases and signatures: the first ``$first`` of each paper in their
# order, sorted and cut by the server on stored properties (code-point order, as Python's).

READ_CATEGORIES_OF_PAPERS = {
    counts: f"""
UNWIND $keys AS key
MATCH (p:Paper {{pithNumber: key}})
WITH key, {stamp_before("p")}
RETURN key, {category_links("p", counts, "$first")} AS links, {STAMP} AS stamp
"""
    for counts in COUNTS
}

READ_AUTHOR_NAMES_OF_PAPERS = f"""
UNWIND $keys AS key
MATCH (p:Paper {{pithNumber: key}})
WITH key, {stamp_before("p")}
RETURN key, coalesce(p.authorNames[..$first], COLLECT {{
  MATCH (p)<-[:AUTHORED]-(a:Author)
  WITH a ORDER BY a.name, a.nameKey LIMIT $first
  RETURN a.name
}}) AS names, {STAMP} AS stamp
"""

READ_ALIASES_OF_PAPERS = f"""
UNWIND $keys AS key
MATCH (p:Paper {{pithNumber: key}})
WITH key, {stamp_before("p")}
RETURN key, COLLECT {{
  MATCH (p)<-[:IDENTIFIES]-(a:Alias)
  WITH a ORDER BY a.kind, a.value LIMIT $first
  RETURN [a.kind, a.value]
}} AS aliases, {STAMP} AS stamp
"""

READ_SIGNATURES_OF_PAPERS = {
    counts: f"""
UNWIND $keys AS key
MATCH (p:Paper {{pithNumber: key}})
WITH key, {stamp_before("p")}
RETURN key, COLLECT {{
  MATCH (p)<-[r:SIGNED]-(s:Signer)
  WITH r, s ORDER BY s.signerId LIMIT $first
  RETURN [{signer_row("s", counts)}, r.keyIds, coalesce(r.eventTypes, []), r.signedBundle]
}} AS signatures, {STAMP} AS stamp
"""
    for counts in COUNTS
}

# -- authors --------------------------------------------------------------------------------

READ_AUTHORS = {
    counts: f"""
UNWIND $keys AS key
MATCH (a:Author {{nameKey: key}})
RETURN key, {author_row("a", counts)} AS author
"""
    for counts in COUNTS
}

#: Each list property read once, and cut to the first ones shown before they are paired: an
#: index into ``a.nameForms`` reads the whole list again (thousands of spellings, which one
#: signer's papers can give an author, took seconds per author).
READ_NAME_FORMS = """
UNWIND $keys AS key
MATCH (a:Author {nameKey: key})
WITH key, a, a.nameForms[..$first] AS forms, a.nameFormCounts[..$first] AS counts
RETURN key, CASE WHEN forms IS NULL THEN [[a.name, COUNT { (a)-[:AUTHORED]->() }]]
  ELSE [i IN range(0, size(forms) - 1) | [forms[i], counts[i]]] END AS forms
"""

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
  RETURN collect([{author_row("c", counts)}, shared]) AS coauthors
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
RETURN key, collect([{category_row("c", counts)}, papers]) AS categories
"""
    for counts in COUNTS
}

# -- categories -----------------------------------------------------------------------------

READ_CATEGORIES = {
    counts: f"""
UNWIND $keys AS key
MATCH (c:Category {{code: key}})
RETURN key, {category_row("c", counts)} AS category
"""
    for counts in COUNTS
}

READ_ALL_CATEGORIES = {
    counts: f"""
MATCH (c:Category)
RETURN {category_row("c", counts)} AS category
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
  RETURN collect([{author_row("a", counts)}, papers]) AS authors
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
  RETURN collect([{category_row("o", counts)}, papers]) AS categories
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
RETURN key, {signer_row("s", counts)} AS signer
"""
    for counts in COUNTS
}

#: Up to ``$most`` key ids, sorted, that the graph's signers used and ``$pinned`` lacks
#: (``serve``'s warning that their papers are served unranked).
READ_UNPINNED_KEY_IDS = """
MATCH (s:Signer) WHERE s.signerId IS NOT NULL
UNWIND s.keyIds AS keyId
WITH DISTINCT keyId WHERE NOT keyId IN $pinned
RETURN keyId ORDER BY keyId LIMIT $most
"""
#: Which of ``$keys`` the graph's signers used, sorted (``serve``'s warning of revoked keys).
READ_USED_KEY_IDS = """
MATCH (s:Signer) WHERE s.signerId IS NOT NULL
UNWIND s.keyIds AS keyId
WITH DISTINCT keyId WHERE keyId IN $keys
RETURN keyId ORDER BY keyId
"""
#: A paper written before ``Paper.isLatest`` (0.9.4), if any: ``serve``'s warning that
#: ``latestVersions`` leaves it out until ``pith-graph schema`` (one read of the
#: ``(sourceId, sourceVersion)`` index when there is none, as the upgrade's own).
READ_OUTDATED_PAPER = """
MATCH (p:Paper) WHERE p.sourceId >= '' AND p.sourceVersion IS NOT NULL AND p.isLatest IS NULL
RETURN p.pithNumber LIMIT 1
"""


def _collaboration_path(hops: int, counts: bool) -> str:
    """The shortest chains of at most ``hops`` papers, smallest key sequence first."""
    return f"""
MATCH (a:Author {{nameKey: $source}}), (b:Author {{nameKey: $target}})
MATCH path = allShortestPaths((a)-[:AUTHORED*..{2 * hops}]-(b))
WITH path, [n IN nodes(path) | coalesce(n.nameKey, n.pithNumber)] AS keys
ORDER BY keys
LIMIT 1
RETURN [n IN nodes(path) WHERE n:Author | {author_row("n", counts)}] AS authors,
       [n IN nodes(path) WHERE n:Paper | {paper_row("n", found=False)}] AS papers
"""


#: (maxHops, counts) -> statement (variable-length bounds cannot be parameters: one per value).
READ_COLLABORATION_PATH = {
    (hops, counts): _collaboration_path(hops, counts) for hops in range(1, 7) for counts in COUNTS
}
