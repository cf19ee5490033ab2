"""The Cypher of the later pages of ranked lists, since 0.9.2 (see
:mod:`pith_graph.api.rank_pages`): ``Author.coauthors``, ``Paper.relatedPapers``,
``Category.topAuthors`` and ``Category.coListed`` after the item ``$after`` names. A first
page is read by the statements without ``_AFTER`` (:mod:`pith_graph.api.reads.cypher`),
unchanged; ``Author.categories`` reads whole lists already.

Each counts the ``$after`` item against the author, paper or category (``afterCount``: 0
when it is no such item, is the author, category or a version of the paper, or shares
nothing), from the item's side once for every key (since 0.9.3, :func:`_item_counts`: each
key counted it again, over the key's papers or the item's, +50,000 db hits a level of 42
categories after a prolific author), aggregates the whole
ranking as the first page does, and keeps the items strictly after that position before it
sorts and cuts ``$first``: the rows past the position are never projected. The position's
keys are the stored item's own (two stored strings compare by code point, as Python does),
never the parameter's. A later page thus reads what the first page reads plus the item's
counts (over its own papers), whatever the page and however many keys.
"""

from __future__ import annotations

from pith_graph.api.reads.cypher_parts import (
    COUNTS,
    EMBEDS,
    STAMP,
    author_row,
    category_row,
    paper_row,
    stamp_before,
)

__all__ = [
    "READ_COAUTHORS_AFTER",
    "READ_CO_LISTED_AFTER",
    "READ_RELATED_PAPERS_AFTER",
    "READ_TOP_AUTHORS_AFTER",
]


def _after(item: str, count: str, order: str, row: str, name: str, project: str = "") -> str:
    """The end of a later page's subquery: ``item`` (its variable, found by identity as
    ``x``) counted ``count`` (with ``x`` and ``afterCount`` carried), ranked by ``order``;
    the ``$first`` after ``x``, each as ``row`` and its count (``project``: a WITH before),
    collected as ``name``."""
    return f"""  WHERE {count} <= afterCount
  WITH x, {item}, {count} ORDER BY {order}
  WITH x, collect([{item}, {count}]) AS _ranking
  WITH _ranking, [_j IN range(0, size(_ranking) - 1) WHERE _ranking[_j][0] = x][0] AS _at
  UNWIND _ranking[_at + 1 .. _at + 1 + $first] AS found
  WITH found[0] AS {item}, found[1] AS {count}{project}
  RETURN collect([{row}, {count}]) AS {name}"""


def _item_counts(label: str, key: str, pair: str, subject: str, end: str) -> str:
    """Before ``UNWIND $keys``: the ``$after`` item (label and key, found as ``_x``) counted
    by the paths ``pair`` (``{v}``: the item's end) against every ``subject`` node at their
    other end (``end``, the label it has), as ``_counts``: ``[node, count]`` pairs, read from
    the item's side once (none when there is no such item, or one key: :func:`_counted`)."""
    walk = pair.replace(f"({subject})", f"(_o:{end})").format(v="_x")
    return f"""
OPTIONAL MATCH (_x:{label} {{{key}: $after}})
CALL (_x) {{
  WITH _x WHERE size($keys) > 1
  MATCH {walk}
  WITH _o, count(*) AS _k
  RETURN collect([_o, _k]) AS _counts
}}"""


def _counted(subject: str, pair: str) -> str:
    """The ``afterCount`` of the key's ``subject``: ``x``'s count in ``_counts`` (0 without);
    for one key, counted by ``pair`` between the two (no cheaper from the item's side)."""
    return f"""CASE WHEN x IS NULL THEN 0 WHEN size($keys) = 1 THEN COUNT {{ {pair.format(v="x")} }}
    ELSE coalesce([_c IN _counts WHERE _c[0] = {subject} | _c[1]][0], 0) END AS afterCount"""


def _later_page(
    labels: tuple[str, str], keys: tuple[str, str], pair: str, where: str, order: str, row: str
) -> str:
    """A later page of a ranking of items (label and key ``labels[1]``/``keys[1]``, the
    variable ``i``) of a subject ``s`` (``labels[0]``/``keys[0]``), counted by the paths
    ``pair`` (``{v}``: the item's end), ``where`` (``{v}``) excluding some items."""
    item = f"(x:{labels[1]} {{{keys[1]}: $after}})"
    return f"""{_item_counts(labels[1], keys[1], pair, "s", labels[0])}
UNWIND $keys AS key
MATCH (s:{labels[0]} {{{keys[0]}: key}})
OPTIONAL MATCH {item}{where.format(v="x")}
CALL (s, x, _counts) {{
  WITH s, x, {_counted("s", pair)}
  MATCH {pair.format(v="i:" + labels[1])}{where.format(v="i")}
  WITH x, afterCount, i, count(*) AS n
{_after("i", "n", order, row, "ranked")}
}}
RETURN key, ranked
"""


_SHARED = "(s)-[:AUTHORED]->(:Paper)<-[:AUTHORED]-({v})"
_IN_CATEGORY = "(s)<-[:IN_CATEGORY]-(:Paper)<-[:AUTHORED]-({v})"
_CO_LISTED = "(s)<-[:IN_CATEGORY]-(:Paper)-[:IN_CATEGORY]->({v})"
_BY_KEY = "n DESC, i.nameKey ASC"

READ_COAUTHORS_AFTER = {
    counts: _later_page(
        ("Author", "Author"),
        ("nameKey", "nameKey"),
        _SHARED,
        " WHERE {v} <> s",
        _BY_KEY,
        author_row("i", counts),
    )
    for counts in COUNTS
}
READ_TOP_AUTHORS_AFTER = {
    counts: _later_page(
        ("Category", "Author"), ("code", "nameKey"), _IN_CATEGORY, "", _BY_KEY, author_row("i", counts)
    )
    for counts in COUNTS
}
READ_CO_LISTED_AFTER = {
    counts: _later_page(
        ("Category", "Category"),
        ("code", "code"),
        _CO_LISTED,
        " WHERE {v} <> s",
        "n DESC, i.code ASC",
        category_row("i", counts),
    )
    for counts in COUNTS
}

_BY_AUTHORS = "(p)<-[:AUTHORED]-(:Author)-[:AUTHORED]->({v})"
_NEWEST = "shared DESC, q.submittedAt DESC, q.pithNumber DESC"
_STAMP_Q = "\n  WITH shared, " + stamp_before("q")

READ_RELATED_PAPERS_AFTER = {
    embed: f"""{_item_counts("Paper", "pithNumber", _BY_AUTHORS, "p", "Paper")}
UNWIND $keys AS key
MATCH (p:Paper {{pithNumber: key}})
WITH key, _counts, {stamp_before("p")}
OPTIONAL MATCH (x:Paper {{pithNumber: $after}})
WHERE NOT (x.sourceKind = p.sourceKind AND x.sourceId = p.sourceId)
CALL (p, x, _counts) {{
  WITH p, x, {_counted("p", _BY_AUTHORS)}
  MATCH (p)<-[:AUTHORED]-(:Author)-[:AUTHORED]->(q:Paper)
  WHERE NOT (q.sourceKind = p.sourceKind AND q.sourceId = p.sourceId)
  WITH x, afterCount, q, count(*) AS shared
{_after("q", "shared", _NEWEST, paper_row("q", embed), "related", _STAMP_Q)}
}}
RETURN key, related, {STAMP} AS stamp
"""
    for embed in EMBEDS
}
