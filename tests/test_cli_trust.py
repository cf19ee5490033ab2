"""The command line's side of trust across signers: outranked in reports, prune, clock skew."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import orjson
import pytest

from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.snapshot import is_snapshot
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle, run_cli
from pith_graph.testing.serving import serving

B = SignerIdentity.from_seed(b"cli-trust-b", key_id="b-key", signer_id="b.example")
A = SignerIdentity.from_seed(b"cli-trust-a", key_id="a-key", signer_id="a.example")
P = PaperSpec.example("2403.00042", title="Honest results")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    bundles = tmp_path / "bundles"
    bundles.mkdir()
    (bundles / "1-b.json").write_bytes(orjson.dumps(build_bundle(P, B)))
    forged = replace(P, authors=["Al Tacker"], built_at="2026-08-01T00:00:00Z")
    (bundles / "2-a.json").write_bytes(orjson.dumps(build_bundle(forged, A)))
    (bundles / "3-a-own.json").write_bytes(orjson.dumps(build_bundle(replace(P, arxiv_id="2403.00777"), A)))
    (tmp_path / "keys.json").write_text(json.dumps([B.keyring_entry(), A.keyring_entry()]))
    revoked = [B.keyring_entry(), {**A.keyring_entry(), "revoked": True}]
    (tmp_path / "revoked.json").write_text(json.dumps(revoked))
    return tmp_path


def test_load_reports_outranked_in_json_and_text(folder: Path) -> None:
    keys = str(folder / "keys.json")
    result = run_cli("load", str(folder / "bundles"), "--trusted-keys", keys, "--workers", "1", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["inserted"], report["outranked"], report["replaced"], report["stale"]) == (2, 1, 0, 0)
    text = run_cli("load", str(folder / "bundles"), "--trusted-keys", keys, "--workers", "1")
    assert text.returncode == 0, text.stderr
    assert ["outranked", "1"] in [line.split() for line in text.stdout.splitlines()]


def test_prune_removes_what_a_revoked_key_signed_from_a_saved_graph(folder: Path) -> None:
    saved = folder / "g.json"
    loaded = run_cli(
        "load", str(folder / "bundles"), "--trusted-keys", str(folder / "keys.json"), "--save", str(saved)
    )
    assert loaded.returncode == 0, loaded.stderr
    before = json.loads(saved.read_bytes())
    a_papers = [
        n["id"] for n in before["nodes"] if n.get("label") == "Paper" and n["bundleKeyId"] == A.key_id
    ]
    assert len(a_papers) == 1
    dry = run_cli(
        "prune",
        "--trusted-keys",
        str(folder / "revoked.json"),
        "--backend",
        "memory",
        "--graph",
        str(saved),
        "--dry-run",
        "--json",
    )
    assert dry.returncode == 0, dry.stderr
    assert {**json.loads(dry.stdout), "seconds": 0} == {
        "revokedKeys": [A.key_id],
        "removed": [a_papers[0].removeprefix("Paper:")],
        "dryRun": True,
        "seconds": 0,
    }
    assert json.loads(saved.read_bytes()) == before
    pruned = run_cli(
        "prune", "--trusted-keys", str(folder / "revoked.json"), "--backend", "memory", "--graph", str(saved)
    )
    assert pruned.returncode == 0, pruned.stderr
    assert "removed 1 papers" in pruned.stdout
    after = json.loads(saved.read_bytes())
    assert [
        n["id"] for n in after["nodes"] if n.get("label") == "Paper" and n["bundleKeyId"] == A.key_id
    ] == []
    assert "Signer:a.example" not in {n["id"] for n in after["nodes"]}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ("prune", "--backend", "memory", "--graph", "x.json"), "no key is revoked", id="nothing-revoked"
        ),
        pytest.param(("verify", "-", "--clock-skew", "-1"), "--clock-skew", id="negative-skew"),
        pytest.param(("verify", "-", "--clock-skew", "nan"), "--clock-skew", id="nan-skew"),
    ],
)
def test_usage_errors_are_one_line_exit_2(args: tuple[str, ...], message: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["verify", "load"])
@pytest.mark.parametrize("stamp", ["built_at", "submitted_at"])
def test_clock_skew_decides_how_far_ahead_a_bundle_may_be_built(
    tmp_path: Path, command: str, stamp: str
) -> None:
    """Built, or its paper submitted, 20 minutes from now: beyond the default 300 s of skew,
    within --clock-skew 3600. (A paper submitted in the future, accepted, headed every
    newest-first list for everyone until then.)"""
    ahead = (datetime.now(UTC) + timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    path = tmp_path / "ahead.json"
    path.write_bytes(orjson.dumps(build_bundle(replace(P, **{stamp: ahead}), B)))
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps([B.keyring_entry()]))
    refused = run_cli(command, str(path), "--trusted-keys", str(keys), "--json")
    assert refused.returncode == 1, refused.stderr
    assert [r["code"] for r in json.loads(refused.stdout)["rejections"]] == ["future_dated"]
    allowed = run_cli(command, str(path), "--trusted-keys", str(keys), "--json", "--clock-skew", "3600")
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["rejected"] == 0


def test_prune_writes_a_snapshot_back_as_a_snapshot_to_save(folder: Path) -> None:
    snapshot, out = folder / "g.snapshot", folder / "pruned.snapshot"
    keys, revoked = str(folder / "keys.json"), str(folder / "revoked.json")
    loaded = run_cli("load", str(folder / "bundles"), "--trusted-keys", keys, "--snapshot", str(snapshot))
    assert loaded.returncode == 0, loaded.stderr
    original = snapshot.read_bytes()
    pruned = run_cli(
        "prune",
        "--trusted-keys",
        revoked,
        "--backend",
        "memory",
        "--graph",
        str(snapshot),
        "--save",
        str(out),
    )
    assert pruned.returncode == 0, pruned.stderr
    removed = [line.split() for line in pruned.stdout.splitlines() if line.startswith("REMOVED ")]
    assert len(removed) == 1 and removed[0][1].startswith("pith:")
    assert snapshot.read_bytes() == original  # --save: the input stays as it was
    assert is_snapshot(out)
    before, after = MemoryStore.open(str(snapshot)).graph, MemoryStore.open(str(out)).graph
    assert set(before) - set(after) >= {f"Paper:{removed[0][1]}"}
    assert not any(d.get("bundleKeyId") == A.key_id for _, d in after.nodes(data=True))


def test_a_keyring_that_contradicts_itself_is_refused_in_one_line(folder: Path) -> None:
    """A file may not give a key to a signer another source defined, nor re-pin a key under
    another signer: exit 2, one line naming the files and the key."""
    corpus = folder / "corpus-keyring.json"
    corpus.write_text(json.dumps([{**A.keyring_entry(), "signer_id": "pith.science"}]))
    keys, moved = folder / "keys.json", folder / "moved.json"
    moved.write_text(json.dumps([{**A.keyring_entry(), "signer_id": B.signer_id}]))
    for files, named in (([corpus], [corpus]), ([keys, moved], [keys, moved])):
        result = run_cli("verify", str(folder / "bundles"), *(f"--trusted-keys={path}" for path in files))
        assert result.returncode == 2, result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert A.key_id in line and all(str(path) in line for path in named), line


def test_a_later_file_cannot_lift_a_revocation(folder: Path) -> None:
    """revoked: true in the file that defines the key, revoked_at far ahead in a later
    --revoked-keys file: still revoked for all time."""
    later = folder / "later.json"
    later.write_text(json.dumps([{**A.keyring_entry(), "revoked_at": "2099-01-01T00:00:00Z"}]))
    args = ("--trusted-keys", str(folder / "revoked.json"), "--revoked-keys", str(later), "--json")
    result = run_cli("verify", str(folder / "bundles"), *args)
    assert result.returncode == 1, result.stderr
    assert [r["code"] for r in json.loads(result.stdout)["rejections"]] == ["revoked_key", "revoked_key"]


ROTATED = SignerIdentity.from_seed(
    b"cli-trust-rotated", key_id="pith-v1-2027-05", signer_id="pith.science", signer_type="pith_registry"
)


@pytest.fixture
def rotation(tmp_path: Path) -> Path:
    """A mirror's copy of a paper and the registry's, signed with a key newer than this release
    (ROTATED), in ``bundles/``, with ``bundles/registry-keys.json`` naming that key and
    ``keys.json`` the mirror's."""
    bundles = tmp_path / "bundles"
    bundles.mkdir()
    (bundles / "1-mirror.json").write_bytes(orjson.dumps(build_bundle(replace(P, title="Mirror's copy"), B)))
    (bundles / "2-registry.json").write_bytes(orjson.dumps(build_bundle(P, ROTATED)))
    (bundles / "registry-keys.json").write_text(json.dumps([ROTATED.keyring_entry()]))  # names pith.science
    (tmp_path / "keys.json").write_text(json.dumps([B.keyring_entry()]))
    return tmp_path


