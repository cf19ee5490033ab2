"""Every request limit at its exact boundary, over real HTTP: a request exactly at the limit is
answered, one just past it is refused with ``LIMIT_EXCEEDED`` (a body: HTTP 413), and the
same request at the limit is answered again afterwards (the second time a document arrives it
runs from its cached plan, which must check the limit just the same).

Each boundary runs twice: with the default limits (so the numbers the README promises are the
ones enforced) and with a small explicit ``RequestLimits`` changing only that limit (so the
setting reaches the check). The defaults themselves are pinned to the README's limits table.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from apitest import Api, corpus, memory_api, memory_reader, served  # noqa: F401 (fixtures)
from graphql.language import Lexer, Source, TokenKind

from pith_graph.api import limits as limits_module
from pith_graph.api.app import create_app
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.settings import ServerSettings

README = Path(__file__).resolve().parents[2] / "README.md"


def _lexical_tokens(query: str) -> int:
    """How many lexical tokens GraphQL's own lexer reads in ``query`` (end of file excluded)."""
    lexer, count = Lexer(Source(query)), 0
    while lexer.advance().kind != TokenKind.EOF:
        count += 1
    return count


# -- requests exactly at a limit n -----------------------------------------------------------------

Send = Callable[[httpx.Client, int], httpx.Response]


def _query(build: Callable[[int], str], variables: Callable[[int], dict[str, Any]] | None = None) -> Send:
    """Send the document ``build(n)`` (with ``variables(n)``)."""

    def send(client: httpx.Client, n: int) -> httpx.Response:
        payload = {"query": build(n), "variables": variables(n) if variables else {}}
        return client.post("/graphql", json=payload)

    return send


def _deep(depth: int) -> str:
    """A query whose deepest field sits ``depth`` levels below the top-level field (depth 0)."""
    levels = [("papers(first: 1)", "totalCount"), ("nodes", "title"), ("primaryCategory", "code")]
    inner = levels[(depth - 1) % 3][1]
    for level in reversed(range(depth)):
        inner = f"{levels[level % 3][0]} {{ {inner} }}"
    return "{ " + inner + " }"


def _aliased(count: int) -> str:
    return "{ " + " ".join(f'a{i}: paper(id: "none") {{ title }}' for i in range(count)) + " }"


_PADDING = ("title", "license", "sourceId")


