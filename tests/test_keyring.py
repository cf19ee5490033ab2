"""The keyring's precedence model: trust only pinned keys, and only as far as the keyring
ranks them.

The cases live in ``vectors/keyrings.json``: ``--trusted-keys`` files given in order (and
``--registry-keys``, ``--revoked-keys`` files), and the keyring they make (ranks, signers,
signer types, revocations) or the one-line refusal. A later file may repeat a key it agrees
on, never revoke another source's key, move it to another signer or add a key to a signer an
earlier source defined; only the operator's ``--revoked-keys`` revokes any pinned key. A key
speaks only for its pinned signer (its ``signer_id``, or itself) and, when the keyring pins
one, its signer type.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from pith_graph.cli import build_parser
from pith_graph.cli.options import keyring_from
from pith_graph.errors import BundleError, KeyringError, quoted
from pith_graph.loader.facade import SAMPLES, load_graph
from pith_graph.loader.keyfiles import MAX_KEYS_FILE_BYTES, load_keyring_file, operator_keyring
from pith_graph.loader.keyring import REGISTRY_KEY, Keyring, PinnedKey, default_keyring
from pith_graph.loader.rows import build_rows
from pith_graph.loader.verify import verify_bundle
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle, resign, run_cli

VECTORS = json.loads((Path(__file__).parent / "vectors" / "keyrings.json").read_text())
PUBLIC_KEYS = {
    "registry": REGISTRY_KEY.public_key,
    **{
        name: SignerIdentity.from_seed(f"keyring-{name}".encode(), key_id=name, signer_id=name).public_key
        for name in ("high", "rotated", "low", "evil")
    },
}

HIGH = SignerIdentity.from_seed(b"keyring-high", key_id="high-key", signer_id="high.example")
LOW = SignerIdentity.from_seed(
    b"keyring-low", key_id="low-key", signer_id="low.example", signer_type="mirror"
)
SPEC = PaperSpec.example("2401.99999")


def _write_files(folder: Path, files: list[list[dict[str, Any]]], prefix: str = "k") -> list[Path]:
    paths = []
    for number, entries in enumerate(files, 1):
        path = folder / f"{prefix}{number}.json"
        written = []
        for entry in entries:
            entry = dict(entry)
            entry["public_key_hex"] = PUBLIC_KEYS[entry.pop("key")].hex()
            written.append(entry)
        path.write_text(json.dumps(written))
        paths.append(path)
    return paths


def _chained(paths: list[Path], registry_paths: list[Path], revoked_paths: list[Path]) -> Keyring:
    """The library's composition, as the API makes it."""
    return operator_keyring(paths, registry_paths, revoked_paths)


def _cli(paths: list[Path], registry_paths: list[Path], revoked_paths: list[Path]) -> Keyring:
    options = build_parser().parse_args(
        ["verify", "bundles"]
        + [f"--revoked-keys={path}" for path in revoked_paths]  # applied last, wherever given
        + [f"--registry-keys={path}" for path in registry_paths]
        + [f"--trusted-keys={path}" for path in paths]
    )
    return keyring_from(options)


@pytest.mark.parametrize("compose", [_cli, _chained], ids=["cli", "chained"])
@pytest.mark.parametrize("case", VECTORS["keyrings"], ids=lambda case: case["id"])
def test_keyrings_from_trusted_keys_files(tmp_path: Path, case: dict[str, Any], compose: Any) -> None:
    paths = _write_files(tmp_path, case["files"])
    registry_paths = _write_files(tmp_path, case.get("registry_files", []), prefix="r")
    revoked_paths = _write_files(tmp_path, case.get("revoked_files", []), prefix="v")
    if "error" in case:
        named = {f"k{n}": str(path) for n, path in enumerate(paths, 1)}
        named |= {f"r{n}": str(path) for n, path in enumerate(registry_paths, 1)}
        named |= {f"v{n}": str(path) for n, path in enumerate(revoked_paths, 1)}
        expected = case["error"].format(**named)
        with pytest.raises(KeyringError) as caught:
            compose(paths, registry_paths, revoked_paths)
        assert str(caught.value) == expected
        assert "\n" not in str(caught.value)
        return
    keyring = compose(paths, registry_paths, revoked_paths)
    found = {
        key_id: [keyring.rank(key_id), key.signer, key.signer_type, key.revoked_at]
        for key_id, key in keyring.items()
    }
    assert found == case["keys"]
    assert list(found) == list(case["keys"])  # ranked, and listed, in the order first pinned