def test_registry_keys_admits_a_rotated_registry_key_that_trusted_keys_cannot(rotation: Path) -> None:
    """The registry rotates to a new key: ``--registry-keys`` (the operator's word) adds it to
    pith.science at rank 0, and its bundles outrank a mirror's; the same file given as
    ``--trusted-keys`` is refused, and a registry-keys file in the folder is not a bundle."""
    bundles, registry_keys = rotation / "bundles", rotation / "bundles" / "registry-keys.json"
    common = ("load", str(bundles), "--trusted-keys", str(rotation / "keys.json"), "--workers", "1", "--json")

    without = run_cli(*common, "--save", str(rotation / "without.json"))
    assert without.returncode == 1, without.stderr
    codes = [(r["code"], Path(r["file"]).name) for r in json.loads(without.stdout)["rejections"]]
    assert ("untrusted_key", "2-registry.json") in codes

    saved = rotation / "with.json"
    granted = run_cli(*common, "--registry-keys", str(registry_keys), "--save", str(saved))
    assert granted.returncode == 0, granted.stderr
    report = json.loads(granted.stdout)
    assert (report["rejected"], report["outranked"]) == (0, 1)
    papers = [n for n in json.loads(saved.read_bytes())["nodes"] if n.get("label") == "Paper"]
    assert [(p["title"], p["bundleKeyId"]) for p in papers] == [(P.title, ROTATED.key_id)]

    as_trusted = run_cli("verify", str(bundles / "2-registry.json"), "--trusted-keys", str(registry_keys))
    assert as_trusted.returncode == 2
    assert "claims signer 'pith.science', which the built-in keyring defines" in as_trusted.stderr
    assert len(as_trusted.stderr.strip().splitlines()) == 1 and "Traceback" not in as_trusted.stderr

    posing = rotation / "posing.json"
    posing.write_text(json.dumps([B.keyring_entry()]))
    refused = run_cli("verify", str(bundles), "--registry-keys", str(posing))
    assert refused.returncode == 2
    assert f"{posing}[0]: a registry key speaks for signer 'pith.science'" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr


def test_serve_takes_registry_keys_too(rotation: Path) -> None:
    """``pith-graph serve`` builds its keyring as load does (and never reads the key files as
    bundles): the rotated key's paper is the one served."""
    args = [str(rotation / "bundles"), "--registry-keys", str(rotation / "bundles" / "registry-keys.json")]
    args += [
        "--trusted-keys",
        str(rotation / "keys.json"),
        "--port",
        "0",
        "--workers",
        "1",
        "--load-workers",
        "1",
    ]
    with serving(args) as url:
        query = '{ paper(id: "arXiv:2403.00042") { title verification { bundleKeyId } } }'
        answer = httpx.post(f"{url}/graphql", json={"query": query}, timeout=30).json()
        assert answer == {
            "data": {"paper": {"title": P.title, "verification": {"bundleKeyId": ROTATED.key_id}}}
        }
