"""Step 2 of verification: trust in the keys that signed a bundle, and its dates.

Every signature (bundle, each event, the receipt) names a pinned key that is not revoked
for the bundle, with the pinned fingerprint; each event claims the key's signer (its
``signer_id``, or the key itself) and pinned signer type; embedded copies of pinned keys are
byte-identical (``untrusted_key``, ``key_mismatch``, ``revoked_key``). No time lies further
in the future than the allowed clock skew (``future_dated``).
"""

from __future__ import annotations

import base64
import binascii
import functools
import time
from collections.abc import Mapping
from typing import Any

from pith_graph.errors import BundleError, RejectCode, UsageError, quoted
from pith_graph.loader.format import RECORD_CREATED
from pith_graph.loader.keyring import Keyring, PinnedKey

__all__ = ["MAX_CLOCK_SKEW", "check_clock_skew", "check_not_future", "check_trust", "still_trusted"]


def _fail(code: RejectCode, message: str) -> BundleError:
    return BundleError(code, message)


def _pinned(keyring: Keyring, key_id: str, fingerprint: str, where: str, built_at: str) -> PinnedKey:
    key = keyring.get(key_id)
    if key is None:
        raise _fail(RejectCode.UNTRUSTED_KEY, f"{where} is signed by {quoted(key_id)}, not a pinned key")
    if fingerprint != key.fingerprint:
        raise _fail(
            RejectCode.KEY_MISMATCH,
            f"{where} names key {quoted(key_id)} with fingerprint {quoted(fingerprint)}, "
            f"but the pinned key's is {key.fingerprint}",
        )
    if key.revoked_for(built_at):
        since = f" since {key.revoked_at}" if key.revoked_at else ""
        raise _fail(RejectCode.REVOKED_KEY, f"{where} is signed by {quoted(key_id)}, revoked{since}")
    return key


def _decoded_copies(entry: Mapping[str, Any], where: str) -> list[bytes]:
    """The bytes of an embedded key's hex and base64 forms (those present)."""
    try:
        copies = []
        if "public_key_hex" in entry:
            copies.append(bytes.fromhex(str(entry["public_key_hex"])))
        if "public_key_b64" in entry:
            copies.append(base64.b64decode(str(entry["public_key_b64"]), validate=True))
    except (ValueError, binascii.Error) as err:
        raise _fail(RejectCode.KEY_MISMATCH, f"{where} is not valid hex/base64") from err
    return copies


def _check_embedded_keys(bundle: Mapping[str, Any], keyring: Keyring) -> None:
    for index, entry in enumerate(bundle["public_keys"]):
        pinned = keyring.get(entry["key_id"])
        if pinned is None:
            continue  # carried along, but proves nothing and is never used
        where = f"public_keys[{index}] ({quoted(pinned.key_id)})"
        # The pinned key's own encodings decode to it (an absent form counts as one): only
        # other text needs decoding.
        pinned_text = (
            entry.get("public_key_hex", pinned.public_key_hex) == pinned.public_key_hex
            and entry.get("public_key_b64", pinned.public_key_b64) == pinned.public_key_b64
        )
        copies = [] if pinned_text else _decoded_copies(entry, where)
        if any(copy != pinned.public_key for copy in copies):
            raise _fail(RejectCode.KEY_MISMATCH, f"{where} differs from the pinned key")
        for name, value in (
            ("fingerprint_sha256_hex", pinned.fingerprint),
            ("fingerprint_sha256_b32_first128bits", pinned.fingerprint_b32),
        ):
            if name in entry and entry[name] != value:
                raise _fail(RejectCode.KEY_MISMATCH, f"{where}.{name} is not the pinned key's")


def check_trust(bundle: Mapping[str, Any], keyring: Keyring) -> None:
    sig, built_at = bundle["bundle_signature"], bundle["built_at"]
    _pinned(keyring, sig["key_id"], sig["public_key_fingerprint"], "the bundle", built_at)
    for index, event in enumerate(bundle["events"]):
        where = f"events[{index}]"
        esig, signer = event["signature"], event["signer"]
        key = _pinned(keyring, esig["key_id"], esig["public_key_fingerprint"], where, built_at)
        if signer["key_id"] != esig["key_id"] or signer["public_key_fingerprint"] != key.fingerprint:
            raise _fail(RejectCode.KEY_MISMATCH, f"{where}.signer names another key than its signature")
        if signer["signer_id"] != key.signer:  # without signer_id, a key is its own signer
            raise _fail(
                RejectCode.UNTRUSTED_KEY,
                f"{where} claims signer {quoted(signer['signer_id'])}, but key {quoted(key.key_id)} "
                f"is pinned to {quoted(key.signer)}",
            )
        if key.signer_type is not None and signer["signer_type"] != key.signer_type:
            raise _fail(
                RejectCode.UNTRUSTED_KEY,
                f"{where} claims signer type {quoted(signer['signer_type'])}, but key {quoted(key.key_id)} "
                f"is pinned to {quoted(key.signer_type)}",
            )
        if event["event_type"] == RECORD_CREATED:
            receipt = event["payload"]["receipt"]
            _pinned(keyring, receipt["key_id"], receipt["public_key_fingerprint"], "the receipt", built_at)
    _check_embedded_keys(bundle, keyring)


def still_trusted(bundle: Mapping[str, Any], keyring: Keyring) -> bool:
    """Whether :func:`check_trust` passes, for a bundle whose digest is stored already (its
    body was verified when it was written): a key revoked, re-pinned or dropped since is
    then caught without re-verifying. Any failure is ``False``, also a ``bundle_signature``
    of another shape (the digest does not cover it): the full verification then names it."""
    try:
        check_trust(bundle, keyring)
    except Exception:  # whatever it is, verify_bundle reports it with its code
        return False
    return True


#: The largest clock skew: 100 years (a larger one checks nothing more). The limit it sets,
#: this clock plus the skew, must stay a four-digit year: times are compared as text.
MAX_CLOCK_SKEW = 3_155_760_000


def check_clock_skew(skew: float) -> None:
    """Refuse a clock skew that is not a number of seconds from 0 to :data:`MAX_CLOCK_SKEW`
    (:class:`~pith_graph.errors.UsageError`): ``inf`` or ``nan`` would reject every bundle
    as ``internal_error``, a skew past year 9999 every one as ``future_dated``."""
    if not 0 <= skew <= MAX_CLOCK_SKEW:
        raise UsageError(
            f"the clock skew must be from 0 to {MAX_CLOCK_SKEW} seconds (100 years), not {skew!r}"
        )


@functools.lru_cache(maxsize=4)
def _time_limit(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


def check_not_future(bundle: Mapping[str, Any], now: float, skew: float) -> None:
    """``built_at``, every event's ``created_at`` and the paper's ``submitted_at`` lie at most
    ``skew`` seconds ahead of ``now``: a bundle dated in the future would otherwise win every
    later update (a freeze), and a paper submitted in the future would head every newest-first
    list for everyone until then (a pin)."""
    limit = _time_limit(int(now + skew))  # compared to the second
    stamps = [
        ("built_at", bundle["built_at"]),
        *(
            (f"events[{index}].created_at", event["created_at"])
            for index, event in enumerate(bundle["events"])
        ),
        ("canonical_record.metadata.submitted_at", bundle["canonical_record"]["metadata"]["submitted_at"]),
    ]
    for where, stamp in stamps:
        if stamp[:19] > limit:
            raise _fail(
                RejectCode.FUTURE_DATED,
                f"{where} {stamp} is more than {skew:g} s ahead of this machine's clock",
            )