#: The refusals of one entry that a key given in code can hold too (PinnedKey's fields).
ENTRY_REFUSALS = [
    case
    for case in VECTORS["keyrings"]
    if case.get("error", "").startswith("{k1}[0]: ")
    and len(case["files"]) == 1
    and len(case["files"][0]) == 1
    and set(case["files"][0][0]) <= {"key_id", "key", "signer_id", "signer_type", "revoked_at"}
    and not case.get("registry_files")
    and not case.get("revoked_files")
]


@pytest.mark.parametrize("as_keyring", [False, True], ids=["keys", "keyring"])
@pytest.mark.parametrize("case", ENTRY_REFUSALS, ids=lambda case: case["id"])
def test_keys_given_in_code_are_checked_as_a_file_entry_is(case: dict[str, Any], as_keyring: bool) -> None:
    """``load_graph(trusted_keys=[PinnedKey(...)])`` refuses what a ``--trusted-keys`` file
    refuses, with its message, naming the argument. ``revoked_at="yesterday"`` used to revoke
    nothing (every bundle of the key loaded), ``revoked_at=True`` to make every bundle
    ``internal_error``, and ids with spaces or look-alike characters passed."""
    entry = case["files"][0][0]
    key = PinnedKey(
        entry["key_id"],
        PUBLIC_KEYS[entry["key"]],
        entry.get("signer_id"),
        entry.get("revoked_at"),
        entry.get("signer_type"),
    )
    with pytest.raises(KeyringError) as caught:
        load_graph("no-such-folder", trusted_keys=Keyring([key]) if as_keyring else [key])
    expected = case["error"].format(k1="trusted_keys")  # before any path is read
    if as_keyring and case["id"].startswith("revoked-at"):  # since 0.9.0 the Keyring refuses it
        expected = expected.replace("trusted_keys[0]", f"key {quoted(key.key_id)}", 1)
    assert str(caught.value) == expected


@pytest.mark.parametrize("revoked_at", ["yesterday", "2026-11-30", "2026-02-30T00:00:00Z", True])
def test_a_keyring_built_in_code_refuses_a_revocation_that_names_no_time(revoked_at: Any) -> None:
    """``run``, ``verify_bundle``, ``build_rows`` and ``prune_revoked`` take a ``Keyring`` as
    it is (``load_graph`` checks the keys it is given, a keys file its entries): before 0.9.0
    ``Keyring([PinnedKey(..., revoked_at="yesterday")])`` was taken, and verify_bundle
    accepted every bundle of that key (the time was compared as text, after every time)."""
    key = PinnedKey(HIGH.key_id, HIGH.public_key, HIGH.signer_id, revoked_at)
    for build in (lambda: Keyring([key]), lambda: default_keyring().with_keys([key])):
        with pytest.raises(KeyringError) as caught:
            build()
        assert caught.value.code == "keyring"
        assert str(caught.value).startswith("key 'high-key': revoked_at must be an ISO 8601 UTC time like ")
        assert str(caught.value).endswith(f"not {quoted(revoked_at)}")
    always = Keyring([replace(key, revoked_at="")])  # "": revoked for all time, as REVOKED_ALWAYS
    with pytest.raises(BundleError, match="revoked"):
        verify_bundle(build_bundle(SPEC, HIGH), always)


def test_a_keyring_given_in_code_is_the_whole_keyring_and_keys_are_added_to_the_registry() -> None:
    """As README and resolve_keyring say: PinnedKey values (importable from ``pith_graph``,
    which README names) join the built-in registry key; a ``Keyring`` replaces it (fails
    closed: the registry's bundles are untrusted unless it holds the registry's key)."""
    import pith_graph

    own = pith_graph.PinnedKey(LOW.key_id, LOW.public_key, LOW.signer_id)
    assert load_graph(SAMPLES, trusted_keys=[own])[1].accepted == 3
    report = load_graph(SAMPLES, trusted_keys=pith_graph.Keyring([own]))[1]
    assert (report.accepted, {r.code for r in report.rejections}) == (0, {"untrusted_key"})
    assert load_graph(SAMPLES, trusted_keys=pith_graph.Keyring([REGISTRY_KEY, own]))[1].accepted == 3


