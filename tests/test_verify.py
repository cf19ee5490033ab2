"""Verification: real bundles pass; every check rejects its tampering with a stable code.

The tamper cases live in ``vectors/tamper.json``: edits to a valid bundle (signed by a
throw-away key the test pins), then optionally a re-signature — by the trusted key (so only
the check under test can catch it), by an untrusted key, or by a forger that names the
trusted key. A weaker verifier (one that trusts embedded keys, checks only the outer
signature, or skips the state) would accept most of them.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import hashlib
import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pith_graph.errors import BundleError
from pith_graph.loader.facade import SAMPLES
from pith_graph.loader.identifiers import PITH_B32_LENGTH
from pith_graph.loader.keyring import REVOKED_ALWAYS, Keyring, PinnedKey, default_keyring
from pith_graph.loader.rows import build_rows
from pith_graph.loader.verify import derived_alias, newest_snapshot, stated_bundle_digest, verify_bundle
from pith_graph.testing.payloads import public_keys, resign_receipt
from pith_graph.testing.signer import PaperSpec, SignerIdentity, build_bundle, resign

VECTORS = json.loads((Path(__file__).parent / "vectors" / "tamper.json").read_text())
SAMPLE_FILES = sorted(Path(SAMPLES).glob("*.json"))

TRUSTED = SignerIdentity.from_seed(b"tests-trusted", key_id="test-key-1", signer_id="tests.invalid")
UNTRUSTED = SignerIdentity.from_seed(b"tests-untrusted", key_id="evil-key", signer_id="evil.invalid")
FORGER = SignerIdentity(
    UNTRUSTED.signing_key,
    TRUSTED.key_id,
    TRUSTED.signer_id,
    TRUSTED.signer_type,
    claimed_public_key=TRUSTED.public_key,
)
IMPOSTOR = SignerIdentity(UNTRUSTED.signing_key, TRUSTED.key_id, TRUSTED.signer_id, TRUSTED.signer_type)
RENAMED = SignerIdentity(TRUSTED.signing_key, TRUSTED.key_id, "someone-else.invalid", TRUSTED.signer_type)


@dataclasses.dataclass(frozen=True)
class _Misnamed(SignerIdentity):  # signs as TRUSTED, its signer block names another key
    block: tuple[str, str] = ("key_id", UNTRUSTED.key_id)

    def signer_block(self) -> dict[str, Any]:
        return {**super().signer_block(), self.block[0]: self.block[1]}


MISNAMED = _Misnamed(TRUSTED.signing_key, TRUSTED.key_id, TRUSTED.signer_id, TRUSTED.signer_type)
SIGNERS = {
    "trusted": TRUSTED,
    "untrusted": UNTRUSTED,
    "forger": FORGER,
    "impostor": IMPOSTOR,
    "trusted-renamed": RENAMED,
    "names-other-key": MISNAMED,
    "names-other-fingerprint": dataclasses.replace(MISNAMED, block=("public_key_fingerprint", "0" * 32)),
}
KEYRING = default_keyring().with_keys([PinnedKey(TRUSTED.key_id, TRUSTED.public_key, TRUSTED.signer_id)])
# Outside every digest: only the bundle signature's own metadata (BUNDLE-FORMAT.md).
UNSIGNED = {("bundle_signature", "signed_at"), ("bundle_signature", "signature_status")}
UNSIGNED_OPTIONAL = UNSIGNED | {("bundle_signature", "signed_message"), ("bundle_signature", "algorithm")}

SPEC = PaperSpec(
    arxiv_id="2401.01234",
    version=2,
    title="Zoë's  Graph Verification at Scale",
    authors=["Zoë Ørsted", "Łukasz Nowak", "李伟"],
    abstract_excerpt="We verify signed graph bundles.",
    primary_cat="cs.DB",
    cross_cats=["cs.CR", "cs.DS"],
    license="http://creativecommons.org/licenses/by/4.0/",
    submitted_at="2024-01-05T10:00:00Z",
    created_at="2026-07-01T00:00:00Z",
    built_at="2026-08-01T00:00:00Z",
)


def valid_bundle() -> dict[str, Any]:
    return build_bundle(SPEC, TRUSTED)


def _walk(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _apply(bundle: dict[str, Any], edit: list[Any]) -> None:
    op = edit[0]
    if op == "set":
        *parent, last = edit[1]
        value = edit[2]
        if value == "@untrusted_hex":
            value = UNTRUSTED.public_key_hex
        elif value == "@untrusted_b64":
            value = UNTRUSTED.public_key_b64
        _walk(bundle, tuple(parent))[last] = value
    elif op == "del":
        *parent, last = edit[1]
        del _walk(bundle, tuple(parent))[last]
    elif op == "pop":
        _walk(bundle, tuple(edit[1])).pop()
    elif op == "reverse":
        _walk(bundle, tuple(edit[1])).reverse()
    elif op == "@year":
        bundle["pith_number"] = f"pith:{edit[2]}:{bundle['pith_number'].rsplit(':', 1)[1]}"
    elif op == "@alias":
        for alias in bundle["source_aliases"]:
            if alias["alias_kind"] == edit[1]:
                alias["alias_value"] = edit[2]
    elif op == "@add-alias":
        bundle["source_aliases"].append(
            {"alias_kind": edit[1], "alias_value": edit[2], "created_at": "2026-07-01T00:00:00Z"}
        )
    elif op == "@flip-signature":
        *parent, last = edit[1]
        holder = _walk(bundle, tuple(parent))
        raw = bytearray(base64.b64decode(holder[last]))
        raw[5] ^= 0x01
        holder[last] = base64.b64encode(bytes(raw)).decode()
    elif op == "@append-event":  # a copy of events[i] with another event_type
        bundle["events"].append({**copy.deepcopy(bundle["events"][edit[1]]), "event_type": edit[2]})
    elif op == "@source-kind":  # every copy of the source kind, arXiv-derived aliases dropped
        created = next(e for e in bundle["events"] if e["event_type"] == "record_created")
        for source in (bundle["source"], bundle["canonical_record"]["source"]):
            source["kind"] = edit[1]
        created["payload"]["canonical_record"]["source"]["kind"] = created["payload"]["source_kind"] = edit[1]
        bundle["source_aliases"] = [
            a for a in bundle["source_aliases"] if a["alias_kind"].startswith("pith_short_")
        ]
    elif op == "@swap-event-signatures":
        first, second = bundle["events"][0]["signature"], bundle["events"][1]["signature"]
        first["signature_b64"], second["signature_b64"] = second["signature_b64"], first["signature_b64"]
    else:  # pragma: no cover - a typo in the vectors file
        raise AssertionError(f"unknown edit {op}")


def tampered(case: dict[str, Any]) -> dict[str, Any]:
    bundle = valid_bundle()
    for edit in case["edits"]:
        _apply(bundle, edit)
    options = case["resign"]
    if options is not None:
        options = dict(options)
        signer = SIGNERS[options.pop("by")]
        event_signers = {int(k): SIGNERS[v] for k, v in options.pop("event_signers", {}).items()}
        resign(bundle, signer, event_signers=event_signers, **options)
    return bundle


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.stem)
def test_real_bundles_verify_with_the_builtin_keyring(path: Path) -> None:
    bundle = json.loads(path.read_bytes())
    verified = verify_bundle(bundle, default_keyring())
    assert verified.pith_number == bundle["pith_number"]
    assert verified.built_at == bundle["built_at"]
    assert verified.bundle_sha256 == bundle["bundle_signature"]["bundle_sha256"]


def test_real_bundle_rejected_when_registry_key_not_pinned() -> None:
    bundle = json.loads(SAMPLE_FILES[0].read_bytes())
    with pytest.raises(BundleError) as caught:
        verify_bundle(bundle, Keyring([PinnedKey(TRUSTED.key_id, TRUSTED.public_key)]))
    assert caught.value.code.value == "untrusted_key"


def test_generated_bundle_verifies_only_with_its_key_pinned() -> None:
    bundle = valid_bundle()
    assert verify_bundle(bundle, KEYRING).pith_number == bundle["pith_number"]
    with pytest.raises(BundleError) as caught:
        verify_bundle(bundle, default_keyring())
    assert caught.value.code.value == "untrusted_key"


def test_ascii_escaped_digests_are_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry that hashes the ASCII-escaped form: the same content must verify."""
    import pith_graph.loader.format as bundle_format
    import pith_graph.testing.signer as signing
    from pith_graph.loader.canon import ascii_escaped, canon

    raw = valid_bundle()
    for module in (bundle_format, signing):  # every digest the signer computes
        monkeypatch.setattr(module, "canon", lambda value: ascii_escaped(canon(value)))
    escaped = resign(copy.deepcopy(raw), TRUSTED)
    assert escaped["bundle_signature"]["bundle_sha256"] != raw["bundle_signature"]["bundle_sha256"]
    assert verify_bundle(escaped, KEYRING).pith_number == escaped["pith_number"]


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in VECTORS])
def test_tampering_is_rejected_with_its_code(case: dict[str, Any]) -> None:
    bundle = tampered(case)
    with pytest.raises(BundleError) as caught:
        verify_bundle(bundle, KEYRING)
    assert caught.value.code.value == case["code"], caught.value.message
    assert caught.value.message


