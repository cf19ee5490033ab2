"""Hostile and malformed requests get GraphQL errors with codes: never a 500, never a traceback."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from apitest import (  # noqa: F401 (fixtures)
    Api,
    corpus,
    memory_api,
    memory_reader,
    served,
)

from pith_graph.api.app import _plain_asset, create_app
from pith_graph.api.limits import DEFAULT_LIMITS, RequestLimits, page_size, path_hops
from pith_graph.api.loops import LoopThreads
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.records import MAX_PATH_HOPS
from pith_graph.errors import BadUserInput
from pith_graph.testing.serving import serving


def _deep(levels: int) -> str:
    inner = "name"
    for _ in range(levels):
        inner = f"coauthors {{ author {{ {inner} }} }}"
    return f'{{ author(name: "Ann Lee") {{ {inner} }} }}'


def _check(response: httpx.Response, code: str, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert "Traceback" not in response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert body["errors"], body
    assert body["errors"][0]["extensions"]["code"] == code, body
    said = [repr(error) for error in body["errors"]]
    assert len(set(said)) == len(said), body  # no error twice (the introspection depth's was)
    if status == 200 and code in ("BAD_USER_INPUT", "LIMIT_EXCEEDED", "NOT_FOUND", "TIMEOUT"):
        assert all(error["extensions"].get("suggestion") for error in body["errors"]), body  # what to change
    return body


TYPED = "query($p: String!) { authors(prefix: $p) { name } }"


@pytest.mark.parametrize(
    ("send", "said"),
    [
        pytest.param(  # JSON.stringify of a text field cut inside an emoji
            lambda client: client.post(
                "/graphql",
                content=b'{"query": "%s", "variables": {"p": "Zo\\ud83d"}}' % TYPED.encode(),
                headers={"content-type": "application/json"},
            ),
            "The request body holds an unpaired surrogate in 'Zo\\ud83d'",
            id="body",
        ),
        pytest.param(
            lambda client: client.get("/graphql", params={"query": TYPED, "variables": '{"p": "\\udc00a"}'}),
            "The variables parameter holds an unpaired surrogate in '\\udc00a'",
            id="get-variables",
        ),
    ],
)
def test_a_lone_surrogate_is_refused_saying_so(memory_api: Api, send: Any, said: str) -> None:
    """Valid JSON to the standard library, but half a character: refused (never read into a
    typeahead or a key), with a message naming the string, not "unable to parse"."""
    body = _check(send(memory_api.client), "BAD_REQUEST", 400)
    assert body["errors"][0]["message"].startswith(said + ": half of a UTF-16 character"), body


QUERY_CASES = [
    pytest.param(_deep(5), "LIMIT_EXCEEDED", id="too-deep"),
    pytest.param(
        "{ " + " ".join(f"a{i}: categories {{ code }}" for i in range(40)) + " }",
        "LIMIT_EXCEEDED",
        id="many-aliases",
    ),
    pytest.param("{ categories { " + "code " * 3000 + "} }", "LIMIT_EXCEEDED", id="many-tokens"),
    pytest.param("{ categories { code } }" + "#\n" * 3000, "LIMIT_EXCEEDED", id="many-comments"),
    pytest.param("{ papers(first: 10000) { totalCount } }", "LIMIT_EXCEEDED", id="first-10000"),
    pytest.param("{ papers(first: -1) { totalCount } }", "BAD_USER_INPUT", id="first-negative"),
    pytest.param(
        '{ author(name: "Ann Lee") { coauthors(first: 101) { sharedPapers } } }',
        "LIMIT_EXCEEDED",
        id="nested-first",
    ),
    pytest.param(
        '{ search(text: "graph", first: 101) { nodes { title } } }', "LIMIT_EXCEEDED", id="search-first"
    ),
    pytest.param('{ authors(prefix: "a", first: 101) { name } }', "LIMIT_EXCEEDED", id="authors-first"),
    pytest.param(
        '{ papers(after: "bm90IGEgY3Vyc29y") { totalCount } }', "BAD_USER_INPUT", id="forged-cursor"
    ),
    pytest.param(
        '{ papers(filter: {submittedFrom: "last tuesday"}) { totalCount } }', "BAD_USER_INPUT", id="bad-date"
    ),
    pytest.param(
        '{ search(text: "!!! ---") { nodes { title } } }', "BAD_USER_INPUT", id="search-without-words"
    ),
    pytest.param(
        '{ collaborationPath(from: "Ann Lee", to: "Ann Lee", maxHops: 7) { paper { title } } }',
        "LIMIT_EXCEEDED",
        id="too-many-hops",
    ),
    pytest.param(
        '{ collaborationPath(from: "Ann Lee", to: "Nobody At All") { paper { title } } }',
        "NOT_FOUND",
        id="unknown-author",
    ),
    pytest.param("{ paper(id: ", "GRAPHQL_PARSE_FAILED", id="syntax-error"),
    pytest.param("{ paper { title } }", "GRAPHQL_VALIDATION_FAILED", id="missing-argument"),
    pytest.param(
        "{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }",
        "LIMIT_EXCEEDED",
        id="deep-introspection",
    ),
    pytest.param("mutation { x }", "GRAPHQL_VALIDATION_FAILED", id="no-mutations"),
    # Variables the document misuses: the document is not valid, whatever values are sent.
    pytest.param("query($v: Int) { __typename }", "GRAPHQL_VALIDATION_FAILED", id="unused-variable"),
    pytest.param("{ paper(id: $x) { title } }", "GRAPHQL_VALIDATION_FAILED", id="undefined-variable"),
    pytest.param("query($v: Paper) { __typename }", "GRAPHQL_VALIDATION_FAILED", id="output-type-variable"),
    pytest.param(
        "query($v: Int) { paper(id: $v) { title } }", "GRAPHQL_VALIDATION_FAILED", id="variable-misplaced"
    ),
]


@pytest.mark.parametrize(("query", "code"), QUERY_CASES)
def test_hostile_query_gets_a_coded_error(memory_api: Api, query: str, code: str) -> None:
    _check(memory_api.client.post("/graphql", json={"query": query}), code)


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        pytest.param("query($n: Int) { papers(first: $n) { totalCount } }", {"n": "ten"}, id="wrong-type"),
        pytest.param("query($n: Int!) { papers(first: $n) { totalCount } }", {}, id="required-missing"),
        pytest.param("query($n: Int!) { papers(first: $n) { totalCount } }", {"n": None}, id="required-null"),
    ],
)
def test_a_variable_value_that_cannot_be_coerced_is_bad_user_input(
    memory_api: Api, query: str, variables: dict[str, object]
) -> None:
    response = memory_api.client.post("/graphql", json={"query": query, "variables": variables})
    _check(response, "BAD_USER_INPUT")


@pytest.mark.parametrize(
    ("body", "headers", "code", "status"),
    [
        pytest.param(
            b"{not json", {"content-type": "application/json"}, "BAD_REQUEST", 400, id="malformed-json"
        ),
        pytest.param(
            b'"a string"', {"content-type": "application/json"}, "BAD_REQUEST", 400, id="json-not-object"
        ),
        pytest.param(
            b'{"query": 42}', {"content-type": "application/json"}, "BAD_REQUEST", 400, id="query-not-string"
        ),
        pytest.param(
            b'{"query": "{ categories { code } }", "variables": []}',
            {"content-type": "application/json"},
            "BAD_REQUEST",
            400,
            id="variables-not-object",
        ),
        pytest.param(
            b'[{"query": "{ categories { code } }"}]',
            {"content-type": "application/json"},
            "BAD_REQUEST",
            400,
            id="batch",
        ),
        pytest.param(
            b"{ categories { code } }",
            {"content-type": "text/plain"},
            "BAD_REQUEST",
            400,
            id="wrong-content-type",
        ),
        pytest.param(
            b"query={ categories { code } }",
            {"content-type": "application/x-www-form-urlencoded"},
            "BAD_REQUEST",
            400,
            id="form-body",
        ),
        pytest.param(b"{}", {"content-type": "application/json"}, "BAD_REQUEST", 400, id="no-query"),
        pytest.param(
            gzip.compress(b'{"query": "{ categories { code } }"}'),
            {"content-type": "application/json", "content-encoding": "gzip"},
            "BAD_REQUEST",
            415,
            id="gzip-body",
        ),
        pytest.param(  # marked compressed, sent plain: it was answered as if unmarked
            b'{"query": "{ categories { code } }"}',
            {"content-type": "application/json", "content-encoding": "br"},
            "BAD_REQUEST",
            415,
            id="br-marked-body",
        ),
        pytest.param(
            b"\xff\xfe\x00garbage", {"content-type": "application/json"}, "BAD_REQUEST", 400, id="not-utf8"
        ),
        pytest.param(
            b'{"query": "' + b"x" * 70000 + b'"}',
            {"content-type": "application/json"},
            "LIMIT_EXCEEDED",
            413,
            id="oversized-body",
        ),
    ],
)
def test_malformed_request_gets_a_coded_error(
    memory_api: Api, body: bytes, headers: dict[str, str], code: str, status: int
) -> None:
    response = memory_api.client.post("/graphql", content=body, headers=headers)
    _check(response, code, status)
    if status == 415:
        assert response.headers["accept-encoding"] == "identity"


def test_a_body_marked_identity_is_read(memory_api: Api) -> None:
    headers = {"content-type": "application/json", "content-encoding": "Identity"}
    response = memory_api.client.post("/graphql", json={"query": "{ categories { code } }"}, headers=headers)
    assert response.status_code == 200 and response.json()["data"]["categories"]


def test_oversized_chunked_body_is_refused(memory_api: Api) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"query": "'
        for _ in range(100):
            yield b"x" * 1000
        yield b'"}'

    response = memory_api.client.post(
        "/graphql", content=chunks(), headers={"content-type": "application/json"}
    )
    _check(response, "LIMIT_EXCEEDED", 413)


@pytest.mark.parametrize("accept", ["application/graphql-response+json", "application/json", None])
def test_a_body_too_large_is_refused_as_the_view_refuses(memory_api: Api, accept: str | None) -> None:
    """413 (the guard, before the view) in the media type the client asked for, with Vary:
    Accept and the same body keys as the view's own refusal of a request (a batch, 400)."""
    headers = {"content-type": "application/json", **({"accept": accept} if accept else {})}
    guard = memory_api.client.post("/graphql", content=b'{"query": "' + b"x" * 70000 + b'"}', headers=headers)
    view = memory_api.client.post(
        "/graphql", content=b'[{"query": "{ categories { code } }"}]', headers=headers
    )
    assert (guard.status_code, view.status_code) == (413, 400)
    assert guard.headers["content-type"] == view.headers["content-type"]
    assert guard.headers["vary"] == view.headers["vary"] == "Accept"
    assert guard.headers["cache-control"] == "no-store"  # since 0.8.8
    assert guard.headers["x-content-type-options"] == "nosniff"
    assert sorted(guard.json()) == sorted(view.json())
    assert guard.json()["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"


def test_get_reads_variables_as_post_does(memory_api: Api) -> None:
    query = 'query($c: String = "cs.LG") { category(code: $c) { code } }'
    for variables in (None, {}, {"c": "cs.AI"}):
        posted = memory_api.client.post("/graphql", json={"query": query, "variables": variables})
        got = memory_api.client.get("/graphql", params={"query": query, "variables": json.dumps(variables)})
        assert got.status_code == posted.status_code == 200
        assert got.json() == posted.json() and "errors" not in got.json()
    for text, words in (
        ("[1", "Unable to parse the variables parameter"),
        ('"x"', "must be an object or null"),
    ):
        refused = memory_api.client.get("/graphql", params={"query": query, "variables": text})
        body = _check(refused, "BAD_REQUEST", 400)
        assert words in body["errors"][0]["message"]


def test_other_methods_get_a_coded_error(memory_api: Api) -> None:
    refused = memory_api.client.put("/graphql", json={"query": "{ categories { code } }"})
    body = _check(refused, "METHOD_NOT_ALLOWED", 405)
    allowed = refused.headers["allow"]
    assert body["errors"][0]["message"] == f"Only {allowed} are answered here."  # as Allow says
    mutation_by_get = memory_api.client.get("/graphql", params={"query": "mutation { x }"})
    assert mutation_by_get.status_code in (200, 400)
    assert "Traceback" not in mutation_by_get.text


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/nope", 404, "NOT_FOUND"),
        ("GET", "//graphql", 404, "NOT_FOUND"),
        ("GET", "/graphiql/graphiql.min.js.map", 404, "NOT_FOUND"),
        ("POST", "/healthz", 405, "METHOD_NOT_ALLOWED"),
        ("DELETE", "/graphiql/graphiql.min.js", 405, "METHOD_NOT_ALLOWED"),
    ],
)
def test_unserved_paths_and_methods_get_a_coded_error(
    memory_api: Api, method: str, path: str, status: int, code: str
) -> None:
    """As the README's table of codes says (they were Starlette's plain text, with no code)."""
    refused = memory_api.client.request(method, path)
    body = _check(refused, code, status)
    if status == 405:
        assert body["errors"][0]["message"] == f"Only {refused.headers['allow']} are answered here."
        assert refused.headers["allow"] == "GET, HEAD"