@pytest.mark.parametrize("revoked_at", [datetime(2020, 1, 1), 1.5, b"2020-01-01T00:00:00Z"], ids=repr)
def test_revoked_at_given_in_code_is_text(revoked_at: Any) -> None:
    key = PinnedKey(HIGH.key_id, HIGH.public_key, HIGH.signer_id, revoked_at)
    with pytest.raises(
        KeyringError, match=r"^trusted_keys\[1\]: revoked_at must be an ISO 8601 UTC time"
    ) as caught:
        load_graph(SAMPLES, trusted_keys=[PinnedKey(LOW.key_id, LOW.public_key, LOW.signer_id), key])
    assert str(caught.value).endswith(f"not {revoked_at!r}")


@pytest.mark.parametrize(
    "case",
    VECTORS["revocation_times"],
    ids=lambda case: f"{case['revoked_at'] or 'always'}/{case['built_at']}",
)
def test_revocation_compares_instants(case: dict[str, Any]) -> None:
    key = PinnedKey("k", PUBLIC_KEYS["low"], None, case["revoked_at"])
    assert key.revoked_for(case["built_at"]) is case["revoked"]


@pytest.mark.parametrize(
    ("built_at", "code"),
    [
        ("2026-11-30T00:00:00.9Z", "revoked_key"),
        ("2026-11-30T00:00:00Z", "revoked_key"),
        ("2026-11-29T23:59:59.9Z", None),
    ],
)
def test_a_bundle_built_a_fraction_of_a_second_after_revoked_at_is_refused(
    built_at: str, code: str | None
) -> None:
    bundle = build_bundle(replace(SPEC, built_at=built_at), HIGH)
    keyring = default_keyring().with_keys(
        [PinnedKey(HIGH.key_id, HIGH.public_key, HIGH.signer_id, "2026-11-30T00:00:00Z")]
    )
    if code is None:
        assert verify_bundle(bundle, keyring).built_at == built_at
        return
    with pytest.raises(BundleError) as caught:
        verify_bundle(bundle, keyring)
    assert caught.value.code.value == code


# -- a key speaks only for its pinned signer ----------------------------------------------------


def _refusal(bundle: dict[str, Any], keyring: Keyring) -> BundleError:
    with pytest.raises(BundleError) as caught:
        verify_bundle(bundle, keyring)
    return caught.value


def test_a_key_pinned_without_signer_id_cannot_claim_another_signer() -> None:
    keyring = default_keyring().with_keys([PinnedKey(LOW.key_id, LOW.public_key)])
    for claimed in ("pith.science", "low.example"):
        refused = _refusal(build_bundle(SPEC, replace(LOW, signer_id=claimed)), keyring)
        assert refused.code.value == "untrusted_key"
        assert f"claims signer {claimed!r}, but key 'low-key' is pinned to 'low-key'" in str(refused)
    own = build_bundle(SPEC, replace(LOW, signer_id=LOW.key_id))
    assert verify_bundle(own, keyring).pith_number == own["pith_number"]


@pytest.mark.parametrize("alone_first", [True, False])
def test_a_key_pinned_without_signer_id_is_no_other_keys_signer(tmp_path: Path, alone_first: bool) -> None:
    """A key without ``signer_id`` speaks for itself; another entry of the same file whose
    ``signer_id`` is its key id made the two one signer (since 0.8.9 refused: a contributor's
    key ``high.example``, pasted into a keys file, took over the signer ``high.example``'s
    papers, rank and type; a key of another file doing so was already refused)."""
    alone = {"key_id": "high.example", "key": "evil"}
    named = {"key_id": "high-key", "key": "high", "signer_id": "high.example", "signer_type": "mirror"}
    (path,) = _write_files(tmp_path, [[alone, named] if alone_first else [named, alone]])
    expected = (
        f"key 'high.example' is pinned without signer_id by {path}, so it speaks for itself, and key "
        "'high-key' names it as its signer_id; give the first a signer_id, or the second another one"
    )
    with pytest.raises(KeyringError) as refused:
        load_keyring_file(path)
    assert str(refused.value) == expected
    done = run_cli("verify", str(SAMPLES), "--trusted-keys", str(path))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.count("\n") == 1 and expected in done.stderr
    apart = [dict(alone, signer_id="evil.example"), named]  # each its own signer: taken
    (path,) = _write_files(tmp_path, [apart if alone_first else apart[::-1]], prefix="apart")
    keyring = load_keyring_file(path)
    assert keyring.rank("high.example") != keyring.rank("high-key")


