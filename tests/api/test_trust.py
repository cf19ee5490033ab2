"""Trust across signers: what a lower-ranked key can and cannot do (issue "trust across
signers"), on both stores and through the API over real HTTP.

Two trusted signers besides the registry: ``B`` (``b.example``, ranked first of the file)
plays the honest, higher-ranked signer and ``A`` (``a.example``, ranked after it) the
attacker holding a trusted key. Every attack of the hostile pass is a test here.
"""

from __future__ import annotations

import itertools
import json
import pickle
import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from apitest import Api, api_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pith_graph.errors import KeyringError
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyfiles import load_keyring_file
from pith_graph.loader.keyring import REVOKED_ALWAYS, Keyring, PinnedKey
from pith_graph.loader.pipeline import LoadReport, run
from pith_graph.loader.prune import prune_revoked
from pith_graph.loader.stores.base import GraphExport, GraphStore
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle, resign

B = SignerIdentity.from_seed(b"trust-b", key_id="b-key", signer_id="b.example")
A = SignerIdentity.from_seed(b"trust-a", key_id="a-key", signer_id="a.example")
B2 = SignerIdentity.from_seed(b"trust-b-rotated", key_id="b-key-2", signer_id="b.example")
KEYRING = resolve_keyring([PinnedKey(s.key_id, s.public_key, s.signer_id) for s in (B, A, B2)])

P = PaperSpec(
    arxiv_id="2402.00042",
    version=1,
    title="Honest results on sparse graphs",
    authors=["Bea Honest", "Bo Careful"],
    abstract_excerpt="We report honest results.",
    primary_cat="cs.DS",
    cross_cats=["cs.LG"],
    license="http://creativecommons.org/licenses/by/4.0/",
    submitted_at="2024-02-01T10:00:00Z",
    created_at="2026-07-01T00:00:00Z",
    built_at="2026-07-02T00:00:00Z",
)
OTHER = replace(P, arxiv_id="2402.00777", title="A paper of the attacker's own", authors=["Al Tacker"])
DOI = f"10.48550/arxiv.{P.arxiv_id}"

_runs = itertools.count()


def signed(spec: PaperSpec, signer: SignerIdentity) -> bytes:
    return orjson.dumps(build_bundle(spec, signer))


def load(store: GraphStore, folder: Path, bundles: Sequence[bytes], keyring: Keyring = KEYRING) -> LoadReport:
    """One run over ``bundles`` in this order, one batch per bundle (the order is the test's)."""
    run_dir = folder / f"run-{next(_runs):03d}"
    run_dir.mkdir()
    for index, data in enumerate(bundles):
        (run_dir / f"{index:04d}.json").write_bytes(data)
    return run([str(run_dir)], keyring=keyring, store=store, workers=1, batch_size=1)


def papers(export: GraphExport) -> dict[str, dict[str, Any]]:
    return {key: node for key, node in export.nodes.items() if node["label"] == "Paper"}


def authors_of(export: GraphExport, paper: str) -> set[str]:
    return {start for (start, kind, end) in export.edges if kind == "AUTHORED" and end == paper}


def identified(export: GraphExport, alias: str) -> set[str]:
    return {end for (start, kind, end) in export.edges if kind == "IDENTIFIES" and start == alias}


def paper_id(spec: PaperSpec, signer: SignerIdentity) -> str:
    return "Paper:" + build_bundle(spec, signer)["pith_number"]


# -- overwrite ---------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["honest-first", "attacker-first"])
def test_a_lower_ranked_signer_cannot_overwrite_a_paper(
    store: GraphStore, tmp_path: Path, order: str
) -> None:
    honest = signed(P, B)
    forged = signed(replace(P, authors=["Al Tacker"], built_at="2026-08-30T00:00:00Z"), A)
    bundles = [honest, forged] if order == "honest-first" else [forged, honest]
    report = load(store, tmp_path, bundles)
    graph = store.export()
    pid = paper_id(P, B)
    assert pid == paper_id(P, A)  # the same canonical record: the same pith number
    assert graph.nodes[pid]["keyIds"] == [B.key_id]
    assert graph.nodes[pid]["bundleKeyId"] == B.key_id
    assert authors_of(graph, pid) == {"Author:bea honest", "Author:bo careful"}
    assert "Signer:a.example" not in graph.nodes and "Author:al tacker" not in graph.nodes
    if order == "honest-first":
        assert (report.inserted, report.outranked, report.stale) == (1, 1, 0)
    else:  # the higher-ranked bundle replaces the lower-ranked one, whatever built_at says
        assert (report.inserted, report.replaced, report.outranked) == (1, 1, 0)