def _tokens(count: int) -> str:
    """A document of exactly ``count`` lexical tokens: aliases of ``paper`` repeating fields
    (60 a selection, each of three fields 20 times: within the 32 of one name, api/overlaps.py)."""
    inside = count - 2  # the outer braces
    aliases = -(-inside // 70)
    parts = []
    for i in range(aliases):
        size = inside // aliases + (1 if i < inside % aliases else 0)
        fields = "".join(f" {_PADDING[n % len(_PADDING)]}" for n in range(size - 10))
        parts.append(f'a{i}: paper(id: "none") {{{fields} }}')  # and 10 tokens around
    query = "{ " + " ".join(parts) + " }"
    assert _lexical_tokens(query) == count
    return query


def _costing(cost: int) -> str:
    """A query costing exactly ``cost`` (README, Cost): ``papers(first: a) { nodes {
    relatedPapers(first: b) … } }`` costs a + a·b, ``papers(first: r) { nodes { … } }`` costs r."""
    parts, left = [], cost
    while left >= 10_100:
        parts.append("papers(first: 100) { nodes { relatedPapers(first: 100) { sharedAuthors } } }")
        left -= 10_100
    if left >= 200:
        related = left // 100 - 1
        parts.append(
            f"papers(first: 100) {{ nodes {{ relatedPapers(first: {related}) {{ sharedAuthors }} }} }}"
        )
        left %= 100
    if left >= 100:
        parts.append("papers(first: 100) { nodes { pithNumber } }")
        left -= 100
    if left:
        parts.append(f"papers(first: {left}) {{ nodes {{ pithNumber }} }}")
    return "{ " + " ".join(f"c{i}: {part}" for i, part in enumerate(parts)) + " }"


def _ids(count: int) -> str:
    """``papersById`` with ``count`` identifiers written in the document (not a variable)."""
    ids = " ".join(f'"arXiv:1907.{i:05d}"' for i in range(count))
    return f"{{ papersById(ids: [{ids}]) {{ title }} }}"


def _json_body(size: int) -> bytes:
    """A valid GraphQL request of exactly ``size`` bytes (JSON whitespace after the object)."""
    body = b'{"query": "{ categories { code } }"}'
    return body + b" " * (size - len(body))


def _send_body(client: httpx.Client, size: int) -> httpx.Response:
    return client.post("/graphql", content=_json_body(size), headers={"content-type": "application/json"})


def _send_chunked(client: httpx.Client, size: int) -> httpx.Response:
    def chunks() -> Iterator[bytes]:  # no Content-Length: the server counts as it reads
        body = _json_body(size)
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    return client.post("/graphql", content=chunks(), headers={"content-type": "application/json"})


PAGE = "query($n: Int!) { papers(first: $n) { nodes { pithNumber } } }"
HOPS = (
    'query($n: Int!) { collaborationPath(from: "Ann Lee", to: "Zoë Smith", maxHops: $n) { paper { title } } }'
)


def _answered(data: dict[str, Any], n: int) -> bool:
    return bool(data)


@dataclass(frozen=True)
class Boundary:
    """A limit (a field of RequestLimits), a request exactly at a value n of it, what the
    answer at n holds, a small explicit setting, and the HTTP status past it."""

    field: str
    send: Send
    small: RequestLimits
    answer_holds: Callable[[dict[str, Any], int], bool] = _answered
    past_status: int = 200


BOUNDARIES = [
    pytest.param(Boundary("max_depth", _query(_deep), RequestLimits(max_depth=3)), id="depth"),
    pytest.param(
        Boundary(
            "max_aliases",
            _query(_aliased),
            RequestLimits(max_aliases=2),
            lambda data, n: sorted(data) == sorted(f"a{i}" for i in range(n)),
        ),
        id="aliases",
    ),
    pytest.param(Boundary("max_tokens", _query(_tokens), RequestLimits(max_tokens=30)), id="tokens"),
    pytest.param(
        Boundary(
            "max_page_size",
            _query(lambda _: PAGE, lambda n: {"n": n}),
            RequestLimits(max_page_size=5, default_page_size=5),
            lambda data, n: len(data["papers"]["nodes"]) == n,
        ),
        id="page-size",
    ),
    pytest.param(Boundary("max_cost", _query(_costing), RequestLimits(max_cost=150)), id="cost"),
    pytest.param(
        Boundary("max_body_bytes", _send_body, RequestLimits(max_body_bytes=200), past_status=413), id="body"
    ),
    pytest.param(
        Boundary("max_body_bytes", _send_chunked, RequestLimits(max_body_bytes=200), past_status=413),
        id="body-chunked",
    ),
    pytest.param(
        Boundary(
            "max_path_hops",
            _query(lambda _: HOPS, lambda n: {"n": n}),
            RequestLimits(max_path_hops=2, default_path_hops=2),
            lambda data, n: "collaborationPath" in data,
        ),
        id="path-hops",
    ),
    pytest.param(
        Boundary(
            "max_batch_ids",
            _query(_ids),
            RequestLimits(max_batch_ids=3),
            lambda data, n: len(data["papersById"]) == n,
        ),
        id="batch-ids",
    ),
]


def _check_boundary(api: Api, boundary: Boundary, limits: RequestLimits) -> None:
    n = getattr(limits, boundary.field)

    def answered() -> None:
        response = boundary.send(api.client, n)
        assert response.status_code == 200, response.text
        body = response.json()
        assert "errors" not in body, body["errors"]
        assert boundary.answer_holds(body["data"], n), body["data"]

    answered()
    past = boundary.send(api.client, n + 1)
    assert past.status_code == boundary.past_status, past.text
    assert "Traceback" not in past.text
    errors = past.json()["errors"]
    assert [e["extensions"]["code"] for e in errors] == ["LIMIT_EXCEEDED"], errors
    assert str(n) in errors[0]["message"], errors  # the message names the limit
    answered()  # the document again: from its cached plan, where it has one


@pytest.mark.parametrize("setting", ["default", "small"])
@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_at_the_limit_answered_past_it_refused(
    boundary: Boundary, setting: str, memory_api: Api, memory_reader: MemoryReader
) -> None:
    if setting == "default":
        _check_boundary(memory_api, boundary, RequestLimits())
        return
    with served(create_app(memory_reader, limits=boundary.small), "memory", memory_reader) as api:
        _check_boundary(api, boundary, boundary.small)


def test_every_limit_a_request_can_hit_has_a_boundary() -> None:
    """An answer's bytes have theirs in ``test_api_answer_size.py`` (an answer of the size
    the limit is answered, one byte more refused, on both backends and both executions)."""
    fields = {f.name for f in dataclasses.fields(RequestLimits) if f.name.startswith("max_")}
    assert {param.values[0].field for param in BOUNDARIES} == fields - {"max_answer_bytes"}


def test_the_cost_message_counts_as_the_readme_says(memory_api: Api) -> None:
    """Just past the default: the refusal names the cost, so the arithmetic of ``_costing``
    is the server's (the boundary above shows 25,000 itself passes)."""
    body = memory_api.post(_costing(25_001))
    assert body["errors"][0]["message"] == "The query costs 25001, over the limit of 25000."


@pytest.mark.parametrize("query", ['{ paper(id: "x") { } }', "{ }"])
def test_an_empty_selection_is_refused_as_invalid(memory_api: Api, query: str) -> None:
    codes = [e["extensions"]["code"] for e in memory_api.post(query)["errors"]]
    assert codes[0] in ("GRAPHQL_PARSE_FAILED", "GRAPHQL_VALIDATION_FAILED"), codes


# -- the defaults are the README's -------------------------------------------------------------------


def _readme_limits() -> dict[str, float]:
    """The README's limits table as RequestLimits fields: ``PITH_API_MAX_DEPTH`` → max_depth,
    "64 KiB" → 65536, "25,000" → 25000, "100 (default 20)" → also default_page_size 20."""
    section = README.read_text("utf-8").split("### Limits and errors", 1)[1]
    found: dict[str, float] = {}
    for row in re.findall(r"^\| (.+?) \| (.+?) \| `PITH_API_(\w+)` \|$", section, flags=re.M):
        _, default, variable = row
        field = variable.lower()
        match = re.fullmatch(r"([\d,]+) ?(KiB|s)?(?: \(default (\d+)\))?", default)
        assert match, default
        number, unit, fallback = match.groups()
        found[field] = int(number.replace(",", "")) * (1024 if unit == "KiB" else 1)
        if fallback:
            found[field.replace("max_", "default_")] = int(fallback)
    return found


def test_readme_limits_table_is_the_defaults() -> None:
    """The request limits, and the connection's bounds (``ServerSettings``: head size, send
    deadline, connections, the stop's wait)."""
    server = ServerSettings()
    connection = {
        "max_header_bytes": server.max_header_bytes,
        "send_timeout_seconds": server.send_timeout_seconds,
        "max_connections": server.max_connections,
        "stop_seconds": server.stop_seconds,
    }
    assert _readme_limits() == dataclasses.asdict(RequestLimits()) | connection


def test_limits_docstring_table_is_the_defaults() -> None:
    doc = limits_module.__doc__ or ""
    rows = dict(re.findall(r"^``(\w+)``\s+(\d+)\s", doc, flags=re.M))
    defaults = RequestLimits()
    assert set(rows) == {f for f in dataclasses.asdict(defaults) if not f.startswith("default_")}
    assert {field: float(value) for field, value in rows.items()} == {
        field: float(getattr(defaults, field)) for field in rows
    }