@pytest.mark.parametrize("seed", ["0", "3"])
def test_a_405_names_its_methods_in_one_order_whatever_the_hash_seed(seed: str) -> None:
    """Starlette keeps a route's methods in a set: ``Allow`` (and the message quoting it) said
    ``HEAD, GET`` under some hash seeds (3, 4, 5), so two servers answered in other bytes."""
    with serving(["--port", "0", "--workers", "1"], env={"PYTHONHASHSEED": seed}) as url:
        refused = httpx.post(url + "/healthz")
    assert refused.status_code == 405 and refused.headers["allow"] == "GET, HEAD"
    assert refused.json()["errors"][0]["message"] == "Only GET, HEAD are answered here."


def test_query_by_get_works(memory_api: Api) -> None:
    response = memory_api.client.get("/graphql", params={"query": "{ categories { code } }"})
    assert response.status_code == 200
    assert response.json()["data"]["categories"]


@pytest.mark.parametrize("on_threads", [False, True], ids=["event-loop", "loop-threads"])
def test_timeout_is_a_coded_error(memory_reader: MemoryReader, on_threads: bool) -> None:
    limits = RequestLimits(timeout_seconds=1e-6)
    threads = LoopThreads(1) if on_threads else None
    try:
        with served(
            create_app(memory_reader, limits=limits, threads=threads), "memory", memory_reader
        ) as api:
            response = api.client.post(
                "/graphql",
                json={"query": "{ papers(first: 100) { nodes { authors { name } categories { code } } } }"},
            )
            _check(response, "TIMEOUT")
    finally:
        if threads is not None:
            threads.close()


