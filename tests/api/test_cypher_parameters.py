"""Every value from input reaches Neo4j as a parameter, never as statement text (README:
"No Cypher is built from input").

The statements are recorded where the driver sends them (its ``Result._run``, sync and
asyncio: every session, transaction and ``execute_query`` run passes there) while a load
writes bundles whose title, abstract and author names hold a marker, and while every query
field that takes text is asked for the marker, its filters and cursors too. No statement
may contain the marker; some parameters must, or the test would prove nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from apitest import loaded_neo4j, served, signed_jsonl
from neo4j._async.work.result import AsyncResult
from neo4j._sync.work.result import Result

from pith_graph.api.app import create_app
from pith_graph.api.lanes import ThreadRunner
from pith_graph.testing.signer import PaperSpec

pytestmark = pytest.mark.neo4j

TOKEN = "Zqxv7"
#: The marker as input gives it: what would break out of a Cypher string or comment.
MARKED = f"{TOKEN} ') RETURN 1 // \" }} MATCH (n) DETACH DELETE n"


class Sent:
    """The statements the driver sent, with their parameters."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, Any]] = []

    def take(self) -> list[tuple[str, Any]]:
        taken, self.statements = self.statements, []
        return taken


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Sent:
    record = Sent()
    sync_run: Any = Result._run
    async_run: Any = AsyncResult._run

    def run(self: Result, query: Any, parameters: Any, *rest: Any) -> Any:
        record.statements.append((str(query), parameters))
        return sync_run(self, query, parameters, *rest)

    async def run_async(self: AsyncResult, query: Any, parameters: Any, *rest: Any) -> Any:
        record.statements.append((str(query), parameters))
        return await async_run(self, query, parameters, *rest)

    monkeypatch.setattr(Result, "_run", run)
    monkeypatch.setattr(AsyncResult, "_run", run_async)
    return record


def _check(statements: list[tuple[str, Any]], what: str) -> None:
    assert statements, f"{what}: no statement was sent"
    inlined = [text for text, _ in statements if TOKEN.lower() in text.lower()]  # folded keys too
    assert inlined == [], f"{what}: input in statement text"
    assert any(_holds(parameters) for _, parameters in statements), f"{what}: the marker never reached Neo4j"


def _holds(value: Any) -> bool:
    """Whether a parameter value holds the marker, however deep (not by ``repr``: a load's
    batch rows are a list whose ``repr`` is only their count)."""
    if isinstance(value, str):
        return TOKEN in value
    if isinstance(value, dict):
        return any(_holds(key) or _holds(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return any(_holds(item) for item in value)
    return False


#: Every query field that takes text, asked for the marker (``$m``; ``$ms``: a list of it).
QUERIES = [
    "query($m: String!) { paper(id: $m) { title } }",
    "query($m: String!) { resolve(id: $m) { title } }",
    "query($ms: [String!]!) { papersById(ids: $ms) { title } }",
    "query($m: String!, $f: PaperFilter) { search(text: $m, filter: $f) { nodes { paper { title } } } }",
    "query($m: String!, $f: PaperFilter) { search(text: $m, filter: $f, orderBy: NEWEST) { totalCount } }",
    "query($m: String!) { search(text: $m, after: $m) { totalCount } }",
    "query($m: String!, $f: PaperFilter) { papers(filter: $f, after: $m) { totalCount nodes { title } } }",
    "query($f: PaperFilter) { papers(filter: $f) { totalCount nodes { title } } }",
    "query($m: String!) { authors(prefix: $m) { name } }",
    "query($m: String!) { author(name: $m) { name papers(after: $m) { totalCount } } }",
    "query($m: String!) { author(name: $m) { name papers { nodes { title } } coauthors { name } } }",
    "query($m: String!) { category(code: $m) { code papers(after: $m) { totalCount } } }",
    "query($m: String!) { signer(id: $m) { papers(after: $m) { totalCount } } }",
    "query($m: String!) { collaborationPath(from: $m, to: $m) { __typename } }",
]


def test_no_input_is_ever_part_of_a_statement(
    request: pytest.FixtureRequest, tmp_path: Path, sent: Sent
) -> None:
    specs = [
        PaperSpec.example(
            f"2601.0000{n}",
            title=f"{MARKED} title {n}",
            abstract_excerpt=f"On {MARKED}.",
            authors=[f"{TOKEN} Ada {n}", "Bo Marked"],
        )
        for n in range(1, 4)
    ]
    bundles = signed_jsonl(tmp_path, specs, seed=61)
    with loaded_neo4j(request, bundles, timeout=30) as reader:
        _check(sent.take(), "load")
        runner = ThreadRunner(2)
        try:
            with served(create_app(reader, keyring=bundles[1], run=runner), "neo4j", reader) as api:
                every = dict.fromkeys(("category", "archive", "author", "license", "title"), MARKED)
                found = api.data("query($m: String!) { search(text: $m) { totalCount } }", m=TOKEN)
                assert found["search"]["totalCount"] == 3  # the marker is in the data, and is found
                listed = {"categories": [MARKED, "cs.LG"], "excludeCategories": [MARKED]}  # since 0.9.1
                for query in QUERIES:
                    for where in (every, listed, {**every, **listed}):
                        variables = {"m": MARKED, "ms": [MARKED], "f": where}
                        declared = {name for name in variables if f"${name}:" in query}
                        api.post(query, {name: variables[name] for name in declared})
                named = api.data(f'{{ author(name: "{TOKEN} Ada 1") {{ name papers {{ totalCount }} }} }}')
                assert named["author"]["papers"]["totalCount"] == 1
        finally:
            runner.close()
        _check(sent.take(), "queries")