RECEIPT_SIGNER = SignerIdentity.from_seed(
    b"tests-receipts", key_id="receipt-key", signer_id="receipts.invalid"
)


def _receipt_by(signer: SignerIdentity) -> dict[str, Any]:
    """A valid bundle of TRUSTED's whose record_created receipt ``signer`` signed."""
    bundle = valid_bundle()
    resign_receipt(bundle["events"][0]["payload"]["receipt"], signer)
    return resign(bundle, TRUSTED, refresh_canonical=False, sign_receipt=False)


@pytest.mark.parametrize(
    ("revoked_at", "code"),
    [
        (None, None),  # pinned: the receipt's signature counts as any other
        (REVOKED_ALWAYS, "revoked_key"),
        (SPEC.created_at, "revoked_key"),  # from a time at or before the bundle's built_at
        ("2999-01-01T00:00:00Z", None),  # from a time after it
        ("unpinned", "untrusted_key"),
    ],
)
def test_a_receipt_is_checked_against_the_keyring_as_every_signature_is(
    revoked_at: str | None, code: str | None
) -> None:
    """README: ``untrusted_key`` for a signature (bundle, event or receipt) by a key not
    pinned, ``revoked_key`` for one the keyring revokes. (A mutation that skipped the
    receipt's key check was caught by no test: a revoked key's receipt was accepted.)"""
    bundle = _receipt_by(RECEIPT_SIGNER)
    keys = [PinnedKey(TRUSTED.key_id, TRUSTED.public_key, TRUSTED.signer_id)]
    if revoked_at != "unpinned":
        pinned = PinnedKey(RECEIPT_SIGNER.key_id, RECEIPT_SIGNER.public_key, RECEIPT_SIGNER.signer_id)
        keys.append(dataclasses.replace(pinned, revoked_at=revoked_at))
    keyring = default_keyring().with_keys(keys)
    if code is None:
        assert verify_bundle(bundle, keyring).pith_number == bundle["pith_number"]
        return
    with pytest.raises(BundleError) as caught:
        verify_bundle(bundle, keyring)
    assert caught.value.code.value == code, caught.value.message
    assert "receipt" in caught.value.message


