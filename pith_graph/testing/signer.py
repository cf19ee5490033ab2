"""Our own bundle signer: build and re-sign Pith open graph bundles with any Ed25519 key.

Tests and benchmarks need any number of valid bundles, and tampered ones, without the
registry's private key. ``build_bundle`` writes a bundle with exactly the structure (and key
order) of the real ones (see ``BUNDLE-FORMAT.md``) and signs it with a ``SignerIdentity``;
``resign`` recomputes the digests and signatures of a bundle a test has edited.

Digests are SHA-256 of ``canon(x)`` (raw UTF-8). Every signature is Ed25519 over the raw 32
bytes of a digest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from pith_graph.loader.canon import canon, sha256_hex
from pith_graph.loader.format import (
    ALGORITHM,
    BUNDLE_TYPE,
    BUNDLE_VERSION,
    MERGE_VERSION,
    SIGNATURE_STATUS,
    SIGNED_MESSAGES,
    STATE_CURRENT_LISTS,
    STATE_EVENT_FIELDS,
    bundle_digest,
    event_digest,
    state_digest,
)
from pith_graph.loader.identifiers import pith_base32, pith_number_for, short_pith_number_for
from pith_graph.testing.identity import SignerIdentity
from pith_graph.testing.payloads import (
    DEFAULT_BASE_URL,
    bundle_links,
    event_shell,
    graph_snapshot,
    public_keys,
    receipt,
    resign_receipt,
    source_aliases,
)
from pith_graph.testing.spec import SCHEMA_VERSION, PaperSpec, micro

__all__ = [
    "PaperSpec",
    "SignerIdentity",
    "build_bundle",
    "resign",
    "seal_event",
    "state_for",
]

Json = dict[str, Any]

_PITH_SHORT_KINDS = ("pith_short_12", "pith_short_16", "pith_short_8")


def _h(value: Any) -> str:
    return sha256_hex(canon(value))


def _copy(value: Any) -> Any:
    """A deep copy keeping key order (so editing one copy never edits another)."""
    return orjson.loads(orjson.dumps(value))


def _sorted_copy(value: Any) -> Any:
    """A deep copy with every object's keys sorted (how the state stores its copies)."""
    return orjson.loads(canon(value))


def seal_event(event: Json, signer: SignerIdentity, *, signed_at: str | None = None) -> Json:
    """Name ``signer`` in ``event``, then set its digest, id and signature (in place).

    ``signed_at`` defaults to the event's current ``signature.signed_at``.
    """
    event["signer"] = signer.signer_block()
    old = event.get("signature")
    if signed_at is None:
        signed_at = old["signed_at"] if isinstance(old, dict) else ""
    event["signature"] = None
    event["content_sha256"] = None
    if "schema_version" not in event:
        event["schema_version"] = SCHEMA_VERSION
    event["event_id"] = None
    digest = event_digest(event)
    event["signature"] = {
        "signature_status": SIGNATURE_STATUS,
        "algorithm": ALGORITHM,
        "key_id": signer.key_id,
        "public_key_fingerprint": signer.fingerprint_sha256_hex,
        "signature_b64": signer.sign_digest(digest),
        "signed_message": SIGNED_MESSAGES["event"],
        "signed_at": signed_at,
    }
    event["content_sha256"] = digest
    event["event_id"] = "sha256:" + digest
    return event


def _seal_bundle(bundle: Json, signer: SignerIdentity, signed_at: str) -> None:
    bundle.pop("bundle_signature", None)
    digest = bundle_digest(bundle)
    bundle["bundle_signature"] = {
        "signature_status": SIGNATURE_STATUS,
        "algorithm": ALGORITHM,
        "key_id": signer.key_id,
        "public_key_fingerprint": signer.fingerprint_sha256_hex,
        "signature_b64": signer.sign_digest(digest),
        "signed_message": SIGNED_MESSAGES["bundle"],
        "signed_at": signed_at,
        "bundle_sha256": digest,
    }


