"""An author spelt a different way by each of its papers (one signer can give an author
thousands of spellings: each letter's case, or any of the characters that fold to it):
``Author.nameForms`` answers its first 20 alike on both backends, and on Neo4j reads each
list once, whatever their length (an index into the stored list read it all again: seconds
per author, and light queries that tied up the server)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apitest import Api, loaded_neo4j, memory_reader_of, served_as_serve_does, signed_jsonl

from pith_graph.api.reads import cypher
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.reader import GraphReader
from pith_graph.loader.keyring import Keyring
from pith_graph.testing.signer import PaperSpec

PAPERS = 400


def _spelt(i: int) -> str:
    """The ``i``-th of 1,024 spellings of one author (its letters' cases)."""
    letters = "".join(c.upper() if i >> at & 1 else c for at, c in enumerate("annleezhou"))
    return f"{letters[:3]} {letters[3:6]} {letters[6:]}"


SPELLINGS = sorted(_spelt(i) for i in range(1, PAPERS + 1))


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Keyring]:
    specs = [PaperSpec.example(f"2406.{i:05d}", authors=[_spelt(i), "Bo Chen"]) for i in range(1, PAPERS + 1)]
    return signed_jsonl(tmp_path_factory.mktemp("many-forms"), specs, seed=17)


@pytest.fixture(scope="module")
def forms_neo4j(request: pytest.FixtureRequest, bundles: tuple[Path, Keyring]) -> Iterator[Neo4jReader]:
    with loaded_neo4j(request, bundles, timeout=30) as reader:
        yield reader


@pytest.fixture(scope="module", params=["memory", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def api(request: pytest.FixtureRequest, bundles: tuple[Path, Keyring]) -> Iterator[Api]:
    reader: GraphReader = (
        request.getfixturevalue("forms_neo4j") if request.param == "neo4j" else memory_reader_of(bundles)
    )
    with served_as_serve_does(reader, keyring=bundles[1]) as served_api:
        yield served_api


def test_the_first_twenty_forms_smallest_first(api: Api) -> None:
    query = "query($n: String!) { author(name: $n) { name paperCount nameForms { name paperCount } } }"
    for _ in range(2):  # the resolvers, then the plan
        author: dict[str, Any] = api.data(query, n="ann lee zhou")["author"]
        assert author == {
            "name": SPELLINGS[0],
            "paperCount": PAPERS,
            "nameForms": [{"name": name, "paperCount": 1} for name in SPELLINGS[:20]],
        }
    many = api.data("{ papers(first: 10) { nodes { authors(first: 5) { nameKey nameForms { name } } } } }")
    for paper in many["papers"]["nodes"]:
        shown = {a["nameKey"]: [f["name"] for f in a["nameForms"]] for a in paper["authors"]}
        assert shown == {"ann lee zhou": SPELLINGS[:20], "bo chen": ["Bo Chen"]}


@pytest.mark.neo4j
def test_neo4j_reads_an_author_s_forms_once_however_many(forms_neo4j: Neo4jReader) -> None:
    """The statement's database hits do not grow with the forms (two per form before)."""

    def hits(step: dict[str, Any]) -> int:
        return int(step.get("dbHits", 0)) + sum(hits(child) for child in step.get("children", []))

    summary = forms_neo4j.driver.execute_query(
        "PROFILE " + cypher.READ_NAME_FORMS, {"keys": ["ann lee zhou"], "first": 20}
    ).summary
    assert summary.profile is not None
    assert hits(summary.profile) < 50, hits(summary.profile)  # 804 for these 400 forms, before
    assert forms_neo4j.name_forms_of_authors(["ann lee zhou"], 20)["ann lee zhou"][0].name == SPELLINGS[0]
