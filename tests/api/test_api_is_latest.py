"""``Paper.isLatest`` (since 0.9.4): whether a paper is the newest version of its arXiv id in
the graph, exactly the papers ``papers(filter: {latestVersions: true})`` lists.

An arXiv id with versions 1, 2 and 3 (and one with a single version), served over HTTP by
each backend: only v3 (and the single one) is the latest, wherever the paper is read from
(a listing, ``latestVersions``, ``papersById``, ``node(id:)``, ``paper(id:)`` and its
``versions``), by the resolvers (a query's first run) and by its stored plan (the second).
Then v4 is loaded: v3 is no longer the latest, v4 is (Neo4j: the same server, reading the
database as it is now; a memory graph is served as loaded, so it is served again).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apitest import Api, api_of, load_signed

from pith_graph.api.reads.neo4j_rows import paper_decoder, paper_properties
from pith_graph.api.reads.records import EVERYTHING, PaperSelection
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import PinnedKey
from pith_graph.loader.stores.base import GraphStore
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.testing import PaperSpec, SignerIdentity

SIGNER = SignerIdentity.from_seed(b"is-latest", key_id="latest-key", signer_id="latest.example")
KEYRING = resolve_keyring([PinnedKey(SIGNER.key_id, SIGNER.public_key, SIGNER.signer_id)])
REVISED, SINGLE = "2405.00001", "2405.00002"


def _spec(arxiv_id: str, version: int) -> PaperSpec:
    """Version ``version`` of ``arxiv_id``; v1 of the revised id is submitted last of all, so
    the newest version is not the newest paper."""
    day = 20 if (arxiv_id, version) == (REVISED, 1) else version + (10 if arxiv_id == SINGLE else 0)
    return PaperSpec.example(
        arxiv_id,
        version=version,
        title=f"Version {version} of {arxiv_id}",
        submitted_at=f"2024-05-{day:02d}T10:00:00Z",
        built_at=f"2026-02-{1 + version:02d}T10:00:00Z",
    )


FIRST = [_spec(REVISED, 1), _spec(REVISED, 2), _spec(REVISED, 3), _spec(SINGLE, 1)]
ADDED = [_spec(REVISED, 4)]

PAPER = "id pithNumber sourceId sourceVersion isLatest"
LISTING = f"query($f: PaperFilter) {{ papers(first: 50, filter: $f) {{ nodes {{ {PAPER} }} }} }}"
BY_IDS = f"query($ids: [String!]!) {{ papersById(ids: $ids) {{ {PAPER} }} }}"
NODE = f"query($id: ID!) {{ node(id: $id) {{ ... on Paper {{ {PAPER} }} }} }}"
ONE = f"query($id: String!) {{ paper(id: $id) {{ {PAPER} versions {{ {PAPER} }} }} }}"


def _load(store: GraphStore, folder: Path, specs: list[PaperSpec]) -> None:
    load_signed(store, folder, specs, SIGNER, KEYRING)


def _data(api: Api, query: str, **variables: Any) -> Any:
    """The data of ``query``, run twice: by the resolvers (compiling its plan), then by the
    plan; both must answer alike."""
    first = api.data(query, **variables)
    assert api.data(query, **variables) == first, (query, variables)
    return first


def _flags(papers: list[dict[str, Any]]) -> dict[tuple[str, int], bool]:
    return {(p["sourceId"], p["sourceVersion"]): p["isLatest"] for p in papers}


def _check(api: Api, newest: int) -> None:
    """Every way of reading a paper tells that ``newest`` of REVISED (and SINGLE's only
    version) is the latest, and no other paper."""
    expected = {(REVISED, v): v == newest for v in range(1, newest + 1)} | {(SINGLE, 1): True}
    every = _data(api, LISTING, f=None)["papers"]["nodes"]
    assert _flags(every) == expected
    kept = _data(api, LISTING, f={"latestVersions": True})["papers"]["nodes"]
    assert kept and all(p["isLatest"] for p in kept)
    assert kept == [p for p in every if p["isLatest"]]  # the same papers, in the same order
    assert _data(api, LISTING, f={"latestVersions": False})["papers"]["nodes"] == every
    assert _data(api, BY_IDS, ids=[p["pithNumber"] for p in every])["papersById"] == every
    for paper in every:
        assert _data(api, NODE, id=paper["id"])["node"] == paper
        one = _data(api, ONE, id=paper["pithNumber"])["paper"]
        assert {key: one[key] for key in paper} == paper
        assert _flags(one["versions"]) == {
            key: value
            for key, value in expected.items()
            if key[0] == paper["sourceId"] and key != (paper["sourceId"], paper["sourceVersion"])
        }
    # The id without a version names the latest one.
    assert _data(api, ONE, id=f"arXiv:{REVISED}")["paper"]["sourceVersion"] == newest


def test_only_the_newest_version_is_the_latest(store: GraphStore, tmp_path: Path) -> None:
    store.ensure_schema()
    _load(store, tmp_path / "first", FIRST)
    with api_of(store, KEYRING) as api:
        _check(api, 3)
        _load(store, tmp_path / "added", ADDED)
        if isinstance(store, MemoryStore):  # served as loaded: serve the bigger graph anew
            with api_of(store, KEYRING) as again:
                _check(again, 4)
        else:  # the same server, reading the database as it is now
            _check(api, 4)


def test_a_paper_written_before_0_9_4_is_not_the_latest_and_not_torn() -> None:
    """Neo4j: a paper without ``isLatest`` (written before 0.9.4, until ``pith-graph schema``
    gives it one) reads as not the latest, as ``latestVersions`` leaves it out, not as a torn
    read (which the request would read again, and again); a selection without the field
    does not read it."""
    props = paper_properties(EVERYTHING)
    assert props[-1] == "isLatest"
    assert "isLatest" not in paper_properties(PaperSelection(frozenset({"title"})))
    decode = paper_decoder(props)
    values: list[Any] = [f"{name}-value" for name in props]
    for stored, read in ((True, True), (False, False), (None, False)):
        values[-1] = stored
        assert decode(values).is_latest is read
