"""Verification of one parsed bundle against a pinned keyring.

Checks run cheapest first and the first failure rejects the bundle:

1. shape (:mod:`pith_graph.loader.shape`): required fields with the right types
   (``schema_error`` naming the field);
2. trust (:mod:`pith_graph.loader.trust`): every signature names a pinned key, not revoked
   for the bundle (``untrusted_key``, ``key_mismatch``, ``revoked_key``); no time lies
   further in the future than the allowed clock skew (``future_dated``);
3. identifiers: pith numbers, an arXiv source id in arXiv's spelling, every alias the
   record derives (:func:`derived_alias`), every event's subject (``identifier_mismatch``);
4. digests: canonical record, each event and its ``event_id``, state, bundle, each accepted
   in raw-UTF-8 or ASCII-escaped canonical form (``digest_mismatch``);
5. consistency: the ``record_created`` payload, its receipt and the newest graph snapshot
   agree with the canonical record (``record_mismatch``); the state is exactly the merge of
   the events (``state_mismatch``); the newest snapshot names at most :data:`MAX_AUTHORS`
   authors (``schema_error``);
6. signatures: Ed25519 over the raw digest bytes (``bad_signature``).
"""

from __future__ import annotations

import binascii
import hashlib
import time
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pith_graph.errors import BundleError, RejectCode, quoted
from pith_graph.loader.canon import digest_matches, encoding_matches
from pith_graph.loader.format import (
    GRAPH_SNAPSHOT,
    RECORD_CREATED,
    STATE_CURRENT_LISTS,
    STATE_EVENT_FIELDS,
    bundle_body,
    bundle_encoding,
    event_encodings,
    state_encodings,
)
from pith_graph.loader.identifiers import (
    ARXIV_ID_FORMS,
    PITH_B32_LENGTH,
    canonical_arxiv_id,
    doi_key,
    pith_base32,
    title_key,
)
from pith_graph.loader.keyring import Keyring, PinnedKey, instant
from pith_graph.loader.shape import check_shape
from pith_graph.loader.trust import check_not_future, check_trust

__all__ = [
    "ARXIV_DOI_PREFIX",
    "DEFAULT_CLOCK_SKEW",
    "MAX_AUTHORS",
    "VerifiedBundle",
    "derived_alias",
    "newest_snapshot",
    "stated_bundle_digest",
    "verify_bundle",
]


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


# --- 3. identifiers ---------------------------------------------------------------------


