"""``Paper.authorNames`` over HTTP, on both backends and both executions: a paper's authors
as it lists them, in its order and its own spellings (``Paper.authors`` lists them by name,
each as the Author is named: the smallest of its papers' spellings), the first 100 of them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apitest import Api, loaded_neo4j, memory_reader_of, served_as_serve_does, signed_jsonl

from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.reader import GraphReader
from pith_graph.loader.keyring import Keyring
from pith_graph.testing.signer import PaperSpec

#: Not in name order, and one author spelt otherwise on another paper.
LISTED = ["Zoë  Smith", "ann lee", "Bo Chen"]
OTHER = ["ZOË SMITH"]
#: More authors than the list holds (100), in an order no sort gives.
MANY = [f"Author {(i * 37) % 130:03d}" for i in range(130)]
PAPERS = {"2403.20001": LISTED, "2403.20002": OTHER, "2403.20003": MANY, "2403.20004": []}


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Keyring]:
    specs = [
        PaperSpec.example(arxiv_id, authors=names, submitted_at=f"2024-03-0{day}T00:00:00Z")
        for day, (arxiv_id, names) in enumerate(PAPERS.items(), 1)
    ]
    return signed_jsonl(tmp_path_factory.mktemp("author-names"), specs, seed=13)


@pytest.fixture(scope="module")
def names_memory(bundles: tuple[Path, Keyring]) -> MemoryReader:
    return memory_reader_of(bundles)


@pytest.fixture(scope="module")
def names_neo4j(request: pytest.FixtureRequest, bundles: tuple[Path, Keyring]) -> Iterator[Neo4jReader]:
    with loaded_neo4j(request, bundles, timeout=30) as reader:
        yield reader


@pytest.fixture(scope="module", params=["memory", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def api(request: pytest.FixtureRequest, bundles: tuple[Path, Keyring]) -> Iterator[Api]:
    reader: GraphReader = request.getfixturevalue(f"names_{request.param}")
    with served_as_serve_does(reader, keyring=bundles[1]) as served_api:
        yield served_api


_SENT = itertools.count()
QUERY = "query($id: String!) { paper(id: $id) { authorCount authorNames authors { name } } }"


def _paper(api: Api, arxiv_id: str) -> dict[str, Any]:
    """The answer of the resolvers (a text new to the server), then of its plan: equal."""
    text = f"{QUERY} # {next(_SENT)}"
    first = api.post(text, {"id": arxiv_id})
    assert api.post(text, {"id": arxiv_id}) == first
    assert "errors" not in first, first["errors"]
    paper: dict[str, Any] = first["data"]["paper"]
    return paper


def test_the_paper_lists_its_authors_in_its_order_and_spelling(api: Api) -> None:
    paper = _paper(api, "2403.20001")
    assert paper["authorNames"] == ["Zoë Smith", "ann lee", "Bo Chen"]  # whitespace collapsed
    # the Author is named by all its papers: the smallest spelling, ZOË SMITH's paper's
    assert [a["name"] for a in paper["authors"]] == ["Bo Chen", "ZOË SMITH", "ann lee"]
    assert _paper(api, "2403.20002")["authorNames"] == ["ZOË SMITH"]


def test_a_long_list_is_its_first_hundred_and_no_author_is_an_empty_one(api: Api) -> None:
    paper = _paper(api, "2403.20003")
    assert paper["authorCount"] == len(MANY)
    assert paper["authorNames"] == MANY[:100]
    assert _paper(api, "2403.20004") == {"authorCount": 0, "authorNames": [], "authors": []}


BYLINE = "query($id: String!) { paper(id: $id) { byline { position name author { name nameKey } } } }"


def test_the_byline_links_each_printed_name_to_its_author(api: Api) -> None:
    """Since 0.9.0: the printed line, in its order and spelling, each name with its Author."""
    byline = api.data(BYLINE, id="2403.20001")["paper"]["byline"]
    assert byline == [
        {"position": 1, "name": "Zoë Smith", "author": {"name": "ZOË SMITH", "nameKey": "zoë smith"}},
        {"position": 2, "name": "ann lee", "author": {"name": "ann lee", "nameKey": "ann lee"}},
        {"position": 3, "name": "Bo Chen", "author": {"name": "Bo Chen", "nameKey": "bo chen"}},
    ]
    assert api.data(BYLINE, id="2403.20001") == {"paper": {"byline": byline}}  # its plan answers alike
    many = api.data(BYLINE, id="2403.20003")["paper"]["byline"]
    assert [(b["position"], b["name"]) for b in many] == list(enumerate(MANY[:100], start=1))
    assert api.data(BYLINE, id="2403.20004") == {"paper": {"byline": []}}


FORMS = "query($name: String!) { author(name: $name) { name paperCount nameForms { name paperCount } } }"


def _author(api: Api, name: str) -> dict[str, Any]:
    text = f"{FORMS} # {next(_SENT)}"
    first = api.post(text, {"name": name})
    assert api.post(text, {"name": name}) == first  # the resolvers, then the plan
    assert "errors" not in first, first["errors"]
    author: dict[str, Any] = first["data"]["author"]
    return author


def test_an_author_lists_its_papers_spellings_counted(api: Api) -> None:
    assert _author(api, "zoë smith") == {
        "name": "ZOË SMITH",
        "paperCount": 2,
        "nameForms": [{"name": "ZOË SMITH", "paperCount": 1}, {"name": "Zoë Smith", "paperCount": 1}],
    }
    # spelt alike on all its papers: one form, the name and the count
    assert _author(api, "ann lee")["nameForms"] == [{"name": "ann lee", "paperCount": 1}]
