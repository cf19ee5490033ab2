"""The read Cypher behind batch lookups, ranked search, facets and typeahead.

As in :mod:`pith_graph.api.reads.cypher`, no value is ever formatted into a statement: they
are composed from the constant fragments below, chosen by *which* filters a listing has, and
every value is a parameter. Full-text queries are built by
:func:`~pith_graph.api.reads.text_index.text_query` and
:func:`~pith_graph.api.reads.folding.prefix_query`, every user word quoted or escaped.

A listing starts from its most selective part (:data:`LISTING_STARTS`) and checks only the
other filters it has (:data:`FILTER_CHECKS`; a check that is switched off by a null
parameter still costs a subquery per paper). The search words and the ``title`` filter are
both in the Lucene query of the ``text`` start (title words as zero-boost required clauses,
so they filter without changing scores).

Rankings over many groups (facets, typeahead) group by count first and read the
tie-breaking name only for the groups that can reach the top ``$first``; nothing is ordered
after a list is collected, since Neo4j charges each row a Sort or Top holds with the whole
list (:data:`_RANKS`). Facets expand a
listing's papers without checking the label at the far end (``AUTHORED`` always starts at
an Author, ``IN_CATEGORY`` always ends at a Category: :mod:`pith_graph.schema.graph`): one
check per row made the facets statement 12–26% slower on categories of 8k and 16k papers.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache, lru_cache

from pith_graph.api.reads.cypher_parts import (
    ALL_OTHERS,
    FILTER_CHECKS,
    KEYED,
    KEYED_AUTHOR,
    RAREST_AUTHOR,
    STATEMENTS_KEPT,
)
from pith_graph.api.reads.discovery import FACETS

__all__ = [
    "CATEGORY_COMBINATIONS",
    "CORPUS_FACETS",
    "FACET_COUNTS",
    "FILTER_CHECKS",
    "LISTING_STARTS",
    "READ_AUTHORS_BY_PREFIX",
    "READ_AUTHORS_BY_PREFIX_SCAN",
    "corpus_facets_statement",
    "count_statement",
    "facets_statement",
    "search_statement",
]

#: start -> the clause that yields the listing's candidate papers as ``p``.
LISTING_STARTS = {
    "text": "CALL db.index.fulltext.queryNodes($textIndex, $lucene) YIELD node AS p, score",
    "title": "CALL db.index.fulltext.queryNodes($titleIndex, $titleLucene) YIELD node AS p",
    "author": "MATCH (:Author {nameKey: $author})-[:AUTHORED]->(p:Paper)",
    "authors": f"{RAREST_AUTHOR}\nMATCH (n)-[:AUTHORED]->(p:Paper) WHERE {ALL_OTHERS}",
    "category": "MATCH (:Category {code: $category})<-[:IN_CATEGORY]-(p:Paper)",
    "signer": "MATCH (:Signer {signerId: $signer})-[:SIGNED]->(p:Paper)",
    "signedBundle": "MATCH (:Signer {signerId: $signer})-[r:SIGNED]->(p:Paper)\n"
    "WITH p WHERE r.signedBundle = $signedBundle",
    "categories": "MATCH (c:Category)<-[:IN_CATEGORY]-(p:Paper) WHERE c.code IN $categories WITH DISTINCT p",
    "archive": "MATCH (:Category {archive: $archive})<-[:IN_CATEGORY]-(p:Paper) WITH DISTINCT p",
    "all": "MATCH (p:Paper)",
}
#: facet -> the rows (``value``, ``n``) it counts for the listing's papers ``p`` (for authors
#: the value is the Author node, named once it is known to reach the top: :data:`_RANKS`).
FACET_COUNTS = {
    "years": "WITH p.submittedYear AS value, count(*) AS n",
    "licenses": "WITH p.license AS value, count(*) AS n",
    "authors": "MATCH (p)<-[:AUTHORED]-(a)\nWITH a AS value, count(*) AS n",
}
#: How a kept value is shown (default: as it is).
_SHOWN = {"authors": "v[0].name"}
#: The rows (``value``, ``n``) grouped by ``n`` into ranks ``[n, values]``, and the ranks that
#: can reach the top ``$first`` (fewer than ``$first`` values have more papers) returned whole:
#: the reader orders them by count, then value, and cuts. Nothing here is ordered in Neo4j:
#: a Sort or Top after ``collect(p) AS ps`` charges each row it holds with the whole ``ps``
#: (the rows carry the argument), so ranking 142k authors of 166k papers asked for more than
#: the 687 MiB of transaction memory of a 1 GB heap; without ordering, 27 MB. A value is
#: wrapped in a list, so that a null (a paper without license) is collected too. The ranks
#: are chosen by a walk down the counts (``[count, values so far]``): each step finds the next
#: largest count among the R ranks, until ``$first`` values are in hand, so at most ``$first``
#: steps of R (comparing each rank with each took R² steps: 3,000 counts, 1.1 s).
_RANKS = """WITH n, collect([value]) AS values
WITH collect([n, values]) AS ranks, collect([n, size(values)]) AS sizes
WITH ranks, reduce(walk = [null, 0], step IN range(1, $first) |
  CASE WHEN walk[1] >= $first THEN walk ELSE coalesce(
    [next IN [reduce(best = null, pair IN sizes |
        CASE WHEN (walk[0] IS NULL OR pair[0] < walk[0]) AND (best IS NULL OR pair[0] > best[0])
        THEN pair ELSE best END)]
      WHERE next IS NOT NULL | [next[0], walk[1] + next[1]]][0],
    [walk[0], $first]) END) AS walk
