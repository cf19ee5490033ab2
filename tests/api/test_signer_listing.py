"""``Signer.papers(signedBundle:)``: what a signer published (the bundles it signed) apart
from the papers it only signed events of in another signer's bundle, on both stores and
over real HTTP: the pages, their cursors, ``totalCount`` and the facets of each listing.

``B`` signs the bundles of two papers; ``A`` signs the bundles of two more, one of them
holding an event ``B`` signed (so ``B`` has a SIGNED edge to it with ``signedBundle: false``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from apitest import Api, api_of

from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import PinnedKey
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.base import GraphStore
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle

B = SignerIdentity.from_seed(b"listing-b", key_id="b-key", signer_id="b.example")
A = SignerIdentity.from_seed(b"listing-a", key_id="a-key", signer_id="a.example")
KEYRING = resolve_keyring([PinnedKey(s.key_id, s.public_key, s.signer_id) for s in (B, A)])

FIRST = PaperSpec.example(
    "2402.00001", title="First of B", authors=["Bea One"], submitted_at="2023-02-01T10:00:00Z"
)
SECOND = replace(FIRST, arxiv_id="2402.00002", title="Second of B", submitted_at="2024-03-01T10:00:00Z")
MIXED = replace(
    FIRST, arxiv_id="2402.00003", title="A's bundle, B's event", submitted_at="2024-04-01T10:00:00Z"
)
OWN = replace(FIRST, arxiv_id="2402.00004", title="A's own", submitted_at="2024-05-01T10:00:00Z")

QUERY = """query($id: String!, $bundle: Boolean, $first: Int, $after: String) {
  signer(id: $id) { paperCount papers(first: $first, after: $after, signedBundle: $bundle) {
    totalCount pageInfo { hasNextPage hasPreviousPage endCursor } nodes { title }
    facets { years { value count } categories { value count } } } } }"""


@pytest.fixture
def api(store: GraphStore, tmp_path: Path) -> Iterator[Api]:
    bundles = [
        build_bundle(FIRST, B),
        build_bundle(SECOND, B),
        build_bundle(MIXED, A, extra_event_signer=B),  # B signs its graph_snapshot event
        build_bundle(OWN, A),
    ]
    (tmp_path / "bundles.jsonl").write_bytes(b"".join(orjson.dumps(b) + b"\n" for b in bundles))
    report = run([str(tmp_path / "bundles.jsonl")], keyring=KEYRING, store=store, workers=1)
    assert (report.inserted, report.rejected) == (4, 0)
    with api_of(store, KEYRING) as served:
        yield served


def _papers(api: Api, signer: str, bundle: bool | None, **page: Any) -> dict[str, Any]:
    found: dict[str, Any] = api.data(QUERY, id=signer, bundle=bundle, **page)["signer"]
    return found


@pytest.mark.parametrize(
    ("signer", "bundle", "titles", "years"),
    [
        ("b.example", None, ["A's bundle, B's event", "Second of B", "First of B"], {"2024": 2, "2023": 1}),
        ("b.example", True, ["Second of B", "First of B"], {"2024": 1, "2023": 1}),
        ("b.example", False, ["A's bundle, B's event"], {"2024": 1}),
        ("a.example", None, ["A's own", "A's bundle, B's event"], {"2024": 2}),
        ("a.example", True, ["A's own", "A's bundle, B's event"], {"2024": 2}),
        ("a.example", False, [], {}),
    ],
)
def test_a_signers_papers_by_who_signed_the_bundle(
    api: Api, signer: str, bundle: bool | None, titles: list[str], years: dict[str, int]
) -> None:
    for _ in range(2):  # the first request runs on the resolvers, the second on its plan
        found = _papers(api, signer, bundle)
        listing = found["papers"]
        assert [node["title"] for node in listing["nodes"]] == titles
        assert listing["totalCount"] == len(titles)
        assert {y["value"]: y["count"] for y in listing["facets"]["years"]} == years
        assert sum(c["count"] for c in listing["facets"]["categories"]) == len(titles)
        assert found["paperCount"] == (3 if signer == "b.example" else 2)  # every paper it signed


def test_pages_of_a_signers_own_bundles_follow_their_cursors(api: Api) -> None:
    first = _papers(api, "b.example", True, first=1)["papers"]
    assert [node["title"] for node in first["nodes"]] == ["Second of B"]
    assert first["pageInfo"]["hasNextPage"] is True
    assert first["totalCount"] == 2
    rest = _papers(api, "b.example", True, first=1, after=first["pageInfo"]["endCursor"])["papers"]
    assert [node["title"] for node in rest["nodes"]] == ["First of B"]
    assert rest["pageInfo"] == {
        "hasNextPage": False,
        "hasPreviousPage": True,
        "endCursor": rest["pageInfo"]["endCursor"],
    }
    # The paper B only signed an event of is not on B's own pages, whatever the cursor.
    after_mixed = _papers(api, "b.example", False, first=1)["papers"]["pageInfo"]["endCursor"]
    assert [n["title"] for n in _papers(api, "b.example", True, after=after_mixed)["papers"]["nodes"]] == [
        "Second of B",
        "First of B",
    ]


def test_two_signers_listings_in_one_request_are_kept_apart(api: Api) -> None:
    query = """{ a: signer(id: "a.example") { own: papers(signedBundle: true) { totalCount }
      copied: papers(signedBundle: false) { totalCount } all: papers { totalCount } }
      b: signer(id: "b.example") { own: papers(signedBundle: true) { totalCount }
      copied: papers(signedBundle: false) { totalCount } all: papers { totalCount } } }"""
    for _ in range(2):
        data = api.data(query)
        counts = {name: {k: v["totalCount"] for k, v in s.items()} for name, s in data.items()}
        assert counts == {"a": {"own": 2, "copied": 0, "all": 2}, "b": {"own": 2, "copied": 1, "all": 3}}