def test_a_pinned_signer_type_must_be_claimed() -> None:
    typed = default_keyring().with_keys(
        [PinnedKey(LOW.key_id, LOW.public_key, LOW.signer_id, signer_type="mirror")]
    )
    untyped = default_keyring().with_keys([PinnedKey(LOW.key_id, LOW.public_key, LOW.signer_id)])
    posing = build_bundle(SPEC, replace(LOW, signer_type="pith_registry"))
    refused = _refusal(posing, typed)
    assert refused.code.value == "untrusted_key"
    assert "claims signer type 'pith_registry', but key 'low-key' is pinned to 'mirror'" in str(refused)
    assert verify_bundle(posing, untyped).pith_number == posing["pith_number"]  # not pinned: not checked
    honest = build_bundle(SPEC, LOW)
    assert verify_bundle(honest, typed).pith_number == honest["pith_number"]


def test_a_signer_has_the_type_the_keyring_pins_else_unknown() -> None:
    """A mirror re-signs the bundle; the events stay HIGH's, and claim ``pith_registry``.
    Each Signer takes the type the keyring pins for it, and "unknown" where it pins none:
    never the type the events claim (an unpinned signer's own word), so a signer's type is
    the same in every bundle, whoever signed it."""
    mirrored = resign(build_bundle(SPEC, HIGH), LOW, event_signers={0: HIGH, 1: HIGH})
    assert {event["signer"]["signer_type"] for event in mirrored["events"]} == {"pith_registry"}

    def signer_types(high_type: str | None, low_type: str | None) -> dict[str, str]:
        keyring = default_keyring().with_keys(
            [
                PinnedKey(HIGH.key_id, HIGH.public_key, HIGH.signer_id, signer_type=high_type),
                PinnedKey(LOW.key_id, LOW.public_key, LOW.signer_id, signer_type=low_type),
            ]
        )
        rows = build_rows(verify_bundle(mirrored, keyring), keyring)
        return {row.signer_id: row.signer_type for row in rows.signers}

    assert signer_types("pith_registry", "mirror") == {
        "high.example": "pith_registry",
        "low.example": "mirror",
    }
    assert signer_types(None, None) == {"high.example": "unknown", "low.example": "unknown"}
    # LOW's own bundle: its events claim "mirror", which counts only where the keyring pins it
    own = build_bundle(SPEC, LOW)
    keyring = default_keyring().with_keys([PinnedKey(LOW.key_id, LOW.public_key, LOW.signer_id)])
    rows = build_rows(verify_bundle(own, keyring), keyring)
    assert [(row.signer_id, row.signer_type) for row in rows.signers] == [("low.example", "unknown")]


def test_the_registry_samples_claim_the_registrys_signer_and_type() -> None:
    _, report = load_graph([SAMPLES])
    assert (report.accepted, report.rejected) == (3, 0)
    assert default_keyring()[REGISTRY_KEY.key_id].signer_type == "pith_registry"


def test_a_low_key_cannot_publish_under_the_registrys_name(tmp_path: Path) -> None:
    """The reviewer's e1b: a key pinned without signer_id signs events as pith.science."""
    (tmp_path / "fake.json").write_bytes(
        orjson.dumps(build_bundle(SPEC, replace(LOW, signer_id="pith.science", signer_type="pith_registry")))
    )
    keyring = default_keyring().with_keys(
        [PinnedKey(HIGH.key_id, HIGH.public_key, HIGH.signer_id), PinnedKey(LOW.key_id, LOW.public_key)]
    )
    graph, report = load_graph([tmp_path / "fake.json"], trusted_keys=keyring, workers=1)
    assert [r.code for r in report.rejections] == ["untrusted_key"]
    assert "Signer:pith.science" not in graph


# -- origins survive the trip to worker processes ------------------------------------------------


