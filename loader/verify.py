"""Verification of one parsed bundle against a pinned keyring.

Checks run cheapest first and the first failure rejects the bundle:

1. shape: required fields with the right types (``schema_error`` naming the field);
2. trust: every signature (bundle, each event, the receipt) names a pinned key, with the
   pinned fingerprint and signer; embedded copies of pinned keys are byte-identical
   (``untrusted_key``, ``key_mismatch``);
3. identifiers: pith numbers, ``pith_short_*`` and arXiv aliases, every event's subject
   (``identifier_mismatch``);
4. digests: canonical record, each event and its ``event_id``, state, bundle, each accepted
   in raw-UTF-8 or ASCII-escaped canonical form (``digest_mismatch``);
5. consistency: the ``record_created`` payload, its receipt and the newest graph snapshot
   agree with the canonical record (``record_mismatch``); the state is exactly the merge of
   the events (``state_mismatch``);
6. signatures: Ed25519 over the raw digest bytes (``bad_signature``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nacl.exceptions import BadSignatureError

from pith_graph.loader.canon import digest_matches
from pith_graph.loader.format import (
    BUNDLE_TYPE,
    EVENT_TYPES,
    GRAPH_SNAPSHOT,
    RECORD_CREATED,
    SIGNED_MESSAGES,
    STATE_CURRENT_LISTS,
    STATE_EVENT_FIELDS,
    SUPPORTED_VERSIONS,
    SignatureKind,
    bundle_body,
    event_content,
    state_body,
)
from pith_graph.errors import BundleError, RejectCode
from pith_graph.loader.identifiers import PITH_B32_LENGTH, pith_base32, title_key
from pith_graph.loader.keyring import Keyring, PinnedKey

__all__ = ["VerifiedBundle", "newest_snapshot", "stated_bundle_digest", "verify_bundle"]

_HEX64 = re.compile(r"[0-9a-f]{64}")
_ISO_Z = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z")


@dataclass(frozen=True, slots=True)
class VerifiedBundle:
    """A bundle that passed every check, with the digests already computed."""

    bundle: dict[str, Any]
    bundle_sha256: str

    @property
    def pith_number(self) -> str:
        return str(self.bundle["pith_number"])

    @property
    def built_at(self) -> str:
        return str(self.bundle["built_at"])


def _fail(code: RejectCode, message: str) -> BundleError:
    return BundleError(code, message)


# --- 1. shape ---------------------------------------------------------------------------

_TYPE_NAMES: dict[type, str] = {
    str: "a string",
    int: "an integer",
    dict: "an object",
    list: "a list",
    bool: "a boolean",
}


def _field(obj: Mapping[str, Any], key: str, kind: type, path: str) -> Any:
    value = obj.get(key)
    if type(value) is kind:  # the common case, and excludes bool for int
        return value
    if key not in obj:
        raise _fail(RejectCode.SCHEMA_ERROR, f"{path}.{key} is missing")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _fail(RejectCode.SCHEMA_ERROR, f"{path}.{key} must be {_TYPE_NAMES[kind]}")
    return value


def _hex64(obj: Mapping[str, Any], key: str, path: str) -> str:
    value: str = _field(obj, key, str, path)
    if not _HEX64.fullmatch(value):
        raise _fail(RejectCode.SCHEMA_ERROR, f"{path}.{key} must be 64 lowercase hex digits")
    return value


def _timestamp(obj: Mapping[str, Any], key: str, path: str) -> str:
    value: str = _field(obj, key, str, path)
    if not _ISO_Z.fullmatch(value):
        raise _fail(RejectCode.SCHEMA_ERROR, f"{path}.{key} must be an ISO 8601 UTC time")
    return value


def _strings(obj: Mapping[str, Any], key: str, path: str) -> list[str]:
    value: list[Any] = _field(obj, key, list, path)
    if not all(isinstance(item, str) for item in value):
        raise _fail(RejectCode.SCHEMA_ERROR, f"{path}.{key} must be a list of strings")
    return value


def _check_signature_block(sig: Mapping[str, Any], path: str, kind: SignatureKind) -> None:
    _field(sig, "key_id", str, path)
    _field(sig, "public_key_fingerprint", str, path)
    _field(sig, "signature_b64", str, path)
    if sig.get("algorithm", "ed25519") != "ed25519":
        raise _fail(RejectCode.SCHEMA_ERROR, f"{path}.algorithm must be 'ed25519'")
    if sig.get("signed_message", SIGNED_MESSAGES[kind]) != SIGNED_MESSAGES[kind]:
        raise _fail(
            RejectCode.SCHEMA_ERROR, f"{path}.signed_message must be {SIGNED_MESSAGES[kind]!r}"
        )


def _check_record(record: Mapping[str, Any], path: str) -> None:
    source = _field(record, "source", dict, path)
    _field(source, "id", str, f"{path}.source")
    _field(source, "kind", str, f"{path}.source")
    _field(source, "version", int, f"{path}.source")
    meta = _field(record, "metadata", dict, path)
    mpath = f"{path}.metadata"
    _field(meta, "license", str, mpath)
    _field(meta, "primary_cat", str, mpath)
    _timestamp(meta, "submitted_at", mpath)
    _strings(meta, "cross_cats_sorted", mpath)
    _hex64(meta, "title_canon_sha256", mpath)


def _check_event(event: Mapping[str, Any], path: str) -> None:
    event_type = _field(event, "event_type", str, path)
    if event_type not in EVENT_TYPES:
        raise _fail(RejectCode.SCHEMA_ERROR, f"{path}.event_type {event_type!r} is not supported")
    _field(event, "subject_pith_number", str, path)
    _field(event, "target", str, path)
    _timestamp(event, "created_at", path)
    signer = _field(event, "signer", dict, path)
    for key in ("signer_id", "signer_type", "key_id", "public_key_fingerprint"):
        _field(signer, key, str, f"{path}.signer")
    _check_signature_block(_field(event, "signature", dict, path), f"{path}.signature", "event")
    _hex64(event, "content_sha256", path)
    _field(event, "event_id", str, path)
    payload = _field(event, "payload", dict, path)
    ppath = f"{path}.payload"
    if event_type == RECORD_CREATED:
        _check_record(_field(payload, "canonical_record", dict, ppath), f"{ppath}.canonical_record")
        _hex64(payload, "canonical_sha256", ppath)
        receipt = _field(payload, "receipt", dict, ppath)
        _check_signature_block(receipt, f"{ppath}.receipt", "receipt")
        _hex64(receipt, "canonical_sha256", f"{ppath}.receipt")
        _field(payload, "source_kind", str, ppath)
        _field(payload, "source_id", str, ppath)
        _field(payload, "source_version", int, ppath)
    else:
        snapshot = _field(payload, "graph_snapshot", dict, ppath)
        paper = _field(snapshot, "paper", dict, f"{ppath}.graph_snapshot")
        gpath = f"{ppath}.graph_snapshot.paper"
        for key in ("title", "authors_text", "primary_cat", "license", "abstract_excerpt"):
            _field(paper, key, str, gpath)
        _timestamp(paper, "submitted_at", gpath)
        _strings(paper, "cross_cats", gpath)


def _check_shape(bundle: Mapping[str, Any]) -> None:
    if _field(bundle, "bundle_type", str, "bundle") != BUNDLE_TYPE:
        raise _fail(RejectCode.SCHEMA_ERROR, f"bundle.bundle_type must be {BUNDLE_TYPE!r}")
    version = _field(bundle, "bundle_version", str, "bundle")
    if version not in SUPPORTED_VERSIONS:
        raise _fail(RejectCode.SCHEMA_ERROR, f"bundle.bundle_version {version!r} is not supported")
    _field(bundle, "pith_number", str, "bundle")
    _field(bundle, "short_pith_number", str, "bundle")
    _check_record(_field(bundle, "canonical_record", dict, "bundle"), "bundle.canonical_record")
    _hex64(bundle, "canonical_sha256", "bundle")
    _field(bundle, "source", dict, "bundle")
    for index, alias in enumerate(_field(bundle, "source_aliases", list, "bundle")):
        apath = f"bundle.source_aliases[{index}]"
        if not isinstance(alias, dict):
            raise _fail(RejectCode.SCHEMA_ERROR, f"{apath} must be an object")
        _field(alias, "alias_kind", str, apath)
        _field(alias, "alias_value", str, apath)
    events = _field(bundle, "events", list, "bundle")
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            raise _fail(RejectCode.SCHEMA_ERROR, f"bundle.events[{index}] must be an object")
        _check_event(event, f"bundle.events[{index}]")
    kinds = [event["event_type"] for event in events]
    if kinds.count(RECORD_CREATED) != 1:
        raise _fail(RejectCode.SCHEMA_ERROR, "bundle.events must hold exactly one record_created")
    if GRAPH_SNAPSHOT not in kinds:
        raise _fail(RejectCode.SCHEMA_ERROR, "bundle.events must hold a graph_snapshot")
    for index, key in enumerate(_field(bundle, "public_keys", list, "bundle")):
        if not isinstance(key, dict):
            raise _fail(RejectCode.SCHEMA_ERROR, f"bundle.public_keys[{index}] must be an object")
        _field(key, "key_id", str, f"bundle.public_keys[{index}]")
    _field(bundle, "merge_version", str, "bundle")
    _timestamp(bundle, "built_at", "bundle")
    state = _field(bundle, "state", dict, "bundle")
    for key in ("event_count", "valid_event_count", "invalid_event_count", "equivocation_count"):
        _field(state, key, int, "bundle.state")
    _field(state, "pith_number", str, "bundle.state")
    _strings(state, "applied_event_ids", "bundle.state")
    _hex64(state, "state_sha256", "bundle.state")
    current = _field(state, "current", dict, "bundle.state")
    _field(current, "graph_snapshots", list, "bundle.state.current")
    _field(current, "record_created", dict, "bundle.state.current")
    signature = _field(bundle, "bundle_signature", dict, "bundle")
    _check_signature_block(signature, "bundle.bundle_signature", "bundle")
    _hex64(signature, "bundle_sha256", "bundle.bundle_signature")


# --- 2. trust ---------------------------------------------------------------------------


def _pinned(keyring: Keyring, key_id: str, fingerprint: str, where: str) -> PinnedKey:
    key = keyring.get(key_id)
    if key is None:
        raise _fail(RejectCode.UNTRUSTED_KEY, f"{where} is signed by {key_id!r}, not a pinned key")
    if fingerprint != key.fingerprint:
        raise _fail(
            RejectCode.KEY_MISMATCH,
            f"{where} names key {key_id!r} with fingerprint {fingerprint}, "
            f"but the pinned key's is {key.fingerprint}",
        )
    return key


def _check_embedded_keys(bundle: Mapping[str, Any], keyring: Keyring) -> None:
    for index, entry in enumerate(bundle["public_keys"]):
        pinned = keyring.get(entry["key_id"])
        if pinned is None:
            continue  # carried along, but proves nothing and is never used
        where = f"public_keys[{index}] ({pinned.key_id!r})"
        try:
            copies = []
            if "public_key_hex" in entry:
                copies.append(bytes.fromhex(str(entry["public_key_hex"])))
            if "public_key_b64" in entry:
                copies.append(base64.b64decode(str(entry["public_key_b64"]), validate=True))
        except (ValueError, binascii.Error) as err:
            raise _fail(RejectCode.KEY_MISMATCH, f"{where} is not valid hex/base64") from err
        if any(copy != pinned.public_key for copy in copies):
            raise _fail(RejectCode.KEY_MISMATCH, f"{where} differs from the pinned key")
        expected = {
            "fingerprint_sha256_hex": pinned.fingerprint,
            "fingerprint_sha256_b32_first128bits": pinned.fingerprint_b32,
        }
        for name, value in expected.items():
            if name in entry and entry[name] != value:
                raise _fail(RejectCode.KEY_MISMATCH, f"{where}.{name} is not the pinned key's")


def _check_trust(bundle: Mapping[str, Any], keyring: Keyring) -> None:
    sig = bundle["bundle_signature"]
    _pinned(keyring, sig["key_id"], sig["public_key_fingerprint"], "the bundle")
    for index, event in enumerate(bundle["events"]):
        where = f"events[{index}]"
        esig, signer = event["signature"], event["signer"]
        key = _pinned(keyring, esig["key_id"], esig["public_key_fingerprint"], where)
        if signer["key_id"] != esig["key_id"] or signer["public_key_fingerprint"] != key.fingerprint:
            raise _fail(RejectCode.KEY_MISMATCH, f"{where}.signer names another key than its signature")
        if key.signer_id is not None and signer["signer_id"] != key.signer_id:
            raise _fail(
                RejectCode.UNTRUSTED_KEY,
                f"{where} claims signer {signer['signer_id']!r}, but key {key.key_id!r} "
                f"is pinned to {key.signer_id!r}",
            )
        if event["event_type"] == RECORD_CREATED:
            receipt = event["payload"]["receipt"]
            _pinned(keyring, receipt["key_id"], receipt["public_key_fingerprint"], "the receipt")
    _check_embedded_keys(bundle, keyring)


# --- 3. identifiers ---------------------------------------------------------------------


def _check_identifiers(bundle: Mapping[str, Any]) -> None:
    record = bundle["canonical_record"]
    body = pith_base32(bundle["canonical_sha256"])
    expected = f"pith:{record['metadata']['submitted_at'][:4]}:{body}"
    if bundle["pith_number"] != expected:
        raise _fail(
            RejectCode.IDENTIFIER_MISMATCH,
            f"pith_number is {bundle['pith_number']!r}, but the record derives {expected!r}",
        )
    if bundle["short_pith_number"] != f"pith:{body[:8]}":
        raise _fail(RejectCode.IDENTIFIER_MISMATCH, "short_pith_number is not pith: + B[:8]")
    if bundle["state"]["pith_number"] != expected:
        raise _fail(RejectCode.IDENTIFIER_MISMATCH, "state.pith_number is not the bundle's")
    for index, event in enumerate(bundle["events"]):
        if event["subject_pith_number"] != expected:
            raise _fail(
                RejectCode.IDENTIFIER_MISMATCH,
                f"events[{index}].subject_pith_number is not the bundle's pith number",
            )
    source = record["source"]
    if bundle["source"] != source:
        raise _fail(RejectCode.IDENTIFIER_MISMATCH, "source differs from canonical_record.source")
    derived = {
        "arxiv": source["id"],
        "arxiv_version": f"{source['id']}v{source['version']}",
    }
    for index, alias in enumerate(bundle["source_aliases"]):
        kind, value = alias["alias_kind"], alias["alias_value"]
        where = f"source_aliases[{index}] ({kind})"
        if kind.startswith("pith_short_"):
            size = kind.removeprefix("pith_short_")
            if not size.isdigit() or not 0 < int(size) <= PITH_B32_LENGTH:
                raise _fail(RejectCode.IDENTIFIER_MISMATCH, f"{where} has no valid length")
            if value != body[: int(size)]:
                raise _fail(RejectCode.IDENTIFIER_MISMATCH, f"{where} is not a prefix of {body}")
        elif source["kind"] == "arxiv" and kind in derived and value != derived[kind]:
            raise _fail(
                RejectCode.IDENTIFIER_MISMATCH, f"{where} is {value!r}, expected {derived[kind]!r}"
            )


# --- 4. digests -------------------------------------------------------------------------


def stated_bundle_digest(bundle: Mapping[str, Any]) -> str | None:
    """The stated ``bundle_sha256`` if it recomputes (either encoding), else ``None``.

    Cheap: one canonical encoding and one hash. The pipeline uses it to recognise a bundle
    that is already stored before spending any signature checks on it.
    """
    stated = bundle.get("bundle_signature")
    if not isinstance(stated, dict) or not isinstance(stated.get("bundle_sha256"), str):
        return None
    expected: str = stated["bundle_sha256"]
    return expected if digest_matches(bundle_body(bundle), expected) else None


def _check_digests(bundle: Mapping[str, Any]) -> None:
    if not digest_matches(bundle["canonical_record"], bundle["canonical_sha256"]):
        raise _fail(RejectCode.DIGEST_MISMATCH, "canonical_sha256 does not match canonical_record")
    for index, event in enumerate(bundle["events"]):
        digest = event["content_sha256"]
        if not digest_matches(event_content(event), digest):
            raise _fail(RejectCode.DIGEST_MISMATCH, f"events[{index}].content_sha256 does not match")
        if event["event_id"] != f"sha256:{digest}":
            raise _fail(RejectCode.DIGEST_MISMATCH, f"events[{index}].event_id is not sha256:<digest>")
    state = bundle["state"]
    if not digest_matches(state_body(state), state["state_sha256"]):
        raise _fail(RejectCode.DIGEST_MISMATCH, "state.state_sha256 does not match the state")
    if not digest_matches(bundle_body(bundle), bundle["bundle_signature"]["bundle_sha256"]):
        raise _fail(RejectCode.DIGEST_MISMATCH, "bundle_sha256 does not match the bundle")


# --- 5. consistency ---------------------------------------------------------------------


def newest_snapshot(bundle: Mapping[str, Any]) -> Mapping[str, Any]:
    """The graph_snapshot event created last (the later one in the log on a tie)."""
    snapshots = [e for e in bundle["events"] if e["event_type"] == GRAPH_SNAPSHOT]
    return max(reversed(snapshots), key=lambda event: event["created_at"])


def _title_digests(title: str) -> set[str]:
    # The registry's exact Unicode normalisation is not known: accept the plausible ones.
    forms = {title_key(title), title_key(unicodedata.normalize("NFC", title))}
    forms.add(title_key(unicodedata.normalize("NFKC", title).casefold()))
    return {hashlib.sha256(form.encode("utf-8")).hexdigest() for form in forms}


def _check_record_consistency(bundle: Mapping[str, Any]) -> None:
    record = bundle["canonical_record"]
    created = next(e for e in bundle["events"] if e["event_type"] == RECORD_CREATED)
    payload = created["payload"]
    if payload["canonical_record"] != record:
        raise _fail(RejectCode.RECORD_MISMATCH, "record_created payload differs from canonical_record")
    if payload["canonical_sha256"] != bundle["canonical_sha256"]:
        raise _fail(RejectCode.RECORD_MISMATCH, "record_created canonical_sha256 is not the bundle's")
    if payload["receipt"]["canonical_sha256"] != bundle["canonical_sha256"]:
        raise _fail(RejectCode.RECORD_MISMATCH, "the receipt covers another canonical_sha256")
    source = record["source"]
    if (payload["source_kind"], payload["source_id"], payload["source_version"]) != (
        source["kind"],
        source["id"],
        source["version"],
    ):
        raise _fail(RejectCode.RECORD_MISMATCH, "record_created source differs from the record's")
    meta = record["metadata"]
    paper = newest_snapshot(bundle)["payload"]["graph_snapshot"]["paper"]
    pairs = (
        ("primary_cat", paper["primary_cat"], meta["primary_cat"]),
        ("license", paper["license"], meta["license"]),
        ("submitted_at", paper["submitted_at"], meta["submitted_at"]),
        ("cross_cats", sorted(paper["cross_cats"]), meta["cross_cats_sorted"]),
    )
    for name, seen, bound in pairs:
        if seen != bound:
            raise _fail(RejectCode.RECORD_MISMATCH, f"snapshot {name} differs from the record's")
    if meta["title_canon_sha256"] not in _title_digests(paper["title"]):
        raise _fail(RejectCode.RECORD_MISMATCH, "snapshot title does not match title_canon_sha256")


def _projection(event: Mapping[str, Any]) -> dict[str, Any]:
    return {key: event[key] for key in STATE_EVENT_FIELDS}


def _check_state(bundle: Mapping[str, Any]) -> None:
    state, events = bundle["state"], bundle["events"]

    def expect(condition: bool, message: str) -> None:
        if not condition:
            raise _fail(RejectCode.STATE_MISMATCH, message)

    expect(state.get("merge_version") == bundle["merge_version"], "state.merge_version differs")
    expect(state["event_count"] == len(events), "state.event_count is not the number of events")
    expect(state["valid_event_count"] == len(events), "state.valid_event_count is wrong")
    expect(state["invalid_event_count"] == 0, "state.invalid_event_count is wrong")
    expect(state.get("invalid_events", []) == [], "state.invalid_events is not empty")
    expect(
        state["equivocation_count"] == len(state.get("equivocations", [])),
        "state.equivocation_count is wrong",
    )
    expect(
        state["applied_event_ids"] == [event["event_id"] for event in events],
        "state.applied_event_ids are not the events' ids in log order",
    )
    current = state["current"]
    expect(current.get("canonical_record") == bundle["canonical_record"], "state record differs")
    expect(current.get("source_aliases") == bundle["source_aliases"], "state aliases differ")
    created = next(e for e in events if e["event_type"] == RECORD_CREATED)
    expect(current["record_created"] == _projection(created), "state.current.record_created differs")
    snapshots = [_projection(e) for e in events if e["event_type"] == GRAPH_SNAPSHOT]
    expect(current["graph_snapshots"] == snapshots, "state.current.graph_snapshots differ")
    for name in STATE_CURRENT_LISTS:
        expect(isinstance(current.get(name, []), list), f"state.current.{name} is not a list")


# --- 6. signatures ----------------------------------------------------------------------


def _verify_signature(key: PinnedKey, digest_hex: str, signature_b64: str, where: str) -> None:
    try:
        signature = base64.b64decode(signature_b64, validate=True)
    except (ValueError, binascii.Error) as err:
        raise _fail(RejectCode.BAD_SIGNATURE, f"{where}: signature is not base64") from err
    if len(signature) != 64:
        raise _fail(RejectCode.BAD_SIGNATURE, f"{where}: an Ed25519 signature is 64 bytes")
    try:
        key.verify_key.verify(bytes.fromhex(digest_hex), signature)
    except BadSignatureError as err:
        raise _fail(
            RejectCode.BAD_SIGNATURE, f"{where}: signature does not verify with {key.key_id!r}"
        ) from err


def _check_signatures(bundle: Mapping[str, Any], keyring: Keyring) -> None:
    for index, event in enumerate(bundle["events"]):
        sig = event["signature"]
        _verify_signature(keyring[sig["key_id"]], event["content_sha256"], sig["signature_b64"], f"events[{index}]")
        if event["event_type"] == RECORD_CREATED:
            receipt = event["payload"]["receipt"]
            _verify_signature(
                keyring[receipt["key_id"]],
                receipt["canonical_sha256"],
                receipt["signature_b64"],
                "the receipt",
            )
    sig = bundle["bundle_signature"]
    _verify_signature(keyring[sig["key_id"]], sig["bundle_sha256"], sig["signature_b64"], "the bundle")


def verify_bundle(bundle: dict[str, Any], keyring: Keyring) -> VerifiedBundle:
    """Run every check on a parsed bundle; raise :class:`BundleError` at the first failure."""
    _check_shape(bundle)
    _check_trust(bundle, keyring)
    _check_identifiers(bundle)
    _check_digests(bundle)
    _check_record_consistency(bundle)
    _check_state(bundle)
    _check_signatures(bundle, keyring)
    return VerifiedBundle(bundle, bundle["bundle_signature"]["bundle_sha256"])