# -- freeze --------------------------------------------------------------------------------------


def test_a_far_future_bundle_cannot_freeze_a_paper(store: GraphStore, tmp_path: Path) -> None:
    frozen = build_bundle(replace(P, built_at="2026-07-03T00:00:00Z"), B)
    frozen["built_at"] = "9999-12-31T23:59:59Z"
    resign(frozen, B)
    report = load(
        store, tmp_path, [orjson.dumps(frozen), signed(replace(P, built_at="2026-07-05T00:00:00Z"), B)]
    )
    assert [r.code for r in report.rejections] == ["future_dated"]
    assert report.inserted == 1
    assert papers(store.export())[paper_id(P, B)]["builtAt"] == "2026-07-05T00:00:00Z"


# -- identifier hijack and fake versions ------------------------------------------------------------


def test_claiming_another_papers_doi_is_rejected(store: GraphStore, tmp_path: Path) -> None:
    hijack = build_bundle(OTHER, A)
    hijack["source_aliases"].append(
        {"alias_kind": "doi", "alias_value": DOI.upper(), "created_at": OTHER.created_at}
    )
    resign(hijack, A)
    report = load(store, tmp_path, [signed(P, B), orjson.dumps(hijack)])
    assert [r.code for r in report.rejections] == ["identifier_mismatch"]
    assert identified(store.export(), f"Alias:doi:{DOI}") == {paper_id(P, B)}


@pytest.mark.parametrize("order", ["honest-first", "attacker-first"])
def test_a_fake_version_of_a_held_arxiv_id_is_not_applied(
    store: GraphStore, tmp_path: Path, order: str
) -> None:
    fake = signed(replace(P, version=2, title="Dishonest results", built_at="2026-09-01T00:00:00Z"), A)
    bundles = [signed(P, B), fake] if order == "honest-first" else [fake, signed(P, B)]
    report = load(store, tmp_path, bundles)
    graph = store.export()
    assert set(papers(graph)) == {paper_id(P, B)}
    assert identified(graph, f"Alias:arxiv:{P.arxiv_id}") == {paper_id(P, B)}
    assert f"Alias:arxiv_version:{P.arxiv_id}v2" not in graph.nodes
    if order == "honest-first":
        assert (report.inserted, report.outranked, report.displaced) == (1, 1, 0)
    else:  # B takes the arXiv id over: A's version is removed
        assert (report.inserted, report.outranked, report.displaced) == (2, 0, 1)


def test_a_lower_ranked_signer_keeps_what_nobody_above_claims(store: GraphStore, tmp_path: Path) -> None:
    report = load(store, tmp_path, [signed(P, B), signed(OTHER, A)])
    assert report.inserted == 2
    assert set(papers(store.export())) == {paper_id(P, B), paper_id(OTHER, A)}


# -- same signer: unchanged -------------------------------------------------------------------------


def test_within_one_signer_the_newest_bundle_wins_across_its_keys(store: GraphStore, tmp_path: Path) -> None:
    newer = replace(P, authors=["Bea Honest"], built_at="2026-07-09T00:00:00Z")
    report = load(store, tmp_path, [signed(newer, B2), signed(P, B)])
    assert (report.inserted, report.stale, report.outranked) == (1, 1, 0)
    pid = paper_id(P, B)
    assert authors_of(store.export(), pid) == {"Author:bea honest"}
    assert papers(store.export())[pid]["bundleKeyId"] == B2.key_id


# -- input order never matters ----------------------------------------------------------------------

_MIX = [
    signed(P, B),
    signed(replace(P, authors=["Al Tacker"], built_at="2026-08-30T00:00:00Z"), A),
    signed(replace(P, version=2, title="Dishonest results", built_at="2026-09-01T00:00:00Z"), A),
    signed(replace(P, version=2, title="Honest sequel", built_at="2026-07-20T00:00:00Z"), B2),
    signed(OTHER, A),
    signed(replace(OTHER, built_at="2026-07-25T00:00:00Z", authors=["Al Tacker", "Bo Careful"]), A),
    signed(replace(P, built_at="2026-07-04T00:00:00Z", title="Honest results on sparse graphs"), B),
]