def test_a_pickled_keyring_still_knows_where_each_signer_was_defined(tmp_path: Path) -> None:
    (path,) = _write_files(tmp_path, [[{"key_id": "high-key", "key": "high", "signer_id": "high.example"}]])
    keyring = pickle.loads(pickle.dumps(load_keyring_file(path)))
    assert [key.origin for key in keyring.values()] == ["the built-in keyring", str(path)]
    assert keyring == load_keyring_file(path) and keyring[REGISTRY_KEY.key_id].signer_type == "pith_registry"
    (tmp_path / "later").mkdir()
    (later,) = _write_files(
        tmp_path / "later", [[{"key_id": "evil", "key": "evil", "signer_id": "high.example"}]]
    )
    with pytest.raises(KeyringError, match=re.escape(f"which {path} defines")):
        load_keyring_file(later, keyring)


def test_keys_given_in_code_may_join_any_signer() -> None:
    """The caller vouches for keys it builds itself (a new registry key before a release)."""
    rotated = PinnedKey("pith-v2", PUBLIC_KEYS["rotated"], "pith.science")
    keyring = default_keyring().with_keys([rotated])
    assert keyring.rank("pith-v2") == 0 and keyring["pith-v2"].signer_type == "pith_registry"


@pytest.mark.parametrize(
    ("text", "repeated"),
    [
        ('[{"key_id": "high-key", "public_key_hex": "%s", "revoked": true, "revoked": false}]', "revoked"),
        (
            '[{"key_id": "high-key", "public_key_hex": "%s", "signer_id": "a.example", "signer_id": "b"}]',
            "signer_id",
        ),
    ],
)
def test_a_keys_file_that_repeats_a_key_is_refused(tmp_path: Path, text: str, repeated: str) -> None:
    """Read first-wins (a reviewer, another parser) the key is revoked, or another signer's;
    pith-graph read it last-wins: a file means one thing or is refused, as a bundle is."""
    path = tmp_path / "keys.json"
    path.write_text(text % PUBLIC_KEYS["high"].hex())
    with pytest.raises(KeyringError) as caught:
        load_keyring_file(path)
    assert str(caught.value) == f"{path}: duplicate_key: object repeats the key {repeated!r}"


def test_a_keys_file_must_be_a_regular_file_of_a_sensible_size(tmp_path: Path) -> None:
    """A FIFO would hang the run, /dev/zero fill the memory (exit 70 under a ulimit)."""
    fifo = tmp_path / "keys.fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        with pytest.raises(KeyringError, match=r"not a regular file"):
            load_keyring_file(path)
    large = tmp_path / "large.json"
    large.write_bytes(b" " * (MAX_KEYS_FILE_BYTES + 1))
    with pytest.raises(KeyringError, match=f"over {MAX_KEYS_FILE_BYTES} bytes"):
        load_keyring_file(large)


@pytest.mark.parametrize(
    ("public_key", "given"),
    [("AAAA", "str"), (b"\x01" * 31, "31 bytes"), (None, "NoneType"), (bytearray(32), "bytearray")],
)
def test_a_pinned_key_that_is_not_32_bytes_says_so(public_key: object, given: str) -> None:
    """``PinnedKey("k", "<base64 text>")``: a bare ``TypeError`` from the native verifier
    ("'str' object is not an instance of 'bytes'"), a ``ValueError`` for 31 bytes."""
    with pytest.raises(
        KeyringError,
        match=rf"^public_key: expected the Ed25519 key's 32 raw bytes .* not {given} \(PinnedKey 'k'\)$",
    ):
        PinnedKey("k", public_key, "s")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        pytest.param(
            gzip.compress, "gzip-compressed, not JSON text: decompress it first (gunzip)", id="gzip"
        ),
        pytest.param(lambda data: b"\xff\xfe" + data, "not UTF-8 text (byte 0 is 0xff)", id="utf-16-mark"),
    ],
)
def test_a_keys_file_that_is_not_json_text_is_refused_saying_what_it_is(
    tmp_path: Path, made: Callable[[bytes], bytes], expected: str
) -> None:
    """A gzip-compressed keys file said "not valid JSON (str is not valid UTF-8: surrogates
    not allowed: ...)"."""
    path = tmp_path / "keys.json.gz"
    path.write_bytes(made(orjson.dumps([LOW.keyring_entry()])))
    with pytest.raises(KeyringError) as refused:
        load_keyring_file(path)
    assert str(refused.value) == f"{path}: {expected}"
