"""Automatic persisted queries (Apollo's APQ, since 0.9.2), over real HTTP to uvicorn: a
hash unknown is not found, sent with its query it is kept and answered, then the hash alone
answers as the query would, by ``GET`` (with the plain query's ETag) and ``POST``; refusals
(a hash that is not the query's, malformed hashes, another version, APQ off); the store's
bounds (least recently used out, nothing kept that did not execute) and many threads at once."""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from apitest import Api, corpus, memory_reader, served  # noqa: F401 (fixtures)

from pith_graph.api.app import create_app
from pith_graph.api.http import GRAPHQL_RESPONSE
from pith_graph.api.limits import RequestLimits
from pith_graph.api.persisted import PersistedQueries
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.testing.serving import serving

CATEGORIES = "{ categories { code archive paperCount } }"
TITLE = "query Title($id: String!) { paper(id: $id) { title } }"


def sha(query: str) -> str:
    return hashlib.sha256(query.encode()).hexdigest()


def persisted(sha256: str, version: Any = 1) -> dict[str, Any]:
    return {"persistedQuery": {"version": version, "sha256Hash": sha256}}


def post(api: Api, body: dict[str, Any], accept: str | None = None) -> httpx.Response:
    return api.client.post("/graphql", json=body, headers={"accept": accept} if accept else {})


def get(api: Api, params: dict[str, Any], **headers: str) -> httpx.Response:
    encoded = {name: value if isinstance(value, str) else json.dumps(value) for name, value in params.items()}
    return api.client.get("/graphql", params=encoded, headers={"accept": "application/json", **headers})


def code_of(response: httpx.Response) -> str:
    code: str = response.json()["errors"][0]["extensions"]["code"]
    return code


def assert_not_found(response: httpx.Response) -> None:
    """Apollo's answer to a hash not kept, which its clients act on: 200, message and code."""
    assert response.status_code == 200, response.text
    assert response.json() == {
        "data": None,
        "errors": [
            {"message": "PersistedQueryNotFound", "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"}}
        ],
    }
    assert response.headers["cache-control"] == "no-store"  # a CDN must not keep the miss
    assert "etag" not in response.headers


@pytest.fixture
def apq(memory_reader: MemoryReader) -> Iterator[Api]:
    """A server of its own (its own store), with a Cache-Control for GETs."""
    app = create_app(memory_reader, cache_control="public, max-age=60")
    with served(app, "memory", memory_reader) as api:
        yield api


def _small(memory_reader: MemoryReader, size: int, **options: Any) -> Any:
    return served(create_app(memory_reader, persisted_queries=size, **options), "memory", memory_reader)


def test_a_hash_is_not_found_then_registered_then_answered_by_post(apq: Api) -> None:
    plain = post(apq, {"query": CATEGORIES})
    assert plain.status_code == 200 and plain.json()["data"]["categories"]
    assert_not_found(post(apq, {"extensions": persisted(sha(CATEGORIES))}))
    registered = post(apq, {"query": CATEGORIES, "extensions": persisted(sha(CATEGORIES))})
    assert registered.status_code == 200
    assert registered.content == plain.content
    hit = post(apq, {"extensions": persisted(sha(CATEGORIES))})
    assert hit.status_code == 200
    assert hit.content == plain.content  # the plain query's answer, byte for byte
    for _ in range(3):
        assert post(apq, {"extensions": persisted(sha(CATEGORIES))}).content == plain.content


def test_variables_operation_name_and_other_extensions_go_with_a_hash(apq: Api) -> None:
    variables = {"id": apq.data("{ papers(first: 1) { nodes { id } } }")["papers"]["nodes"][0]["id"]}
    plain = post(apq, {"query": TITLE, "variables": variables, "operationName": "Title"})
    assert plain.status_code == 200
    body = {"variables": variables, "operationName": "Title", "extensions": {**persisted(sha(TITLE)), "x": 1}}
    assert_not_found(post(apq, body))
    assert post(apq, {**body, "query": TITLE}).content == plain.content
    assert post(apq, body).content == plain.content
    other = post(apq, {**body, "variables": {"id": ""}})  # other variables, the same document
    assert other.content == post(apq, {"query": TITLE, "variables": {"id": ""}}).content
    assert code_of(other) == "BAD_USER_INPUT"