def state_for(bundle: Mapping[str, Any]) -> Json:
    """The merged ``state`` of a bundle's events, with its ``state_sha256``.

    Every event counts as valid and applied (this signer only writes valid ones);
    ``current.record_created`` is the last ``record_created`` event and
    ``current.graph_snapshots`` every ``graph_snapshot`` event, each restricted to
    ``event_id``, ``target``, ``created_at``, ``signer``, ``payload`` with sorted keys.
    """
    events: list[Json] = list(bundle["events"])

    def restricted(event: Json) -> Json:
        return {name: _sorted_copy(event[name]) for name in STATE_EVENT_FIELDS}

    record_created: Json | None = None
    snapshots: list[Json] = []
    for event in events:
        if event["event_type"] == "record_created":
            record_created = restricted(event)
        elif event["event_type"] == "graph_snapshot":
            snapshots.append(restricted(event))
    current: Json = {
        "canonical_record": _sorted_copy(bundle["canonical_record"]),
        "source_aliases": _sorted_copy(bundle["source_aliases"]),
        "graph_snapshots": snapshots,
    }
    for name in STATE_CURRENT_LISTS:
        current[name] = []
    current["record_created"] = record_created
    state: Json = {
        "state_type": "pith_open_graph_state",
        "state_version": "1.0",
        "pith_number": bundle["pith_number"],
        "merge_version": bundle.get("merge_version", MERGE_VERSION),
        "event_count": len(events),
        "valid_event_count": len(events),
        "invalid_event_count": 0,
        "equivocation_count": 0,
        "current": current,
        "equivocations": [],
        "invalid_events": [],
        "applied_event_ids": [event["event_id"] for event in events],
    }
    state["state_sha256"] = state_digest(state)
    return state


def build_bundle(
    paper: PaperSpec,
    signer: SignerIdentity,
    *,
    extra_event_signer: SignerIdentity | None = None,
    base_url: str = DEFAULT_BASE_URL,
) -> Json:
    """A signed bundle for ``paper``: ``record_created`` and ``graph_snapshot`` events.

    ``signer`` signs the receipt, the ``record_created`` event and the bundle;
    ``extra_event_signer``, if given, signs the ``graph_snapshot`` event instead.

    >>> signer = SignerIdentity.from_seed(b"doc", key_id="doc-key", signer_id="doc.invalid")
    >>> spec = PaperSpec("2401.00001", 1, "A Title", ["Zoë Ørsted"], "An abstract.", "cs.LG",
    ...     ["stat.ML"], "http://creativecommons.org/licenses/by/4.0/", "2024-01-01T00:00:00Z",
    ...     "2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z")
    >>> bundle = build_bundle(spec, signer)
    >>> bundle["pith_number"].startswith("pith:2024:"), len(bundle["events"])
    (True, 2)
    >>> bundle["bundle_signature"]["bundle_sha256"] == bundle_digest(bundle)
    True
    """
    canonical_record = paper.canonical_record()
    canonical_sha256 = _h(canonical_record)
    pith_number = pith_number_for(canonical_sha256, paper.submitted_at)
    body = pith_base32(canonical_sha256)
    source = {"kind": "arxiv", "id": paper.arxiv_id, "version": paper.version}
    record_payload: Json = {
        "canonical_record": _copy(canonical_record),
        "canonical_sha256": canonical_sha256,
        "receipt": receipt(canonical_sha256, signer, paper),
        "source_kind": "arxiv",
        "source_id": paper.arxiv_id,
        "source_version": paper.version,
        "attestation_state": "computed",
    }
    snapshot_signer = extra_event_signer or signer
    events = [
        seal_event(
            event_shell("record_created", pith_number, "record", record_payload, paper.created_at),
            signer,
            signed_at=paper.event_signing_time(0),
        ),
        seal_event(
            event_shell(
                "graph_snapshot",
                pith_number,
                "graph",
                {"graph_snapshot": graph_snapshot(paper), "verdict_id": None},
                paper.snapshot_created_at or paper.created_at,
            ),
            snapshot_signer,
            signed_at=paper.event_signing_time(1),
        ),
    ]
    mirror_hints, links = bundle_links(base_url, body)
    bundle: Json = {
        "bundle_type": BUNDLE_TYPE,
        "bundle_version": BUNDLE_VERSION,
        "pith_number": pith_number,
        "short_pith_number": short_pith_number_for(canonical_sha256),
        "canonical_record": canonical_record,
        "canonical_sha256": canonical_sha256,
        "source": source,
        "source_aliases": source_aliases(paper, body),
        "events": events,
        "timestamp_proofs": [],
        "mirror_hints": mirror_hints,
        "public_keys": public_keys([signer, snapshot_signer]),
        "merge_version": MERGE_VERSION,
        "built_at": paper.built_at,
        "links": links,
    }
    bundle["state"] = state_for(bundle)
    _seal_bundle(bundle, signer, paper.bundle_signed_at or micro(paper.built_at))
    return bundle