RETURN [rank IN ranks WHERE rank[0] >= walk[0] | [rank[0], [v IN rank[1] | {shown}]]] AS {facet}"""
#: Categories and archives both come from the listing's combinations of categories (a few
#: hundred, however many papers): each with its papers' count, the reader adds them up.
CATEGORY_COMBINATIONS = """CALL (ps) {
  UNWIND ps AS p
  WITH [(p)-[:IN_CATEGORY]->(c) | c] AS cs, count(*) AS n
  RETURN collect({codes: [c IN cs | c.code], archives: [c IN cs | c.archive], count: n}) AS combinations
}"""
assert set(FACET_COUNTS) | {"categories", "archives"} == set(FACETS)

#: facet -> the rows (``value``, ``n``) it counts over every paper, without reading each
#: paper: the years from the ``submittedAt`` index (``submittedYear`` is its first four
#: digits: ``loader/rows.py``; the bundle's time matches ``ISO_Z``), a prefix seek per year
#: between the first and the last, counting index entries; the licenses from their index's
#: values, a paper without one (none: the schema requires it) a ``null`` value as in
#: :data:`FACET_COUNTS`; the categories from each one's degree; the archives from their
#: categories' papers, a paper cross-listed twice in one archive once (every edge is read: at
#: 238k papers, 0.2 s); the authors down the ``paperCount`` index (every write keeps it the
#: ``AUTHORED`` degree) until ``$first``, then those tied with the last, ordered by name.
#: Years, licenses and authors are ordered and cut here, by count then value, as the reader
#: orders a listing's; categories and archives come whole (a few hundred) for it to rank.
CORPUS_FACETS = {
    "years": """MATCH (p:Paper) WHERE p.submittedAt IS NOT NULL
WITH p.submittedAt AS earliest ORDER BY earliest ASC LIMIT 1
CALL () {
  MATCH (q:Paper) WHERE q.submittedAt IS NOT NULL
  WITH q.submittedAt AS latest ORDER BY latest DESC LIMIT 1
  RETURN latest
}
UNWIND range(toInteger(left(earliest, 4)), toInteger(left(latest, 4))) AS year
CALL (year) {
  MATCH (p:Paper) WHERE p.submittedAt STARTS WITH right('000' + toString(year), 4)
  RETURN count(*) AS n
}
WITH year AS value, n WHERE n > 0""",
    "licenses": """MATCH (p:Paper) WHERE p.license IS NOT NULL
WITH p.license AS value, count(*) AS n
WITH collect({value: value, n: n}) AS found
CALL () { MATCH (q:Paper) RETURN count(q) AS papers }
UNWIND found + [{value: null, n: papers - reduce(sum = 0, row IN found | sum + row.n)}] AS row
WITH row.value AS value, row.n AS n WHERE n > 0""",
    "categories": """MATCH (c:Category)
WITH c.code AS value, COUNT { (c)<-[:IN_CATEGORY]-() } AS n WHERE n > 0""",
    "archives": """MATCH (c:Category)