def _reference() -> GraphExport:
    store = MemoryStore()
    run_bundles = list(_MIX)
    report = _load_in_memory(store, run_bundles)
    assert report.rejected == 0
    return store.export()


def _load_in_memory(store: MemoryStore, bundles: Sequence[bytes], batch_size: int = 1) -> LoadReport:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        for index, data in enumerate(bundles):
            Path(folder, f"{index:04d}.json").write_bytes(data)
        return run([folder], keyring=KEYRING, store=store, workers=1, batch_size=batch_size)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.permutations(range(len(_MIX))), st.integers(1, len(_MIX)))
def test_any_order_and_batching_gives_one_graph_in_memory(order: list[int], batch_size: int) -> None:
    store = MemoryStore()
    _load_in_memory(store, [_MIX[i] for i in order], batch_size)
    assert store.export() == REFERENCE


REFERENCE = _reference()


@pytest.mark.neo4j
def test_orders_give_the_same_graph_on_neo4j(neo4j_server: Any, tmp_path: Path) -> None:
    store: Neo4jStore = neo4j_server.connect()
    try:
        for order in ([6, 5, 4, 3, 2, 1, 0], [2, 0, 4, 1, 6, 3, 5]):
            store.clear()
            load(store, tmp_path, [_MIX[i] for i in order])
            assert store.export() == REFERENCE, order
    finally:
        store.close()


# -- through the API, over HTTP --------------------------------------------------------------------


@pytest.fixture
def api_over(store: GraphStore, tmp_path: Path) -> Iterator[Api]:
    journal = build_bundle(P, B)
    journal["source_aliases"].append(
        {"alias_kind": "doi", "alias_value": "10.1145/3600000.3600001", "created_at": P.created_at}
    )
    resign(journal, B)
    claim = build_bundle(OTHER, A)  # claims B's journal DOI (not derivable, so not refused)
    claim["source_aliases"].append(
        {"alias_kind": "doi", "alias_value": "10.1145/3600000.3600001", "created_at": OTHER.created_at}
    )
    resign(claim, A)
    fake_version = signed(
        replace(P, version=2, title="Dishonest results", built_at="2026-09-01T00:00:00Z"), A
    )
    report = load(store, tmp_path, [orjson.dumps(claim), fake_version, orjson.dumps(journal)])
    assert report.rejected == 0
    with api_of(store, KEYRING) as api:
        yield api


def test_the_api_answers_with_the_higher_ranked_signers_papers(api_over: Api) -> None:
    query = "query($id: String!) { paper(id: $id) { title verification { keyIds } } resolve(id: $id) { pithNumber } }"
    for identifier in (f"arXiv:{P.arxiv_id}", f"doi:{DOI}", P.arxiv_id, "doi:10.1145/3600000.3600001"):
        data = api_over.data(query, id=identifier)
        assert data["paper"] == {"title": P.title, "verification": {"keyIds": [B.key_id]}}, identifier
        assert len(data["resolve"]) == 1, identifier
    assert api_over.data(query, id=f"arXiv:{P.arxiv_id}v2") == {"paper": None, "resolve": []}
    own = api_over.data(query, id=f"arXiv:{OTHER.arxiv_id}")
    assert own["paper"]["title"] == OTHER.title  # A keeps its own paper
    # papersById applies the same rule to each identifier of a batch.
    ids = [
        f"arXiv:{P.arxiv_id}",
        "doi:10.1145/3600000.3600001",
        f"arXiv:{P.arxiv_id}v2",
        f"arXiv:{OTHER.arxiv_id}",
    ]
    batch = api_over.data("query($ids: [String!]!) { papersById(ids: $ids) { title } }", ids=ids)
    assert batch["papersById"] == [{"title": P.title}, {"title": P.title}, None, {"title": OTHER.title}]