def test_a_get_with_a_known_hash_is_cacheable_as_the_plain_get(apq: Api) -> None:
    extensions = persisted(sha(CATEGORIES))
    plain = get(apq, {"query": CATEGORIES})
    assert plain.status_code == 200 and plain.headers["cache-control"] == "public, max-age=60"
    assert_not_found(get(apq, {"extensions": extensions}))
    head = apq.client.head("/graphql", params={"extensions": json.dumps(extensions)})
    assert head.status_code == 200 and head.headers["cache-control"] == "no-store"
    registered = get(apq, {"query": CATEGORIES, "extensions": extensions})
    assert registered.status_code == 200 and registered.content == plain.content
    hit = get(apq, {"extensions": extensions})
    assert hit.status_code == 200 and hit.content == plain.content
    assert hit.headers["etag"] == plain.headers["etag"]
    assert hit.headers["cache-control"] == "public, max-age=60"
    revalidated = get(apq, {"extensions": extensions}, **{"if-none-match": hit.headers["etag"]})
    assert revalidated.status_code == 304 and revalidated.content == b""
    head = apq.client.head("/graphql", params={"extensions": json.dumps(extensions)})
    assert head.status_code == 200 and head.headers["etag"] == plain.headers["etag"]


def test_not_found_is_200_with_data_null_in_graphql_response_json(apq: Api) -> None:
    for response in (
        post(apq, {"extensions": persisted(sha("{ a }"))}, accept=GRAPHQL_RESPONSE),
        get(apq, {"extensions": persisted(sha("{ a }"))}, accept=GRAPHQL_RESPONSE),
    ):
        assert response.headers["content-type"].startswith(GRAPHQL_RESPONSE)
        assert_not_found(response)


def test_a_query_that_is_not_its_hash_is_refused_and_not_kept(apq: Api) -> None:
    other = sha("{ categories { code } }")
    for response in (
        post(apq, {"query": CATEGORIES, "extensions": persisted(other)}),
        get(apq, {"query": CATEGORIES, "extensions": persisted(other)}),
    ):
        assert response.status_code == 400
        assert response.json()["errors"][0]["message"] == "provided sha does not match query"
        assert code_of(response) == "BAD_REQUEST"
        assert response.headers["cache-control"] == "no-store"
    assert_not_found(post(apq, {"extensions": persisted(other)}))
    assert_not_found(post(apq, {"extensions": persisted(sha(CATEGORIES))}))


@pytest.mark.parametrize(
    "sha256",
    [
        pytest.param(sha(CATEGORIES).upper(), id="upper-case"),
        pytest.param(sha(CATEGORIES)[:63], id="63-digits"),
        pytest.param(sha(CATEGORIES) + "0", id="65-digits"),
        pytest.param("z" * 64, id="not-hex"),
        pytest.param(sha(CATEGORIES) + "\n", id="newline"),
        pytest.param(" " + sha(CATEGORIES)[1:], id="space"),
        pytest.param(12345, id="number"),
        pytest.param(None, id="null"),
        pytest.param("", id="empty"),
    ],
)
def test_a_hash_not_64_lower_case_hex_digits_is_refused(apq: Api, sha256: Any) -> None:
    for body in ({"extensions": persisted(sha256)}, {"query": CATEGORIES, "extensions": persisted(sha256)}):
        for response in (post(apq, body), get(apq, body)):
            assert response.status_code == 400, response.text
            assert code_of(response) == "BAD_REQUEST"
            assert "64 lower-case hex digits" in response.json()["errors"][0]["message"]


@pytest.mark.parametrize("version", [2, 0, "1", 1.5, True, None])
def test_a_version_other_than_1_is_refused(apq: Api, version: Any) -> None:
    body = {"query": CATEGORIES, "extensions": persisted(sha(CATEGORIES), version)}
    for response in (post(apq, body), get(apq, body)):
        assert response.status_code == 400
        assert code_of(response) == "BAD_REQUEST"
        assert response.json()["errors"][0]["message"].startswith("Unsupported persisted query version")
    assert_not_found(post(apq, {"extensions": persisted(sha(CATEGORIES))}))


def test_a_persisted_query_that_is_not_an_object_is_refused(apq: Api) -> None:
    response = post(apq, {"query": CATEGORIES, "extensions": {"persistedQuery": "yes"}})
    assert response.status_code == 400 and code_of(response) == "BAD_REQUEST"


def test_a_persisted_query_of_null_names_none(apq: Api) -> None:
    plain = post(apq, {"query": CATEGORIES})
    for body in ({"query": CATEGORIES, "extensions": {"persistedQuery": None}}, {"query": CATEGORIES}):
        assert post(apq, body).content == plain.content
        assert get(apq, body).content == get(apq, {"query": CATEGORIES}).content


