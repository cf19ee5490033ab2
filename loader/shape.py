"""Step 1 of verification: the bundle's shape.

Every field the later checks read is present with the right type; the first that is not
rejects the bundle with ``schema_error`` and a message naming the field
(``bundle.events[1].signer.key_id is missing``). Unknown ``bundle_version`` or event types
are ``schema_error`` too, and so are an alias kind outside :data:`ALIAS_KIND`, a source kind
outside :data:`SOURCE_KIND`, a time that is not ISO 8601 UTC in ASCII digits, or names no
time there is (:func:`is_utc_time`), and a source version outside :data:`SOURCE_VERSIONS`.

A later check may read a field only if this module pins its type: a digest binds a value,
not its type, so a bundle with a wrong type and every digest recomputed reaches every check
before the signatures (``tests/test_verify.py`` fuzzes this).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from functools import lru_cache
from typing import Any

from pith_graph.errors import BundleError, RejectCode, quoted
from pith_graph.loader.format import (
    BUNDLE_TYPE,
    EVENT_TYPES,
    GRAPH_SNAPSHOT,
    RECORD_CREATED,
    SIGNED_MESSAGES,
    SUPPORTED_VERSIONS,
    SignatureKind,
)

__all__ = ["ALIAS_KIND", "ISO_Z", "SOURCE_KIND", "SOURCE_VERSIONS", "check_shape", "is_utc_time"]

# ASCII classes only: ``\d`` would accept every Unicode digit (``٢٠١٩``).
_HEX64 = re.compile(r"[0-9a-f]{64}")
#: A time as verification admits it: UTC, ``Z``, up to nine digits of a second; years from
#: 0001, months 01-12, days 01-31 (:func:`is_utc_time` checks the month has it), hours to 23,
#: minutes and seconds to 59.
ISO_Z = re.compile(
    r"(?!0000)[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
    r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?Z"
)
#: What an ``alias_kind`` may be: lower-case ASCII letters, digits and ``_``, as every kind
#: seen (``arxiv``, ``arxiv_version``, ``doi``, ``pith_short_8``). Never ``:``, so the
#: in-memory node id ``Alias:<kind>:<value>`` (:func:`pith_graph.schema.graph.node_id`)
#: names exactly one (kind, value).
ALIAS_KIND = re.compile(r"[a-z0-9_]+")
#: What a source kind may be: a lower-case ASCII letter, then letters, digits and ``_``
#: (``arxiv``, the only kind seen). A source is its (kind, id) and only kind ``arxiv``
#: derives arXiv identifiers, so ``arXiv`` or ``arxiv `` would be a second spelling of arXiv
#: that escapes both precedence and the arXiv id checks. A well-formed kind that is not
#: ``arxiv`` is another source: it may claim no arXiv alias or DOI (``identifier_mismatch``).
SOURCE_KIND = re.compile(r"[a-z][a-z0-9_]*")
#: Kinds every bundle carries, known to match :data:`ALIAS_KIND` or :data:`SOURCE_KIND`:
#: looked up before the regular expression (exact: a kind is in the set or it is matched).
_USUAL_ALIAS_KINDS = frozenset(
    {"arxiv", "arxiv_version", "doi", "pith_short_8", "pith_short_12", "pith_short_16"}
)
_USUAL_SOURCE_KINDS = frozenset({"arxiv"})


def _fail(code: RejectCode, message: str) -> BundleError:
    return BundleError(code, message)


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


def _strs(obj: Mapping[str, Any], keys: tuple[str, ...], path: str) -> None:
    """Each of ``keys`` is a string (one loop instead of a call per field: this runs for
    every bundle)."""
    for key in keys:
        if type(obj.get(key)) is not str:
            _field(obj, key, str, path)  # raises, naming the field


def _hex64(obj: Mapping[str, Any], key: str, path: str) -> str:
    value: str = _field(obj, key, str, path)
    if not _HEX64.fullmatch(value):
        raise _fail(RejectCode.SCHEMA_ERROR, f"{path}.{key} must be 64 lowercase hex digits")
    return value


def is_utc_time(text: str) -> bool:
    """Whether ``text`` is an ISO 8601 UTC time (:data:`ISO_Z`) that names a time there is.
    Times are compared as text throughout (newest wins, revocation, listings' order), so one
    that names none (``2026-02-30``, month 13, ``24:00:00``; and a leap second, ``:60``, is not
    taken) would still be ordered, among times no clock gives.

    >>> [is_utc_time(t) for t in ("2024-02-29T10:00:00Z", "2026-02-29T10:00:00Z", "2026-04-31T00:00:00Z")]
    [True, False, False]
    >>> is_utc_time("2026-01-31T23:59:59.123456789Z"), is_utc_time("2026-01-01T24:00:00Z")
    (True, False)
    """
    return ISO_Z.fullmatch(text) is not None and (text[8:10] < "29" or _day_exists(text[:10]))


@lru_cache(maxsize=4096)
def _day_exists(day: str) -> bool:
    try:
        date.fromisoformat(day)
    except ValueError:
        return False
    return True


def _timestamp(obj: Mapping[str, Any], key: str, path: str) -> str:
    value: str = _field(obj, key, str, path)
    if not is_utc_time(value):
        raise _fail(
            RejectCode.SCHEMA_ERROR,
            f"{path}.{key} must be an ISO 8601 UTC time there is, like 2026-11-30T00:00:00Z, not {quoted(value)}",
        )
    return value


def _optional_list(obj: Mapping[str, Any], key: str, path: str) -> None:
    if key in obj and type(obj[key]) is not list:
        raise _fail(RejectCode.SCHEMA_ERROR, f"{path}.{key} must be a list")


def _strings(obj: Mapping[str, Any], key: str, path: str) -> list[str]:
    value: list[Any] = _field(obj, key, list, path)
    if not all(isinstance(item, str) for item in value):
        raise _fail(RejectCode.SCHEMA_ERROR, f"{path}.{key} must be a list of strings")
    return value


def _check_signature_block(sig: Mapping[str, Any], path: str, kind: SignatureKind) -> None:
    _strs(sig, ("key_id", "public_key_fingerprint", "signature_b64"), path)
    if sig.get("algorithm", "ed25519") != "ed25519":
        raise _fail(RejectCode.SCHEMA_ERROR, f"{path}.algorithm must be 'ed25519'")
    if sig.get("signed_message", SIGNED_MESSAGES[kind]) != SIGNED_MESSAGES[kind]:
        raise _fail(RejectCode.SCHEMA_ERROR, f"{path}.signed_message must be {SIGNED_MESSAGES[kind]!r}")


#: The source versions a bundle may carry (arXiv's vN counts from 1). The bound keeps every
#: stored ``sourceVersion`` a 32-bit integer: GraphQL's ``Int`` (the API's field) is one.
SOURCE_VERSIONS = range(1, 2**31)


def _version(obj: Mapping[str, Any], key: str, path: str) -> None:
    value: int = _field(obj, key, int, path)
    if value not in SOURCE_VERSIONS:
        raise _fail(
            RejectCode.SCHEMA_ERROR,
            f"{path}.{key} must be from {SOURCE_VERSIONS.start} to {SOURCE_VERSIONS.stop - 1}, not {value}",
        )


def _check_record(record: Mapping[str, Any], path: str) -> None:
    source = _field(record, "source", dict, path)
    _strs(source, ("id", "kind"), f"{path}.source")
    if source["kind"] not in _USUAL_SOURCE_KINDS and not SOURCE_KIND.fullmatch(source["kind"]):
        raise _fail(
            RejectCode.SCHEMA_ERROR,
            f"{path}.source.kind {quoted(source['kind'], ascii_only=True)} must be a lower-case ASCII letter, then "
            "letters, digits and _ (arXiv's is 'arxiv')",
        )
    _version(source, "version", f"{path}.source")
    meta = _field(record, "metadata", dict, path)
    mpath = f"{path}.metadata"
    _strs(meta, ("license", "primary_cat"), mpath)
    _timestamp(meta, "submitted_at", mpath)
    _strings(meta, "cross_cats_sorted", mpath)
    _hex64(meta, "title_canon_sha256", mpath)


def _check_event(event: Mapping[str, Any], path: str) -> None:
    event_type = _field(event, "event_type", str, path)
    if event_type not in EVENT_TYPES:
        raise _fail(RejectCode.SCHEMA_ERROR, f"{path}.event_type {quoted(event_type)} is not supported")
    _strs(event, ("subject_pith_number", "target"), path)
    _timestamp(event, "created_at", path)
    signer = _field(event, "signer", dict, path)
    _strs(signer, ("signer_id", "signer_type", "key_id", "public_key_fingerprint"), f"{path}.signer")
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
        _strs(payload, ("source_kind", "source_id"), ppath)
        _version(payload, "source_version", ppath)
    else:
        snapshot = _field(payload, "graph_snapshot", dict, ppath)
        paper = _field(snapshot, "paper", dict, f"{ppath}.graph_snapshot")
        gpath = f"{ppath}.graph_snapshot.paper"
        _strs(paper, ("title", "authors_text", "primary_cat", "license", "abstract_excerpt"), gpath)
        _timestamp(paper, "submitted_at", gpath)
        _strings(paper, "cross_cats", gpath)


# --- the fast path: every check above at once, without a message: what it admits, they admit
# (tests/test_shape_fast.py); anything else goes through them, to name the field that fails.


def _is_time(value: Any) -> bool:
    return type(value) is str and is_utc_time(value)


def _is_hex64(value: Any) -> bool:
    return type(value) is str and _HEX64.fullmatch(value) is not None


def _all_of_type(values: Any, kind: type) -> bool:
    for value in values:  # noqa: SIM110 - a loop costs less than all() over a generator
        if type(value) is not kind:
            return False
    return True


def _strings_at(obj: Mapping[str, Any], keys: tuple[str, ...]) -> bool:
    return _all_of_type(map(obj.__getitem__, keys), str)


def _is_version(value: Any) -> bool:
    return type(value) is int and SOURCE_VERSIONS.start <= value < SOURCE_VERSIONS.stop


def _signature_ok(sig: Any, kind: SignatureKind) -> bool:
    return (
        type(sig) is dict
        and _strings_at(sig, ("key_id", "public_key_fingerprint", "signature_b64"))
        and sig.get("algorithm", "ed25519") == "ed25519"
        and sig.get("signed_message", SIGNED_MESSAGES[kind]) == SIGNED_MESSAGES[kind]
    )


def _record_ok(record: Any) -> bool:
    if type(record) is not dict or type(source := record["source"]) is not dict:
        return False
    meta, kind = record["metadata"], source["kind"]
    return (
        (type(source["id"]) is str and type(kind) is str)
        and (kind in _USUAL_SOURCE_KINDS or SOURCE_KIND.fullmatch(kind) is not None)
        and _is_version(source["version"])
        and type(meta) is dict
        and (type(meta["license"]) is str and type(meta["primary_cat"]) is str)
        and _is_time(meta["submitted_at"])
        and type(meta["cross_cats_sorted"]) is list
        and _all_of_type(meta["cross_cats_sorted"], str)
        and _is_hex64(meta["title_canon_sha256"])
    )


def _event_ok(event: Any) -> bool:
    if type(event) is not dict or type(kind := event["event_type"]) is not str or kind not in EVENT_TYPES:
        return False
    signer, payload = event["signer"], event["payload"]
    if not (
        _strings_at(event, ("subject_pith_number", "target", "event_id"))
        and _is_time(event["created_at"])
        and type(signer) is dict
        and _strings_at(signer, ("signer_id", "signer_type", "key_id", "public_key_fingerprint"))
        and _signature_ok(event["signature"], "event")
        and _is_hex64(event["content_sha256"])
        and type(payload) is dict
    ):
        return False
    if kind == RECORD_CREATED:
        return (
            _record_ok(payload["canonical_record"])
            and _is_hex64(payload["canonical_sha256"])
            and _signature_ok(receipt := payload["receipt"], "receipt")
            and _is_hex64(receipt["canonical_sha256"])
            and _strings_at(payload, ("source_kind", "source_id"))
            and _is_version(payload["source_version"])
        )
    snapshot = payload["graph_snapshot"]
    paper = snapshot["paper"] if type(snapshot) is dict else None
    return (
        type(paper) is dict
        and _strings_at(paper, ("title", "authors_text", "primary_cat", "license", "abstract_excerpt"))
        and _is_time(paper["submitted_at"])
        and type(paper["cross_cats"]) is list
        and _all_of_type(paper["cross_cats"], str)
    )


def _alias_ok(alias: Any) -> bool:
    return (
        type(alias) is dict
        and _strings_at(alias, ("alias_kind", "alias_value"))
        and (
            alias["alias_kind"] in _USUAL_ALIAS_KINDS or ALIAS_KIND.fullmatch(alias["alias_kind"]) is not None
        )
    )


def _state_ok(state: Any) -> bool:
    if type(state) is not dict or type(current := state["current"]) is not dict:
        return False
    counts = (state["event_count"], state["valid_event_count"], state["invalid_event_count"])
    return (
        _all_of_type((*counts, state["equivocation_count"]), int)
        and type(state["pith_number"]) is str
        and type(state.get("equivocations", [])) is list
        and type(state.get("invalid_events", [])) is list
        and type(state["applied_event_ids"]) is list
        and _all_of_type(state["applied_event_ids"], str)
        and _is_hex64(state["state_sha256"])
        and type(current["graph_snapshots"]) is list
        and type(current["record_created"]) is dict
    )


def _shape_ok(bundle: Mapping[str, Any]) -> bool:
    """Whether ``bundle`` passes every check of :func:`check_shape` (``False`` may be wrong;
    ``True`` never is): the common case in one pass, without building a field's path."""
    try:
        events, aliases, keys = bundle["events"], bundle["source_aliases"], bundle["public_keys"]
        signature = bundle["bundle_signature"]
        if not (
            bundle["bundle_type"] == BUNDLE_TYPE
            and type(bundle["bundle_type"]) is str
            and type(version := bundle["bundle_version"]) is str
            and version in SUPPORTED_VERSIONS
            and _strings_at(bundle, ("pith_number", "short_pith_number", "merge_version"))
            and _record_ok(bundle["canonical_record"])
            and _is_hex64(bundle["canonical_sha256"])
            and type(bundle["source"]) is dict
            and type(aliases) is type(events) is type(keys) is list
            and all(map(_alias_ok, aliases))
            and all(map(_event_ok, events))
            and all(type(key) is dict and type(key["key_id"]) is str for key in keys)
            and _is_time(bundle["built_at"])
            and _state_ok(bundle["state"])
            and _signature_ok(signature, "bundle")
            and _is_hex64(signature["bundle_sha256"])
        ):
            return False
    except (KeyError, TypeError):  # a missing field, or a container that is none: check_shape says which
        return False
    kinds = [event["event_type"] for event in events]
    return kinds.count(RECORD_CREATED) == 1 and GRAPH_SNAPSHOT in kinds


def check_shape(bundle: Mapping[str, Any]) -> None:
    """Raise ``schema_error`` naming the first field out of shape (:func:`_check_each`)."""
    if not _shape_ok(bundle):
        _check_each(bundle)


def _check_each(bundle: Mapping[str, Any]) -> None:
    if _field(bundle, "bundle_type", str, "bundle") != BUNDLE_TYPE:
        raise _fail(RejectCode.SCHEMA_ERROR, f"bundle.bundle_type must be {BUNDLE_TYPE!r}")
    version = _field(bundle, "bundle_version", str, "bundle")
    if version not in SUPPORTED_VERSIONS:
        raise _fail(RejectCode.SCHEMA_ERROR, f"bundle.bundle_version {quoted(version)} is not supported")
    _strs(bundle, ("pith_number", "short_pith_number"), "bundle")
    _check_record(_field(bundle, "canonical_record", dict, "bundle"), "bundle.canonical_record")
    _hex64(bundle, "canonical_sha256", "bundle")
    _field(bundle, "source", dict, "bundle")
    for index, alias in enumerate(_field(bundle, "source_aliases", list, "bundle")):
        apath = f"bundle.source_aliases[{index}]"
        if not isinstance(alias, dict):
            raise _fail(RejectCode.SCHEMA_ERROR, f"{apath} must be an object")
        _strs(alias, ("alias_kind", "alias_value"), apath)
        kind = alias["alias_kind"]
        if kind not in _USUAL_ALIAS_KINDS and not ALIAS_KIND.fullmatch(kind):
            raise _fail(
                RejectCode.SCHEMA_ERROR,
                f"{apath}.alias_kind must be lower-case ASCII letters, digits and _",
            )
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
    for key in ("equivocations", "invalid_events"):  # optional; verify counts and compares them
        _optional_list(state, key, "bundle.state")
    _strings(state, "applied_event_ids", "bundle.state")
    _hex64(state, "state_sha256", "bundle.state")
    current = _field(state, "current", dict, "bundle.state")
    _field(current, "graph_snapshots", list, "bundle.state.current")
    _field(current, "record_created", dict, "bundle.state.current")
    signature = _field(bundle, "bundle_signature", dict, "bundle")
    _check_signature_block(signature, "bundle.bundle_signature", "bundle")
    _hex64(signature, "bundle_sha256", "bundle.bundle_signature")
