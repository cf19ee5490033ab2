"""Execution plans answer exactly as the resolvers do, on both backends, for every field.

Each query runs on a schema without plans (the resolvers: the reference) and twice on a
schema with plans (the first run compiles the plan, the second is answered by it); data and
errors must be identical. Queries that fail must leave the plan and give the resolvers'
errors."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from apitest import (  # noqa: F401 (fixtures)
    Api,
    Corpus,
    _neo4j_api,
    api,
    corpus,
    memory_api,
    memory_reader,
    neo4j_api,
    neo4j_corpus,
    neo4j_reader,
)
from graphql import GraphQLObjectType, parse
from test_api_e2e import PAPER_FIELDS, QUERIES, Examples, examples  # noqa: F401 (fixture)

from pith_graph.api.app import key_infos
from pith_graph.api.context import Context, KeyInfo
from pith_graph.api.cursors import encode_cursor
from pith_graph.api.lanes import ThreadRunner, run_inline
from pith_graph.api.limits import RequestLimits
from pith_graph.api.plan import Plans, run_plan
from pith_graph.api.plan.compile import compile_plan
from pith_graph.api.plan.fields import FIELDS
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.reader import GraphReader
from pith_graph.api.reads.records import PaperKey
from pith_graph.api.schema import PithSchema, build_schema
from pith_graph.loader.identifiers import author_name_key


class Backend:
    """A reader, how it runs, and the keyring's keys."""

    def __init__(self, reader: GraphReader, runner: Any, keys: dict[str, KeyInfo]) -> None:
        self.reader = reader
        self.runner = runner
        self.keys = keys

    def execute(self, schema: PithSchema, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        async def run() -> Any:
            context = Context(self.reader, RequestLimits(), self.keys, self.runner)
            try:
                return await schema.execute(query, variables, context_value=context)
            finally:
                closing = context.close()
                if closing is not None:
                    await closing

        result = asyncio.run(run())
        errors = [error.formatted for error in result.errors or []]
        return {"data": result.data, "errors": errors}

    def plan_alone(self, schema: PithSchema, query: str, variables: dict[str, Any]) -> dict[str, Any] | None:
        """The data of the plan of ``query``, run as the HTTP path runs it (``alone``), or
        ``None`` if it gave way."""

        async def run() -> Any:
            context = Context(self.reader, RequestLimits(), self.keys, self.runner)
            plan = compile_plan(schema._schema, parse(query), None)
            try:
                return await run_plan(plan, schema._schema, context, variables, alone=True)
            finally:
                closing = context.close()
                if closing is not None:
                    await closing

        data: dict[str, Any] | None = asyncio.run(run())
        return data


@pytest.fixture(params=["memory", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def backend(request: pytest.FixtureRequest, corpus: Corpus) -> Iterator[Backend]:
    keys = key_infos(corpus.keyring)
    if request.param == "memory":
        yield Backend(request.getfixturevalue("memory_reader"), run_inline, keys)
        return
    reader: Neo4jReader = request.getfixturevalue("neo4j_reader")
    runner = ThreadRunner(2)
    try:
        yield Backend(reader, runner, keys)
    finally:
        runner.close()


def _alike(backend: Backend, query: str, variables: dict[str, Any], *, planned: bool = True) -> Any:
    reference = build_schema(plans=False)
    planning = build_schema()
    assert planning.plans is not None
    expected = backend.execute(reference, query, variables)
    first = backend.execute(planning, query, variables)  # compiles the plan
    assert (planning.plans.get(query, None) is not None) == planned
    answered = planning.plans.answered
    second = backend.execute(planning, query, variables)  # answered by it, or not
    assert first == expected
    assert second == expected
    if planned and not expected["errors"]:
        assert planning.plans.answered == answered + 1, "the plan answered"
    return expected


#: Cursors of each order at a place in the middle of the corpus's years (no paper's: a page
#: starts after it all the same).
_MIDDLE = PaperKey("2016-06-01T00:00:00Z", "pith:2016:" + "A" * 26)
_OLDEST_CURSOR, _NEWEST_CURSOR = encode_cursor(_MIDDLE, "oldest"), encode_cursor(_MIDDLE)
MORE = [
    pytest.param(
        "query Q($id: String!, $first: Int = 3) { __typename p: paper(id: $id) { __typename ...Core "
        "... on Paper { relatedPapers(first: $first) { paper { ...Core authors { name } } } } } } "
        "fragment Core on Paper { pithNumber title versions { pithNumber title } }",
        lambda e: {"id": e.doi},
        id="fragments-aliases-defaults",
    ),
    pytest.param(
        "query($n: String!) { author(name: $n) { name papers(first: 5) { totalCount "
        "nodes { title authors { name paperCount coauthors(first: 3) { sharedPapers author { name "
        "papers(first: 2) { totalCount nodes { pithNumber } } } } } categories { code paperCount } } "
        "edges { cursor node { submittedAt abstractExcerpt } } } } }",
        lambda e: {"n": e.hub_author},
        id="nested-relations",
    ),
    pytest.param(
        f"query($c: String!) {{ category(code: $c) {{ papers(first: 3) {{ nodes {{ {PAPER_FIELDS} }} }} }} }}",
        lambda e: {"c": e.big_category},
        id="every-paper-field",
    ),
    pytest.param(
        "query($f: PaperFilter, $after: String) { papers(filter: $f, first: 4, after: $after) "
        "{ totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } nodes { pithNumber } } }",
        lambda e: {"f": {"category": e.big_category, "submittedFrom": "2016-01-01"}},
        id="filter-variable",
    ),
    pytest.param(  # since 0.9.1
        "query($f: PaperFilter) { papers(filter: $f, first: 4) { totalCount nodes { pithNumber } "
        "facets(first: 3) { categories { value count } } } }",
        lambda e: {"f": {"categories": [e.big_category, "math.PR"], "excludeCategories": ["cs.LG"]}},
        id="category-lists",
    ),
    pytest.param(  # since 0.9.1: oldest first, from a cursor of that order and from the start
        "query($f: PaperFilter, $o: PaperOrder, $after: String) { a: papers(filter: $f, first: 4, orderBy: $o, "
        "after: $after) { totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } "
        "edges { cursor node { pithNumber submittedAt } } } b: papers(orderBy: OLDEST, first: 3) "
        "{ edges { cursor } nodes { pithNumber } } c: papers(orderBy: NEWEST, first: 2) { pageInfo { endCursor } } }",
        lambda e: {"f": {"archive": e.big_category.split(".")[0]}, "o": "OLDEST", "after": _OLDEST_CURSOR},
        id="oldest-first",
    ),
    pytest.param(  # since 0.9.3: an author's, a category's, a signer's papers oldest first
        "query($n: String!, $c: String!, $after: String, $o: PaperOrder) { author(name: $n) { a: papers(first: 3, "
        "orderBy: OLDEST) { totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { cursor "
        "node { pithNumber submittedAt } } } b: papers(first: 2, orderBy: $o) { pageInfo { endCursor } } } "
        "category(code: $c) { papers(first: 4, orderBy: OLDEST, after: $after) { totalCount pageInfo { hasNextPage "
        "hasPreviousPage endCursor } edges { cursor node { pithNumber } } } } s: signer(id: "
        '"corpus.pith-graph.invalid") { a: papers(first: 2, orderBy: OLDEST) { edges { cursor } totalCount } '
        "b: papers(first: 2, orderBy: OLDEST, signedBundle: true) { nodes { pithNumber } totalCount } } }",
        lambda e: {"n": e.hub_author, "c": e.big_category, "after": _OLDEST_CURSOR, "o": None},
        id="nested-oldest-first",
    ),
    pytest.param(  # since 0.9.2: backward, before a cursor of either order and from the end
        "query($f: PaperFilter, $o: PaperOrder, $before: String, $n: Int) { a: papers(filter: $f, last: $n, "
        "orderBy: $o, before: $before) { totalCount pageInfo { hasNextPage hasPreviousPage startCursor "
        "endCursor } edges { cursor node { pithNumber submittedAt } } } b: papers(last: 3) { edges { cursor } "
        "nodes { pithNumber } pageInfo { hasNextPage hasPreviousPage } } c: papers(orderBy: OLDEST, "
        f'before: "{_OLDEST_CURSOR}") {{ pageInfo {{ startCursor hasPreviousPage }} nodes {{ pithNumber }} }} '
        f'd: papers(last: 2, before: "{_NEWEST_CURSOR}", first: null) {{ nodes {{ title }} }} }}',
        lambda e: {
            "f": {"archive": e.big_category.split(".")[0]},
            "o": "NEWEST",
            "before": _NEWEST_CURSOR,
            "n": 4,
        },
        id="backward",
    ),
    pytest.param(
        "query($id: String!, $after: String) { paper(id: $id) { authorCount a: authors(first: 1) "
        '{ nameKey } b: authors(first: 2, after: $after) { nameKey name paperCount } c: authors(after: "zzz") '
        '{ name } d: authors(after: "!") { nameKey } } }',
        lambda e: {"id": e.doi, "after": author_name_key(e.hub_author)},
        id="author-pages",
    ),
    pytest.param(
        "query($a: String!, $b: String!) { collaborationPath(from: $a, to: $b, maxHops: 3) "
        "{ from { name paperCount } paper { title categories { code } } to { nameKey } } }",
        lambda e: {"a": e.far_authors[0], "b": e.far_authors[1]},
        id="path-with-relations",
    ),
]


@pytest.mark.parametrize(("query", "variables"), QUERIES + MORE)
def test_plans_answer_as_the_resolvers_do(
    backend: Backend, examples: Examples, query: str, variables: Any
) -> None:
    planned = not any(part in query for part in _UNPLANNED)
    expected = _alike(backend, query, variables(examples), planned=planned)
    assert not expected["errors"], expected["errors"]


#: Queries whose plan reads with its root call alone (Plan.root_reads_only): a paper with the
#: relations its statement fetches, records with their counts, every category.
ONE_READ = [
    pytest.param(
        "query($id: String!) { paper(id: $id) { title authors { name paperCount } "
        "categories { code } primaryCategory { code archive } verification { keyIds } } }",
        lambda e: {"id": e.doi},
        id="one-read-paper",
    ),
    pytest.param(
        '{ a: paper(id: "arXiv:2605.90002") { title } b: paper(id: "nothing:here") { title } }',
        lambda e: {},
        id="one-read-aliases",
    ),
    pytest.param(
        "query($c: String!) { papers(first: 20, filter: {category: $c}) { nodes { title authors { name } } "
        "edges { cursor node { categories { code paperCount } } } pageInfo { hasNextPage } } }",
        lambda e: {"c": e.big_category},
        id="one-read-papers",
    ),
    pytest.param(
        "query($c: String!) { category(code: $c) { code paperCount } }",
        lambda e: {"c": e.big_category},
        id="one-read-category",
    ),
    pytest.param("{ categories { code archive } }", lambda e: {}, id="one-read-categories"),
]


#: How a query asks for a field that has no plan (a document that does gets none).
_UNPLANNED = ("search(", "papersById", "facets", "authors(prefix", "node(", "nodes(")


@pytest.mark.parametrize(
    ("query", "variables"),
    [case for case in QUERIES + MORE + ONE_READ if not any(part in case.values[0] for part in _UNPLANNED)],
)
def test_plans_run_alone_answer_as_the_resolvers_do(
    backend: Backend, examples: Examples, query: str, variables: Any
) -> None:
    """As the HTTP path runs them (every query that gets a plan): a plan whose root call is
    its one read runs it as the request's sole statement (on Neo4j: auto-commit), and never
    gives way for a second one."""
    values = variables(examples)
    expected = backend.execute(build_schema(plans=False), query, values)
    assert not expected["errors"], expected["errors"]
    assert backend.plan_alone(build_schema(), query, values) == expected["data"]


@pytest.mark.parametrize(
    ("query", "alone"),
    [
        *((param.values[0], True) for param in ONE_READ),
        ("{ papers(first: 5) { totalCount nodes { title } } }", False),  # and the count
        ('{ paper(id: "x") { aliases { kind } } }', False),  # not fetched with the paper
        ('{ paper(id: "x") { authors { coauthors(first: 2) { sharedPapers } } } }', False),
        ('{ paper(id: "x") { verification { signatures { keyIds } } } }', False),
        ('{ author(name: "x") { papers(first: 2) { nodes { title } } } }', False),
        ('{ collaborationPath(from: "a", to: "b") { paper { authors { name } } } }', False),  # no embedding
        ('{ paper(id: "x") { authors(first: 2, after: "ann lee") { name } } }', False),  # looks it up
        ('query($a: String) { paper(id: "x") { authors(after: $a) { name } } }', False),
        ('{ paper(id: "x") { authorCount authors(first: 2, after: null) { name } } }', True),
    ],
)
def test_a_plan_knows_when_its_root_calls_are_its_only_reads(query: str, alone: bool) -> None:
    plan = compile_plan(build_schema()._schema, parse(query), None)
    assert plan.root_reads_only is alone


FAILING = [
    pytest.param(
        f'{{ papers(first: 2, after: "{_OLDEST_CURSOR}") {{ nodes {{ title }} }} }}',
        "BAD_USER_INPUT",
        id="oldest-cursor-newest-first",
    ),
    pytest.param(
        f'{{ papers(orderBy: OLDEST, after: "{_NEWEST_CURSOR}") {{ nodes {{ title }} }} }}',
        "BAD_USER_INPUT",
        id="newest-cursor-oldest-first",
    ),
    *(  # since 0.9.3: nested papers take orderBy, and a cursor of its order only
        pytest.param(
            f"{{ {parent} {{ papers({arguments}) {{ nodes {{ title }} }} }} }}", "BAD_USER_INPUT", id=name
        )
        for name, parent, arguments in (
            ("nested-oldest-cursor", 'author(name: "ann lee")', f'after: "{_OLDEST_CURSOR}"'),
            (
                "nested-newest-cursor",
                'category(code: "cs.LG")',
                f'orderBy: OLDEST, after: "{_NEWEST_CURSOR}"',
            ),
            (
                "signer-newest-cursor",
                'signer(id: "pith.science")',
                f'orderBy: OLDEST, after: "{_NEWEST_CURSOR}"',
            ),
        )
    ),
    *(  # since 0.9.2: backward pages
        pytest.param(f"{{ papers({arguments}) {{ nodes {{ title }} }} }}", code, id=name)
        for name, arguments, code in (
            ("oldest-cursor-before-newest-first", f'last: 2, before: "{_OLDEST_CURSOR}"', "BAD_USER_INPUT"),
            ("before", 'last: 2, before: "forged"', "BAD_USER_INPUT"),
            ("first-and-last", "first: 2, last: 2", "BAD_USER_INPUT"),
            ("after-and-before", f'after: "{_NEWEST_CURSOR}", before: "{_NEWEST_CURSOR}"', "BAD_USER_INPUT"),
            ("negative-last", "last: -1", "BAD_USER_INPUT"),
            ("page-cap-last", "last: 1000", "LIMIT_EXCEEDED"),
        )
    ),
    pytest.param('{ papers(first: 2, after: "forged") { nodes { title } } }', "BAD_USER_INPUT", id="cursor"),
    pytest.param("{ papers(first: -1) { nodes { title } } }", "BAD_USER_INPUT", id="negative-first"),
    pytest.param("{ a: papers(first: 1000) { nodes { title } } }", "LIMIT_EXCEEDED", id="page-cap"),
    pytest.param('{ paper(id: "  ") { title } }', "BAD_USER_INPUT", id="empty-id"),
    pytest.param(
        '{ paper(id: "arXiv:2605.90002") { authors(after: "Ann Lee") { name } } }',
        "BAD_USER_INPUT",
        id="after-a-name",
    ),
    pytest.param(
        '{ collaborationPath(from: "No Such Person", to: "Nobody") { paper { title } } }',
        "NOT_FOUND",
        id="unknown-author",
    ),
    pytest.param(
        '{ papers(filter: {submittedFrom: "yesterday"}) { nodes { title } } }', "BAD_USER_INPUT", id="date"
    ),
    pytest.param(
        "{ papers(filter: {categories: []}) { nodes { title } } }", "BAD_USER_INPUT", id="no-categories"
    ),
    pytest.param(
        "{ papers(filter: {excludeCategories: [" + ", ".join(['"cs.LG"'] * 51) + "]}) { nodes { title } } }",
        "LIMIT_EXCEEDED",
        id="too-many-categories",
    ),
]


@pytest.mark.parametrize(("query", "code"), FAILING)
def test_a_failing_request_gets_the_resolvers_errors(backend: Backend, query: str, code: str) -> None:
    expected = _alike(backend, query, {})
    assert [error["extensions"]["code"] for error in expected["errors"]] == [code]


def test_a_wrong_variable_gets_the_resolvers_error(backend: Backend) -> None:
    query = "query($id: String!) { paper(id: $id) { title } }"
    for variables in ({}, {"id": 7}, {"id": None}):
        expected = _alike(backend, query, variables)
        assert expected["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


def test_a_planned_query_over_the_cost_limit_is_refused(backend: Backend) -> None:
    """The cost counts with each request's variables, also once the document has a plan."""
    query = (
        "query($n: Int) { papers(first: $n) { nodes { authors(first: 10) { papers(first: $n) "
        "{ nodes { title } } } } } }"
    )
    schema = build_schema()
    assert schema.plans is not None
    cheap = backend.execute(schema, query, {"n": 2})  # 2 + 2 × 10 + 2 × 10 × 2 = 62
    assert not cheap["errors"] and schema.plans.get(query, None) is not None
    again = backend.execute(schema, query, {"n": 2})
    assert again == cheap and schema.plans.answered == 1
    costly = backend.execute(schema, query, {"n": 100})  # 100 + 1,000 + 100,000 = 101,100
    assert costly["data"] is None
    assert [e["extensions"]["code"] for e in costly["errors"]] == ["LIMIT_EXCEEDED"]
    assert "101100" in costly["errors"][0]["message"].replace(",", "")


@pytest.mark.parametrize(
    "query",
    [
        pytest.param("{ __schema { queryType { name } } }", id="introspection"),
        pytest.param("query($s: Boolean!) { categories @skip(if: $s) { code } }", id="directive"),
    ],
)
def test_documents_without_a_plan_run_on_the_resolvers(backend: Backend, query: str) -> None:
    variables = {"s": False} if "$s" in query else {}
    _alike(backend, query, variables, planned=False)


#: Fields left to the resolvers on purpose: documents asking for them run without a plan.
#: A new field needs a spec in api/plan/fields.py (then test_plans_answer_as_the_resolvers_do
#: should ask for it) or a place here.
RESOLVERS_ONLY: frozenset[tuple[str, str]] = frozenset(
    {
        ("Query", "papersById"),
        ("Query", "node"),
        ("Query", "nodes"),
        ("Query", "search"),
        ("Query", "authors"),
        ("PaperConnection", "facets"),
        *(("Facets", name) for name in ("years", "categories", "archives", "licenses", "authors")),
        ("FacetValue", "value"),
        ("FacetValue", "count"),
        *(("SearchConnection", name) for name in ("edges", "pageInfo", "nodes", "totalCount", "facets")),
        *(("SearchEdge", name) for name in ("node", "score", "cursor")),
    }
)


def test_every_field_of_the_schema_has_a_plan() -> None:
    schema = build_schema()._schema
    missing = [
        f"{name}.{field}"
        for name, kind in schema.type_map.items()
        if isinstance(kind, GraphQLObjectType) and not name.startswith("__")
        for field in kind.fields
        if (name, field) not in FIELDS and (name, field) not in RESOLVERS_ONLY
    ]
    assert not missing, f"add a spec to api/plan/fields.py, or list them in RESOLVERS_ONLY: {missing}"
    assert set(FIELDS) <= {
        (name, field)
        for name, kind in schema.type_map.items()
        if isinstance(kind, GraphQLObjectType)
        for field in kind.fields
    }


def test_an_extension_that_acts_during_execution_turns_plans_off() -> None:
    from strawberry.extensions import SchemaExtension

    from pith_graph.api import schema as schema_module

    class SeesEveryExecution(SchemaExtension):
        def on_execute(self) -> Iterator[None]:
            yield

    assert build_schema().plans is not None
    original = schema_module.schema_extensions
    schema_module.schema_extensions = lambda limits: [*original(limits), SeesEveryExecution]  # type: ignore[assignment]
    try:
        assert build_schema().plans is None
    finally:
        schema_module.schema_extensions = original


@pytest.mark.parametrize(
    "query",
    [
        pytest.param("{ plan_http: categories { code archive paperCount } }", id="answered"),
        pytest.param('{ plan_http: papers(after: "forged") { totalCount } }', id="error"),
    ],
)
def test_http_answers_from_a_plan_as_the_view_does(api: Api, query: str) -> None:
    """The first request goes through strawberry's view, the second is answered from the
    plan without it (or, failing, by the view again): same status, headers and body."""
    answers = [api.client.post("/graphql", json={"query": query, "variables": {}}) for _ in range(2)]
    first, second = ({k: v for k, v in a.headers.items() if k != "date"} for a in answers)
    assert answers[0].status_code == answers[1].status_code == 200
    assert first == second
    assert answers[0].content == answers[1].content


def test_the_plan_cache_drops_the_least_recently_used_past_its_size() -> None:
    """A flood of distinct documents cannot grow it: 256 plans by default."""
    schema = build_schema()
    assert schema.plans is not None and schema.plans.maxsize == 256
    plans = Plans(schema.plans.schema, maxsize=2)
    queries = [f"{{ papers(first: {n}) {{ totalCount }} }}" for n in (1, 2, 3)]
    plans.learn_once(queries[0], None, parse(queries[0]))
    plans.learn_once(queries[1], None, parse(queries[1]))
    assert plans.get(queries[0], None) is not None  # used: now the most recent
    plans.learn_once(queries[2], None, parse(queries[2]))
    assert [plans.get(q, None) is not None for q in queries] == [True, False, True]
