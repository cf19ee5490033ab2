"""``Paper.byline`` over Neo4j while a load replaces the paper between the request's reads.

A byline is read in two statements: the paper's printed names, then the authors they name
(``api.bylines``). Neo4j runs a request's transaction at READ COMMITTED, so a load that
commits in between (a new version of the paper naming other authors; the old version's
authors, on no paper any more, removed) leaves names whose authors the second statement finds
no more. Before the fix the resolvers raised a RuntimeError: INTERNAL_SERVER_ERROR, and the
paper nulled (``author`` is non-null); an attacker's run saw it in 53 of 609 answers while
260 rebuilds of one paper were loaded. Now it is a torn read, and the request reads again.

Here the load is real (the loader's pipeline into the same server, one write transaction)
and commits exactly between the two statements: the request reader's read of the names runs
it once, before returning (:class:`LoadingBetween`). Over HTTP, each document first by the
resolvers, then by its plan, the answer is the byline of the version loaded, whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from apitest import served, signed_jsonl

from pith_graph.api.app import create_app
from pith_graph.api.lanes import ThreadRunner
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.loader.identifiers import author_name_key
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.testing.spec import PaperSpec

pytestmark = pytest.mark.neo4j

ARXIV_ID = "2403.00042"
SEED = 20261205
#: Versions loaded one after the other: each rebuild (a later build, the same pith number)
#: prints other authors than the one before.
VERSIONS = 5
BYLINE = "query($id: String!) { paper(id: $id) { byline { position name author { nameKey name } } } }"
NODES = "query($ids: [ID!]!) { nodes(ids: $ids) { ... on Paper { byline { position name author { nameKey name } } } } }"


def names_of(version: int) -> list[str]:
    return [f"Printed{version} Author{n}" for n in range(1, version + 3)]


def spec(version: int) -> PaperSpec:
    return PaperSpec.example(
        ARXIV_ID, authors=names_of(version), built_at=f"2026-03-{version + 1:02d}T10:00:00Z"
    )


def byline_of(version: int) -> list[dict[str, Any]]:
    """The byline the API answers for ``version``."""
    return [
        {"position": place, "name": name, "author": {"nameKey": author_name_key(name), "name": name}}
        for place, name in enumerate(names_of(version), start=1)
    ]


class LoadingBetween(Neo4jReader):
    """A Neo4j reader whose request readers, the next time one has read papers' printed
    names (``author_names_of_papers``), run :attr:`then` (a load) before answering."""

    then: Callable[[], None] | None = None

    def for_request(self, **options: Any) -> Neo4jReader:
        request = super().for_request(**options)
        names = request.author_names_of_papers

        def names_then_load(pith_numbers: Sequence[str], first: int) -> dict[str, list[str]]:
            found = names(pith_numbers, first)
            then, self.then = self.then, None
            if then is not None:
                then()
            return found

        request.author_names_of_papers = names_then_load  # type: ignore[method-assign]
        return request


@pytest.fixture
def versions(neo4j_server: Any, tmp_path: Path) -> Iterator[tuple[Neo4jStore, list[Path], Keyring]]:
    """The session's Neo4j, cleared, holding version 0; every version's bundle file; their keyring."""
    folders: list[Path] = []
    keyring: Keyring | None = None
    for version in range(VERSIONS):
        folder = tmp_path / f"v{version}"
        folder.mkdir()
        bundles, keyring = signed_jsonl(folder, [spec(version)], SEED)
        folders.append(bundles)
    assert keyring is not None
    store = neo4j_server.connect()
    try:
        store.clear()
        assert run([str(folders[0])], keyring=keyring, store=store, workers=1).rejected == 0
        yield store, folders, keyring
    finally:
        store.clear()
        store.close()


def test_a_byline_read_across_a_load_is_read_again_whole(
    versions: tuple[Neo4jStore, list[Path], Keyring],
) -> None:
    store, folders, keyring = versions
    reader = LoadingBetween(store.driver, store.database, uri=store.uri)
    runner = ThreadRunner(2)
    loaded = 0

    def load_next() -> None:
        nonlocal loaded
        loaded += 1
        assert run([str(folders[loaded])], keyring=keyring, store=store, workers=1).rejected == 0

    try:
        with served(create_app(reader, keyring=keyring, run=runner), "neo4j", reader) as api:
            node_id = api.data("query($id: String!) { paper(id: $id) { id } }", id=ARXIV_ID)["paper"]["id"]
            before = BYLINE.replace("query(", "query Before(")  # another text: BYLINE's first is below
            assert api.data(before, id=ARXIV_ID) == {"paper": {"byline": byline_of(0)}}
            for query, variables, answer in (
                (BYLINE, {"id": ARXIV_ID}, lambda b: {"paper": {"byline": b}}),
                (NODES, {"ids": [node_id]}, lambda b: {"nodes": [{"byline": b}]}),
            ):
                for execution in ("resolvers", "plan"):  # a document's first request, then its plan
                    reader.then = load_next
                    body = api.post(query, variables)
                    assert reader.then is None, "the request read no names"
                    assert body == {"data": answer(byline_of(loaded))}, (execution, query, body)
    finally:
        runner.close()
    assert loaded == VERSIONS - 1