def test_apq_off_answers_not_supported(memory_reader: MemoryReader) -> None:
    with _small(memory_reader, 0) as api:
        plain = post(api, {"query": CATEGORIES})
        assert plain.status_code == 200 and "errors" not in plain.json()
        for body in (
            {"extensions": persisted(sha(CATEGORIES))},
            {"query": CATEGORIES, "extensions": persisted(sha(CATEGORIES))},
        ):
            for response in (post(api, body), get(api, body)):
                assert response.status_code == 200
                assert response.json() == {
                    "data": None,
                    "errors": [
                        {
                            "message": "PersistedQueryNotSupported",
                            "extensions": {"code": "PERSISTED_QUERY_NOT_SUPPORTED"},
                        }
                    ],
                }
                assert response.headers["cache-control"] == "no-store"
        assert post(api, {"query": CATEGORIES, "extensions": {}}).content == plain.content


def test_serve_reads_the_setting() -> None:
    extensions = json.dumps(persisted(sha(CATEGORIES)))
    for size, code in (("0", "PERSISTED_QUERY_NOT_SUPPORTED"), ("5", "PERSISTED_QUERY_NOT_FOUND")):
        with serving(["--port", "0"], env={"PITH_API_PERSISTED_QUERIES": size}) as url:
            response = httpx.get(f"{url}/graphql", params={"extensions": extensions}, timeout=30)
            assert code_of(response) == code


def test_the_least_recently_used_go_past_the_bound(memory_reader: MemoryReader) -> None:
    a, b, c = (f"{{ {name}: categories {{ code }} }}" for name in "abc")
    with _small(memory_reader, 2) as api:
        for query in (a, b, c):
            assert post(api, {"query": query, "extensions": persisted(sha(query))}).status_code == 200
        assert_not_found(post(api, {"extensions": persisted(sha(a))}))
        for query in (b, c):
            assert post(api, {"extensions": persisted(sha(query))}).json()["data"]
        assert post(api, {"extensions": persisted(sha(b))}).status_code == 200  # b used last, then a
        post(api, {"query": a, "extensions": persisted(sha(a))})
        assert_not_found(post(api, {"extensions": persisted(sha(c))}))
        for query in (a, b):
            assert post(api, {"extensions": persisted(sha(query))}).json()["data"]


@pytest.mark.parametrize(
    ("query", "variables", "code"),
    [
        pytest.param("{ categories { code }", None, "GRAPHQL_PARSE_FAILED", id="parse"),
        pytest.param("{ nope }", None, "GRAPHQL_VALIDATION_FAILED", id="validation"),
        pytest.param(
            "{ " + " ".join(f"a{i}: __typename" for i in range(40)) + " }",
            None,
            "LIMIT_EXCEEDED",
            id="aliases",
        ),
        pytest.param("{ papers(first: 11) { nodes { title } } }", None, "LIMIT_EXCEEDED", id="cost"),
        pytest.param(TITLE, {"id": None}, "BAD_USER_INPUT", id="variables"),
        pytest.param(
            "query A { categories { code } } query B { __typename }", None, "BAD_REQUEST", id="operations"
        ),
    ],
)
def test_a_query_refused_before_execution_is_not_kept(
    memory_reader: MemoryReader, query: str, variables: Any, code: str
) -> None:
    with _small(memory_reader, 10, limits=RequestLimits(max_cost=10)) as api:
        body = {"query": query, "variables": variables, "extensions": persisted(sha(query))}
        plain = post(api, {"query": query, "variables": variables})
        for response in (post(api, body), post(api, {**body, "query": query})):
            assert code_of(response) == code
            assert response.content == plain.content
        assert_not_found(post(api, {"extensions": persisted(sha(query))}))