def _rewrite_identifiers(bundle: Json, canonical_sha256: str) -> None:
    """Point every identifier of ``bundle`` at a new canonical digest (not the state)."""
    old_body = str(bundle["pith_number"]).rsplit(":", 1)[-1]
    submitted_at = bundle["canonical_record"]["metadata"]["submitted_at"]
    pith_number = pith_number_for(canonical_sha256, submitted_at)
    body = pith_base32(canonical_sha256)
    bundle["pith_number"] = pith_number
    bundle["short_pith_number"] = short_pith_number_for(canonical_sha256)
    for alias in bundle["source_aliases"]:
        if alias["alias_kind"] in _PITH_SHORT_KINDS:
            alias["alias_value"] = body[: int(alias["alias_kind"].rsplit("_", 1)[-1])]
    for event in bundle["events"]:
        event["subject_pith_number"] = pith_number
    for mapping in [bundle["links"], *bundle["mirror_hints"]]:
        for key, value in mapping.items():
            if isinstance(value, str) and old_body:
                mapping[key] = value.replace(old_body, body)


def resign(
    bundle: Json,
    signer: SignerIdentity,
    *,
    event_signers: Mapping[int, SignerIdentity] | None = None,
    refresh_canonical: bool = True,
    refresh_identifiers: bool = True,
    sign_receipt: bool = True,
    refresh_events: bool = True,
    refresh_state: bool = True,
    refresh_public_keys: bool = True,
) -> Json:
    """Recompute the digests and signatures of an edited ``bundle``, in place; return it.

    In order, each step skippable so a test can leave exactly one thing inconsistent while
    every later digest and signature is valid:

    1. ``refresh_canonical``: ``canonical_sha256`` from ``canonical_record`` (top level) and
       from each ``record_created`` payload's own copy (payload and receipt); with
       ``refresh_identifiers`` the pith number, short number, ``pith_short_*`` aliases,
       events' ``subject_pith_number``, links and mirror hints follow a changed digest.
    2. ``sign_receipt``: re-sign each receipt, naming its event's signer.
    3. ``refresh_events``: name the signer in each event, recompute ``content_sha256`` and
       ``event_id``, re-sign (``signed_at`` kept). ``event_signers`` maps an event's index to
       its signer; the others use ``signer``.
    4. ``refresh_public_keys``: ``public_keys`` become exactly the signers' records.
    5. ``refresh_state``: rebuild ``state`` from the events (``state_for``); when False only
       ``state_sha256`` is recomputed over the state as it stands.
    6. Always: ``bundle_sha256`` and the bundle signature, by ``signer``.
    """
    chosen = dict(event_signers or {})
    events: list[Json] = bundle["events"]

    def signer_of(index: int) -> SignerIdentity:
        return chosen.get(index, signer)

    if refresh_canonical:
        canonical_sha256 = _h(bundle["canonical_record"])
        bundle["canonical_sha256"] = canonical_sha256
        for event in events:
            if event["event_type"] == "record_created":
                payload = event["payload"]
                payload["canonical_sha256"] = _h(payload["canonical_record"])
                payload["receipt"]["canonical_sha256"] = payload["canonical_sha256"]
        if refresh_identifiers:
            _rewrite_identifiers(bundle, canonical_sha256)
    if sign_receipt:
        for index, event in enumerate(events):
            if event["event_type"] == "record_created":
                resign_receipt(event["payload"]["receipt"], signer_of(index))
    if refresh_events:
        for index, event in enumerate(events):
            seal_event(event, signer_of(index))
    if refresh_public_keys:
        used = [signer_of(index) for index in range(len(events))]
        bundle["public_keys"] = public_keys([signer, *used])
    if refresh_state:
        bundle["state"] = state_for(bundle)
    else:
        bundle["state"]["state_sha256"] = state_digest(bundle["state"])
    old_signature = bundle.get("bundle_signature")
    signed_at = old_signature.get("signed_at", "") if isinstance(old_signature, dict) else ""
    _seal_bundle(bundle, signer, signed_at)
    return bundle