def test_limits_are_configurable(memory_reader: MemoryReader) -> None:
    limits = RequestLimits(max_page_size=5, default_page_size=5, max_depth=3, max_aliases=1)
    with served(create_app(memory_reader, limits=limits), "memory", memory_reader) as api:
        _check(
            api.client.post("/graphql", json={"query": "{ papers(first: 6) { totalCount } }"}),
            "LIMIT_EXCEEDED",
        )
        assert len(api.data("{ papers { nodes { title } } }")["papers"]["nodes"]) == 5
        # the schema's default first of facets and the typeahead (10) is held to the cap too
        assert api.data("{ papers { facets { years { value } } } }")["papers"]["facets"]["years"]
        assert api.data('{ authors(prefix: "a") { name } }')["authors"]
        _check(
            api.client.post(
                "/graphql", json={"query": "{ papers { facets(first: 6) { years { value } } } }"}
            ),
            "LIMIT_EXCEEDED",
        )
        _check(api.client.post("/graphql", json={"query": _deep(2)}), "LIMIT_EXCEEDED")
        _check(
            api.client.post("/graphql", json={"query": "{ a: categories { code } b: categories { code } }"}),
            "LIMIT_EXCEEDED",
        )


def test_unexpected_errors_are_masked(memory_reader: MemoryReader, caplog: pytest.LogCaptureFixture) -> None:
    class Broken(MemoryReader):
        def all_categories(self) -> Any:
            raise RuntimeError("secret detail /etc/passwd")

    broken = Broken(memory_reader.G)
    with served(create_app(broken), "memory", broken) as api:
        response = api.client.post("/graphql", json={"query": "{ categories { code } }"})
    body = _check(response, "INTERNAL_SERVER_ERROR")
    assert body["errors"][0]["message"] == "Internal server error."
    assert "secret" not in response.text
    assert any("secret detail" in str(record.exc_info) for record in caplog.records if record.exc_info)