WITH c.archive AS value, collect(c) AS cs
CALL (cs) {
  UNWIND cs AS c
  MATCH (c)<-[:IN_CATEGORY]-(p)
  RETURN count(DISTINCT p) AS n
}
WITH value, n WHERE n > 0""",
    "authors": """MATCH (a:Author) WHERE a.paperCount > 0 AND size(a.nameKey) > 0
WITH a ORDER BY a.paperCount DESC
LIMIT $first
WITH collect(a) AS top
WITH top, top[-1].paperCount AS floor
CALL (floor) {
  MATCH (b:Author) WHERE b.paperCount = floor AND size(b.nameKey) > 0
  WITH b ORDER BY b.name ASC
  LIMIT $first
  RETURN collect(b) AS ties
}
UNWIND [a IN top WHERE a.paperCount > floor] + ties AS a
WITH a.name AS value, a.paperCount AS n""",
}
assert set(CORPUS_FACETS) == set(FACETS)
_RANKED_WHOLE = ("categories", "archives")

#: An author's folded words (``a.nameFolded``, space-separated) hold a word starting with
#: each typed key of ``$keys``.
_TYPED = "all(key IN $keys WHERE {a}.nameFolded STARTS WITH key OR {a}.nameFolded CONTAINS (' ' + key))"

#: Typeahead when the typed words are common: the ``$scan`` most prolific authors, walked in
#: ``paperCount`` order down its range index until ``$first`` match; then the authors tied
#: with the last of them (same count), which the name key orders. When fewer than ``$first``
#: of the ``$scan`` match: no row, unless ``$everyone`` (the walk went through every author,
#: so the matches it found are all there are).
READ_AUTHORS_BY_PREFIX_SCAN = f"""
MATCH (a:Author)
WHERE a.paperCount > 0 AND {KEYED_AUTHOR.format(a="a")}
WITH a ORDER BY a.paperCount DESC
LIMIT $scan
WITH a WHERE {_TYPED.format(a="a")}
LIMIT $first
WITH collect(a) AS top
WHERE size(top) = $first OR $everyone
WITH top, CASE WHEN size(top) = $first THEN top[-1].paperCount END AS floor
CALL (floor) {{
  MATCH (b:Author)
  WHERE b.paperCount = floor AND {KEYED_AUTHOR.format(a="b")} AND {_TYPED.format(a="b")}
  WITH b ORDER BY b.nameKey ASC
  LIMIT $first
  RETURN collect(b) AS ties
}}
UNWIND [a IN top WHERE floor IS NULL OR a.paperCount > floor] + ties AS a
WITH a ORDER BY a.paperCount DESC, a.nameKey ASC
LIMIT $first
RETURN a.nameKey AS nameKey, a.name AS name, a.paperCount AS paperCount
"""

#: Typeahead from the full-text index of the folded words (one prefix clause per key): at
#: most ``$cap`` matches, ranked by paper count as a facet's values are (:data:`_RANKS`,
#: nothing ordered after the matches are collected: ordering them held 48 MiB of
#: transaction memory per keystroke at 3,000 matches). One row: ``found`` (the matches
#: fetched: all of them when fewer than ``$cap``) and ``ranks`` (``[count, [[nameKey, name],
#: ...]]``), for the reader to order by count, then name key, and cut.
READ_AUTHORS_BY_PREFIX = f"""
CALL db.index.fulltext.queryNodes($index, $query, {{limit: $cap}}) YIELD node
WITH collect(node) AS hits
CALL (hits) {{
  UNWIND [h IN hits WHERE {KEYED_AUTHOR.format(a="h")}] AS value
  WITH value, value.paperCount AS n
  {_RANKS.format(shown="[v[0].nameKey, v[0].name]", facet="ranks").replace(chr(10), chr(10) + "  ")}
}}
RETURN size(hits) AS found, ranks
"""

# Skipped checks: the one the start already guarantees.
_IMPLIED = {
    s: s for s in ("author", "authors", "category", "categories", "signer", "signedBundle", "archive")
}


#: Starts that find their papers by the label or a full-text index: they check the key.
_UNKEYED = ("text", "title", "all")


def _where(start: str, checks: Iterable[str]) -> str:
    wanted = sorted(set(checks) - {_IMPLIED.get(start, "")})
    keyed = [KEYED] if start in _UNKEYED else []
    return " AND ".join(keyed + [FILTER_CHECKS[name] for name in wanted]) or "true"


@lru_cache(maxsize=STATEMENTS_KEPT)
def count_statement(start: str, checks: frozenset[str]) -> str:
    """Count the listing (one ``n`` row)."""
    return f"{LISTING_STARTS[start]}\nWITH p WHERE {_where(start, checks)}\nRETURN count(p) AS n\n"


@lru_cache(maxsize=STATEMENTS_KEPT)
def facets_statement(start: str, checks: frozenset[str], facets: tuple[str, ...]) -> str:
    """One row: for each facet (a column named after it), the ranks ``[count, values]`` of
    the listing's values that can reach the top ``$first`` (:data:`_RANKS`), the listing's
    papers found once; for categories and archives, a ``combinations`` column
    (:data:`CATEGORY_COMBINATIONS`)."""
    parts = [f"{LISTING_STARTS[start]}\nWITH p WHERE {_where(start, checks)}\nWITH collect(p) AS ps"]
    columns = []
    for facet in facets:
        if facet not in FACET_COUNTS:
            continue
        ranks = _RANKS.format(shown=_SHOWN.get(facet, "v[0]"), facet=facet)
        body = f"UNWIND ps AS p\n{FACET_COUNTS[facet]}\n{ranks}".replace("\n", "\n  ")
        parts.append(f"CALL (ps) {{\n  {body}\n}}")
        columns.append(facet)
    if {"categories", "archives"} & set(facets):
        parts.append(CATEGORY_COMBINATIONS)
        columns.append("combinations")
    parts.append("RETURN " + ", ".join(columns))
    return "\n".join(parts) + "\n"


#: order -> a search hit's place after the position (newest: ``p``; relevance: a hit ``h``).
_SEARCH_AFTER = {
    "newest": "\n  AND (p.submittedAt < $afterAt OR (p.submittedAt = $afterAt AND p.pithNumber < $afterPith))",
    "relevance": " AND (h.score < $afterScore OR (h.score = $afterScore AND h.p.pithNumber > $afterPith))",
}


@lru_cache(maxsize=STATEMENTS_KEPT)
def search_statement(order: str, checks: frozenset[str], after: bool = False) -> str:
    """A page of a search (the ``text`` start), in ``order``, after the position only when
    there is one (``after``, since 0.9.14: a condition switched off by a null parameter had
    Neo4j plan the statement again for the second page).

    Relevance: Lucene's best ``$fetch`` hits, then the page among them after the position
    (score descending, pithNumber ascending); ``fetched`` and ``floor`` (the lowest score
    fetched) tell the reader whether hits left behind could still belong on the page.
    Newest: every hit, the page after the position (submittedAt, pithNumber descending).
    """
    where = _where("text", checks)
    position = _SEARCH_AFTER[order] if after else ""
    if order == "newest":
        return f"""{LISTING_STARTS["text"]}
