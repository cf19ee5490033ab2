"""``Paper.byline``: the author line as printed, each name with its Author, over HTTP, on
both backends and both executions (resolvers, then the plan of the same text), on the crowd
corpus of :mod:`test_api_author_pages`: a paper of 250 authors whose printed order is not
the order ``Paper.authors`` lists them in, names that NFKC, case folding and accents tell
apart, and small papers sharing them."""

from __future__ import annotations

from typing import Any

import pytest
from apitest import Api
from graphql import parse
from test_api_author_pages import (  # noqa: F401 (fixtures)
    CROWDED,
    NAMES,
    PAPERS,
    _both,
    crowd,
    crowd_memory,
    crowd_neo4j,
    pages,
)
from test_api_nplus1 import Counted, _serve

from pith_graph.api.cost import LIST_SIZES, query_cost
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.schema import build_schema
from pith_graph.loader.identifiers import author_display_name, author_name_key

BYLINE = (
    "query($id: String!) { paper(id: $id) { authorCount authorNames "
    "byline { position name author { nameKey name paperCount } } } }"
)
#: How many papers each author is on, in the corpus.
ON = {key: sum(key in {author_name_key(n) for n in names} for names in PAPERS.values()) for key in NAMES}


@pytest.mark.parametrize("arxiv_id", list(PAPERS))
def test_the_byline_is_the_printed_line_linked_to_its_authors(pages: Api, arxiv_id: str) -> None:
    body = _both(pages, BYLINE, id=arxiv_id)
    assert "errors" not in body, body["errors"]
    paper = body["data"]["paper"]
    printed = [author_display_name(name) for name in sorted(PAPERS[arxiv_id])][: LIST_SIZES["Paper.byline"]]
    assert paper["authorNames"] == printed
    assert paper["byline"] == [
        {
            "position": place,
            "name": name,
            "author": {
                "nameKey": author_name_key(name),
                "name": NAMES[author_name_key(name)],
                "paperCount": ON[author_name_key(name)],
            },
        }
        for place, name in enumerate(printed, start=1)
    ]


def test_a_long_byline_is_cut_and_costs_its_cut() -> None:
    assert len(PAPERS[CROWDED]) == 250 > LIST_SIZES["Paper.byline"] == 100
    query = "{ papers(first: 14) { nodes { byline { name author { name } } } } }"
    assert query_cost(build_schema()._schema, parse(query), None, None, RequestLimits()) == 14 + 14 * 100


@pytest.mark.neo4j
@pytest.mark.parametrize("execution", ["resolvers", "plan"])
def test_bylines_of_a_listing_take_a_fixed_number_of_statements(
    crowd_neo4j: Neo4jReader, execution: str
) -> None:
    """The page, every paper's printed names, then every name's author: three statements
    for 14 papers and their 300 names (1,400 with a byline each), in one transaction."""
    query = "{ papers(first: 14) { nodes { pithNumber byline { position author { nameKey paperCount } } } } }"
    counted = Counted(crowd_neo4j)
    with _serve(counted, "bridged") as api:
        if execution == "plan":
            counted.post(api, query)  # the first time, the resolvers answer (and the plan is made)
        data, statements, transactions = counted.ask(api, query)
    papers: list[dict[str, Any]] = data["papers"]["nodes"]
    assert len(papers) == 14 and sum(len(p["byline"]) for p in papers) > 100
    assert len(statements) == 3, statements
    assert transactions == 1