def test_graphiql_and_health(memory_api: Api) -> None:
    page = memory_api.client.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert "graphiql.min.js" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["vary"] == "Accept"  # the same URL answers JSON: a cache must tell them apart
    for refused in ("identity", "gzip;q=0", "br, *;q=0"):  # gzip refused: the plain file
        script = memory_api.client.get("/graphiql/graphiql.min.js", headers={"accept-encoding": refused})
        assert script.status_code == 200 and b"GraphiQL" in script.content, refused
        assert "content-encoding" not in script.headers, refused
        assert script.headers["vary"] == "Accept-Encoding", refused
    # Decompressed once per process, not on the event loop for each such client (3.5 MB,
    # about 13 ms each: 200 of them held /healthz back for seconds).
    misses = _plain_asset.cache_info().misses
    memory_api.client.get("/graphiql/graphiql.min.js", headers={"accept-encoding": "identity"})
    assert _plain_asset.cache_info().misses == misses
    assert memory_api.client.get("/graphiql/../../etc/passwd").status_code == 404
    assert memory_api.client.get("/healthz").json() == {"status": "ok", "backend": "memory"}


@pytest.mark.parametrize(
    "settings",
    [
        {"default_page_size": 0},
        {"default_page_size": 101},  # over max_page_size
        {"max_path_hops": 0},
        {"max_path_hops": MAX_PATH_HOPS + 1},
        {"default_path_hops": 0},
        {"max_path_hops": 3},  # under default_path_hops
        {"max_depth": 0},
    ],
    ids=str,
)
def test_inconsistent_limits_are_refused(settings: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="must be"):
        RequestLimits(**settings)