def test_many_threads_registering_and_hitting_at_once(memory_reader: MemoryReader) -> None:
    """16 threads ask 12 documents by hash, sending the query after a miss, against a store
    of 8: every answer is the plain query's, and the store holds no more than 8."""
    queries = [f"{{ q{i}: categories {{ code }} }}" for i in range(12)]
    with _small(memory_reader, 8) as api:
        plains = {query: post(api, {"query": query}).content for query in queries}
        failures: list[str] = []
        barrier = threading.Barrier(16)

        def client(seed: int) -> None:
            with httpx.Client(base_url=api.url, timeout=60) as own:
                barrier.wait()
                for step in range(25):
                    query = queries[(seed * 7 + step) % len(queries)]
                    body = {"extensions": persisted(sha(query))}
                    answer = own.post("/graphql", json=body)
                    if answer.status_code == 200 and "PERSISTED_QUERY_NOT_FOUND" in answer.text:
                        answer = own.post("/graphql", json={**body, "query": query})
                    if answer.status_code != 200 or answer.content != plains[query]:
                        failures.append(f"{query}: {answer.status_code} {answer.text[:200]}")

        threads = [threading.Thread(target=client, args=(seed,)) for seed in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        kept = [
            q
            for q in queries
            if "PERSISTED_QUERY_NOT_FOUND" not in post(api, {"extensions": persisted(sha(q))}).text
        ]
        assert 1 <= len(kept) <= 8


def test_the_store_keeps_its_bytes_bound() -> None:
    store = PersistedQueries(10, max_bytes=200)
    texts = [f"{{ f{i}: categories {{ code }} }}" + " " * 80 for i in range(5)]  # 155-156 bytes each
    for text in texts:
        store.put(sha(text), text)
    assert len(store) == 1 and store.bytes <= 200
    assert store.get(sha(texts[-1])) == texts[-1]
    store.put(sha("x" * 201), "x" * 201)  # larger than every byte allowed: not kept
    assert store.get(sha("x" * 201)) is None and store.get(sha(texts[-1])) == texts[-1]


def test_the_bytes_bound_counts_the_memory_a_text_takes() -> None:
    """A character beyond the BMP makes Python keep every character of a text in 4 bytes:
    counted as UTF-8, one emoji in 64 KB of comment let the "16 MiB" store hold 64 MiB (an
    attacker's review: 600 such registrations took a server from 70 to 374 MB RSS)."""
    store = PersistedQueries(100, max_bytes=400_000)
    texts = [f"# {i} \U0001f600 " + "y" * 20_000 + "\n{ __typename }" for i in range(40)]
    for text in texts:
        store.put(sha(text), text)
    held = sum(sys.getsizeof(text) for text in texts if store.get(sha(text)) is not None)
    assert store.bytes == held <= 400_000
    assert len(store) == 4  # 80 KB each in memory (20 KB of UTF-8)


@pytest.mark.parametrize("round_", range(6))
def test_the_store_keeps_its_bounds_under_many_threads(round_: int) -> None:
    """8 threads put and get at once, switching as often as the interpreter lets them: the
    count and the bytes kept stay exact and bounded (without the lock, the bytes drift)."""
    store = PersistedQueries(16, max_bytes=16 * 80)
    texts = [f"{{ t{i}: categories {{ code }} }}" + " " * (i % 13) for i in range(200)]
    barrier = threading.Barrier(8)
    wrong: list[str] = []

    def worker(seed: int) -> None:
        barrier.wait()
        for step in range(4000):
            text = texts[(seed * 31 + step * 7 + round_) % len(texts)]
            if step % 3:
                store.put(sha(text), text)
            elif store.get(sha(text)) not in (None, text):
                wrong.append(text)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(8)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can: races show
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert wrong == []
    kept = [text for text in texts if store.get(sha(text)) is not None]
    assert len(kept) == len(store) <= 16
    assert store.bytes == sum(sys.getsizeof(text) for text in kept) <= 16 * 80


def test_a_get_hit_costs_about_what_a_post_hit_costs(apq: Api) -> None:
    """A GET hit's stored query was written into the query string and read back from it:
    32,000 "é" percent-encoded and decoded again took 18-55 ms of the event loop, bought by a
    request of 250 bytes (an attacker's review; a POST hit: 0.4-0.7 ms). Measured here, the
    medians of 15 interleaved: 28.6 ms by GET against 1.2 ms by POST before, 1.5 against 1.1
    ms now."""
    query = "# " + "é" * 32_000 + "\n{ __typename }"
    h = sha(query)
    assert post(apq, {"query": query, "extensions": persisted(h)}).json() == {"data": {"__typename": "Query"}}
    gets, posts = [], []
    for _ in range(15):
        started = time.perf_counter()
        assert get(apq, {"extensions": persisted(h)}).json() == {"data": {"__typename": "Query"}}
        gets.append(time.perf_counter() - started)
        started = time.perf_counter()
        assert post(apq, {"extensions": persisted(h)}).json() == {"data": {"__typename": "Query"}}
        posts.append(time.perf_counter() - started)
    by_get, by_post = sorted(gets)[7], sorted(posts)[7]
    assert by_get < 5 * by_post + 0.003, f"GET {by_get * 1000:.1f} ms, POST {by_post * 1000:.1f} ms"


def test_a_get_hit_from_a_browser_is_answered_not_given_the_graphiql_page(
    memory_reader: MemoryReader,
) -> None:
    """GraphiQL answers a GET with no query that takes HTML; a hit names its query in its
    extensions alone, and the view must see the stored one (a browser's fetch sends */*)."""
    with served(create_app(memory_reader, graphiql=True), "memory", memory_reader) as api:
        assert (
            "text/html" in api.client.get("/graphql", headers={"accept": "text/html"}).headers["content-type"]
        )
        post(api, {"query": CATEGORIES, "extensions": persisted(sha(CATEGORIES))})
        for accept in ("*/*", "text/html,application/json;q=0.9"):
            hit = get(api, {"extensions": persisted(sha(CATEGORIES))}, accept=accept)
            assert hit.status_code == 200 and hit.headers["content-type"].startswith("application/json")
            assert hit.json()["data"]["categories"]
