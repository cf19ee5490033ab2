"""The four scenarios of ``bench_peer.py``: each as pith-graph's query and @neo4j/graphql's query,
how their answers are normalised to one shape, and how inputs are picked from the database.

Each peer query is the one a frontend developer would write against @neo4j/graphql 7's
generated schema (``benchmarks/peer/typedefs.mjs``), starting from the indexed node the
question names (an ``Alias``, an ``Author``, a ``Category``) as our query does, and asking for
the same order: newest first is ``submittedAt`` then ``pithNumber``, descending; a DOI naming
several arXiv versions answers the newest (``sourceVersion``, then ``builtAt``, then
``pithNumber``). Lists whose order either API leaves to the server (a paper's authors and
categories) are sorted before comparing; cursors are opaque and never compared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import neo4j

__all__ = ["OURS", "PEER", "SCENARIOS", "end_cursor", "normalise", "pick_inputs", "variables"]

SCENARIOS = ("a_paper_by_doi", "b_author_papers_authors", "c_category_newest_50", "d_category_count")

OURS = {
    "a_paper_by_doi": (
        "query PaperByDoi($doi: String!) {"
        " paper(id: $doi) { pithNumber title authors { name } categories { code } } }"
    ),
    "b_author_papers_authors": (
        "query AuthorPapers($nameKey: String!) {"
        " author(name: $nameKey) { name"
        " papers(first: 100) { nodes { pithNumber title authors { name } } } } }"
    ),
    "c_category_newest_50": (
        "query CategoryPage($code: String!, $after: String) {"
        " category(code: $code) { papers(first: 50, after: $after) {"
        " edges { cursor node { pithNumber title submittedAt } }"
        " pageInfo { hasNextPage endCursor } } } }"
    ),
    "d_category_count": "query CategoryCount($code: String!) { category(code: $code) { paperCount } }",
}

PEER = {
    "a_paper_by_doi": (
        "query PaperByDoi($doi: String!) {"
        ' aliases(where: { kind: { eq: "doi" }, value: { eq: $doi } }) {'
        " papers(sort: [{ sourceVersion: DESC }, { builtAt: DESC }, { pithNumber: DESC }], limit: 1) {"
        " pithNumber title authors(sort: [{ name: ASC }]) { name }"
        " categories(sort: [{ code: ASC }]) { code } } } }"
    ),
    "b_author_papers_authors": (
        "query AuthorPapers($nameKey: String!) {"
        " authors(where: { nameKey: { eq: $nameKey } }) { name"
        " papers(sort: [{ submittedAt: DESC }, { pithNumber: DESC }], limit: 100) {"
        " pithNumber title authors(sort: [{ name: ASC }]) { name } } } }"
    ),
    "c_category_newest_50": (
        "query CategoryPage($code: String!, $after: String) {"
        " categories(where: { code: { eq: $code } }) {"
        " papersConnection(first: 50, after: $after,"
        " sort: [{ node: { submittedAt: DESC } }, { node: { pithNumber: DESC } }]) {"
        " edges { cursor node { pithNumber title submittedAt } }"
        " pageInfo { hasNextPage endCursor } } } }"
    ),
    "d_category_count": (
        "query CategoryCount($code: String!) {"
        " categories(where: { code: { eq: $code } }) { papersConnection { totalCount } } }"
    ),
}


def _names(items: list[dict[str, Any]]) -> list[str]:
    return sorted(item["name"] for item in items)


def _paper(paper: dict[str, Any]) -> dict[str, Any]:
    found = {"pithNumber": paper["pithNumber"], "title": paper["title"], "authors": _names(paper["authors"])}
    if "categories" in paper:
        found["categories"] = sorted(category["code"] for category in paper["categories"])
    return found


def _one(items: list[Any]) -> Any:
    if len(items) > 1:
        raise ValueError(f"a key matched {len(items)} nodes")
    return items[0] if items else None


def _page(connection: dict[str, Any]) -> dict[str, Any]:
    return {
        "papers": [
            [edge["node"]["pithNumber"], edge["node"]["title"], edge["node"]["submittedAt"]]
            for edge in connection["edges"]
        ],
        "hasNextPage": connection["pageInfo"]["hasNextPage"],
    }


def _ours(scenario: str, data: dict[str, Any]) -> Any:
    if scenario == "a_paper_by_doi":
        return data["paper"] and _paper(data["paper"])
    if scenario == "b_author_papers_authors":
        author = data["author"]
        return author and {"name": author["name"], "papers": [_paper(p) for p in author["papers"]["nodes"]]}
    category = data["category"]
    if category is None:
        return None
    if scenario == "c_category_newest_50":
        return _page(category["papers"])
    return category["paperCount"]


def _peer(scenario: str, data: dict[str, Any]) -> Any:
    if scenario == "a_paper_by_doi":
        alias = _one(data["aliases"])
        return alias and alias["papers"] and _paper(alias["papers"][0])
    if scenario == "b_author_papers_authors":
        author = _one(data["authors"])
        return author and {"name": author["name"], "papers": [_paper(p) for p in author["papers"]]}
    category = _one(data["categories"])
    if category is None:
        return None
    if scenario == "c_category_newest_50":
        return _page(category["papersConnection"])
    return category["papersConnection"]["totalCount"]


#: server -> (scenario, data) -> the answer in one shape
normalise: dict[str, Callable[[str, dict[str, Any]], Any]] = {"ours": _ours, "peer": _peer}


def end_cursor(server: str, data: dict[str, Any]) -> str | None:
    """Scenario (c): the cursor to ask for the next page with."""
    if server == "ours":
        return data["category"]["papers"]["pageInfo"]["endCursor"]
    return data["categories"][0]["papersConnection"]["pageInfo"]["endCursor"]


def _spread(values: list[str], count: int) -> list[str]:
    """``count`` values evenly spaced over the sorted ``values`` (all of them if fewer)."""
    values = sorted(values)
    if len(values) <= count:
        return values
    step = len(values) / count
    return [values[int(i * step)] for i in range(count)]


def pick_inputs(driver: neo4j.Driver, database: str, count: int) -> dict[str, list[str]]:
    """scenario -> its distinct inputs, picked deterministically from what the database holds:
    DOIs spread over the sorted list, the authors and the categories with the most papers."""

    def values(statement: str, **params: Any) -> list[str]:
        records, _, _ = driver.execute_query(
            statement, params, database_=database, routing_=neo4j.RoutingControl.READ
        )
        return [record[0] for record in records]

    dois = values("MATCH (a:Alias {kind: 'doi'})-[:IDENTIFIES]->(:Paper) RETURN DISTINCT a.value")
    authors = values(
        "MATCH (a:Author) WITH a, COUNT { (a)-[:AUTHORED]->() } AS papers"
        " RETURN a.nameKey ORDER BY papers DESC, a.nameKey LIMIT $count",
        count=count,
    )
    categories = values(
        "MATCH (c:Category) WITH c, COUNT { (c)<-[:IN_CATEGORY]-() } AS papers"
        " RETURN c.code ORDER BY papers DESC, c.code LIMIT $count",
        count=count,
    )
    if not (dois and authors and categories):
        raise SystemExit("the database holds no DOI, author or category to ask about: is it loaded?")
    return {
        "a_paper_by_doi": _spread(dois, count),
        "b_author_papers_authors": authors,
        "c_category_newest_50": categories,
        "d_category_count": categories,
    }


def variables(scenario: str, value: str, after: str | None = None) -> dict[str, Any]:
    """The GraphQL variables of one request (the same names in both servers' queries)."""
    if scenario == "a_paper_by_doi":
        return {"doi": value}
    if scenario == "b_author_papers_authors":
        return {"nameKey": value}
    if scenario == "c_category_newest_50":
        return {"code": value, "after": after}
    return {"code": value}
