"""Our signer against the real bundles (fidelity) and against itself (validity, resign)."""

from __future__ import annotations

import base64
import copy
import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pytest
from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

from pith_graph.loader.canon import canon, sha256_hex
from pith_graph.loader.facade import SAMPLES
from pith_graph.loader.format import bundle_digest
from pith_graph.loader.identifiers import pith_base32, pith_number_for
from pith_graph.testing.signer import (
    PaperSpec,
    SignerIdentity,
    build_bundle,
    resign,
    state_for,
)

BUNDLES = sorted(Path(SAMPLES).glob("*.json"))  # the real registry bundles the package ships
REGISTRY_HEX = "b2d552b68890857171a78b36a5dccf368a953413288c353f7c9d9d6f94b709b3"
REGISTRY_FINGERPRINT = "8d4b5ee74e4693bcd1df2446408b0d54"

Json = dict[str, Any]
UNSIGNED_EVENT_FIELDS = ("signature", "content_sha256", "event_id")


def _h(value: Any) -> str:
    return sha256_hex(canon(value))


def _verify(keys: dict[str, bytes], key_id: str, hex_digest: str, signature_b64: str) -> None:
    VerifyKey(keys[key_id]).verify(bytes.fromhex(hex_digest), base64.b64decode(signature_b64))


def check_bundle(bundle: Json, keys: dict[str, bytes]) -> None:
    """Recompute every digest with canon and verify every signature with nacl.

    ``keys`` maps key_id to raw public key bytes (the trusted keyring).
    """
    record = bundle["canonical_record"]
    assert _h(record) == bundle["canonical_sha256"]
    submitted = record["metadata"]["submitted_at"]
    assert bundle["pith_number"] == pith_number_for(bundle["canonical_sha256"], submitted)
    for event in bundle["events"]:
        unsigned = {k: v for k, v in event.items() if k not in UNSIGNED_EVENT_FIELDS}
        assert _h(unsigned) == event["content_sha256"]
        assert event["event_id"] == "sha256:" + event["content_sha256"]
        assert event["subject_pith_number"] == bundle["pith_number"]
        signature = event["signature"]
        assert signature["key_id"] == event["signer"]["key_id"]
        _verify(keys, signature["key_id"], event["content_sha256"], signature["signature_b64"])
        if event["event_type"] == "record_created":
            receipt = event["payload"]["receipt"]
            assert receipt["canonical_sha256"] == bundle["canonical_sha256"]
            _verify(keys, receipt["key_id"], receipt["canonical_sha256"], receipt["signature_b64"])
    state = bundle["state"]
    assert _h({k: v for k, v in state.items() if k != "state_sha256"}) == state["state_sha256"]
    assert state["applied_event_ids"] == [e["event_id"] for e in bundle["events"]]
    for record_key in bundle["public_keys"]:
        if record_key["key_id"] in keys:
            assert bytes.fromhex(record_key["public_key_hex"]) == keys[record_key["key_id"]]
    signature = bundle["bundle_signature"]
    unsigned_bundle = {k: v for k, v in bundle.items() if k != "bundle_signature"}
    assert _h(unsigned_bundle) == signature["bundle_sha256"]
    _verify(keys, signature["key_id"], signature["bundle_sha256"], signature["signature_b64"])


def _real(path: Path) -> Json:
    loaded: Json = orjson.loads(path.read_bytes())
    return loaded


def spec_from_real(real: Json) -> PaperSpec:
    """A PaperSpec carrying every value and timestamp of a real bundle."""
    record_event, snapshot_event = real["events"]
    paper = snapshot_event["payload"]["graph_snapshot"]["paper"]
    receipt = record_event["payload"]["receipt"]
    return PaperSpec(
        arxiv_id=real["source"]["id"],
        version=real["source"]["version"],
        title=paper["title"],
        authors=paper["authors_text"].split(", "),
        abstract_excerpt=paper["abstract_excerpt"],
        primary_cat=paper["primary_cat"],
        cross_cats=paper["cross_cats"],
        license=paper["license"],
        submitted_at=paper["submitted_at"],
        created_at=record_event["created_at"],
        built_at=real["built_at"],
        # Only an excerpt travels in the bundle: the full-abstract digest is taken as given.
        abstract_canon_sha256=real["canonical_record"]["metadata"]["abstract_canon_sha256"],
        snapshot_created_at=snapshot_event["created_at"],
        receipt_computed_at=receipt["first_computed_at"],
        receipt_reissued_at=receipt["last_reissued_at"],
        receipt_signed_at=receipt["signed_at"],
        event_signed_at=[event["signature"]["signed_at"] for event in real["events"]],
        bundle_signed_at=real["bundle_signature"]["signed_at"],
    )


