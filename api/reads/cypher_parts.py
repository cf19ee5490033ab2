"""What the read statements share: how a paper, an author, a category or a signer is
projected (lists, see :mod:`pith_graph.api.reads.cypher`), the variants of those projections,
and the keyset condition and order of newest-first pages (and of oldest-first ones)."""

from __future__ import annotations

from itertools import product

__all__ = [
    "AFTER",
    "AFTER_OLDEST",
    "ALL_OTHERS",
    "BY_ALL_AUTHORS",
    "COUNTS",
    "EMBEDS",
    "FILTER_CHECKS",
    "IN_CATEGORIES",
    "KEYED",
    "KEYED_AUTHOR",
    "LATEST",
    "LATEST_SUBQUERY",
    "NEWEST_BOUND",
    "NEWEST_FIRST",
    "OLDEST_BOUND",
    "OLDEST_FIRST",
    "RAREST_AUTHOR",
    "STAMP",
    "STATEMENTS_KEPT",
    "Embed",
    "author_page",
    "author_row",
    "category_links",
    "category_row",
    "paper_row",
    "signer_row",
    "stamp",
    "stamp_before",
]

#: (authors, categories) embedded with each paper: None (not), False (no counts), True (counts).
Embed = tuple[bool | None, bool | None]
_FLAGS = (None, False, True)
EMBEDS: tuple[Embed, ...] = tuple(product(_FLAGS, _FLAGS))
COUNTS = (False, True)

# Which state of a paper a statement read: its winning bundle (digest and key), which every
# load that replaces the paper changes (see
# :meth:`~pith_graph.api.reads.neo4j_base.Neo4jBase.check_stamp`). A statement reads it twice:
# before anything else of the paper (:func:`stamp_before`, in a WITH of its own) and after
# (:func:`stamp`), as one load may commit between a statement's reads too: Neo4j plans the
# subqueries of a projection (a paper's authors, categories, aliases) before its properties.
# The second read takes the properties by a variable name, which Neo4j cannot answer from the
# first (it caches a property read by its name: ``p.bundleSha256`` again is the value read
# before).


def stamp_before(v: str) -> str:
    """``v`` and its stamp, read now: for the WITH right after the paper ``v`` is found."""
    return f"{v}, [{v}.bundleSha256, {v}.bundleKeyId] AS _{v}Before"


def stamp(v: str, found: bool = True) -> str:
    """``[before, after]``: the paper ``v``'s stamp read by :func:`stamp_before` and again
    now, at the end of the projection it ends. Not ``found`` with :func:`stamp_before` (a
    paper on a path), both are read now, with its properties."""
    before = f"_{v}Before" if found else f"[{v}.bundleSha256, {v}.bundleKeyId]"
    return f"[{before}, [_s IN ['bundleSha256', 'bundleKeyId'] | {v}[_s]]]"


#: The stamps of the paper ``p`` (:func:`stamp`).
STAMP = stamp("p")


def author_row(v: str, counts: bool) -> str:
    count = f", COUNT {{ ({v})-[:AUTHORED]->() }}" if counts else ""
    return f"[{v}.nameKey, {v}.name{count}]"


def author_page(p: str, counts: bool, first: str, where: str = "") -> str:
    """``[count, authors]``: how many authors the paper ``p`` has, and the ``first`` of them
    (in their order, after ``where``) as :func:`author_row` lists. Neo4j compares stored
    strings by code point, as Python does, so it sorts and cuts the page itself: only the
    page leaves the server."""
    where = f" WHERE {where}" if where else ""
    return (
        f"[COUNT {{ ({p})<-[:AUTHORED]-(:Author) }}, COLLECT {{ MATCH ({p})<-[:AUTHORED]-(_a:Author){where}"
        f" WITH _a ORDER BY _a.name, _a.nameKey LIMIT {first} RETURN {author_row('_a', counts)} }}]"
    )


def category_row(v: str, counts: bool) -> str:
    count = f", COUNT {{ ({v})<-[:IN_CATEGORY]-() }}" if counts else ""
    return f"[{v}.code, {v}.archive{count}]"


def category_links(p: str, counts: bool, first: str) -> str:
    """The first ``first`` categories of the paper ``p``, primary first, then by code, each
    ``[code, archive(, count), primary]``: sorted and cut by the server (stored properties
    only), so only those leave it."""
    link = f"{category_row('_c', counts)} + [_r.primary]"
    return (
        f"COLLECT {{ MATCH ({p})-[_r:IN_CATEGORY]->(_c:Category)"
        f" WITH _r, _c ORDER BY _r.primary DESC, _c.code LIMIT {first} RETURN {link} }}"
    )