def test_resign_with_trusted_key_and_no_edit_is_valid() -> None:
    """The tamper machinery itself yields valid bundles: the codes above are the edits'."""
    bundle = resign(valid_bundle(), TRUSTED)
    assert verify_bundle(bundle, KEYRING)


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _leaves(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _leaves(child, (*path, index))
    else:
        yield path, value


def _mutated(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value[:-1] + ("A" if value[-1:] != "A" else "B")
    return "x"


def _bundles() -> list[Any]:
    return [pytest.param(json.loads(p.read_bytes()), default_keyring(), id=p.stem) for p in SAMPLE_FILES] + [
        pytest.param(valid_bundle(), KEYRING, id="generated-non-ascii")
    ]


@pytest.mark.parametrize(("bundle", "keyring"), _bundles())
def test_every_single_leaf_mutation_is_rejected(bundle: dict[str, Any], keyring: Keyring) -> None:
    leaves = list(_leaves(bundle))
    assert len(leaves) > 150
    accepted = []
    for path, value in leaves:
        if tuple(path) in UNSIGNED:
            continue
        copy_ = copy.deepcopy(bundle)
        _walk(copy_, path[:-1])[path[-1]] = _mutated(value)
        try:
            verify_bundle(copy_, keyring)
        except BundleError:
            continue
        accepted.append(path)
    assert accepted == []


@pytest.mark.parametrize(("bundle", "keyring"), _bundles())
def test_every_single_key_deletion_is_rejected(bundle: dict[str, Any], keyring: Keyring) -> None:
    accepted = []
    for path, _value in _leaves(bundle):
        if path in UNSIGNED_OPTIONAL or not isinstance(path[-1], str):
            continue
        copy_ = copy.deepcopy(bundle)
        del _walk(copy_, path[:-1])[path[-1]]
        try:
            verify_bundle(copy_, keyring)
        except BundleError:
            continue
        accepted.append(path)
    assert accepted == []


LEAVES = [path for path, _ in _leaves(valid_bundle()) if path not in UNSIGNED]
scalars = st.none() | st.booleans() | st.integers(-5, 2**40) | st.text(max_size=30)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(LEAVES), scalars)
def test_any_leaf_replaced_by_any_value_is_rejected(path: tuple[Any, ...], replacement: Any) -> None:
    bundle = valid_bundle()
    original = _walk(bundle, path)
    if replacement == original and type(replacement) is type(original):
        return
    _walk(bundle, path[:-1])[path[-1]] = replacement
    with pytest.raises(BundleError):
        verify_bundle(bundle, KEYRING)


def test_unsigned_metadata_is_the_only_mutable_part() -> None:
    """Documented limit: bundle_signature.signed_at / signature_status are outside every digest."""
    bundle = valid_bundle()
    bundle["bundle_signature"]["signed_at"] = "2000-01-01T00:00:00Z"
    assert verify_bundle(bundle, KEYRING)


@pytest.mark.parametrize(
    ("kind", "value", "expected"),
    [
        pytest.param("arxiv", "2401.01234", "", id="arxiv-id-claimed-by-a-non-arxiv-record"),
        pytest.param("arxiv_version", "2401.01234v1", "", id="arxiv-version-claimed-by-a-non-arxiv-record"),
        pytest.param("doi", "10.48550/arXiv.2401.01234", "", id="arxiv-doi-claimed-by-a-non-arxiv-record"),
        pytest.param("doi", "10.5281/zenodo.42", None, id="own-doi-not-derivable"),
        pytest.param("pith_short_99", "ABC", "", id="short-alias-impossible-length"),
    ],
)
def test_only_an_arxiv_record_derives_arxiv_identifiers(kind: str, value: str, expected: str | None) -> None:
    source = {"kind": "zenodo", "id": "42", "version": 1}
    assert derived_alias(kind, value, source, "BR75OIUY7WDYHPO53K7WUNQ4NZ") == expected


def test_a_journal_doi_is_kept() -> None:
    bundle = valid_bundle()
    bundle["source_aliases"].append(
        {"alias_kind": "doi", "alias_value": "10.1145/3555555.3555556", "created_at": "2026-07-01T00:00:00Z"}
    )
    resign(bundle, TRUSTED)
    assert verify_bundle(bundle, KEYRING).pith_number == bundle["pith_number"]


def test_future_dated_respects_the_configured_skew() -> None:
    bundle = valid_bundle()  # built 2026-08-01T00:00:00Z
    built = 1785542400.0  # that instant
    assert verify_bundle(bundle, KEYRING, now=built - 60, clock_skew=60).pith_number
    with pytest.raises(BundleError) as caught:
        verify_bundle(bundle, KEYRING, now=built - 61, clock_skew=60)
    assert caught.value.code.value == "future_dated"


def test_revoked_key_is_rejected_for_all_time_or_from_a_time() -> None:
    bundle = valid_bundle()  # built 2026-08-01T00:00:00Z by TRUSTED
    for revoked_at, code in (
        ("", "revoked_key"),
        ("2026-08-01T00:00:00Z", "revoked_key"),
        ("2026-07-31T23:59:59Z", "revoked_key"),
        ("2026-08-01T00:00:01Z", None),
    ):
        keyring = default_keyring().with_keys(
            [PinnedKey(TRUSTED.key_id, TRUSTED.public_key, TRUSTED.signer_id, revoked_at)]
        )
        if code is None:
            assert verify_bundle(bundle, keyring).pith_number == bundle["pith_number"]
            continue
        with pytest.raises(BundleError) as caught:
            verify_bundle(bundle, keyring)
        assert caught.value.code.value == code, revoked_at


def _rejection_code(bundle: dict[str, Any]) -> str:
    with pytest.raises(BundleError) as caught:
        verify_bundle(bundle, KEYRING)
    return str(caught.value.code.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("public_key_hex", UNTRUSTED.public_key_hex),
        ("public_key_hex", "zz" + TRUSTED.public_key_hex[2:]),
        ("public_key_b64", "!" + TRUSTED.public_key_b64),
        ("public_key_hex", None),
        ("public_key_b64", None),
    ],
    ids=["other-key", "not-hex", "not-base64", "hex-null", "base64-null"],
)
def test_every_embedded_copy_of_a_pinned_key_is_checked(field: str, value: str | None) -> None:
    """Byte-identical, in strict hex/base64, also after an unpinned key (which proves nothing)."""
    bundle = valid_bundle()
    bundle["public_keys"][0][field] = value  # the pinned key's copy
    bundle["public_keys"].insert(0, public_keys([UNTRUSTED])[0])
    resign(bundle, TRUSTED, refresh_public_keys=False)
    assert _rejection_code(bundle) == "key_mismatch"


