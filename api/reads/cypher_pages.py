"""Newest-first pages and listings: the papers of an author, a category or a signer, and
``papers(filter:)``, sorted and limited before they are projected (each also oldest first:
``orderBy: OLDEST``, the index read forwards).

Each reads its papers the cheaper of two ways. A node holding few papers has them all read
(by its edges) and sorted; one holding a large share of all papers (its degree squared above
``$limit`` times the number of papers: about where the two costs cross) has the papers scanned
newest first on the ``submittedAt`` index until the page is full of its own — a page of a
12,000-paper category reads about 80 papers, not 12,000. Both ways are in every statement;
the unused one reads nothing (its range is empty, or its row is filtered out first).

Each paper a page returns ends with whether it still belongs there, its edges read between
its stamps (``cypher_parts.paper_row``'s ``member``): the page was chosen before.
"""

from __future__ import annotations

from pith_graph.api.reads.cypher_parts import (
    AFTER,
    AFTER_OLDEST,
    ALL_OTHERS,
    BY_ALL_AUTHORS,
    EMBEDS,
    IN_CATEGORIES,
    KEYED,
    LATEST,
    NEWEST_BOUND,
    NEWEST_FIRST,
    OLDEST_BOUND,
    OLDEST_FIRST,
    RAREST_AUTHOR,
    Embed,
    paper_row,
    stamp_before,
)

__all__ = [
    "READ_COUNT_ALL_PAPERS",
    "READ_COUNT_PAPERS",
    "READ_LIST_PAPERS",
    "READ_LIST_PAPERS_OLDEST",
    "READ_PAPERS_OF_AUTHORS",
    "READ_PAPERS_OF_AUTHORS_OLDEST",
    "READ_PAPERS_OF_CATEGORIES",
    "READ_PAPERS_OF_CATEGORIES_OLDEST",
    "READ_PAPERS_OF_SIGNERS",
    "READ_PAPERS_OF_SIGNERS_BY_BUNDLE",
    "READ_PAPERS_OF_SIGNERS_BY_BUNDLE_OLDEST",
    "READ_PAPERS_OF_SIGNERS_OLDEST",
]


#: order -> (after the cursor, sort and limit, the index range's bound from the cursor, its
#: comparison, the bound of an empty range, the bound's name): newest first reads the
#: submittedAt index backwards from above every value, oldest first forwards from below.
_ORDERS = {
    "newest": (AFTER, NEWEST_FIRST, NEWEST_BOUND, "<=", "''", "newest"),
    "oldest": (AFTER_OLDEST, OLDEST_FIRST, OLDEST_BOUND, ">=", "'\\uffff'", "oldest"),
}


def _page_of(start: str, step: str, member: str, embed: Embed, order: str = "newest") -> str:
    """A newest-first (or ``oldest``-first) page of the papers ``step`` reaches from the
    ``start`` node ``n`` of each key: by its edges, or in that order on the index keeping its
    papers (``member``)."""
    after, sort, bound, compare, empty, name = _ORDERS[order]
    return f"""
UNWIND $keys AS key
MATCH {start}
WITH key, n, COUNT {{ {step.replace("(p:Paper)", "()")} }} AS size, COUNT {{ (:Paper) }} AS papers
CALL (n, size, papers) {{
  WITH n, CASE WHEN size * size > $limit * papers THEN {bound} ELSE {empty} END AS {name}
  MATCH (p:Paper)
  WHERE p.submittedAt {compare} {name} AND {after} AND {member}
  WITH p {sort}
  RETURN p
  UNION
  WITH n WHERE size * size <= $limit * papers
  MATCH {step}
  WHERE {after}
  WITH p {sort}
  RETURN p
}}
WITH key, n, {stamp_before("p")}
RETURN key, collect({paper_row("p", embed, member=f"EXISTS {{ {member} }}")}) AS papers
"""


#: page -> (its node ``n`` by ``key``, the papers it reaches, how a paper is one of them).
_KEYED_PAGES = {
    "authors": ("(n:Author {nameKey: key})", "(n)-[:AUTHORED]->(p:Paper)", "(n)-[:AUTHORED]->(p)"),
    "categories": ("(n:Category {code: key})", "(n)<-[:IN_CATEGORY]-(p:Paper)", "(p)-[:IN_CATEGORY]->(n)"),
    "signers": ("(n:Signer {signerId: key})", "(n)-[:SIGNED]->(p:Paper)", "(n)-[:SIGNED]->(p)"),
    # The papers whose SIGNED edge from the signer has ``signedBundle = $signedBundle``; its
    # size (which way a page is read) counts those edges, reading each of the signer's.
    "signers_by_bundle": (
        "(n:Signer {signerId: key})",
        "(n)-[:SIGNED {signedBundle: $signedBundle}]->(p:Paper)",
        "(n)-[:SIGNED {signedBundle: $signedBundle}]->(p)",
    ),
}


