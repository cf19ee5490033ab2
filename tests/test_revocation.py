"""Who may revoke a key: a ``--trusted-keys`` file only its own signers' keys; the operator,
with ``--revoked-keys``, any key the keyring pins (the registry's too), and nothing else.

The attack (review finding F4): a lower-ranked signer's ``keyring.json`` repeats the
registry's key and a higher-ranked signer's key with ``"revoked": true``; every bundle they
signed came back ``revoked_key``, and ``prune`` would have deleted them.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from pith_graph.api.settings import ServerSettings
from pith_graph.cli import build_parser
from pith_graph.loader.facade import SAMPLES
from pith_graph.loader.keyring import REGISTRY_KEY
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle, run_cli
from pith_graph.testing.serving import serving

A = SignerIdentity.from_seed(b"revocation-a", key_id="a-key", signer_id="a.example")
M = SignerIdentity.from_seed(b"revocation-m", key_id="m-key", signer_id="m.example")
REGISTRY = {"key_id": REGISTRY_KEY.key_id, "public_key_hex": REGISTRY_KEY.public_key_hex}
SAMPLE_FILES = sorted(path.name for path in Path(SAMPLES).glob("*.json"))


def _write(path: Path, entries: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps(entries))
    return str(path)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """``bundles/``: the registry's samples, one paper by A, one by M; ``a-keys.json`` pins A."""
    bundles = tmp_path / "bundles"
    bundles.mkdir()
    for name in SAMPLE_FILES:
        shutil.copy(Path(SAMPLES) / name, bundles / name)
    paper = PaperSpec.example("2405.00011", title="By A")
    (bundles / "a.json").write_bytes(orjson.dumps(build_bundle(paper, A)))
    (bundles / "m.json").write_bytes(orjson.dumps(build_bundle(replace(paper, arxiv_id="2405.00022"), M)))
    _write(tmp_path / "a-keys.json", [A.keyring_entry()])
    return tmp_path


def _codes(stdout: str) -> dict[str, str]:
    return {Path(r["file"]).name: r["code"] for r in json.loads(stdout)["rejections"]}


def _one_line_error(result: Any) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    (line,) = result.stderr.strip().splitlines()
    assert "Traceback" not in line
    return str(line)


@pytest.mark.parametrize(
    ("victim", "defined_by"),
    [
        pytest.param(A.keyring_entry(), "a-keys.json", id="higher-ranked-signer"),
        pytest.param({**REGISTRY, "signer_id": "pith.science"}, "the built-in keyring", id="registry"),
    ],
)
def test_a_lower_ranked_file_cannot_revoke_another_sources_key(
    corpus: Path, victim: dict[str, Any], defined_by: str
) -> None:
    """F4: refused at start, exit 2, one line naming both sources and the key, and the way to
    revoke it; neither verify nor prune gets to act on it."""
    hostile = _write(corpus / "m-keyring.json", [M.keyring_entry(), {**victim, "revoked": True}])
    keys = ("--trusted-keys", str(corpus / "a-keys.json"), "--trusted-keys", hostile)
    saved = corpus / "g.json"
    loaded = run_cli(
        "load",
        str(corpus / "bundles"),
        "--trusted-keys",
        str(corpus / "a-keys.json"),
        "--trusted-keys",
        _write(corpus / "m-plain.json", [M.keyring_entry()]),
        "--save",
        str(saved),
    )
    assert loaded.returncode == 0, loaded.stderr
    before = saved.read_bytes()
    for command in (
        ("verify", str(corpus / "bundles")),
        ("prune", "--backend", "memory", "--graph", str(saved)),
    ):
        line = _one_line_error(run_cli(*command, *keys))
        assert hostile in line and defined_by in line and repr(victim["key_id"]) in line, line
        assert "--revoked-keys" in line, line
    assert saved.read_bytes() == before