def test_an_embedded_copy_in_another_spelling_of_the_same_bytes_is_accepted() -> None:
    bundle = valid_bundle()
    bundle["public_keys"][0]["public_key_hex"] = TRUSTED.public_key_hex.upper()
    resign(bundle, TRUSTED, refresh_public_keys=False)
    verify_bundle(bundle, KEYRING)


def test_a_signature_with_characters_outside_base64_is_rejected() -> None:
    bundle = valid_bundle()  # decoded leniently, "!" would be skipped and the signature verify
    bundle["bundle_signature"]["signature_b64"] = "!" + bundle["bundle_signature"]["signature_b64"]
    assert _rejection_code(bundle) == "bad_signature"


def test_a_state_digest_left_stale_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = valid_bundle()  # the state edited after its digest, the bundle re-signed over it
    stale = bundle["state"]["state_sha256"]
    bundle["state"]["state_type"] = "other"
    monkeypatch.setattr("pith_graph.testing.signer.state_digest", lambda state: stale)
    resign(bundle, TRUSTED, refresh_state=False)
    assert _rejection_code(bundle) == "digest_mismatch"


def test_pith_short_aliases_derive_one_to_all_characters_of_the_body() -> None:
    body, source = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:PITH_B32_LENGTH], SPEC.canonical_record()["source"]
    for size, derived in ((1, "A"), (PITH_B32_LENGTH, body), (PITH_B32_LENGTH + 1, ""), ("x", ""), ("", "")):
        assert derived_alias(f"pith_short_{size}", body, source, body) == derived, size  # "": none matches