def _pages_of(page: str, order: str = "newest") -> dict[Embed, str]:
    return {e: _page_of(*_KEYED_PAGES[page], e, order) for e in EMBEDS}


READ_PAPERS_OF_AUTHORS = _pages_of("authors")
READ_PAPERS_OF_CATEGORIES = _pages_of("categories")
READ_PAPERS_OF_SIGNERS = _pages_of("signers")
READ_PAPERS_OF_SIGNERS_BY_BUNDLE = _pages_of("signers_by_bundle")
#: The same, oldest first (their ``papers(orderBy: OLDEST)``, since 0.9.3).
READ_PAPERS_OF_AUTHORS_OLDEST = _pages_of("authors", "oldest")
READ_PAPERS_OF_CATEGORIES_OLDEST = _pages_of("categories", "oldest")
READ_PAPERS_OF_SIGNERS_OLDEST = _pages_of("signers", "oldest")
READ_PAPERS_OF_SIGNERS_BY_BUNDLE_OLDEST = _pages_of("signers_by_bundle", "oldest")

# -- listings -------------------------------------------------------------------------------

# One statement per starting point (the most selective filter given), the other filters
# checked on each paper. Null parameters switch their filter off.
_FILTERS = {
    "from": "($from IS NULL OR p.submittedAt >= $from)",
    "before": "($before IS NULL OR p.submittedAt < $before)",
    "license": "($license IS NULL OR p.license = $license)",
    "category": "($category IS NULL OR EXISTS { (p)-[:IN_CATEGORY]->(:Category {code: $category}) })",
    "archive": "($archive IS NULL OR EXISTS { (p)-[:IN_CATEGORY]->(:Category {archive: $archive}) })",
    "author": "($author IS NULL OR EXISTS { (p)<-[:AUTHORED]-(:Author {nameKey: $author}) })",
    "authors": f"($authors IS NULL OR {BY_ALL_AUTHORS})",
    "categories": f"($categories IS NULL OR {IN_CATEGORIES})",
    "excluded": f"($excluded IS NULL OR NOT {IN_CATEGORIES.replace('$categories', '$excluded')})",
    "latest": f"(NOT $latest OR {LATEST})",
}


def _filter(start: str) -> str:
    """Every filter but the one the starting point already guarantees (``authors``: the
    rarest author's papers, each checked for the ``others``)."""
    checks = [check for name, check in _FILTERS.items() if name != start]
    return "\n  AND ".join([*checks, ALL_OTHERS] if start == "authors" else checks)


# start -> (its node ``n``, the papers it reaches, how a paper is one of them). Like pages,
# a start holding a large share of the papers scans them newest first on the submittedAt
# index (see _page_of); the start's size is its papers' degree (an archive's: its categories').
_STARTS = {
    "author": ("(n:Author {nameKey: $author})", "(n)-[:AUTHORED]->(p:Paper)", "(n)-[:AUTHORED]->(p)"),
    "category": (
        "(n:Category {code: $category})",
        "(n)<-[:IN_CATEGORY]-(p:Paper)",
        "(p)-[:IN_CATEGORY]->(n)",
    ),
    "authors": (RAREST_AUTHOR, "(n)-[:AUTHORED]->(p:Paper)", "(n)-[:AUTHORED]->(p)"),
}


#: The filters a paper meets by its edges, checked again as each paper of a page is read.
_EDGE_FILTERS = " AND ".join(
    _FILTERS[name] for name in ("category", "archive", "author", "authors", "categories", "excluded")
)
#: start -> (its categories ``n``, the papers they reach, a paper one of them): those that
#: reach papers through several categories, so their size is their categories' degrees.
_CATEGORY_SETS = {
    "archive": (
        "(n:Category {archive: $archive})",
        "MATCH (:Category {archive: $archive})<-[:IN_CATEGORY]-(p:Paper) WITH DISTINCT p",
        "EXISTS { (p)-[:IN_CATEGORY]->(:Category {archive: $archive}) }",
    ),
    "categories": (
        "(n:Category) WHERE n.code IN $categories",
        "MATCH (c:Category)<-[:IN_CATEGORY]-(p:Paper) WHERE c.code IN $categories WITH DISTINCT p",
        IN_CATEGORIES,
    ),
}