@pytest.mark.parametrize("where", ["own-file", "later-file"])
def test_a_file_revokes_its_own_signers_keys_only(corpus: Path, where: str) -> None:
    """M's file may revoke M's key; the same revocation repeated by a later file is refused."""
    own = [M.keyring_entry(), {**M.keyring_entry(), "revoked": True}]
    if where == "own-file":
        files = [str(corpus / "a-keys.json"), _write(corpus / "m-keyring.json", own)]
    else:
        files = [_write(corpus / "m-keyring.json", own[:1]), _write(corpus / "later.json", own[1:])]
    args = [f"--trusted-keys={path}" for path in files]
    result = run_cli("verify", str(corpus / "bundles"), *args, "--json")
    if where == "later-file":
        line = _one_line_error(result)
        assert files[0] in line and files[1] in line and "'m-key'" in line, line
        return
    assert result.returncode == 1, result.stderr
    assert _codes(result.stdout) == {"m.json": "revoked_key"}


def test_revoked_keys_revokes_the_registry_key_and_another_files_key(corpus: Path) -> None:
    m_keys = _write(corpus / "m-keys.json", [M.keyring_entry()])
    revocations = _write(
        corpus / "revoked.json", [{**REGISTRY, "revoked": True}, {**A.keyring_entry(), "revoked": True}]
    )
    trust = ("--trusted-keys", str(corpus / "a-keys.json"), "--trusted-keys", m_keys)
    verified = run_cli("verify", str(corpus / "bundles"), *trust, "--revoked-keys", revocations, "--json")
    assert verified.returncode == 1, verified.stderr
    assert _codes(verified.stdout) == dict.fromkeys([*SAMPLE_FILES, "a.json"], "revoked_key")

    saved = corpus / "g.json"
    loaded = run_cli("load", str(corpus / "bundles"), *trust, "--save", str(saved))
    assert loaded.returncode == 0, loaded.stderr

    def papers() -> dict[str, str]:
        nodes = json.loads(saved.read_bytes())["nodes"]
        return {n["id"]: n["bundleKeyId"] for n in nodes if n.get("label") == "Paper"}

    assert sorted(set(papers().values())) == ["a-key", "m-key", REGISTRY_KEY.key_id]
    pruned = run_cli(
        "prune", *trust, "--revoked-keys", revocations, "--backend", "memory", "--graph", str(saved), "--json"
    )
    assert pruned.returncode == 0, pruned.stderr
    assert json.loads(pruned.stdout)["revokedKeys"] == ["a-key", REGISTRY_KEY.key_id]
    assert len(json.loads(pruned.stdout)["removed"]) == len(SAMPLE_FILES) + 1
    assert list(papers().values()) == ["m-key"]


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        pytest.param({**M.keyring_entry(), "revoked": True}, "key 'm-key' is not pinned", id="unknown-key"),
        pytest.param(A.keyring_entry(), "key 'a-key' is not revoked", id="no-revocation"),
        pytest.param(
            {**A.keyring_entry(), "revoked": False}, "key 'a-key' is not revoked", id="revoked-false"
        ),
        pytest.param(
            {**A.keyring_entry(), "public_key_hex": M.public_key_hex, "revoked": True},
            "key id 'a-key' is pinned to two different keys",
            id="another-public-key",
        ),
        pytest.param(
            {**A.keyring_entry(), "signer_id": "m.example", "revoked": True},
            "key id 'a-key' is pinned to signer 'a.example'",
            id="another-signer",
        ),
    ],
)
def test_revoked_keys_only_revokes_keys_the_keyring_pins(
    corpus: Path, entry: dict[str, Any], expected: str
) -> None:
    revocations = _write(corpus / "revoked.json", [entry])
    result = run_cli(
        "verify",
        str(corpus / "bundles"),
        "--trusted-keys",
        str(corpus / "a-keys.json"),
        "--revoked-keys",
        revocations,
    )
    line = _one_line_error(result)
    assert expected in line and revocations in line, line