@pytest.mark.parametrize(
    "size",
    [
        pytest.param("\u0668", id="arabic-indic-eight"),
        pytest.param("\u00b2", id="superscript-two"),
        pytest.param("08", id="leading-zero"),
        pytest.param("1" * 5000, id="over-int-digit-limit"),
    ],
)
def test_a_pith_short_size_is_ascii_digits_without_a_leading_zero(size: str) -> None:
    """One spelling per kind; never an exception (``int()`` reads Unicode digits and raises on
    ``²`` or more than 4,300 digits, an ``internal_error``)."""
    body, source = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", SPEC.canonical_record()["source"]
    assert derived_alias(f"pith_short_{size}", body[:8], source, body) == ""


def test_an_arxiv_doi_folds_ascii_letters_only() -> None:
    """As stored (``doi_key``): a KELVIN SIGN is not ``k``, so the DOI is not the record's."""
    source = {"kind": "arxiv", "id": "hep-k/9901001", "version": 1}
    kelvin = "10.48550/arXiv.hep-\u212a/9901001"
    assert derived_alias("doi", kelvin, source, "") == "10.48550/arXiv.hep-k/9901001"
    assert derived_alias("doi", "10.48550/ARXIV.HEP-K/9901001", source, "") == "10.48550/ARXIV.HEP-K/9901001"


def test_stated_bundle_digest_only_when_it_recomputes() -> None:
    bundle = valid_bundle()
    stated = bundle["bundle_signature"]["bundle_sha256"]
    assert stated_bundle_digest(bundle) == stated
    assert stated_bundle_digest({**bundle, "built_at": "2026-09-09T00:00:00Z"}) is None
    assert stated_bundle_digest({**bundle, "bundle_signature": stated}) is None
    assert stated_bundle_digest({**bundle, "bundle_signature": {"bundle_sha256": 1}}) is None