def test_a_signer_of_the_bundle_alone_is_listed_with_no_event_types(
    store: GraphStore, tmp_path: Path
) -> None:
    """A re-wrapped bundle: B's events, A's bundle signature. Its SIGNED edge from A holds no
    event types (the stores leave the property out, as the bulk import must), and the API
    answers ``[]`` for it on both backends."""
    rewrapped = resign(build_bundle(P, B), A, event_signers={0: B, 1: B})
    assert load(store, tmp_path, [orjson.dumps(rewrapped)]).rejected == 0
    query = """query($id: String!) { paper(id: $id) { verification { signatures {
        signer { signerId signerType } keyIds eventTypes signedBundle } } } }"""
    with api_of(store, KEYRING) as api:
        data = api.data(query, id=f"arXiv:{P.arxiv_id}")
    assert data["paper"]["verification"]["signatures"] == [
        {
            "signer": {"signerId": "a.example", "signerType": "unknown"},
            "keyIds": [A.key_id],
            "eventTypes": [],
            "signedBundle": True,
        },
        {
            "signer": {"signerId": "b.example", "signerType": "unknown"},
            "keyIds": [B.key_id],
            "eventTypes": ["graph_snapshot", "record_created"],
            "signedBundle": False,
        },
    ]


def test_a_key_pinned_without_a_signer_id_is_its_own_signer_in_the_api(
    store: GraphStore, tmp_path: Path
) -> None:
    """A key pinned with no ``signer_id`` speaks for itself: ``TrustedKey.signerId`` is its key
    id, as its SIGNED edge's signer is (it was null before 0.8.8), on both backends."""
    solo = SignerIdentity.from_seed(b"trust-solo", key_id="solo-key", signer_id="solo-key")
    keyring = resolve_keyring([PinnedKey(solo.key_id, solo.public_key)])
    assert load(store, tmp_path, [signed(P, solo)], keyring).rejected == 0
    query = """query($id: String!) { paper(id: $id) { verification {
        keys { keyId signerId } signatures { signer { signerId } } } } }"""
    with api_of(store, keyring) as api:
        data = api.data(query, id=f"arXiv:{P.arxiv_id}")
    assert data["paper"]["verification"] == {
        "keys": [{"keyId": "solo-key", "signerId": "solo-key"}],
        "signatures": [{"signer": {"signerId": "solo-key"}}],
    }


# -- revocation ----------------------------------------------------------------------------------


def test_a_revoked_key_is_refused_and_pruned(store: GraphStore, tmp_path: Path) -> None:
    report = load(store, tmp_path, [signed(P, B), signed(OTHER, A)])
    assert report.inserted == 2
    revoked = KEYRING.with_keys([PinnedKey(A.key_id, A.public_key, A.signer_id, "2026-07-01T00:00:00Z")])
    again = load(store, tmp_path, [signed(replace(OTHER, built_at="2026-07-09T00:00:00Z"), A)], revoked)
    assert [r.code for r in again.rejections] == ["revoked_key"]
    dry = prune_revoked(store, revoked, dry_run=True)
    assert (dry.revoked_keys, dry.removed) == ([A.key_id], [paper_id(OTHER, A).removeprefix("Paper:")])
    assert paper_id(OTHER, A) in store.export().nodes
    pruned = prune_revoked(store, revoked)
    assert pruned.removed == dry.removed
    graph = store.export()
    assert set(papers(graph)) == {paper_id(P, B)}
    assert "Signer:a.example" not in graph.nodes and "Author:al tacker" not in graph.nodes
    assert prune_revoked(store, revoked).removed == []


def test_revoked_from_a_later_time_keeps_earlier_papers(store: GraphStore, tmp_path: Path) -> None:
    load(store, tmp_path, [signed(OTHER, A)])
    later = KEYRING.with_keys([PinnedKey(A.key_id, A.public_key, A.signer_id, "2026-07-03T00:00:00Z")])
    assert prune_revoked(store, later).removed == []


def test_keyring_ranks_signers_in_file_order(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps([B.keyring_entry(), A.keyring_entry(), B2.keyring_entry()]))
    keyring = resolve_keyring(path)
    assert [keyring.rank(k) for k in ("pith-v1-2026-05", B.key_id, A.key_id, B2.key_id, "nope")] == [
        0,
        1,
        2,
        1,
        1 << 30,
    ]


# -- the trusted-keys file and the keyring ----------------------------------------------------

