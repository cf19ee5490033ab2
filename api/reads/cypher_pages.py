"""Newest-first pages and listings: the papers of an author, a category or a signer, and
``papers(filter:)``, sorted and limited before they are projected (each also oldest first:
``orderBy: OLDEST``, the index read forwards); and a paper's authors, a page at a time.

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

from functools import cache, lru_cache

from pith_graph.api.reads.cypher_parts import (
    AFTER,
    AFTER_OLDEST,
    ALL_OTHERS,
    COUNTS,
    EMBEDS,
    FILTER_CHECKS,
    IN_CATEGORIES,
    KEYED,
    NEWEST_BOUND,
    NEWEST_FIRST,
    OLDEST_BOUND,
    OLDEST_FIRST,
    RAREST_AUTHOR,
    STAMP,
    STATEMENTS_KEPT,
    Embed,
    author_page,
    paper_row,
    stamp_before,
)

__all__ = [
    "KEYED_PAGES",
    "LISTING_CHECKS",
    "LISTING_STARTS",
    "READ_AUTHOR_FIRST_PAGES",
    "READ_AUTHOR_PAGES",
    "READ_COUNT_ALL_PAPERS",
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
    "list_papers_statement",
    "papers_of_statement",
]


#: order -> (after the cursor, sort and limit, the index range's bound from the cursor, its
#: comparison, the bound of an empty range, the bound's name): newest first reads the
#: submittedAt index backwards from above every value, oldest first forwards from below.
_ORDERS = {
    "newest": (AFTER, NEWEST_FIRST, NEWEST_BOUND, "<=", "''", "newest"),
    "oldest": (AFTER_OLDEST, OLDEST_FIRST, OLDEST_BOUND, ">=", "'\\uffff'", "oldest"),
}
#: order -> the bound of the whole range (no cursor).
_WHOLE = {"newest": "'\\uffff'", "oldest": "''"}


def _page_of(start: str, step: str, member: str, embed: Embed, order: str, after: bool) -> str:
    """A newest-first (or ``oldest``-first) page of the papers ``step`` reaches from the
    ``start`` node ``n`` of each key: by its edges, or in that order on the index keeping its
    papers (``member``); after the cursor only when there is one (``after``)."""
    cursor, sort, bound, compare, empty, name = _ORDERS[order]
    if not after:
        cursor, bound = "true", _WHOLE[order]
    return f"""