WITH p, score WHERE {where}{position}
RETURN p {{.*}} AS paper, score
ORDER BY p.submittedAt DESC, p.pithNumber DESC
LIMIT $limit
"""
    # Collected hits are only filtered with list expressions: UNWINDing them again makes
    # Neo4j's memory tracker count the whole list once per row.
    return f"""CALL db.index.fulltext.queryNodes($textIndex, $lucene, {{limit: $fetch}}) YIELD node AS p, score
WITH p, score, {where} AS kept
ORDER BY score DESC, p.pithNumber ASC
WITH collect({{p: p, score: score, kept: kept}}) AS hits
WITH size(hits) AS fetched, hits[-1].score AS floor,
     [h IN hits WHERE h.kept{position}][0..$limit] AS page
RETURN fetched, floor, [h IN page | {{paper: properties(h.p), score: h.score}}] AS page
"""


@cache
def corpus_facets_statement(facets: tuple[str, ...]) -> str:
    """One row: for each facet (a column named after it), its ``{value, count}`` over every
    paper (:data:`CORPUS_FACETS`), the ``$first`` most frequent but for categories and
    archives (all of them)."""
    parts = []
    for facet in facets:
        counts = CORPUS_FACETS[facet].replace("\n", "\n  ")
        cut = "" if facet in _RANKED_WHOLE else "\n  ORDER BY n DESC, value ASC\n  LIMIT $first"
        parts.append(
            f"CALL () {{\n  {counts}{cut}\n  RETURN collect({{value: value, count: n}}) AS {facet}\n}}"
        )
    parts.append("RETURN " + ", ".join(facets))
    return "\n".join(parts) + "\n"
