"""The Cypher that reads the graph back out of Neo4j: the whole graph
(:meth:`~pith_graph.loader.stores.neo4j.Neo4jStore.export`) and the subgraphs of
:mod:`pith_graph.loader.export` (pick papers, then read them and all they touch).

Only the graph's own labels, relationship types and properties are read: an analyst's
other nodes, relationships and properties in the same database (a ``(:Note)``, a
``[:CITES]``, an ``Author.orcid``) are theirs, not pith-graph's, and stay out of every export
(:func:`own_properties` drops the properties; these statements, the rest).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pith_graph.loader.stores.cypher import OWN_NEIGHBOUR, OWN_TYPES, keyed
from pith_graph.schema.graph import NODES, PROPERTY_NAMES, RELATIONSHIPS

__all__ = [
    "EXPORT_AUTHORS_OF_PAPERS",
    "EXPORT_CATEGORY_SIZE",
    "EXPORT_COUNT_BETWEEN",
    "EXPORT_EDGES",
    "EXPORT_FILTER_PAPERS",
    "EXPORT_LONE_NODES",
    "EXPORT_NODES",
    "EXPORT_PAPERS",
    "EXPORT_PAPERS_BETWEEN",
    "EXPORT_PAPERS_OF_AUTHORS",
    "EXPORT_PAPERS_OF_CATEGORY",
    "EXPORT_PAPERS_OF_CATEGORY_BETWEEN",
    "own_properties",
]

#: ``n``'s first label of the graph's own (an analyst may add labels of theirs to a node).
_LABEL = "head([label IN labels(n) WHERE label IN [{}]])".format(", ".join(f"'{label}'" for label in NODES))


def _own_node(var: str) -> str:
    """``var`` is a node of the graph's: one of its labels, with that label's key."""
    return "(" + " OR ".join(f"({var}:{label} AND {keyed(var, label)})" for label in NODES) + ")"


def _edge_keyed(var: str, kind: str) -> list[str]:
    """``var`` (a ``kind`` relationship) has every property pith-graph always writes on it:
    one of the graph's types without one (an analyst's ``[:SIGNED]`` without ``keyIds``) is
    the analyst's, as such a node is, and is not read."""
    return [f"{var}.{p.name} IS NOT NULL" for p in RELATIONSHIPS[kind].properties if p.required]


def _own_edge(var: str) -> str:
    """``var`` is a relationship of the graph's: one of its types, with what it always writes."""
    cases = (" AND ".join([f"type({var}) = '{kind}'", *_edge_keyed(var, kind)]) for kind in RELATIONSHIPS)
    return "(" + " OR ".join(f"({case})" for case in cases) + ")"


def own_properties(label_or_type: str, props: Mapping[str, Any]) -> dict[str, Any]:
    """``props`` of a node or relationship without the properties the schema does not name.

    >>> own_properties("Category", {"code": "cs.LG", "archive": "cs", "myScore": 0.5})
    {'code': 'cs.LG', 'archive': 'cs'}
    """
    names = PROPERTY_NAMES[label_or_type]
    if props.keys() <= names:
        return dict(props)
    return {name: value for name, value in props.items() if name in names}


EXPORT_NODES = f"""
MATCH (n)
WHERE {_own_node("n")}
RETURN elementId(n) AS id, {_LABEL} AS label, properties(n) AS props
"""

EXPORT_EDGES = f"""
MATCH (a)-[r:{OWN_TYPES}]->(b)
WHERE {_own_node("a")} AND {_own_node("b")} AND {_own_edge("r")}
RETURN elementId(a) AS start, type(r) AS type, elementId(b) AS end, properties(r) AS props
"""

#: With ``$latest``, the newest versions only: a paper whose ``isLatest`` is not ``false``
#: (none, of a database written before 0.9.4; one set by hand) is kept, and the export
#: refuses it as it refuses it without ``$latest``.
_LATEST_KEPT = "(NOT $latest OR p.isLatest IS NULL OR p.isLatest <> false)"
#: The dates, either bound ``null`` for none, and :data:`_LATEST_KEPT`.
_EXPORT_KEPT = (
    "($from IS NULL OR p.submittedAt >= $from) AND ($before IS NULL OR p.submittedAt < $before)"
    f" AND {_LATEST_KEPT}"
)
#: Which date bounds are given, (from, to): each has its statements below.
_BOUNDS = [(since, before) for since in (False, True) for before in (False, True)]


def _dates(since: bool, before: bool) -> list[str]:
    """The bounds given, each written only when given: ``$from IS NULL OR p.submittedAt >=
    $from`` hides the range from the planner, which then reads every paper (an index scan
    and a filter: 0.31 s for a month of 100k papers) where a range seek of
    ``paper_submittedat_index`` reads the month's."""
    return [*(["p.submittedAt >= $from"] if since else []), *(["p.submittedAt < $before"] if before else [])]


def _between(since: bool, before: bool, *, category: bool = False) -> str:
    """The papers of the graph's within the dates given (``$from``, ``$before``), newest
    versions only with ``$latest``; with ``category``, those in ``$category`` too, found
    from the dates (the planner seeks a range of bounds written out before anything else; no
    index hint, so that a database without the index is still read, as before, by a scan)."""
    where = [keyed("p", "Paper"), *_dates(since, before), _LATEST_KEPT]
    if category:
        edge = " AND ".join(_edge_keyed("r", "IN_CATEGORY"))
        where.append(f"EXISTS {{ MATCH (p)-[r:IN_CATEGORY]->(:Category {{code: $category}}) WHERE {edge} }}")
    return f"""
MATCH (p:Paper)
WHERE {" AND ".join(where)}
RETURN p.pithNumber AS pith
ORDER BY pith
"""