UNWIND $keys AS key
MATCH {start}
WITH key, n, COUNT {{ {step.replace("(p:Paper)", "()")} }} AS size, COUNT {{ (:Paper) }} AS papers
CALL (n, size, papers) {{
  WITH n, CASE WHEN size * size > $limit * papers THEN {bound} ELSE {empty} END AS {name}
  MATCH (p:Paper)
  WHERE p.submittedAt {compare} {name} AND {cursor} AND {member}
  WITH p {sort}
  RETURN p
  UNION
  WITH n WHERE size * size <= $limit * papers
  MATCH {step}
  WHERE {cursor}
  WITH p {sort}
  RETURN p
}}
WITH key, n, {stamp_before("p")}
RETURN key, collect({paper_row("p", embed, member=f"EXISTS {{ {member} }}")}) AS papers
"""


#: page -> (its node ``n`` by ``key``, the papers it reaches, how a paper is one of them).
KEYED_PAGES = {
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


@cache
def papers_of_statement(page: str, embed: Embed, order: str, after: bool) -> str:
    """A page of the papers of each key (``page``: one of :data:`KEYED_PAGES`) in ``order``,
    after the cursor ``$afterAt``, ``$afterPith`` only when there is one (``after``, since
    0.9.14: a condition switched off by a null cursor had Neo4j plan the statement again for
    the second page)."""
    return _page_of(*KEYED_PAGES[page], embed, order, after)


def _pages_of(page: str, order: str = "newest") -> dict[Embed, str]:
    return {e: papers_of_statement(page, e, order, True) for e in EMBEDS}


#: embed -> the statement of a later page (with a cursor): what the tests plan and a reader
#: plans ahead (``neo4j_base.WARM_UP``); a first page runs :func:`papers_of_statement`'s
#: without the cursor.
READ_PAPERS_OF_AUTHORS = _pages_of("authors")
READ_PAPERS_OF_CATEGORIES = _pages_of("categories")
READ_PAPERS_OF_SIGNERS = _pages_of("signers")
READ_PAPERS_OF_SIGNERS_BY_BUNDLE = _pages_of("signers_by_bundle")
#: The same, oldest first (their ``papers(orderBy: OLDEST)``, since 0.9.3).
READ_PAPERS_OF_AUTHORS_OLDEST = _pages_of("authors", "oldest")
READ_PAPERS_OF_CATEGORIES_OLDEST = _pages_of("categories", "oldest")
READ_PAPERS_OF_SIGNERS_OLDEST = _pages_of("signers", "oldest")
READ_PAPERS_OF_SIGNERS_BY_BUNDLE_OLDEST = _pages_of("signers_by_bundle", "oldest")

# -- a paper's authors, a page at a time ---------------------------------------------------

#: Where ``$after`` stands: the author it names, else ``$anchor``, the key as a name up to
#: where a parameter could compare unlike code points (see
#: :func:`~pith_graph.api.reads.author_page.unknown_position`); null: from the first author.
#: Neo4j compares two stored strings by code point, a stored string with a parameter by UTF-16
#: code unit, so the position is the stored author's own name and key when there is one.
_AFTER_AUTHOR = "afterName IS NULL OR _a.name > afterName OR (_a.name = afterName AND _a.nameKey > afterKey)"


_AUTHOR_POSITION = """OPTIONAL MATCH (x:Author {nameKey: $after})
WITH coalesce(x.name, $anchor) AS afterName, coalesce(x.nameKey, $anchor) AS afterKey
"""


def _author_pages(counts: bool, after: bool) -> str:
    """A page of each paper's authors after ``$after``, or the first (since 0.9.14 without
    the position: a null ``$after`` had Neo4j plan the statement again for a later page)."""
    return f"""
{_AUTHOR_POSITION if after else ""}UNWIND $keys AS key
MATCH (p:Paper {{pithNumber: key}})
WITH {"afterName, afterKey, " if after else ""}key, {stamp_before("p")}
RETURN key, {author_page("p", counts, "$first", _AFTER_AUTHOR if after else "")} AS page, {STAMP} AS stamp
"""


READ_AUTHOR_PAGES = {counts: _author_pages(counts, True) for counts in COUNTS}
READ_AUTHOR_FIRST_PAGES = {counts: _author_pages(counts, False) for counts in COUNTS}


# -- listings -------------------------------------------------------------------------------

#: The filters a listing checks on each paper by its edges; checked again as each paper of a
#: page is read (the page chose its papers before, by edges a load may have changed since).
_EDGE_CHECKS = ("category", "archive", "author", "authors", "categories", "excluded")
#: Every filter ``papers(filter:)`` can check (:data:`FILTER_CHECKS` but a signer's).
LISTING_CHECKS = frozenset(FILTER_CHECKS) - {"signer", "signedBundle"}


def _checked(start: str, checks: frozenset[str]) -> list[str]:
    """The filters of ``checks`` but the one the starting point already guarantees
    (``authors``: the rarest author's papers, each checked for the ``others``)."""
    found = [FILTER_CHECKS[name] for name in sorted(checks - {start})]
    return [*found, ALL_OTHERS] if start == "authors" else found


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
#: The starting points of a listing, from the most selective filter given ("title": its
#: words, by the title's full-text index; "all": no filter that has edges or words).
LISTING_STARTS = ("title", "author", "authors", "category", "categories", "archive", "all")


#: start -> when its listing scans the submittedAt index rather than walk its start's papers,
#: where that is not when the start holds a large share of the papers (see _page_of). Several
#: authors: when the papers they all share, estimated as the rarest one's times each other's
#: share of all papers, are a large share of the rarest one's, i.e. when ``size`` times that
#: estimate is above ``$limit`` times the papers (the rarest one's size alone would have two
#: prolific authors who wrote few papers together scan the whole index for a page of none). A
#: pair who write together often is estimated low, so walked: bounded by the rarest one's papers.
_SCAN_WHEN = {"authors": "size * size * shared > $limit * papers ^ (size(others) + 1)"}


@lru_cache(maxsize=STATEMENTS_KEPT)
def list_papers_statement(start: str, embed: Embed, order: str, checks: frozenset[str], after: bool) -> str:
    """One page of ``papers(filter:)`` (``paper`` rows, in ``order``: sorted and limited
    first, then projected) from ``start`` (one of :data:`LISTING_STARTS`), checking only the
    filters ``checks`` (of :data:`LISTING_CHECKS`; those switched off are not in the
    statement, nor are their parameters), after the cursor ``$afterAt``, ``$afterPith`` only
    when there is one (``after``). Before 0.9.14 one statement per start held every filter,
    each switched off by a null parameter: its checks cost subqueries, and Neo4j planned it
    anew (0.7–1.1 s on two cores) for each mix of null and non-null parameters."""
    cursor, sort, bound, compare, empty, name = _ORDERS[order]
    if not after:
        bound = _WHOLE[order]
    edges = " AND ".join(FILTER_CHECKS[check] for check in _EDGE_CHECKS if check in checks)
    row = paper_row("p", embed, member=edges or None)
    project = f"WITH {stamp_before('p')}\nRETURN {row} AS paper\n"
    conditions = [cursor, *_checked(start, checks)] if after else _checked(start, checks)
    where = "\n  AND ".join(conditions) or "true"
    if start == "title":
        match = "CALL db.index.fulltext.queryNodes($titleIndex, $titleLucene) YIELD node AS p WITH p"
        return f"{match}\nWHERE {KEYED} AND {where}\nWITH p {sort}\n{project}"
    scan = f"MATCH (p:Paper)\nWHERE p.submittedAt {compare} {{bound}} AND {KEYED} AND {{where}}"
    if start == "all":
        return f"{scan.format(bound=bound, where=where)}\nWITH p {sort}\n{project}"
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
  {scan.format(bound=name, where=f"{member} AND {where}")}
  WITH p {sort}
  RETURN p
  UNION
  WITH {carried} WHERE NOT ({scans})
  {walk}
  WHERE {where}
  WITH p {sort}
  RETURN p
}}
WITH p {sort}
{project}"""


#: (start, embed) -> each start's statement with every filter and a cursor, newest first:
#: what the tests plan (it has every subquery a listing of its start can have) and what a
#: reader plans ahead (``neo4j_base.WARM_UP``). A listing runs the one of its own filters.
READ_LIST_PAPERS = {
    (start, embed): list_papers_statement(start, embed, "newest", LISTING_CHECKS, True)
    for start in LISTING_STARTS
    for embed in EMBEDS
}
#: The same, oldest first (``papers(orderBy: OLDEST)``).
READ_LIST_PAPERS_OLDEST = {
    (start, embed): list_papers_statement(start, embed, "oldest", LISTING_CHECKS, True)
    for start in LISTING_STARTS
    for embed in EMBEDS
}
#: Every node labelled Paper, from the count store: one read, where counting those with their
#: key reads the key's index, 150–530 ms at 2.5M papers against 6–12 ms. So an analyst's stub
#: (a ``:Paper`` without ``pithNumber``) is counted here, and only here (README "Your own
#: nodes"). The planners' ``COUNT { (:Paper) }`` above also keep the count store: a stub only
#: moves where a page chooses its way, not what it answers. A filtered listing is counted by
#: ``cypher_discovery.count_statement``.
READ_COUNT_ALL_PAPERS = "MATCH (p:Paper) RETURN count(p) AS n"
