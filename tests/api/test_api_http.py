"""HTTP for browsers and caches, on a real uvicorn: the GraphQL-over-HTTP media types, ETags
with 304s, and CORS for the origins an operator lists (and no others)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from apitest import Api, ThreadServer, corpus, memory_api, memory_reader, served  # noqa: F401 (fixtures)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pith_graph.api.app import create_app
from pith_graph.api.http import GRAPHQL_RESPONSE, ETags
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.settings import ServerSettings
from pith_graph.errors import UsageError

ALLOWED = "http://app.example.org:3000"


def _post(api: Api, body: Any, accept: str | None = GRAPHQL_RESPONSE, **headers: str) -> httpx.Response:
    if accept is not None:
        headers["accept"] = accept
    return api.client.post("/graphql", json=body, headers=headers)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        pytest.param({"query": "{"}, "GRAPHQL_PARSE_FAILED", id="parse"),
        pytest.param({"query": "{ nope }"}, "GRAPHQL_VALIDATION_FAILED", id="validation"),
        pytest.param(
            {"query": "query($id: String!) { paper(id: $id) { title } }", "variables": {"id": None}},
            "BAD_USER_INPUT",
            id="variable-coercion",
        ),
        pytest.param(
            {"query": "{ " + " ".join(f"a{i}: __typename" for i in range(40)) + " }"},
            "LIMIT_EXCEEDED",
            id="limit",
        ),
    ],
)
def test_request_errors_are_400_without_data_in_graphql_response_json(
    memory_api: Api, body: dict[str, Any], code: str
) -> None:
    response = _post(memory_api, body)
    assert response.status_code == 400
    assert response.headers["content-type"].startswith(GRAPHQL_RESPONSE)
    found = response.json()
    assert "data" not in found
    assert found["errors"][0]["extensions"]["code"] == code
    legacy = _post(memory_api, body, accept="application/json")  # the legacy media type: 200, data null
    assert legacy.status_code == 200 and legacy.json()["data"] is None
    assert legacy.headers["content-type"].startswith("application/json")


def test_executed_requests_are_200_in_the_media_type_asked_for(memory_api: Api) -> None:
    for accept, media in (
        (GRAPHQL_RESPONSE, GRAPHQL_RESPONSE),
        (f"application/json;q=0.5, {GRAPHQL_RESPONSE}", GRAPHQL_RESPONSE),
        (f"application/json, {GRAPHQL_RESPONSE};q=0.9", "application/json"),
        ("*/*", "application/json"),
        (None, "application/json"),
    ):
        response = _post(
            memory_api, {"query": '{ paper(id: "") { title } categories { code } }'}, accept=accept
        )
        assert response.status_code == 200, accept
        assert response.headers["content-type"].startswith(media), accept
        assert "Accept" in response.headers["vary"]
        body = response.json()  # a field error during execution: data is there, with the error
        assert body["data"]["paper"] is None and body["data"]["categories"]
        assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


def test_http_level_refusals_have_no_data_in_graphql_response_json(memory_api: Api) -> None:
    response = memory_api.client.post(
        "/graphql",
        content=b'{"query": ',
        headers={"content-type": "application/json", "accept": GRAPHQL_RESPONSE},
    )
    assert response.status_code == 400
    assert response.headers["content-type"].startswith(GRAPHQL_RESPONSE)
    assert response.json() == {"errors": [response.json()["errors"][0]]}


@pytest.mark.parametrize(
    "lines",
    [["application/json", GRAPHQL_RESPONSE], [GRAPHQL_RESPONSE, "application/json"]],
    ids=["json-first", "json-last"],
)
def test_repeated_accept_lines_are_read_as_one_list_by_every_answer(
    memory_api: Api, lines: list[str]
) -> None:
    """RFC 9110 combines a repeated field into one list: both media types at q=1, so
    graphql-response+json. The view, the plan recorded after it and the body guard used to read
    different lines (the first, the last), so the same request changed media type and status."""
    headers = [("accept", line) for line in lines] + [("content-type", "application/json")]
    executed = b'{"query": "{ categories { code } papers(first: 1) { nodes { title } } }"}'
    for _ in range(3):  # the view's answer, then the plan's
        response = memory_api.client.post("/graphql", content=executed, headers=headers)
        assert (response.status_code, response.headers["content-type"]) == (200, GRAPHQL_RESPONSE)
    for _ in range(2):  # a request error: 400, no data, whoever answers
        response = memory_api.client.post("/graphql", content=b'{"query": "{ nope }"}', headers=headers)
        assert (response.status_code, response.headers["content-type"]) == (400, GRAPHQL_RESPONSE)
        assert "data" not in response.json()
    response = memory_api.client.post(
        "/graphql", content=b'{"query": ', headers=headers
    )  # the guard's refusal
    assert (response.status_code, response.headers["content-type"]) == (400, GRAPHQL_RESPONSE)
    too_large = memory_api.client.post("/graphql", content=b" " * (1 << 20), headers=headers)
    assert (too_large.status_code, too_large.headers["content-type"]) == (413, GRAPHQL_RESPONSE)
    page = [
        ("accept", line) for line in (*lines, "text/html")
    ]  # a browser's GET: the page, whatever the order
    for ordered in (page, page[::-1]):
        response = memory_api.client.get("/graphql", headers=ordered)
        assert (response.status_code, response.headers["content-type"][:9]) == (200, "text/html"), ordered


# -- ETags ---------------------------------------------------------------------------------------------


def test_get_answers_carry_an_etag_and_304_when_unchanged(memory_reader: MemoryReader) -> None:
    app = create_app(memory_reader, cache_control="public, max-age=60")
    params = {"query": "{ categories { code paperCount } }"}
    with served(app, "memory", memory_reader) as api:
        first = api.client.get("/graphql", params=params)
        assert first.status_code == 200
        etag = first.headers["etag"]
        assert etag.startswith('"') and first.headers["cache-control"] == "public, max-age=60"
        again = api.client.get("/graphql", params=params, headers={"if-none-match": etag})
        assert again.status_code == 304 and again.content == b""
        assert again.headers["etag"] == etag and again.headers["cache-control"] == "public, max-age=60"
        for tags in (f'"nope", W/{etag}', "*"):
            assert (
                api.client.get("/graphql", params=params, headers={"if-none-match": tags}).status_code == 304
            )
        other = api.client.get(
            "/graphql", params={"query": "{ categories { code } }"}, headers={"if-none-match": etag}
        )
        assert other.status_code == 200 and other.headers["etag"] != etag
        graphql_json = api.client.get("/graphql", params=params, headers={"accept": GRAPHQL_RESPONSE})
        assert graphql_json.headers["etag"] != etag  # another representation, another tag (Vary: Accept)
        posted = api.client.post("/graphql", json=params)
        assert "etag" not in posted.headers
        page = api.client.get("/graphql", headers={"accept": "text/html"})
        assert "etag" not in page.headers


@pytest.mark.parametrize("graphiql", [True, False])
def test_graphiql_is_served_only_when_on(memory_reader: MemoryReader, graphiql: bool) -> None:
    """``PITH_API_GRAPHIQL=0`` (``create_app(graphiql=False)``): no page, no assets; queries as before."""
    with served(create_app(memory_reader, graphiql=graphiql), "memory", memory_reader) as api:
        page = api.client.get("/graphql", headers={"accept": "text/html"})
        asset = api.client.get("/graphiql/graphiql.min.js")
        assert ("graphiql.min.js" in page.text) is graphiql
        assert (page.status_code == 200) is graphiql
        assert asset.status_code == (200 if graphiql else 404)
        assert api.data("{ __typename }") == {"__typename": "Query"}


async def _unavailable(request: Request) -> Response:
    """A 503 in JSON without ``errors`` (the API's own non-200 answers all have them, so only
    an app like this tells the status from the body)."""
    return Response(b'{"data":null}', 503, {"cache-control": "max-age=60"}, "application/json")


def test_an_answer_of_another_status_than_200_is_neither_tagged_nor_kept() -> None:
    """``no-store`` and no tag whatever its body says: a 304 stands only for a 200 (RFC 9110),
    so ``If-None-Match: *`` on a 503 must not turn it into "Not Modified"."""
    app = ETags(Starlette(routes=[Route("/graphql", _unavailable)]), "public, max-age=60")
    with ThreadServer(app) as server:
        response = httpx.get(f"{server.url}/graphql", headers={"if-none-match": "*"}, timeout=30)
    assert response.status_code == 503, response.headers
    assert "etag" not in response.headers and response.headers["cache-control"] == "no-store"


def test_the_default_cache_control_revalidates(memory_api: Api) -> None:
    response = memory_api.client.get("/graphql", params={"query": "{ __typename }"})
    assert response.headers["cache-control"] == "no-cache"


# -- CORS ----------------------------------------------------------------------------------------------


@pytest.fixture
def cors_api(memory_reader: MemoryReader) -> Iterator[Api]:
    app = create_app(memory_reader, cors_origins=[ALLOWED])
    with served(app, "memory", memory_reader) as api:
        yield api


def _preflight(api: Api, origin: str) -> httpx.Response:
    return api.client.options(
        "/graphql",
        headers={
            "origin": origin,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type",
        },
    )


def test_preflight_from_an_allowed_origin_is_answered(cors_api: Api) -> None:
    response = _preflight(cors_api, ALLOWED)
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == ALLOWED
    methods = response.headers["access-control-allow-methods"]
    assert sorted(m.strip() for m in methods.split(",")) == ["GET", "POST"]
    headers = response.headers["access-control-allow-headers"].lower()
    assert {"content-type", "accept", "if-none-match"} <= {h.strip() for h in headers.split(",")}
    assert response.headers["access-control-max-age"] == "600"  # browsers keep the answer 10 minutes
    posted = cors_api.client.post("/graphql", json={"query": "{ __typename }"}, headers={"origin": ALLOWED})
    assert posted.headers["access-control-allow-origin"] == ALLOWED
    assert "Origin" in posted.headers["vary"]
    got = cors_api.client.get("/graphql", params={"query": "{ __typename }"}, headers={"origin": ALLOWED})
    exposed = {h.strip() for h in got.headers["access-control-expose-headers"].lower().split(",")}
    assert exposed == {"etag", "retry-after"}  # as on the 503 of one connection too many


def test_other_origins_get_no_cors_headers(cors_api: Api, memory_api: Api) -> None:
    refused = _preflight(cors_api, "http://evil.example.org")
    assert refused.status_code == 400 and "access-control-allow-origin" not in refused.headers
    posted = cors_api.client.post(
        "/graphql", json={"query": "{ __typename }"}, headers={"origin": "http://evil.example.org"}
    )
    assert "access-control-allow-origin" not in posted.headers
    # No origins configured (the default): no CORS at all, preflights are not GraphQL requests.
    assert _preflight(memory_api, ALLOWED).status_code == 405


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(
            "https://a.example, http://127.0.0.1:5173",
            ("https://a.example", "http://127.0.0.1:5173"),
            id="two",
        ),
        pytest.param("*", ("*",), id="any"),
        pytest.param("", (), id="none"),
    ],
)
def test_cors_origins_setting(value: str, expected: tuple[str, ...]) -> None:
    settings = ServerSettings.from_env(
        {"PITH_API_CORS_ORIGINS": value, "PITH_API_CACHE_CONTROL": "max-age=5"}
    )
    assert settings.cors_origins == expected
    assert settings.cache_control == "max-age=5"


@pytest.mark.parametrize("value", ["example.org", "https://a.example/path", "ftp://x"])
def test_a_bad_origin_is_a_usage_error(value: str) -> None:
    with pytest.raises(UsageError, match="PITH_API_CORS_ORIGINS"):
        ServerSettings.from_env({"PITH_API_CORS_ORIGINS": value})