def signer_row(v: str, counts: bool) -> str:
    count = f", COUNT {{ ({v})-[:SIGNED]->() }}" if counts else ""
    return f"[{v}.signerId, {v}.signerType, {v}.keyIds{count}]"


def paper_row(v: str, embed: Embed = (None, None), found: bool = True, member: str | None = None) -> str:
    """``[values of $props, authors or null, categories or null, stamps]`` of the paper
    ``v`` (found before, with :func:`stamp_before`); its authors as :func:`author_page`, the
    first ``$authorsFirst``; its categories as :func:`category_links`, the first
    ``$categoriesFirst``; its stamps as :func:`stamp` (``found``), the second read last;
    then, if given, whether ``member`` holds as the paper is now, between its stamps: a page
    chose its papers before it read their stamps, by edges a load may have changed since."""
    authors, categories = embed
    values = f"[_k IN $props | {v}[_k]]"
    embedded_authors = "null"
    if authors is not None:
        embedded_authors = author_page(v, authors, "$authorsFirst")
    embedded_categories = "null"
    if categories is not None:
        embedded_categories = category_links(v, categories, "$categoriesFirst")
    still = f", {member}" if member else ""
    return f"[{values}, {embedded_authors}, {embedded_categories}, {stamp(v, found)}{still}]"


AFTER = (
    "($afterAt IS NULL OR p.submittedAt < $afterAt"
    " OR (p.submittedAt = $afterAt AND p.pithNumber < $afterPith))"
)
NEWEST_FIRST = "ORDER BY p.submittedAt DESC, p.pithNumber DESC LIMIT $limit"

#: The paper ``p`` is the graph's: an analyst's node of its label without its key (a stub
#: ``(:Paper)`` of a cited work) is not. Checked wherever a read starts from the label or a
#: full-text index; a read from a key, or along the graph's edges from a keyed node, needs not.
#: Written so that no index can answer it: ``IS NOT NULL`` can be, and the planner then read
#: the key's index, every author's, in place of the ``paperCount`` index a top-N walks in order.
KEYED = "size(p.pithNumber) > 0"
#: The same for an author ``{a}`` found by its label or a full-text index.
KEYED_AUTHOR = "size({a}.nameKey) > 0"

#: Above every ``submittedAt``: an index range from the newest paper on (or after the cursor).
NEWEST_BOUND = "coalesce($afterAt, '\\uffff')"

#: The oldest-first counterparts (``papers(orderBy: OLDEST)``): strictly after the cursor in
#: ascending order, ascending, and below every ``submittedAt``, so the same range index is
#: read forwards from the oldest paper on (or from the cursor).
AFTER_OLDEST = (
    "($afterAt IS NULL OR p.submittedAt > $afterAt"
    " OR (p.submittedAt = $afterAt AND p.pithNumber > $afterPith))"
)
OLDEST_FIRST = "ORDER BY p.submittedAt, p.pithNumber LIMIT $limit"
OLDEST_BOUND = "coalesce($afterAt, '')"

