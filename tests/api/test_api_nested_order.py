"""An author's, a category's and a signer's papers oldest first (their ``papers(orderBy:
OLDEST)``, since 0.9.3), on both backends alike and both executions.

The corpus of :mod:`test_api_oldest_first` (papers two by two at the same submission time,
cross-lists, second versions), its bundles signed by two signers: ``B`` signs every third,
``A`` the others, ``B`` signing an event in three of four of ``A``'s (its SIGNED edges with
``signedBundle: false``). Served by the memory and the Neo4j backend over HTTP, each query
text sent twice (the resolvers answer it first, its plan then: the answers must be equal).
Each parent's papers walked oldest first in pages of 2 (Neo4j scans the ``submittedAt``
index: 9 or more papers of 25) and of 50 (it walks the node's edges) must be its newest-first
walk reversed, with the cursors ``papers(filter:, orderBy: OLDEST)`` hands out. Then cursors
of the other order are refused as ``Query.papers`` refuses them, and the parents of one
request get each its own page, read in one statement per order.
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from apitest import Api, alike, served_both, walk_alike
from graphql import parse
from test_api_nplus1 import Counted, _serve
from test_api_oldest_first import _specs

from pith_graph.api.cost import query_cost
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads import cypher
from pith_graph.api.reads.cypher_parts import EMBEDS
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.schema import build_schema
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import Keyring, PinnedKey
from pith_graph.testing import SignerIdentity, build_bundle

A = SignerIdentity.from_seed(b"nested-order-a", key_id="a-key", signer_id="a.example")
B = SignerIdentity.from_seed(b"nested-order-b", key_id="b-key", signer_id="b.example")
_SENT = itertools.count()


class _Twice(Api):
    """A served backend whose every query is answered by the resolvers (its text new to the
    server) and then by its plan (the same text again), which must answer alike."""

    def post(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        text = f"{query} # {next(_SENT)}"
        first = super().post(text, variables)
        assert super().post(text, variables) == first, (query, variables)
        return first


def _bundles(folder: Path) -> tuple[Path, Keyring]:
    lines = []
    for index, spec in enumerate(_specs()):
        if index % 3 == 0:
            bundle = build_bundle(spec, B)
        else:
            bundle = build_bundle(spec, A, extra_event_signer=B if index % 4 else None)
        lines.append(orjson.dumps(bundle) + b"\n")
    path = folder / "bundles.jsonl"
    path.write_bytes(b"".join(lines))
    return path, resolve_keyring([PinnedKey(s.key_id, s.public_key, s.signer_id) for s in (A, B)])


@pytest.fixture(scope="module")
def both(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Api, Api]]:
    with served_both(request, _bundles(tmp_path_factory.mktemp("nested-order"))) as (memory, neo4j):
        yield _twice(memory), _twice(neo4j)


def _twice(api: Api) -> Api:
    return _Twice(api.backend, api.url, api.reader, api.client)


PAGE = "edges { cursor node { pithNumber submittedAt } } pageInfo { hasNextPage hasPreviousPage endCursor }"
_ARGS = "first: $n, after: $a, orderBy: $o"
#: field -> a page of one parent's papers (``@``: what the page selects).
QUERIES = {
    "author": f"query($k: String!, $n: Int, $a: String, $o: PaperOrder) {{ author(name: $k) {{ papers({_ARGS}) {{ @ }} }} }}",
    "category": f"query($k: String!, $n: Int, $a: String, $o: PaperOrder) {{ category(code: $k) {{ papers({_ARGS}) {{ @ }} }} }}",
    "signer": (
        "query($k: String!, $b: Boolean, $n: Int, $a: String, $o: PaperOrder) "
        f"{{ signer(id: $k) {{ papers({_ARGS}, signedBundle: $b) {{ @ }} }} }}"
    ),
}
#: (field, key, signedBundle): the parents listed.
PARENTS = [
    ("author", "ann lee", None),
    ("author", "bo chen", None),
    ("category", "cs.LG", None),
    ("category", "math.PR", None),
    ("signer", "b.example", None),
    ("signer", "b.example", True),
    ("signer", "b.example", False),
    ("signer", "a.example", True),
]
#: field -> the papers(filter:) of the same papers.
FILTERS = {"author": "author", "category": "category"}


def _variables(parent: tuple[str, str, bool | None], **more: Any) -> dict[str, Any]:
    field, key, bundle = parent
    return {"k": key, **({"b": bundle} if field == "signer" else {}), **more}


def _walk(both: tuple[Api, Api], parent: tuple[str, str, bool | None], size: int, order: str | None) -> Any:
    field = parent[0]
    return walk_alike(both, QUERIES[field], f"{field}.papers", size, PAGE, **_variables(parent, o=order))


def _page(api_or_both: Any, parent: tuple[str, str, bool | None], **page: Any) -> dict[str, Any]:
    field = parent[0]
    query = QUERIES[field].replace("@", PAGE)
    if isinstance(api_or_both, tuple):
        found: dict[str, Any] = alike(api_or_both, query, **_variables(parent, **page))[field]["papers"]
    else:
        found = api_or_both.data(query, **_variables(parent, **page))[field]["papers"]
    return found


def _id(parent: tuple[str, str, bool | None]) -> str:
    return "-".join(str(part) for part in parent)


@pytest.mark.neo4j
@pytest.mark.parametrize("parent", PARENTS, ids=_id)
def test_oldest_first_is_newest_first_reversed(
    both: tuple[Api, Api], parent: tuple[str, str, bool | None]
) -> None:
    newest = _walk(both, parent, 50, None)
    assert len(newest) >= 3, parent
    assert _walk(both, parent, 50, "NEWEST") == newest
    keys = [(node["submittedAt"], node["pithNumber"]) for node in newest]
    assert keys == sorted(keys, reverse=True)
    assert _walk(both, parent, 2, "OLDEST") == newest[::-1]  # a page of 2: Neo4j scans the index
    assert _walk(both, parent, 50, "OLDEST") == newest[::-1]  # of 50: it walks the edges
    if parent[1] == "ann lee":
        times = [node["submittedAt"] for node in newest]
        assert len(set(times)) < len(times)  # ties: the pith number decides


def _sent(cursor: str) -> str:
    """What a cursor holds (an opaque encoding: tests only)."""
    return base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()


@pytest.mark.neo4j
@pytest.mark.parametrize("parent", [p for p in PARENTS if p[0] in FILTERS], ids=_id)
def test_the_cursors_are_those_of_papers_filtered(
    both: tuple[Api, Api], parent: tuple[str, str, bool | None]
) -> None:
    """A page's cursors are those ``papers(filter:)`` hands out in the same order (newest
    first: as 0.9.0 issued them); each pages the other listing on."""
    field, key, _ = parent
    listed = "query($f: PaperFilter, $n: Int, $a: String, $o: PaperOrder) { papers(filter: $f, first: $n, after: $a, orderBy: $o) { @ } }"
    listed = listed.replace("@", PAGE)
    for order, prefix in (("OLDEST", "o1|"), (None, "p1|"), ("NEWEST", "p1|")):
        nested = _page(both, parent, n=3, a=None, o=order)
        flat = alike(both, listed, f={FILTERS[field]: key}, n=3, a=None, o=order)["papers"]
        assert nested == flat
        end = nested["pageInfo"]["endCursor"]
        last = nested["edges"][-1]["node"]
        assert _sent(end) == f"{prefix}{last['submittedAt']}|{last['pithNumber']}"
        after = _page(both, parent, n=2, a=end, o=order)
        assert after == alike(both, listed, f={FILTERS[field]: key}, n=2, a=end, o=order)["papers"]
        assert after["pageInfo"]["hasPreviousPage"] is True


def _error(api: Api, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    errors = api.post(query, variables)["errors"]
    assert len(errors) == 1, errors
    error: dict[str, Any] = errors[0]
    return error


@pytest.mark.neo4j
@pytest.mark.parametrize("parent", [PARENTS[0], PARENTS[2], PARENTS[6]], ids=_id)
def test_a_cursor_of_one_order_does_not_page_the_other(
    both: tuple[Api, Api], parent: tuple[str, str, bool | None]
) -> None:
    oldest = _page(both, parent, n=2, a=None, o="OLDEST")["pageInfo"]["endCursor"]
    newest = _page(both, parent, n=2, a=None, o=None)["pageInfo"]["endCursor"]
    nested = QUERIES[parent[0]].replace("@", "nodes { pithNumber }")
    listed = "query($n: Int, $a: String, $o: PaperOrder) { papers(first: $n, after: $a, orderBy: $o) { nodes { pithNumber } } }"
    for cursor, order, other in (
        (oldest, None, "newest"),
        (oldest, "NEWEST", "newest"),
        (newest, "OLDEST", "oldest"),
    ):
        for api in both:
            error = _error(api, nested, _variables(parent, n=2, a=cursor, o=order))
            assert error["extensions"]["code"] == "BAD_USER_INPUT", error
            assert f"this one lists {other} first" in error["message"], error
            refused = _error(api, listed, {"n": 2, "a": cursor, "o": order})  # as Query.papers refuses it
            assert (error["message"], error["extensions"]) == (refused["message"], refused["extensions"])


BATCHED = [PARENTS[0], PARENTS[1], PARENTS[2], PARENTS[3], PARENTS[4], PARENTS[6], PARENTS[7]]


@pytest.mark.neo4j
def test_several_parents_of_one_request_each_have_their_page(both: tuple[Api, Api]) -> None:
    """Aliased parents, oldest and newest first: each its own page, as asked alone."""
    argument = {"author": "name", "category": "code", "signer": "id"}
    fields = []
    for index, (field, key, bundle) in enumerate(BATCHED):
        signed = "" if bundle is None else f", signedBundle: {str(bundle).lower()}"
        for order in ("OLDEST", "NEWEST"):
            papers = f"papers(first: 3, orderBy: {order}{signed}) {{ {PAGE} }}"
            fields.append(f'{order[0]}{index}: {field}({argument[field]}: "{key}") {{ {papers} }}')
    answer = alike(both, "{ " + " ".join(fields) + " }")
    for index, parent in enumerate(BATCHED):
        for order in ("OLDEST", "NEWEST"):
            assert answer[f"{order[0]}{index}"]["papers"] == _page(both, parent, n=3, a=None, o=order), parent


QUERY_MANY = (
    "{ papers(first: 30) { nodes { authors { papers(first: 2, orderBy: OLDEST) { nodes { pithNumber } } } "
    "categories { papers(first: 2, orderBy: OLDEST) { nodes { pithNumber } } } } } "
    'a: signer(id: "a.example") { papers(first: 2, orderBy: OLDEST, signedBundle: true) { nodes { pithNumber } } } '
    'b: signer(id: "b.example") { papers(first: 2, orderBy: OLDEST, signedBundle: true) { nodes { pithNumber } } } }'
)


def page_statements(page: str, order: str) -> set[str]:
    """Every statement of a page of ``page``'s papers (``cypher.KEYED_PAGES``) in ``order``:
    each projection, a first page and a later one."""
    return {cypher.papers_of_statement(page, e, order, after) for e in EMBEDS for after in (False, True)}


@pytest.mark.neo4j
def test_the_parents_pages_are_read_in_one_statement_each(both: tuple[Api, Api]) -> None:
    """No N+1: every author's papers of the request in one statement, every category's in
    one, both signers' in one; the resolvers' and the plan's."""
    reader = both[1].reader
    assert isinstance(reader, Neo4jReader)
    counted = Counted(reader)
    oldest = {
        page: page_statements(page, "oldest") for page in ("authors", "categories", "signers_by_bundle")
    }
    with _serve(counted, "bridged") as api:
        data, resolved, _ = counted.ask(api, QUERY_MANY)  # the first time: the resolvers
        again, planned, _ = counted.ask(api, QUERY_MANY)  # then: its plan
    assert again == data
    assert (
        len({a["papers"]["nodes"][0]["pithNumber"] for p in data["papers"]["nodes"] for a in p["authors"]})
        > 1
    )
    for statements in (resolved, planned):
        assert {name: sum(s in found for s in statements) for name, found in oldest.items()} == dict.fromkeys(
            oldest, 1
        )


def test_order_by_is_no_size_in_the_cost() -> None:
    """``orderBy`` changes no cost: a nested page costs its ``first`` either way, or its
    ``last`` (a page back, since 0.9.4) as ``first``."""
    schema = build_schema()._schema
    query = (
        "{ papers(first: 5) { nodes { authors(first: 10) { papers(#: 30@) { nodes { title } } } } } "
        'category(code: "cs.LG") { papers(#: 7@) { nodes { title } } } '
        'signer(id: "pith.science") { papers(#: 9@, signedBundle: false) { nodes { title } } } }'
    )
    costs = {
        (size, order): query_cost(
            schema, parse(query.replace("#", size).replace("@", order)), None, None, RequestLimits()
        )
        for size in ("first", "last")
        for order in ("", ", orderBy: OLDEST", ", orderBy: NEWEST", ", orderBy: null")
    }
    assert set(costs.values()) == {5 + 5 * 10 + 50 * 30 + 7 + 9}, costs