#: start -> when its listing scans the submittedAt index rather than walk its start's papers,
#: where that is not when the start holds a large share of the papers (see _page_of). Several
#: authors: when the papers they all share, estimated as the rarest one's times each other's
#: share of all papers, are a large share of the rarest one's, i.e. when ``size`` times that
#: estimate is above ``$limit`` times the papers (the rarest one's size alone would have two
#: prolific authors who wrote few papers together scan the whole index for a page of none). A
#: pair who write together often is estimated low, so walked: bounded by the rarest one's papers.
_SCAN_WHEN = {"authors": "size * size * shared > $limit * papers ^ (size(others) + 1)"}


def _listing(start: str, embed: Embed, order: str = "newest") -> str:
    after, sort, bound, compare, empty, name = _ORDERS[order]
    row = paper_row("p", embed, member=_EDGE_FILTERS)
    project = f"WITH {stamp_before('p')}\nRETURN {row} AS paper\n"
    checks = f"{after}\n  AND {_filter(start)}"
    if start == "title":
        match = "CALL db.index.fulltext.queryNodes($index, $lucene) YIELD node AS p WITH p"
        return f"{match}\nWHERE {KEYED} AND {checks}\nWITH p {sort}\n{project}"
    scan = f"MATCH (p:Paper)\nWHERE p.submittedAt {compare} {{bound}} AND {KEYED} AND {{checks}}"
    if start == "all":
        return f"{scan.format(bound=bound, checks=checks)}\nWITH p {sort}\n{project}"
    if start in _CATEGORY_SETS:
        found, walk, member = _CATEGORY_SETS[start]
        node = f"MATCH {found} WITH sum(COUNT {{ (n)<-[:IN_CATEGORY]-() }}) AS size"
        carried = "size, papers"
    else:
        found, step, member = _STARTS[start]
        node = f"MATCH {found} WITH n, COUNT {{ {step.replace('(p:Paper)', '()')} }} AS size"
        walk = f"MATCH {step}"
        carried = "n, size, papers"
        if start == "authors":  # the rarest author, its size and the others
            node, carried = found, "n, others, shared, size, papers"
    scans = _SCAN_WHEN.get(start, "size * size > $limit * papers")
    return f"""{node}, COUNT {{ (:Paper) }} AS papers
CALL ({carried}) {{
  WITH {carried}, CASE WHEN {scans} THEN {bound} ELSE {empty} END AS {name}
  {scan.format(bound=name, checks=f"{member} AND {checks}")}
  WITH p {sort}
  RETURN p
  UNION
  WITH {carried} WHERE NOT ({scans})
  {walk}
  WHERE {checks}
  WITH p {sort}
  RETURN p
}}
WITH p {sort}
{project}"""


_MATCHES = {
    "title": "CALL db.index.fulltext.queryNodes($index, $lucene) YIELD node AS p WITH p",
    "author": "MATCH (:Author {nameKey: $author})-[:AUTHORED]->(p:Paper) WITH p",
    "authors": f"{RAREST_AUTHOR}\nMATCH (n)-[:AUTHORED]->(p:Paper) WITH p, others",
    "category": "MATCH (:Category {code: $category})<-[:IN_CATEGORY]-(p:Paper) WITH p",
    "categories": _CATEGORY_SETS["categories"][1],
    "archive": _CATEGORY_SETS["archive"][1],
    "all": "MATCH (p:Paper) WITH p",
}
#: (start, embed) -> statement returning one page (``paper`` rows, newest first): sorted and
#: limited first, then projected.
READ_LIST_PAPERS = {(start, embed): _listing(start, embed) for start in _MATCHES for embed in EMBEDS}
#: The same, oldest first (``papers(orderBy: OLDEST)``).
READ_LIST_PAPERS_OLDEST = {
    (start, embed): _listing(start, embed, "oldest") for start in _MATCHES for embed in EMBEDS
}
#: The starts that find papers by their label or a full-text index: they check the key.
_UNKEYED = ("title", "all")
#: start -> statement counting the papers (one ``n`` row).
READ_COUNT_PAPERS = {
    start: f"{match}\nWHERE {f'{KEYED} AND ' if start in _UNKEYED else ''}{_filter(start)}\nRETURN count(p) AS n\n"
    for start, match in _MATCHES.items()
}
#: Every node labelled Paper, from the count store: one read, where counting those with their
#: key reads the key's index, 150–530 ms at 2.5M papers against 6–12 ms. So an analyst's stub
#: (a ``:Paper`` without ``pithNumber``) is counted here, and only here (README "Your own
#: nodes"). The planners' ``COUNT { (:Paper) }`` above also keep the count store: a stub only
#: moves where a page chooses its way, not what it answers.
READ_COUNT_ALL_PAPERS = "MATCH (p:Paper) RETURN count(p) AS n"
