"""The README's examples run as written and show what they say: its Python blocks print what
the shipped samples hold, and its GraphQL blocks fit the schema and answer without errors
from ``pith-graph serve`` over the samples."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from graphql import parse, validate

from pith_graph.api.schema import build_schema
from pith_graph.loader.facade import SAMPLES, resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.testing.serving import serving

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
GRAPHQL_BLOCKS = re.findall(r"```graphql\n(.*?)```", README.read_text(), flags=re.S)


NEEDS_NEO4J = "# needs: neo4j"

#: What each Python block documents, over the shipped samples: ``stdout`` is a regular
#: expression its whole output must match; ``values`` maps expressions, evaluated in the
#: block's namespace once it has run, to what they must equal. Every block needs an entry.
PYTHON_EXPECTED: dict[int, dict[str, Any]] = {
    0: {  # load_graph and coauthorship_graph (several authors share the highest degree, 7)
        "stdout": re.escape("3 0 {'Alias': 18, 'Author': 19, 'Category': 5, 'Paper': 3, 'Signer': 1}\n")
        + r"\('Author:[^']+', 7\) \{.*\}\n",
        "values": {
            "(report.accepted, report.rejected, report.counts.nodes)": (
                3,
                0,
                {"Alias": 18, "Author": 19, "Category": 5, "Paper": 3, "Signer": 1},
            ),
            "most_connected[1] == max(d for _, d in C.degree)": True,
            "papers_per_category": {"cs.LG": 3, "cs.AI": 1, "cs.DC": 2, "stat.ML": 2, "cs.PF": 2},
        },
    },
    1: {  # save_graphml, read back by networkx: the lists as JSON text (since 0.9.5)
        "stdout": re.escape("2019 True ['Arslan Zulfiqar', 'David Nellans']\n"),
        "values": {
            "(H.number_of_nodes(), H.number_of_edges()) == (G.number_of_nodes(), G.number_of_edges())": True,
            "type(H) is nx.DiGraph": True,
        },
    },
    2: {  # export_graph from Neo4j (holding the samples, all three in cs.LG): 19 authors,
        # every one of equal rank in their coauthor graph
        "stdout": r"(?:[^\n:]+: 0\.053\n){3}",
        "values": {
            "(G.number_of_nodes(), C.number_of_nodes())": (46, 19),
            "sorted(rank.values(), reverse=True)[:3]": pytest.approx([1 / 19] * 3),
        },
    },
    3: {  # the schema in-process
        "stdout": re.escape("Optimizing Multi-GPU Parallelization Strategies for Deep Learning Training\n"),
        "values": {},
    },
    4: {  # the worked examples of papersById, search, facets and authors
        "stdout": re.escape(
            "['pith:BR75OIUY', None, 'pith:W3PCQTV6', 'pith:BR75OIUY']\n"
            "2 [('Optimizing Multi-GPU Parallelization Str', 1.18), ('Building a Performance Model for Deep Le', 1.079)]\n"
            "[{'value': 'cs.LG', 'count': 3}, {'value': 'cs.DC', 'count': 2}, {'value': 'cs.PF', 'count': 2}] "
            "[{'value': '2019', 'count': 1}, {'value': '2020', 'count': 1}, {'value': '2022', 'count': 1}]\n"
            "[{'name': 'John D. Owens', 'paperCount': 1}]\n"
        ),
        "values": {"page['pageInfo']['hasNextPage']": True, "len(following['edges'])": 1},
    },
}

#: The variables of each GraphQL block that has any, as the README describes them, or the
#: reason it is only validated, not run (``skip``). ``pages``: after the first answer, ask
#: again with ``after`` set to the last ``nameKey`` of the answer's authors, as the README says
#: to page on, that many times.
GRAPHQL_VARIABLES: dict[int, dict[str, Any]] = {
    2: {  # Paper.authors(first:, after:): the id of the README's paper(id:) example; page 1
        "variables": {"id": "doi:10.48550/arXiv.1907.13257", "after": None},
        "pages": 1,
    },
    3: {"variables": {"after": None}},  # a ranked list (coauthors) with after: its first page
}


def _param(index: int, code: str) -> Any:
    marks = [pytest.mark.neo4j] if code.startswith(NEEDS_NEO4J) else []
    return pytest.param(index, code, id=f"block-{index}", marks=marks)


def test_every_python_block_has_its_expectations() -> None:
    assert sorted(PYTHON_EXPECTED) == list(range(len(BLOCKS)))


@pytest.mark.parametrize(("index", "code"), [_param(i, code) for i, code in enumerate(BLOCKS)])
def test_readme_python_block_runs(
    index: int,
    code: str,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if code.startswith(NEEDS_NEO4J):  # the session's server, holding the shipped samples
        server = request.getfixturevalue("neo4j_server")
        store = server.connect()
        try:
            store.clear()
            report = run([SAMPLES], keyring=resolve_keyring(), store=store, workers=1)
            assert report.accepted == 3
        finally:
            store.close()
        monkeypatch.setenv("NEO4J_URI", server.uri)
        if server.password:
            monkeypatch.setenv("NEO4J_PASSWORD", server.password)
    namespace: dict[str, Any] = {"__name__": "readme"}
    exec(compile(code, str(README), "exec"), namespace)
    expected = PYTHON_EXPECTED[index]
    out = capsys.readouterr().out
    assert re.fullmatch(expected["stdout"], out, flags=re.S), out
    for expression, value in expected["values"].items():
        assert eval(expression, namespace) == value, expression


# -- GraphQL -----------------------------------------------------------------------------------

SCHEMA = build_schema()._schema


@pytest.fixture(scope="module")
def samples_url() -> Iterator[str]:
    """The README's first command itself, ``scripts/run`` (its set-up is done: the suite
    runs in its .venv), on a free port: the shipped samples, in memory."""
    run = Path(__file__).parent.parent / "scripts" / "run"
    output: list[str] = []
    with serving(
        ["--port", "0", "--workers", "1", "--load-workers", "1"], command=[str(run)], output=output
    ) as url:
        # "prints the load summary": 3 sample bundles, 3 papers
        assert any(
            line.startswith("loaded 3 bundles in ") and "the graph holds 3 papers" in line for line in output
        )
        yield url


def test_the_readme_has_graphql_blocks() -> None:
    assert len(GRAPHQL_BLOCKS) >= 2
    assert set(GRAPHQL_VARIABLES) <= set(range(len(GRAPHQL_BLOCKS)))


@pytest.mark.parametrize("index", range(len(GRAPHQL_BLOCKS)), ids=lambda i: f"block-{i}")
def test_readme_graphql_block_answers_without_errors(index: int, samples_url: str) -> None:
    block = GRAPHQL_BLOCKS[index]
    document = parse(block)
    assert [error.message for error in validate(SCHEMA, document)] == []
    declared = {
        variable.variable.name.value
        for definition in document.definitions
        for variable in getattr(definition, "variable_definitions", None) or ()
    }
    given = GRAPHQL_VARIABLES.get(index, {"variables": {}})
    if "skip" in given:
        pytest.skip(given["skip"])
    variables: dict[str, Any] = dict(given["variables"])
    assert set(variables) == declared, f"block {index}: give its variables or a skip reason"
    for page in range(1 + given.get("pages", 0)):
        answer = httpx.post(
            f"{samples_url}/graphql", json={"query": block, "variables": variables}, timeout=30
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert "errors" not in body, body["errors"]
        assert all(value is not None for value in body["data"].values()), body["data"]
        if page < given.get("pages", 0):
            authors = body["data"]["paper"]["authors"]
            assert authors, "the first page holds authors"
            variables["after"] = authors[-1]["nameKey"]
    if given.get("pages"):  # the README's paper has fewer authors than a page: none follow
        assert body["data"]["paper"]["authors"] == []