#: The paper ``p`` is the newest version of its source (``latestVersions``): its ``isLatest``,
#: which every write keeps (``loader.stores.cypher.REFRESH_LATEST``): true when no paper of the
#: graph with its ``sourceKind`` and ``sourceId`` has a greater ``(sourceVersion, builtAt,
#: pithNumber)``, the order in which ``paper(id:)`` picks an arXiv id's newest version. Until
#: 0.9.4 this was a NOT EXISTS subquery per paper (an index seek each: ~17 µs a paper, so
#: counting 2.5M papers with the flag took ~40 s); a property read is one look at the node.
LATEST = "p.isLatest = true"
#: The paper ``p`` is listed in a category whose code is in the list ``$categories``
#: (``filter.categories``; with ``$excluded`` for it, negated, ``filter.excludeCategories``).
#: Each of its few category edges is read and its code compared: no index is needed.
IN_CATEGORIES = "EXISTS { (p)-[:IN_CATEGORY]->(_ic:Category) WHERE _ic.code IN $categories }"
#: The paper ``p`` has an author of every name key in the list ``$authors``
#: (``filter.allAuthors``, since 0.9.5; sorted, without repeats, and an author has one edge
#: to a paper, so as many of its authors' keys are in it as it holds): its authors read once,
#: by an operator of their own, so a statement reads them between a paper's two stamps
#: (``all(_k IN $authors WHERE EXISTS {…})`` was an expression in the last projection, beside
#: the second stamp, and read the paper's authors once per key).
BY_ALL_AUTHORS = (
    "COUNT { (p)<-[:AUTHORED]-(_byAll:Author) WHERE _byAll.nameKey IN $authors } = size($authors)"
)
#: The author with fewest papers of those whose name keys are ``$authors`` (sorted, without
#: repeats) as ``n``, how many papers it has as ``size``, the others as ``others`` (the product
#: of their sizes as ``shared``: how a page estimates the papers they share): each
#: found by the name-key index, its degree read from its node, so a listing of papers they
#: all wrote starts from the rarest one and checks the others on its papers
#: (:data:`ALL_OTHERS`). No row when one of the keys is no author's: then no paper has them
#: all. Ends in a ``WITH``.
RAREST_AUTHOR = """MATCH (a:Author) WHERE a.nameKey IN $authors
WITH a, COUNT { (a)-[:AUTHORED]->() } AS size ORDER BY size, a.nameKey
WITH collect(a) AS found, collect(size) AS sizes WHERE size(found) = size($authors)
WITH found[0] AS n, sizes[0] AS size, found[1..] AS others,
     reduce(product = 1.0, other IN sizes[1..] | product * other) AS shared"""
#: The paper ``p`` (one of the rarest author's) has every other author of
#: :data:`RAREST_AUTHOR` (nodes in hand: an edge looked for between two nodes, no index
#: seek): at 4,000 papers, 12,817 db hits to count two prolific authors' 334 papers against
#: :data:`BY_ALL_AUTHORS`' 19,781.
ALL_OTHERS = "all(_x IN others WHERE EXISTS { (_x)-[:AUTHORED]->(p) })"
#: What :data:`LATEST` was before 0.9.4, the same papers found by reading their source's other
#: versions: ``v.sourceVersion >= p.sourceVersion``, implied by the rest, made the planner seek
#: the ``(sourceId, sourceVersion)`` index per paper. Kept as the baseline of
#: ``benchmarks/bench_latest.py`` and the check of ``tests/test_latest_versions_kept.py``.
LATEST_SUBQUERY = (
    "NOT EXISTS { MATCH (v:Paper) WHERE v.sourceId = p.sourceId AND v.sourceVersion >= p.sourceVersion"
    " AND v.sourceKind = p.sourceKind AND size(v.pithNumber) > 0 AND (v.sourceVersion > p.sourceVersion"
    " OR (v.builtAt > p.builtAt OR (v.builtAt = p.builtAt AND v.pithNumber > p.pithNumber))) }"
)

#: filter -> the condition on ``p`` (the parameter has the filter's name): a listing checks
#: only the filters it has (``papers(filter:)``, search, facets), so a statement holds no
#: check switched off by a null parameter (one still costs a subquery per paper, and Neo4j
#: plans a statement anew for each mix of null and non-null parameters).
FILTER_CHECKS = {
    "from": "p.submittedAt >= $from",
    "before": "p.submittedAt < $before",
    "license": "p.license = $license",
    "category": "EXISTS { (p)-[:IN_CATEGORY]->(:Category {code: $category}) }",
    "archive": "EXISTS { (p)-[:IN_CATEGORY]->(:Category {archive: $archive}) }",
    "author": "EXISTS { (p)<-[:AUTHORED]-(:Author {nameKey: $author}) }",
    "authors": BY_ALL_AUTHORS,
    "signer": "EXISTS { (p)<-[:SIGNED]-(:Signer {signerId: $signer}) }",
    # the signer's papers whose SIGNED edge has ``signedBundle`` (in place of "signer")
    "signedBundle": "EXISTS { (p)<-[r:SIGNED]-(:Signer {signerId: $signer}) WHERE r.signedBundle = $signedBundle }",
    "latest": LATEST,
    "categories": IN_CATEGORIES,
    "excluded": "NOT " + IN_CATEGORIES.replace("$categories", "$excluded"),
}

#: How many statements each builder keyed by a listing's combination of filters keeps
#: (``functools.lru_cache``): a client choosing combinations (with the projections, orders
#: and cursors, 36,972 listing statements, 76 MB of text; facets' 63,000) would otherwise grow
#: the caches for as long as the server runs. Neo4j keeps 1,000 plans by default
#: (``server.db.query_cache_size``).
STATEMENTS_KEPT = 1024
