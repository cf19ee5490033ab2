"""``Paper.authorNames`` of a graph written before 0.8, which holds none (CHANGELOG.md,
0.8.0; README: "A paper loaded before 0.8"): each backend answers the paper's authors' names, by name, over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from apitest import Api, loaded_neo4j, served_as_serve_does, signed_jsonl
from test_api_author_names import BYLINE, _paper

from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.reader import GraphReader
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.testing.signer import PaperSpec

#: As the paper lists them, and as the API lists a paper written before 0.8: by name.
LISTED = ["Zoë Smith", "ann lee", "Bo Chen", "ZOË SMITH-JONES"]
BY_NAME = ["Bo Chen", "ZOË SMITH-JONES", "Zoë Smith", "ann lee"]
OLD_PAPER = "2403.30001"


@pytest.fixture(scope="module")
def old_bundles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Keyring]:
    specs = [PaperSpec.example(OLD_PAPER, authors=LISTED, submitted_at="2024-03-01T00:00:00Z")]
    return signed_jsonl(tmp_path_factory.mktemp("before-0.8"), specs, seed=17)


@pytest.fixture(scope="module", params=["memory", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def old_api(request: pytest.FixtureRequest, old_bundles: tuple[Path, Keyring]) -> Iterator[Api]:
    keyring = old_bundles[1]
    if request.param == "memory":
        store = MemoryStore()
        run([str(old_bundles[0])], keyring=keyring, store=store, workers=1)
        for _node, data in store.graph.nodes(data=True):
            data.pop("authorNames", None)  # as 0.7 saved it
        memory = MemoryReader(store.graph)
        with served_as_serve_does(memory, keyring=keyring) as api:
            yield api
        return
    with loaded_neo4j(request, old_bundles, timeout=30) as reader:
        store = request.getfixturevalue("neo4j_server").connect()
        try:
            store.driver.execute_query("MATCH (p:Paper) REMOVE p.authorNames")  # as 0.7 wrote it
        finally:
            store.close()
        neo4j: GraphReader = reader
        with served_as_serve_does(neo4j, keyring=keyring) as api:
            yield api


def test_a_paper_written_before_0_8_lists_its_authors_by_name(old_api: Api) -> None:
    paper = _paper(old_api, OLD_PAPER)
    assert paper["authorNames"] == BY_NAME == [a["name"] for a in paper["authors"]]
    assert paper["authorNames"] != LISTED  # what 0.8 would store: the paper's own order
    byline = old_api.data(BYLINE, id=OLD_PAPER)["paper"]["byline"]  # each name finds its author
    assert [(b["position"], b["name"], b["author"]["name"]) for b in byline] == [
        (place, name, name) for place, name in enumerate(BY_NAME, start=1)
    ]