def _check_identifiers(bundle: Mapping[str, Any]) -> None:
    record = bundle["canonical_record"]
    body = pith_base32(bundle["canonical_sha256"])
    expected = f"pith:{record['metadata']['submitted_at'][:4]}:{body}"
    if bundle["pith_number"] != expected:
        raise _fail(
            RejectCode.IDENTIFIER_MISMATCH,
            f"pith_number is {quoted(bundle['pith_number'])}, but the record derives {quoted(expected)}",
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
    _check_arxiv_spelling(source)
    for index, alias in enumerate(bundle["source_aliases"]):
        derived = derived_alias(alias["alias_kind"], alias["alias_value"], source, body)
        if derived is not None and (derived == "" or alias["alias_value"] != derived):
            # "": the record cannot have this identifier, so no value matches, not even "".
            what = "no such identifier" if derived == "" else quoted(derived)
            where = f"source_aliases[{index}] ({alias['alias_kind']})"
            raise _fail(
                RejectCode.IDENTIFIER_MISMATCH,
                f"{where} is {quoted(alias['alias_value'])}, but the record derives {what}",
            )


def _check_arxiv_spelling(source: Mapping[str, Any]) -> None:
    """An arXiv source id is spelled as arXiv spells it: the update rules compare source ids
    byte for byte, so a second spelling of one paper would dodge precedence. The message
    quotes the id with :func:`ascii`, so a look-alike digit (``2601.0000\\u0661``) shows."""
    if source["kind"] != "arxiv":
        return
    canonical = canonical_arxiv_id(source["id"])
    if canonical != source["id"]:
        spelled = f"; arXiv writes it {quoted(canonical)}" if canonical is not None else ""
        raise _fail(
            RejectCode.IDENTIFIER_MISMATCH,
            f"canonical_record.source.id {quoted(source['id'], ascii_only=True)} is not an arXiv id as arXiv writes "
            f"it ({ARXIV_ID_FORMS}){spelled}",
        )


#: DOIs the arXiv mints for its papers: ``10.48550/arXiv.<id>``, in any ASCII letter case.
ARXIV_DOI_PREFIX = "10.48550/arxiv."
#: The sizes N a ``pith_short_N`` alias may have (up to the body's length), by their only
#: spelling: ASCII digits without a leading zero.
_PITH_SHORT_SIZES = {str(size): size for size in range(1, PITH_B32_LENGTH + 1)}


def derived_alias(kind: str, value: str, source: Mapping[str, Any], body: str) -> str | None:
    """The value an alias must have when the canonical record determines it, else ``None``.

    Derivable: ``arxiv`` (the id), ``arxiv_version`` (id + ``v`` + version), an arXiv DOI
    (``10.48550/arXiv.<id>``, ASCII letter case kept as stated, compared as stored:
    :func:`doi_key`) and ``pith_short_<n>`` (the first n characters of the pith number's
    body; n in ASCII digits, no leading zero). Only an arXiv record (source kind ``arxiv``:
    :mod:`~pith_graph.loader.shape` admits no other spelling of it) derives arXiv identifiers,
    so a record of any other kind claiming one derives the impossible ``""`` (no value matches
    it, ``""`` included). Any other alias
    (a journal DOI, an unknown kind) cannot be derived: it is kept, but the API never lets
    it outrank a derivable one.

    >>> derived_alias("doi", "10.48550/ARXIV.1907.13257", {"kind": "arxiv", "id": "1907.13257", "version": 1}, "")
    '10.48550/ARXIV.1907.13257'
    >>> derived_alias("doi", "10.48550/arxiv.2006.03318", {"kind": "arxiv", "id": "1907.13257", "version": 1}, "")
    '10.48550/arxiv.1907.13257'
    >>> derived_alias("doi", "10.1000/journal.42", {"kind": "arxiv", "id": "1907.13257", "version": 1}, "") is None
    True
    """
    arxiv = source["kind"] == "arxiv"
    if kind.startswith("pith_short_"):
        size = _PITH_SHORT_SIZES.get(kind.removeprefix("pith_short_"))
        return body[:size] if size is not None else ""
    if kind == "arxiv":
        return source["id"] if arxiv else ""
    if kind == "arxiv_version":
        return f"{source['id']}v{source['version']}" if arxiv else ""
    if kind == "doi" and (key := doi_key(value)).startswith(ARXIV_DOI_PREFIX):
        if not arxiv:
            return ""
        expected = ARXIV_DOI_PREFIX + doi_key(str(source["id"]))
        return value if key == expected else value[: len(ARXIV_DOI_PREFIX)] + source["id"]
    return None


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
    events = []  # each event and the state are encoded once, for their digest and the bundle's
    for index, event in enumerate(bundle["events"]):
        digest = event["content_sha256"]
        content, whole = event_encodings(event)
        if not encoding_matches(content, digest):
            raise _fail(RejectCode.DIGEST_MISMATCH, f"events[{index}].content_sha256 does not match")
        if event["event_id"] != f"sha256:{digest}":
            raise _fail(RejectCode.DIGEST_MISMATCH, f"events[{index}].event_id is not sha256:<digest>")
        events.append(whole)
    state = bundle["state"]
    body, whole_state = state_encodings(state)
    if not encoding_matches(body, state["state_sha256"]):
        raise _fail(RejectCode.DIGEST_MISMATCH, "state.state_sha256 does not match the state")
    encoded = bundle_encoding(bundle, events, whole_state)
    if not encoding_matches(encoded, bundle["bundle_signature"]["bundle_sha256"]):
        raise _fail(RejectCode.DIGEST_MISMATCH, "bundle_sha256 does not match the bundle")


# --- 5. consistency ---------------------------------------------------------------------


def newest_snapshot(bundle: Mapping[str, Any]) -> Mapping[str, Any]:
    """The graph_snapshot event created last (the later one in the log on a tie)."""
    snapshots = [e for e in bundle["events"] if e["event_type"] == GRAPH_SNAPSHOT]
    return max(reversed(snapshots), key=lambda event: instant(event["created_at"]))


def _title_matches(title: str, digest: str) -> bool:
    """The title's digest is one of the plausible normalisations' (the registry's exact
    Unicode normalisation is not known); the plain form first, the others only if needed."""
    if hashlib.sha256(title_key(title).encode("utf-8")).hexdigest() == digest:
        return True
    forms = {title_key(unicodedata.normalize("NFC", title))}
    forms.add(title_key(unicodedata.normalize("NFKC", title).casefold()))
    return any(hashlib.sha256(form.encode("utf-8")).hexdigest() == digest for form in forms)


def _check_record_consistency(bundle: Mapping[str, Any]) -> Mapping[str, Any]:
    """Check the record against its events; return the newest snapshot's paper."""
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
    paper: Mapping[str, Any] = newest_snapshot(bundle)["payload"]["graph_snapshot"]["paper"]
    pairs = (
        ("primary_cat", paper["primary_cat"], meta["primary_cat"]),
        ("license", paper["license"], meta["license"]),
        ("submitted_at", paper["submitted_at"], meta["submitted_at"]),
        ("cross_cats", sorted(paper["cross_cats"]), meta["cross_cats_sorted"]),
    )
    for name, seen, bound in pairs:
        if seen != bound:
            raise _fail(RejectCode.RECORD_MISMATCH, f"snapshot {name} differs from the record's")
    if not _title_matches(paper["title"], meta["title_canon_sha256"]):
        raise _fail(RejectCode.RECORD_MISMATCH, "snapshot title does not match title_canon_sha256")
    return paper


#: The most authors a bundle may name (its newest snapshot's ``authors_text``, split at commas,
#: blank parts not counted): above the longest author lists published (about 15,000). Without
#: it a 1 MiB bundle names about 90,000, one Neo4j transaction of about 300 MB that stops a
#: load where the transaction memory is smaller, and every author on it pays for all of them
#: in ``coauthors`` (benchmarks/bench_attacker_cost.py).
MAX_AUTHORS = 25_000


def _check_author_count(paper: Mapping[str, Any]) -> None:
    """``paper``: the newest graph snapshot's (:func:`_check_record_consistency` found it)."""
    text: str = paper["authors_text"]
    if text.count(",") < MAX_AUTHORS:  # the common case: too few parts to count
        return
    names = sum(1 for part in text.split(",") if not part.isspace() and part)
    if names > MAX_AUTHORS:
        raise _fail(
            RejectCode.SCHEMA_ERROR,
            f"the newest graph snapshot names {names} authors, over the limit of {MAX_AUTHORS}",
        )


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
    for name in STATE_CURRENT_LISTS:  # the message is only written for a failure
        if not isinstance(current.get(name, []), list):
            raise _fail(RejectCode.STATE_MISMATCH, f"state.current.{name} is not a list")


# --- 6. signatures ----------------------------------------------------------------------


def _verify_signature(key: PinnedKey, digest_hex: str, signature_b64: str, where: str) -> None:
    try:
        signature = binascii.a2b_base64(signature_b64, strict_mode=True)
    except (ValueError, binascii.Error) as err:
        raise _fail(RejectCode.BAD_SIGNATURE, f"{where}: signature is not base64") from err
    if len(signature) != 64:
        raise _fail(RejectCode.BAD_SIGNATURE, f"{where}: an Ed25519 signature is 64 bytes")
    if not key.verifier.verify(bytes.fromhex(digest_hex), signature):
        raise _fail(RejectCode.BAD_SIGNATURE, f"{where}: signature does not verify with {quoted(key.key_id)}")


def _check_signatures(bundle: Mapping[str, Any], keyring: Keyring) -> None:
    for index, event in enumerate(bundle["events"]):
        sig = event["signature"]
        _verify_signature(
            keyring[sig["key_id"]], event["content_sha256"], sig["signature_b64"], f"events[{index}]"
        )
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


#: How far ahead of this machine's clock a bundle's times may lie, by default (seconds).
DEFAULT_CLOCK_SKEW = 300.0


def verify_bundle(
    bundle: dict[str, Any],
    keyring: Keyring,
    *,
    clock_skew: float = DEFAULT_CLOCK_SKEW,
    now: float | None = None,
) -> VerifiedBundle:
    """Run every check on a parsed bundle; raise :class:`BundleError` at the first failure.

    ``now`` (seconds since the epoch, default: the clock) and ``clock_skew`` bound how far in
    the future its times may lie (``future_dated``).
    """
    check_shape(bundle)
    check_trust(bundle, keyring)
    check_not_future(bundle, time.time() if now is None else now, clock_skew)
    _check_identifiers(bundle)
    _check_digests(bundle)
    _check_author_count(_check_record_consistency(bundle))
    _check_state(bundle)
    _check_signatures(bundle, keyring)
    return VerifiedBundle(bundle, bundle["bundle_signature"]["bundle_sha256"])