EXPORT_PAPERS_OF_AUTHORS = f"""
UNWIND $keys AS key
MATCH (a:Author {{nameKey: key}})-[:AUTHORED]->(p:Paper)
WHERE {keyed("a", "Author")} AND {keyed("p", "Paper")}
RETURN DISTINCT p.pithNumber AS pith
"""

EXPORT_AUTHORS_OF_PAPERS = f"""
UNWIND $piths AS pith
MATCH (:Paper {{pithNumber: pith}})<-[:AUTHORED]-(a:Author)
WHERE {keyed("a", "Author")}
RETURN DISTINCT a.nameKey AS key
"""

EXPORT_FILTER_PAPERS = f"""
UNWIND $piths AS pith
MATCH (p:Paper {{pithNumber: pith}})
WHERE {_EXPORT_KEPT}
  AND ($category IS NULL OR EXISTS {{
    MATCH (p)-[r:IN_CATEGORY]->(:Category {{code: $category}}) WHERE {" AND ".join(_edge_keyed("r", "IN_CATEGORY"))}
  }})
RETURN p.pithNumber AS pith
ORDER BY pith
"""

#: The papers of a category within the dates, found from the category: its edges, each
#: paper's dates checked (``$x IS NULL OR`` keeps the dates out of the plan). Written as
#: bounds, the planner sought the dates first whatever the category's size: that wins for a
#: month of a big category (cs.LG, 40k of 100k papers: 0.04–0.05 s against 0.37–0.47 s) and
#: loses for a small one over years (math.AG's 1,497 papers over 16 years: 1.1–2.2 s against
#: 0.08–0.10 s). The export counts both sides first (:data:`EXPORT_CATEGORY_SIZE`,
#: :data:`EXPORT_COUNT_BETWEEN`) and starts from the smaller
#: (:data:`EXPORT_PAPERS_OF_CATEGORY_BETWEEN` from the dates).
EXPORT_PAPERS_OF_CATEGORY = f"""
MATCH (:Category {{code: $category}})<-[r:IN_CATEGORY]-(p:Paper)
WHERE {keyed("p", "Paper")} AND {" AND ".join(_edge_keyed("r", "IN_CATEGORY"))} AND {_EXPORT_KEPT}
RETURN p.pithNumber AS pith
ORDER BY pith
"""

#: The papers within the dates, by which bounds are given (``since``, ``before``): each
#: statement takes ``$latest`` and the bounds it names (:func:`_between`).
EXPORT_PAPERS_BETWEEN: Mapping[tuple[bool, bool], str] = MappingProxyType(
    {bounds: _between(*bounds) for bounds in _BOUNDS}
)

#: The papers of ``$category`` within the dates, by which bounds are given, found from the
#: dates: the range of the ``submittedAt`` index, then each paper's category edges.
EXPORT_PAPERS_OF_CATEGORY_BETWEEN: Mapping[tuple[bool, bool], str] = MappingProxyType(
    {bounds: _between(*bounds, category=True) for bounds in _BOUNDS if any(bounds)}
)

#: How many papers ``$category`` lists (0 if there is none): a count the store keeps for a
#: node with many edges, not a walk of them.
EXPORT_CATEGORY_SIZE = """
OPTIONAL MATCH (c:Category {code: $category})
RETURN CASE WHEN c IS NULL THEN 0 ELSE COUNT { (c)<-[:IN_CATEGORY]-() } END AS size
"""

#: How many papers the dates hold, by which bounds are given, counted up to ``$cap`` (the
#: range of the index is read no further): the category's size, which decides the start.
EXPORT_COUNT_BETWEEN: Mapping[tuple[bool, bool], str] = MappingProxyType(
    {
        bounds: f"""
MATCH (p:Paper)
WHERE {" AND ".join(_dates(*bounds))}
WITH p LIMIT $cap
RETURN count(p) AS size
"""
        for bounds in _BOUNDS
        if any(bounds)
    }
)

#: The graph's nodes no paper uses (an export of the whole graph reads the rest through the
#: papers; none after a load, which removes them).
EXPORT_LONE_NODES = f"""
MATCH (n)
WHERE ({OWN_NEIGHBOUR}) AND {_own_node("n")} AND NOT EXISTS {{ (n)-[:{OWN_TYPES}]-(:Paper) }}
RETURN {_LABEL} AS label, properties(n) AS props
"""


def _edges(into: bool) -> str:
    """A paper's edges of each type that ends (``into``) or starts at it, with the node at
    the other end: ``[type, label, node properties, edge properties]``."""
    parts = []
    for spec in RELATIONSHIPS.values():
        if (spec.end if into else spec.start) != "Paper":
            continue
        label = spec.start if into else spec.end
        pattern = f"(p)<-[r:{spec.type}]-(n:{label})" if into else f"(p)-[r:{spec.type}]->(n:{label})"
        where = " AND ".join([keyed("n", label), *_edge_keyed("r", spec.type)])
        parts.append(f"[{pattern} WHERE {where} | ['{spec.type}', '{label}', properties(n), properties(r)]]")
    return " + ".join(parts)


EXPORT_PAPERS = f"""
UNWIND $piths AS pith
MATCH (p:Paper {{pithNumber: pith}})
RETURN properties(p) AS props,
       {_edges(into=True)} AS incoming,
       {_edges(into=False)} AS outgoing
"""