def registry_impostor(real: Json) -> SignerIdentity:
    """A throw-away key that names itself exactly as the registry's key is named."""
    key = real["public_keys"][0]
    signer = real["events"][0]["signer"]
    return SignerIdentity(
        SigningKey.generate(),
        key_id=key["key_id"],
        signer_id=signer["signer_id"],
        signer_type=signer["signer_type"],
        claimed_public_key=bytes.fromhex(key["public_key_hex"]),
        key_url=key["url"],
        key_notes=key["notes"],
        rotates_at=key["rotates_at"],
    )


@pytest.fixture(params=BUNDLES, ids=[path.stem for path in BUNDLES])
def real_path(request: pytest.FixtureRequest) -> Path:
    path: Path = request.param
    return path


def test_real_bundles_present() -> None:
    assert len(BUNDLES) >= 3


def test_fidelity_canonical_and_identifiers(real_path: Path) -> None:
    real = _real(real_path)
    built = build_bundle(spec_from_real(real), registry_impostor(real))
    assert built["canonical_record"] == real["canonical_record"]
    assert built["canonical_sha256"] == real["canonical_sha256"]
    assert built["pith_number"] == real["pith_number"]
    assert built["short_pith_number"] == real["short_pith_number"]
    assert built["source_aliases"] == real["source_aliases"]
    assert built["public_keys"] == real["public_keys"]
    assert built["links"] == real["links"]
    assert built["mirror_hints"] == real["mirror_hints"]


def test_fidelity_graph_snapshot_event_digest(real_path: Path) -> None:
    """The snapshot event holds no signature value, so its digest reproduces as built."""
    real = _real(real_path)
    built = build_bundle(spec_from_real(real), registry_impostor(real))
    assert built["events"][1]["content_sha256"] == real["events"][1]["content_sha256"]
    assert built["events"][1]["event_id"] == real["events"][1]["event_id"]


def test_fidelity_event_and_state_digests(real_path: Path) -> None:
    """With the registry's receipt signature (which we cannot make) put in, all match."""
    real = _real(real_path)
    signer = registry_impostor(real)
    built = build_bundle(spec_from_real(real), signer)
    receipt = built["events"][0]["payload"]["receipt"]
    receipt["signature_b64"] = real["events"][0]["payload"]["receipt"]["signature_b64"]
    resign(built, signer, refresh_canonical=False, sign_receipt=False)
    for ours, theirs in zip(built["events"], real["events"], strict=True):
        assert ours["content_sha256"] == theirs["content_sha256"]
        assert ours["event_id"] == theirs["event_id"]
    assert built["state"] == real["state"]
    assert built["state"]["state_sha256"] == real["state"]["state_sha256"]


def test_fidelity_whole_file_with_real_signatures(real_path: Path) -> None:
    """Substituting the four registry signatures makes our bundle the real file, byte for byte."""
    raw = real_path.read_bytes()
    real = _real(real_path)
    signer = registry_impostor(real)
    built = build_bundle(spec_from_real(real), signer)
    receipt = built["events"][0]["payload"]["receipt"]
    receipt["signature_b64"] = real["events"][0]["payload"]["receipt"]["signature_b64"]
    resign(built, signer, refresh_canonical=False, sign_receipt=False)
    for ours, theirs in zip(built["events"], real["events"], strict=True):
        ours["signature"]["signature_b64"] = theirs["signature"]["signature_b64"]
    assert bundle_digest(built) == real["bundle_signature"]["bundle_sha256"]
    built["bundle_signature"]["bundle_sha256"] = bundle_digest(built)
    built["bundle_signature"]["signature_b64"] = real["bundle_signature"]["signature_b64"]
    assert orjson.dumps(built) == raw


def test_registry_identity_fingerprints() -> None:
    signer = SignerIdentity(
        SigningKey.generate(),
        "pith-v1-2026-05",
        "pith.science",
        "pith_registry",
        claimed_public_key=bytes.fromhex(REGISTRY_HEX),
    )
    assert signer.fingerprint_sha256_hex == REGISTRY_FINGERPRINT
    assert signer.fingerprint_b32 == "RVFV5Z2OI2J3ZUO7ERDEBCYNKS"
    assert signer.public_key_b64 == "stVStoiQhXFxp4s2pdzPNoqVNBMojDU/fJ2db5S3CbM="
    assert signer.keyring_entry() == {
        "key_id": "pith-v1-2026-05",
        "public_key_hex": REGISTRY_HEX,
        "signer_id": "pith.science",
    }