ENTRY = {"key_id": "k", "public_key_hex": A.public_key_hex}
MALFORMED: list[tuple[Any, str]] = [
    ({"key_id": "k"}, "needs public_key_hex or public_key_b64"),
    ({"key_id": "k", "public_key_hex": 5}, "public_key_hex must be a string"),
    ({"key_id": "k", "public_key_b64": 5}, "public_key_b64 must be a string"),
    ({"key_id": "k", "public_key_hex": "zz"}, "key is not valid hex/base64"),
    ({"key_id": "k", "public_key_b64": "!" + A.public_key_b64}, "key is not valid hex/base64"),
    ({"key_id": "k", "public_key_hex": A.public_key_hex[2:]}, "an Ed25519 public key is 32 bytes"),
    ({**ENTRY, "public_key_b64": B.public_key_b64}, "public_key_hex and public_key_b64 differ"),
    ({**ENTRY, "revoked": "yes"}, "revoked must be true or false"),
    ({**ENTRY, "revoked_at": "2026-11-30"}, "revoked_at must be an ISO 8601 UTC time"),
    ({**ENTRY, "revoked_at": 1}, "revoked_at must be an ISO 8601 UTC time"),
    ({**ENTRY, "key_id": ""}, "key_id must be a non-empty string"),
    ({**ENTRY, "key_id": 1}, "key_id must be a non-empty string"),
    ({**ENTRY, "signer_id": 1}, "signer_id must be a string"),
    ("k", "expected an object"),
]


@pytest.mark.parametrize(("entry", "message"), MALFORMED, ids=[m for _, m in MALFORMED])
def test_a_malformed_trusted_keys_entry_is_refused_by_its_place(
    tmp_path: Path, entry: Any, message: str
) -> None:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps([B.keyring_entry(), entry]))
    with pytest.raises(KeyringError) as caught:
        load_keyring_file(path)
    assert str(caught.value).startswith(f"{path}[1]: {message}")


def test_a_trusted_keys_file_must_be_readable_json_holding_a_list(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    with pytest.raises(KeyringError, match=r"^cannot read keys file "):
        load_keyring_file(path)
    for text, message in (("{}", "expected a JSON list of key objects"), ("[", "not valid JSON")):
        path.write_text(text)
        with pytest.raises(KeyringError, match=f"^{re.escape(str(path))}: {message}"):
            load_keyring_file(path)


def test_trusted_keys_in_hex_base64_or_both_revoked_always_or_from_a_time(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    entries = [
        {"key_id": "a", "public_key_b64": A.public_key_b64, "revoked_at": "2026-11-30T00:00:00Z"},
        {**B.keyring_entry(), "public_key_b64": B.public_key_b64, "revoked": True},
        {**B2.keyring_entry(), "revoked": False},
    ]
    path.write_text(json.dumps(entries))
    keyring = load_keyring_file(path)
    assert [(k.key_id, k.public_key, k.revoked_at) for k in keyring.values()][1:] == [
        ("a", A.public_key, "2026-11-30T00:00:00Z"),
        (B.key_id, B.public_key, REVOKED_ALWAYS),
        (B2.key_id, B2.public_key, None),
    ]
    assert [keyring.rank(k) for k in ("a", B.key_id, B2.key_id)] == [1, 2, 2]  # B2 speaks for B's signer


def test_a_key_revoked_earlier_stays_revoked_and_one_id_holds_one_key() -> None:
    revoked = PinnedKey(A.key_id, A.public_key, A.signer_id, REVOKED_ALWAYS)
    keyring = Keyring(
        [revoked, PinnedKey(A.key_id, A.public_key, A.signer_id), PinnedKey(B.key_id, B.public_key)]
    )
    assert (len(keyring), keyring[A.key_id].revoked_at, keyring.rank(B.key_id)) == (2, REVOKED_ALWAYS, 1)
    with pytest.raises(KeyringError, match="pinned to two different keys"):
        Keyring([PinnedKey("k", A.public_key), PinnedKey("k", B.public_key)])


def test_a_keyring_reaches_worker_processes_whole() -> None:
    """Workers receive the keyring pickled: keys, revocations and ranks intact."""
    keyring = KEYRING.with_keys([PinnedKey(A.key_id, A.public_key, A.signer_id, "2026-11-30T00:00:00Z")])
    restored = pickle.loads(pickle.dumps(keyring))
    assert dict(restored) == dict(keyring)
    assert [restored.rank(k) for k in restored] == [keyring.rank(k) for k in keyring] == [0, 1, 2, 1]
    assert restored[A.key_id].revoked_for("2026-12-01T00:00:00Z")