def test_first_from_zero_and_max_hops_from_one() -> None:
    """The smallest caps are consistent; ``first: 0`` and ``maxHops: 1`` are answered, one
    less is ``BAD_USER_INPUT``; no argument: the default."""
    smallest = RequestLimits(max_page_size=1, default_page_size=1, max_path_hops=1, default_path_hops=1)
    assert [page_size(None, smallest), page_size(1, smallest), path_hops(None, smallest)] == [1, 1, 1]
    assert [page_size(0, DEFAULT_LIMITS), page_size(None, DEFAULT_LIMITS)] == [0, 20]
    assert [path_hops(1, DEFAULT_LIMITS), path_hops(None, DEFAULT_LIMITS)] == [1, 4]
    for call in (lambda: page_size(-1, DEFAULT_LIMITS), lambda: path_hops(0, DEFAULT_LIMITS)):
        with pytest.raises(BadUserInput):
            call()


_PAPERS_ON = "Ask for at most 100; a page of papers goes on with its endCursor as after."
_AUTHORS_ON = "Ask for at most 100; a page of authors goes on with the nameKey of its last author as after."
_AT_MOST = "Ask for at most 100."
_ONE = "papers(first: 1) { nodes { %s } }"
_ANN = 'author(name: "Ann Lee") { %s }'


@pytest.mark.parametrize(
    ("query", "suggestion"),
    [
        ("papers(first: 101) { totalCount }", _PAPERS_ON),
        ('search(text: "learning", first: 101) { totalCount }', _PAPERS_ON),
        (_ANN % "papers(first: 101) { totalCount }", _PAPERS_ON),
        (_ONE % "primaryCategory { papers(first: 101) { totalCount } }", _PAPERS_ON),
        (_ONE % "authors(first: 101) { name }", _AUTHORS_ON),
        (_ONE % "relatedPapers(first: 101) { sharedAuthors }", _AT_MOST),
        (_ONE % "primaryCategory { topAuthors(first: 101) { count } }", _AT_MOST),
        (_ONE % "primaryCategory { coListed(first: 101) { count } }", _AT_MOST),
        (_ANN % "coauthors(first: 101) { sharedPapers }", _AT_MOST),
        (_ANN % "categories(first: 101) { count }", _AT_MOST),
        ("papers { facets(first: 101) { years { value } } }", _AT_MOST),
        ('authors(prefix: "a", first: 101) { name }', _AT_MOST),
    ],
)
def test_a_first_over_the_cap_says_how_that_list_pages_on(
    memory_api: Api, query: str, suggestion: str
) -> None:
    """The endCursor is the way on for paper connections only; Paper.authors pages by nameKey
    and the other lists have no after (before 0.8.9 every list was told of the endCursor).
    Sent twice: the second may run from the document's plan."""
    for _ in range(2):
        body = _check(memory_api.client.post("/graphql", json={"query": f"{{ {query} }}"}), "LIMIT_EXCEEDED")
        error = body["errors"][0]
        assert error["message"] == "first must be at most 100.", body
        assert error["extensions"]["suggestion"] == suggestion, body