# --- freshly built bundles -------------------------------------------------------------


def _spec(**changes: Any) -> PaperSpec:
    spec = PaperSpec(
        arxiv_id="2403.01234",
        version=2,
        title="Zoë's  Lévy Processes on Kähler Manifolds",
        authors=["Łukasz Wójcik", "Zoe\u0308 Ørsted", "李伟"],
        abstract_excerpt="We study Lévy processes. Ångström-scale results follow.",
        primary_cat="math.PR",
        cross_cats=["math.DG", "math-ph"],
        license="http://creativecommons.org/licenses/by/4.0/",
        submitted_at="2024-03-02T10:00:00Z",
        created_at="2026-07-01T00:00:01Z",
        built_at="2026-07-03T12:00:00Z",
    )
    return dataclasses.replace(spec, **changes)


@pytest.fixture
def signer() -> SignerIdentity:
    return SignerIdentity.from_seed(b"test-signer", key_id="test-key", signer_id="test.invalid")


@pytest.fixture
def builder() -> SignerIdentity:
    return SignerIdentity.from_seed(
        b"test-builder",
        key_id="builder-key",
        signer_id="builder.invalid",
        signer_type="pith_builder",
    )


def _keys(*signers: SignerIdentity) -> dict[str, bytes]:
    return {s.key_id: bytes(s.signing_key.verify_key) for s in signers}


def test_fresh_bundle_digests_and_signatures(signer: SignerIdentity) -> None:
    bundle = build_bundle(_spec(), signer)
    check_bundle(bundle, _keys(signer))
    assert not canon(bundle).isascii()  # raw UTF-8, not escaped
    assert bundle["events"][1]["payload"]["graph_snapshot"]["paper"]["authors_text"] == (
        "Łukasz Wójcik, Zoe\u0308 Ørsted, 李伟"
    )
    assert bundle["canonical_record"]["metadata"]["cross_cats_sorted"] == ["math-ph", "math.DG"]
    assert bundle["source_aliases"][1]["alias_value"] == "2403.01234v2"
    assert bundle["source_aliases"][2]["alias_value"] == "10.48550/arxiv.2403.01234"
    body = pith_base32(bundle["canonical_sha256"])
    short_aliases = [a["alias_value"] for a in bundle["source_aliases"][3:]]
    assert short_aliases == [body[:12], body[:16], body[:8]]


def test_same_structure_as_real_bundles(signer: SignerIdentity, builder: SignerIdentity) -> None:
    def shape(value: Any) -> Any:
        if isinstance(value, dict):
            return [(key, shape(item)) for key, item in value.items()]
        if isinstance(value, list):
            return [shape(value[0])] if value else []
        return type(value).__name__

    real = _real(BUNDLES[0])
    assert shape(build_bundle(_spec(), signer)) == shape(real)
    two = build_bundle(_spec(), signer, extra_event_signer=builder)
    two["public_keys"] = two["public_keys"][:1]
    assert shape(two) == shape(real)


def test_extra_event_signer(signer: SignerIdentity, builder: SignerIdentity) -> None:
    bundle = build_bundle(_spec(), signer, extra_event_signer=builder)
    check_bundle(bundle, _keys(signer, builder))
    record_event, snapshot_event = bundle["events"]
    assert record_event["signer"]["key_id"] == "test-key"
    assert snapshot_event["signer"] == builder.signer_block()
    assert [k["key_id"] for k in bundle["public_keys"]] == ["test-key", "builder-key"]
    with pytest.raises(KeyError):
        check_bundle(bundle, _keys(signer))


def test_build_is_deterministic(signer: SignerIdentity) -> None:
    first, second = build_bundle(_spec(), signer), build_bundle(_spec(), signer)
    assert orjson.dumps(first) == orjson.dumps(second)


def test_version_changes_pith_number(signer: SignerIdentity) -> None:
    one = build_bundle(_spec(version=1), signer)
    two = build_bundle(_spec(version=2), signer)
    assert one["pith_number"] != two["pith_number"]
    assert one["source_aliases"][0] == two["source_aliases"][0]


