"""The parts of a synthetic bundle, shaped exactly as the registry's (key order included):
the receipt, the graph snapshot, an event shell, source aliases, links and public keys."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pith_graph.loader.format import ALGORITHM, SIGNATURE_STATUS, SIGNED_MESSAGES
from pith_graph.testing.identity import SignerIdentity
from pith_graph.testing.spec import SCHEMA_VERSION, PaperSpec, micro

__all__ = [
    "bundle_links",
    "event_shell",
    "graph_snapshot",
    "public_keys",
    "receipt",
    "resign_receipt",
    "source_aliases",
]

Json = dict[str, Any]

BUILDER_VERSION = "pith-number-builder-2026-05-17-v1"
RECEIPT_VERSION = "0.3"
DEFAULT_BASE_URL = "https://pith.science"
REGISTRY_KEY_URL = "https://pith.science/pith-signing-key.json"
# Constants seen in every real snapshot; what they digest is not known.
EMPTY_SNAPSHOT_SHA256 = "258153158e38e3291e3d48162225fcdb2d5a3ed65a07baac614ab91432fd4f57"
CLEAN_INTEGRITY_SNAPSHOT_SHA256 = "c28c3603d3b5d939e8dc4c7e95fa8dfce3d595e45f758748cecf8e644a296938"


def resign_receipt(receipt: Json, signer: SignerIdentity) -> None:
    receipt["key_id"] = signer.key_id
    receipt["public_key_fingerprint"] = signer.fingerprint_sha256_hex
    receipt["signature_b64"] = signer.sign_digest(receipt["canonical_sha256"])


def receipt(canonical_sha256: str, signer: SignerIdentity, paper: PaperSpec) -> Json:
    computed = paper.receipt_computed_at or micro(paper.created_at)
    receipt: Json = {
        "kind": "pith_receipt",
        "key_id": signer.key_id,
        "algorithm": ALGORITHM,
        "signed_at": paper.receipt_signed_at or computed,
        "signature_b64": "",
        "signed_message": SIGNED_MESSAGES["receipt"],
        "builder_version": BUILDER_VERSION,
        "receipt_version": RECEIPT_VERSION,
        "canonical_sha256": canonical_sha256,
        "last_reissued_at": paper.receipt_reissued_at or computed,
        "signature_status": SIGNATURE_STATUS,
        "first_computed_at": computed,
        "public_key_fingerprint": signer.fingerprint_sha256_hex,
    }
    resign_receipt(receipt, signer)
    return receipt


def graph_snapshot(paper: PaperSpec) -> Json:
    empty = EMPTY_SNAPSHOT_SHA256
    return {
        "paper": {
            "title": paper.title,
            "license": paper.license,
            "headline": paper.headline,
            "cross_cats": sorted(paper.cross_cats),
            "primary_cat": paper.primary_cat,
            "authors_text": paper.authors_text,
            "submitted_at": paper.submitted_at,
            "abstract_excerpt": paper.abstract_excerpt,
        },
        "claims": {"count": 0, "items": [], "snapshot_sha256": empty},
        "source": {"id": paper.arxiv_id, "kind": "arxiv", "version": paper.version},
        "verdict": {
            "id": None,
            "model_set": {},
            "created_at": None,
            "strongest_claim": "",
            "one_line_summary": "",
            "pipeline_version": None,
            "weakest_assumption": "",
            "pith_extraction_headline": "",
        },
        "integrity": {
            "clean": True,
            "summary": {"advisory": 0, "critical": 0, "by_detector": {}, "informational": 0},
            "endpoint": f"/pith/{paper.arxiv_id}/integrity.json",
            "findings": [],
            "available": True,
            "detectors_run": [],
            "snapshot_sha256": CLEAN_INTEGRITY_SNAPSHOT_SHA256,
        },
        "references": {
            "count": 0,
            "sample": [],
            "resolved_work": 0,
            "snapshot_sha256": empty,
            "internal_anchors": 0,
        },
        "formal_canon": {"evidence_count": 0, "snapshot_sha256": empty},
        "author_claims": {"count": 0, "strong_count": 0, "snapshot_sha256": empty},
        "builder_version": BUILDER_VERSION,
    }


def event_shell(event_type: str, pith_number: str, target: str, payload: Json, created_at: str) -> Json:
    return {
        "event_type": event_type,
        "subject_pith_number": pith_number,
        "target": target,
        "payload": payload,
        "signer": None,
        "created_at": created_at,
        "supersedes": [],
        "prev_event": None,
        "signature": None,
        "content_sha256": None,
        "schema_version": SCHEMA_VERSION,
        "event_id": None,
    }


def source_aliases(paper: PaperSpec, body: str) -> list[Json]:
    values = {
        "arxiv": paper.arxiv_id,
        "arxiv_version": paper.arxiv_version,
        "doi": paper.doi,
        "pith_short_12": body[:12],
        "pith_short_16": body[:16],
        "pith_short_8": body[:8],
    }
    return [
        {"alias_kind": kind, "alias_value": value, "created_at": paper.created_at}
        for kind, value in values.items()
    ]


def bundle_links(base_url: str, body: str) -> tuple[list[Json], Json]:
    page = f"{base_url}/pith/{body}"
    well_known = f"{base_url}/.well-known/pith/{body}/bundle.json"
    mirror = {
        "mirror_type": "https",
        "name": "Pith Resolver",
        "base_url": base_url,
        "bundle_url": f"{page}/bundle.json",
        "state_url": f"{page}/state.json",
        "well_known_bundle_url": well_known,
        "status": "primary",
    }
    links = {
        "resolver": page,
        "bundle": f"{page}/bundle.json",
        "state": f"{page}/state.json",
        "well_known_bundle": well_known,
    }
    return [mirror], links


def public_keys(signers: Sequence[SignerIdentity]) -> list[Json]:
    records: dict[str, Json] = {}
    for signer in signers:
        records.setdefault(signer.key_id, signer.public_key_record())
    return list(records.values())
