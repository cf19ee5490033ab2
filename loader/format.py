"""The Pith open graph bundle format, defined once: names, versions and what each digest covers.

Both the verifier (:mod:`pith_graph.loader.verify`) and the signer
(:mod:`pith_graph.testing.signer`) use these definitions, so they cannot drift apart. See
``BUNDLE-FORMAT.md`` (the project's notes on the format) for where each rule was observed.

Digests are ``H(x)`` = SHA-256 of canonical JSON (:func:`~pith_graph.loader.canon.canon`);
each signature is Ed25519 over the raw 32 bytes of a digest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, Literal

import orjson

from pith_graph.loader.canon import canon, sha256_hex

__all__ = [
    "ALGORITHM",
    "BUNDLE_TYPE",
    "BUNDLE_VERSION",
    "EVENT_TYPES",
    "GRAPH_SNAPSHOT",
    "MERGE_VERSION",
    "RECORD_CREATED",
    "SIGNATURE_STATUS",
    "SIGNED_MESSAGES",
    "STATE_CURRENT_LISTS",
    "STATE_EVENT_FIELDS",
    "SUPPORTED_VERSIONS",
    "bundle_body",
    "bundle_digest",
    "bundle_encoding",
    "event_content",
    "event_digest",
    "event_encodings",
    "state_body",
    "state_digest",
    "state_encodings",
    "utc_text",
]

BUNDLE_TYPE: Final = "pith_open_graph_bundle"
BUNDLE_VERSION: Final = "1.0"
SUPPORTED_VERSIONS: Final = frozenset({BUNDLE_VERSION})
MERGE_VERSION: Final = "pith-open-graph-merge-v1"

RECORD_CREATED: Final = "record_created"
GRAPH_SNAPSHOT: Final = "graph_snapshot"
EVENT_TYPES: Final = frozenset({RECORD_CREATED, GRAPH_SNAPSHOT})

ALGORITHM: Final = "ed25519"
SIGNATURE_STATUS: Final = "signed_v1"
SignatureKind = Literal["receipt", "event", "bundle"]
#: ``signed_message`` of each kind of signature: the digest whose raw bytes are signed.
SIGNED_MESSAGES: Final[Mapping[SignatureKind, str]] = {
    "receipt": "canonical_sha256_bytes",
    "event": "open_graph_event_sha256_bytes",
    "bundle": "bundle_sha256_bytes",
}

#: Event fields outside its ``content_sha256``.
EVENT_UNSIGNED: Final = frozenset({"signature", "content_sha256", "event_id"})
#: The fields of an event the state keeps (``current.record_created``, ``graph_snapshots``).
STATE_EVENT_FIELDS: Final = ("event_id", "target", "created_at", "signer", "payload")
#: Lists of ``state.current`` that are empty in every bundle seen (item shapes unknown).
STATE_CURRENT_LISTS: Final = (
    "author_attestations",
    "timestamp_anchors",
    "storage_attestations",
    "citation_signatures",
    "replication_records",
    "corrections",
    "mirror_hints",
)


def _without(value: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """A copy of ``value`` without ``keys``, in its order (a copy and a few deletions cost
    less than a comprehension over every member)."""
    copy = dict(value)
    for key in keys:
        copy.pop(key, None)
    return copy


def event_content(event: Mapping[str, Any]) -> dict[str, Any]:
    """What an event's ``content_sha256`` covers: the event minus its signature and ids."""
    return _without(event, EVENT_UNSIGNED)


def state_body(state: Mapping[str, Any]) -> dict[str, Any]:
    """What ``state_sha256`` covers: the state minus that digest."""
    return _without(state, ("state_sha256",))


def bundle_body(bundle: Mapping[str, Any]) -> dict[str, Any]:
    """What ``bundle_sha256`` covers: the whole bundle minus ``bundle_signature``."""
    return _without(bundle, ("bundle_signature",))


def _encoded_once(value: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``value`` with its member ``key`` (if any) replaced by that member's canonical encoding,
    which orjson writes as it is: the canonical encoding of an object is the same whether a
    member's value is encoded in place or beforehand."""
    if key not in value:
        return dict(value)
    return {**value, key: orjson.Fragment(canon(value[key]))}


def event_encodings(event: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """The canonical encodings (raw UTF-8) of :func:`event_content` and of the whole event
    (which the bundle's digest covers), its payload (most of it) encoded once for both."""
    shared = _encoded_once(event, "payload")
    return canon(event_content(shared)), canon(shared)


def state_encodings(state: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """The canonical encodings (raw UTF-8) of :func:`state_body` and of the whole state,
    ``current`` (most of it) encoded once for both."""
    shared = _encoded_once(state, "current")
    return canon(state_body(shared)), canon(shared)


def bundle_encoding(bundle: Mapping[str, Any], events: Sequence[bytes], state: bytes) -> bytes:
    """``canon(bundle_body(bundle))`` (raw UTF-8), given the canonical encodings of its
    events and of its state, which are written as they are, not encoded again.

    >>> bundle = {"state": {"n": 1}, "events": [{"e": 2}], "bundle_signature": {}}
    >>> bundle_encoding(bundle, [canon({"e": 2})], canon({"n": 1})) == canon(bundle_body(bundle))
    True
    """
    body = bundle_body(bundle)
    body["events"] = [orjson.Fragment(event) for event in events]
    body["state"] = orjson.Fragment(state)
    return canon(body)


def event_digest(event: Mapping[str, Any]) -> str:
    """``content_sha256`` of an event (raw UTF-8 canonical form)."""
    return sha256_hex(canon(event_content(event)))


def state_digest(state: Mapping[str, Any]) -> str:
    """``state_sha256`` of a state (raw UTF-8 canonical form)."""
    return sha256_hex(canon(state_body(state)))


def bundle_digest(bundle: Mapping[str, Any]) -> str:
    """``bundle_sha256`` of a bundle (raw UTF-8 canonical form).

    >>> bundle_digest({"a": 1, "bundle_signature": {"ignored": True}}) == bundle_digest({"a": 1})
    True
    """
    return sha256_hex(canon(bundle_body(bundle)))


def utc_text(moment: datetime) -> str:
    """``moment`` (time-zone aware) as the UTC text bundles write and papers store,
    ``YYYY-MM-DDTHH:MM:SSZ``, so that such texts sort as their times do: whole seconds, and
    years before 1000 zero-padded (``strftime``'s ``%Y`` does not pad them). Raises
    :class:`OverflowError` when ``moment`` lies outside the years 1 to 9999 in UTC.

    >>> from datetime import timedelta, timezone
    >>> utc_text(datetime(999, 1, 1, 2, 0, 0, 500, tzinfo=timezone(timedelta(hours=1))))
    '0999-01-01T01:00:00Z'
    """
    moment = moment.astimezone(UTC)
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}Z"
    )