def test_title_case_and_spacing_keep_pith_number(signer: SignerIdentity) -> None:
    sloppy = build_bundle(_spec(title="zoë's lévy  processes on kähler manifolds "), signer)
    assert sloppy["pith_number"] == build_bundle(_spec(), signer)["pith_number"]


def test_state_for_matches_built_state(signer: SignerIdentity) -> None:
    bundle = build_bundle(_spec(), signer)
    assert state_for(bundle) == bundle["state"]


# --- resign ----------------------------------------------------------------------------


def test_resign_with_untrusted_key_is_valid_under_that_key(signer: SignerIdentity) -> None:
    bundle = build_bundle(_spec(), signer)
    intruder = SignerIdentity.generate(key_id="intruder")
    bundle["events"][1]["payload"]["graph_snapshot"]["paper"]["title"] = "Forged"
    resign(bundle, intruder)
    check_bundle(bundle, _keys(intruder))
    assert [k["key_id"] for k in bundle["public_keys"]] == ["intruder"]
    current = bundle["state"]["current"]["graph_snapshots"][0]
    assert current["payload"]["graph_snapshot"]["paper"]["title"] == "Forged"
    with pytest.raises(KeyError):
        check_bundle(bundle, _keys(signer))


def test_resign_impersonating_trusted_key_fails_signatures(signer: SignerIdentity) -> None:
    impostor = SignerIdentity(
        SigningKey.generate(),
        signer.key_id,
        signer.signer_id,
        signer.signer_type,
        claimed_public_key=signer.public_key,
    )
    bundle = resign(build_bundle(_spec(), signer), impostor)
    assert bundle["public_keys"] == [signer.public_key_record()]
    with pytest.raises(BadSignatureError):
        check_bundle(bundle, _keys(signer))


def test_resign_without_state_refresh_leaves_state_stale(signer: SignerIdentity) -> None:
    bundle = build_bundle(_spec(), signer)
    before = copy.deepcopy(bundle["state"])
    bundle["events"][1]["payload"]["graph_snapshot"]["paper"]["title"] = "Changed"
    resign(bundle, signer, refresh_state=False)
    state = bundle["state"]
    assert {k: v for k, v in state.items() if k != "state_sha256"} == {
        k: v for k, v in before.items() if k != "state_sha256"
    }
    assert state["state_sha256"] == _h({k: v for k, v in state.items() if k != "state_sha256"})
    assert state["applied_event_ids"][1] != bundle["events"][1]["event_id"]
    with pytest.raises(AssertionError):
        check_bundle(bundle, _keys(signer))
    bundle["state"]["applied_event_ids"] = [e["event_id"] for e in bundle["events"]]
    resign(bundle, signer, refresh_state=False)
    check_bundle(bundle, _keys(signer))  # ids agree, but the current copy is still stale
    assert bundle["state"] != state_for(bundle)


def test_resign_follows_canonical_change(signer: SignerIdentity) -> None:
    bundle = build_bundle(_spec(), signer)
    old_pith = bundle["pith_number"]
    bundle["canonical_record"]["metadata"]["license"] = "http://example.invalid/license"
    bundle["events"][0]["payload"]["canonical_record"]["metadata"]["license"] = (
        "http://example.invalid/license"
    )
    resign(bundle, signer)
    check_bundle(bundle, _keys(signer))
    body = pith_base32(bundle["canonical_sha256"])
    assert bundle["pith_number"] != old_pith
    assert bundle["links"]["resolver"].endswith(body)
    assert bundle["mirror_hints"][0]["bundle_url"].endswith(f"{body}/bundle.json")
    assert bundle["state"]["pith_number"] == bundle["pith_number"]


def test_resign_can_leave_pith_number_stale(signer: SignerIdentity) -> None:
    bundle = build_bundle(_spec(), signer)
    old_pith = bundle["pith_number"]
    bundle["canonical_record"]["source"]["version"] = 9
    resign(bundle, signer, refresh_identifiers=False)
    assert bundle["pith_number"] == old_pith
    assert bundle["canonical_sha256"] == _h(bundle["canonical_record"])
    with pytest.raises(AssertionError):
        check_bundle(bundle, _keys(signer))


def test_resign_event_signers(signer: SignerIdentity, builder: SignerIdentity) -> None:
    bundle = resign(build_bundle(_spec(), signer), signer, event_signers={1: builder})
    check_bundle(bundle, _keys(signer, builder))
    assert bundle["events"][1]["signer"]["key_id"] == "builder-key"