@pytest.mark.parametrize("command", ["verify", "load", "import"])
def test_a_revoked_keys_file_inside_a_folder_is_never_read_as_a_bundle(corpus: Path, command: str) -> None:
    bundles = corpus / "bundles"
    revocations = _write(bundles / "revoked.json", [{**A.keyring_entry(), "revoked": True}])
    extra = ("--csv-only", str(corpus / "csv")) if command == "import" else ()
    trust = (
        "--trusted-keys",
        str(corpus / "a-keys.json"),
        "--trusted-keys",
        _write(corpus / "m-keys.json", [M.keyring_entry()]),
    )
    result = run_cli(
        command, str(bundles), *trust, "--revoked-keys", revocations, *extra, "--workers", "1", "--json"
    )
    assert result.returncode == 1, result.stderr
    assert _codes(result.stdout) == {"a.json": "revoked_key"}


@pytest.mark.parametrize("command", [["verify", "x"], ["load", "x"], ["import", "x"], ["prune"], ["serve"]])
def test_every_command_that_takes_trusted_keys_takes_revoked_keys(command: list[str]) -> None:
    args = build_parser().parse_args([*command, "--revoked-keys", "r1.json", "--revoked-keys", "r2.json"])
    assert args.revoked_keys == ["r1.json", "r2.json"]


def test_the_api_reads_its_revoked_keys_file_from_the_environment() -> None:
    settings = ServerSettings.from_env({"PITH_API_REVOKED_KEYS": "/srv/revoked.json"})
    assert settings.revoked_keys == ("/srv/revoked.json",)


@pytest.mark.parametrize("how", ["option", "environment"])
def test_serve_applies_revoked_keys(corpus: Path, how: str) -> None:
    """``serve`` verifies its bundles under the revocations (option or PITH_API_REVOKED_KEYS):
    the registry key revoked, the samples' papers are not served; A's still is."""
    revoked = _write(corpus / "revoked.json", [{**REGISTRY, "revoked": True}])
    args = [str(corpus / "bundles"), "--port", "0", "--workers", "1"]
    args += ["--trusted-keys", str(corpus / "a-keys.json")]
    env = {"PITH_API_REVOKED_KEYS": revoked} if how == "environment" else {}
    with serving([*args, *(["--revoked-keys", revoked] if how == "option" else [])], env=env) as url:
        answer = httpx.post(f"{url}/graphql", json={"query": "{ papers(first: 50) { nodes { title } } }"})
    titles = [node["title"] for node in answer.json()["data"]["papers"]["nodes"]]
    assert titles == ["By A"]


@pytest.mark.parametrize("variable", ["PITH_API_TRUSTED_KEYS", "PITH_API_REGISTRY_KEYS"])
def test_serve_takes_its_keyrings_from_the_environment(corpus: Path, variable: str) -> None:
    """Without options: PITH_API_TRUSTED_KEYS pins A (its paper is served besides the
    samples); PITH_API_REGISTRY_KEYS revokes the built-in registry key (the samples are not)."""
    query = {"query": "{ papers(first: 50) { nodes { title } } }"}
    args = [str(corpus / "bundles"), "--port", "0", "--workers", "1"]
    with serving(args) as url:
        before = [
            node["title"]
            for node in httpx.post(f"{url}/graphql", json=query).json()["data"]["papers"]["nodes"]
        ]
    if variable == "PITH_API_TRUSTED_KEYS":
        value, expected = str(corpus / "a-keys.json"), sorted([*before, "By A"])
    else:
        value, expected = _write(corpus / "registry.json", [{**REGISTRY, "revoked": True}]), []
    with serving(args, env={variable: value}) as url:
        after = [
            node["title"]
            for node in httpx.post(f"{url}/graphql", json=query).json()["data"]["papers"]["nodes"]
        ]
    assert len(before) == 3 and "By A" not in before  # the samples: the built-in key's
    assert sorted(after) == expected
