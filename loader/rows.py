"""Build the graph rows of one verified bundle: plain data, the same for every store.

A :class:`PaperRows` holds the Paper's properties and the rows for its Authors, Categories,
Aliases and Signers (node keys plus edge properties), named as :mod:`pith_graph.schema.graph` names them.
Rows are small and picklable, so worker processes return them instead of whole bundles.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pith_graph.loader.identifiers import split_authors
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.verify import VerifiedBundle, newest_snapshot

__all__ = ["PaperRows", "build_rows"]


@dataclass(frozen=True, slots=True)
class PaperRows:
    """Everything one paper contributes to the graph.

    ``authors``: ``{nameKey, name}``; ``categories``: ``{code, archive, primary}``;
    ``aliases``: ``{kind, value}``; ``signers``: ``{signerId, signerType, keyIds,
    eventTypes, signedBundle}``.
    """

    paper: dict[str, Any]
    authors: list[dict[str, Any]] = field(default_factory=list)
    categories: list[dict[str, Any]] = field(default_factory=list)
    aliases: list[dict[str, Any]] = field(default_factory=list)
    signers: list[dict[str, Any]] = field(default_factory=list)

    @property
    def pith_number(self) -> str:
        return str(self.paper["pithNumber"])

    @property
    def built_at(self) -> str:
        return str(self.paper["builtAt"])

    @property
    def bundle_sha256(self) -> str:
        return str(self.paper["bundleSha256"])


def _archive(code: str) -> str:
    return code.split(".", 1)[0]


def _signer_rows(bundle: Mapping[str, Any], keyring: Keyring) -> list[dict[str, Any]]:
    by_signer: dict[str, dict[str, Any]] = {}
    signer_of_key: dict[str, tuple[str, str]] = {}

    def entry(signer_id: str, signer_type: str) -> dict[str, Any]:
        return by_signer.setdefault(
            signer_id,
            {
                "signerId": signer_id,
                "signerType": signer_type,
                "keyIds": set(),
                "eventTypes": set(),
                "signedBundle": False,
            },
        )

    for event in bundle["events"]:
        signer = event["signer"]
        row = entry(signer["signer_id"], signer["signer_type"])
        row["keyIds"].add(event["signature"]["key_id"])
        row["eventTypes"].add(event["event_type"])
        signer_of_key.setdefault(event["signature"]["key_id"], (signer["signer_id"], signer["signer_type"]))

    def owner(key_id: str) -> dict[str, Any]:
        if key_id in signer_of_key:
            return entry(*signer_of_key[key_id])
        pinned = keyring[key_id].signer_id
        return entry(pinned or key_id, "unknown")

    for event in bundle["events"]:
        if event["event_type"] == "record_created":
            receipt_key = event["payload"]["receipt"]["key_id"]
            owner(receipt_key)["keyIds"].add(receipt_key)
    bundle_key = bundle["bundle_signature"]["key_id"]
    signed = owner(bundle_key)
    signed["keyIds"].add(bundle_key)
    signed["signedBundle"] = True
    return [
        {**row, "keyIds": sorted(row["keyIds"]), "eventTypes": sorted(row["eventTypes"])}
        for _, row in sorted(by_signer.items())
    ]


def build_rows(verified: VerifiedBundle, keyring: Keyring) -> PaperRows:
    """The rows of a verified bundle (the newest graph snapshot gives title and authors)."""
    bundle = verified.bundle
    record = bundle["canonical_record"]
    source = record["source"]
    meta = record["metadata"]
    snapshot = newest_snapshot(bundle)["payload"]["graph_snapshot"]["paper"]
    signers = _signer_rows(bundle, keyring)
    paper = {
        "pithNumber": bundle["pith_number"],
        "shortPithNumber": bundle["short_pith_number"],
        "title": snapshot["title"],
        "abstractExcerpt": snapshot["abstract_excerpt"],
        "license": meta["license"],
        "submittedAt": meta["submitted_at"],
        "submittedYear": int(meta["submitted_at"][:4]),
        "primaryCategory": meta["primary_cat"],
        "sourceKind": source["kind"],
        "sourceId": source["id"],
        "sourceVersion": source["version"],
        "canonicalSha256": bundle["canonical_sha256"],
        "bundleSha256": verified.bundle_sha256,
        "stateSha256": bundle["state"]["state_sha256"],
        "builtAt": bundle["built_at"],
        "keyIds": sorted({key for row in signers for key in row["keyIds"]}),
    }
    primary = meta["primary_cat"]
    categories = [{"code": primary, "archive": _archive(primary), "primary": True}]
    categories += [
        {"code": code, "archive": _archive(code), "primary": False}
        for code in sorted(set(meta["cross_cats_sorted"]) - {primary})
    ]
    aliases = sorted(
        {(alias["alias_kind"], alias["alias_value"]) for alias in bundle["source_aliases"]}
    )
    return PaperRows(
        paper=paper,
        authors=[
            {"nameKey": key, "name": name} for key, name in split_authors(snapshot["authors_text"])
        ],
        categories=categories,
        aliases=[{"kind": kind, "value": value} for kind, value in aliases],
        signers=signers,
    )