def test_newest_snapshot_is_the_last_created_the_later_in_the_log_on_a_tie() -> None:
    def snapshot(name: str, created_at: str) -> dict[str, Any]:
        return {"event_type": "graph_snapshot", "created_at": created_at, "name": name}

    record = {"event_type": "record_created", "created_at": "2027-01-01T00:00:00Z", "name": "record"}
    later, earlier = snapshot("later", "2026-08-01T00:00:00Z"), snapshot("earlier", "2026-07-01T00:00:00Z")
    assert newest_snapshot({"events": [record, later, earlier]})["name"] == "later"
    assert newest_snapshot({"events": [earlier, later]})["name"] == "later"
    assert newest_snapshot({"events": [later, snapshot("tie", later["created_at"])]})["name"] == "tie"
    # Compared as instants, not as text ("." sorts before "Z"); ".5Z" is the same instant as ".50Z".
    whole, half = snapshot("whole", "2026-02-01T10:00:00Z"), snapshot("half", "2026-02-01T10:00:00.5Z")
    assert newest_snapshot({"events": [half, whole]})["name"] == "half"
    assert newest_snapshot({"events": [whole, half]})["name"] == "half"
    assert newest_snapshot({"events": [half, snapshot("same", "2026-02-01T10:00:00.50Z")]})["name"] == "same"


@pytest.mark.parametrize(
    ("title", "form"),
    [("Zoe\u0301's graphs", "NFC"), ("E\ufb03cient Stra\u00dfe", "NFKC")],
)
def test_a_title_digest_of_another_unicode_normalisation_is_accepted(title: str, form: str) -> None:
    key = unicodedata.normalize(form, title).casefold().lower()
    bundle = build_bundle(dataclasses.replace(SPEC, title=title), TRUSTED)
    for record in (bundle["canonical_record"], bundle["events"][0]["payload"]["canonical_record"]):
        record["metadata"]["title_canon_sha256"] = hashlib.sha256(key.encode("utf-8")).hexdigest()
    resign(bundle, TRUSTED)
    assert verify_bundle(bundle, KEYRING).pith_number == bundle["pith_number"]


def _every_path(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every field, containers included."""
    if path:
        yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _every_path(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _every_path(child, (*path, index))


def _with_value(encoded: bytes, path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    edited: dict[str, Any] = orjson.loads(encoded)  # a copy, ten times faster than deepcopy
    _walk(edited, path[:-1])[path[-1]] = value
    return edited


def _resealed(bundle: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any] | None:
    """``bundle`` (changed in place) with every digest recomputed over the edit at ``path`` and
    signed by a pinned key; ``None`` when the signer cannot rebuild around the edit. (What the
    reviewer did to ``state.equivocations`` needs no key at all: the digests are checked
    before the signatures.)"""
    try:
        return resign(
            bundle,
            TRUSTED,
            refresh_state=path[0] != "state",
            refresh_public_keys=path[0] != "public_keys",
        )
    except (KeyError, TypeError, AttributeError, IndexError, ValueError):
        return None


WRONG_TYPES: list[Any] = [None, True, 7, "x", [], {}]


def _outcome(bundle: dict[str, Any], keyring: Keyring) -> str | None:
    """``None`` when verifying (and building the rows) ends in a rejection or acceptance, else
    the type of the exception that escaped."""
    try:
        build_rows(verify_bundle(bundle, keyring), keyring)
    except BundleError:
        pass
    except Exception as err:
        return type(err).__name__
    return None


def test_a_wrong_type_anywhere_is_a_rejection_never_a_crash() -> None:
    """Every field (containers too) set to each JSON type, as it stands and with every digest
    recomputed and re-signed over it: verification rejects or accepts, and an accepted
    bundle's rows build. Any other exception is a field some check reads whose type
    ``loader/shape.py`` does not pin."""
    bundle, crashed = valid_bundle(), []
    encoded = orjson.dumps(bundle)
    for path in _every_path(bundle):
        for value in WRONG_TYPES:
            edited = _with_value(encoded, path, value)
            found = [_outcome(edited, KEYRING)]
            if (resealed := _resealed(edited, path)) is not None:
                found.append(_outcome(resealed, KEYRING))
            crashed += [(path, value, name) for name in found if name is not None]
    assert crashed == []
