"""Finding the Neo4j password without typing it (``loader/stores/neo4j_auth.py``), and the CLI
and the API using it: the order of the sources, private password files only, the local
server's file never sent to another host, and ``pith-graph load`` into a server with
authentication on and no password option.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Neo4jServer

from pith_graph.api.settings import ServerSettings
from pith_graph.errors import UsageError
from pith_graph.loader.stores.neo4j_auth import is_loopback, read_password_file, resolve_password
from pith_graph.testing import run_cli

LOCAL = "bolt://127.0.0.1:7687"


def private_file(path: Path, text: str, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="utf-8")
    path.chmod(mode)
    return path


@pytest.fixture
def sources(tmp_path: Path) -> dict[str, Any]:
    """One password in each place resolve_password looks, each naming its place."""
    return {
        "password_file": str(private_file(tmp_path / "explicit", "from-explicit-file")),
        "env": {
            "NEO4J_PASSWORD": "from-env-password",
            "NEO4J_PASSWORD_FILE": str(private_file(tmp_path / "env-file", "from-env-file")),
            "NEO4J_DATA": str(private_file(tmp_path / "data" / "password", "from-data-folder").parent),
        },
        "cwd": private_file(tmp_path / "checkout" / ".neo4j" / "password", "from-cwd").parent.parent,
    }


@pytest.mark.parametrize(
    ("given", "env_keys", "expected"),
    [
        pytest.param({"password": "typed"}, "all", "typed", id="explicit-password-first"),
        pytest.param(
            {"password_file": True}, "all", "from-explicit-file", id="explicit-file-beats-environment"
        ),
        pytest.param({}, "all", "from-env-password", id="NEO4J_PASSWORD-beats-NEO4J_PASSWORD_FILE"),
        pytest.param(
            {},
            ["NEO4J_PASSWORD_FILE", "NEO4J_DATA"],
            "from-env-file",
            id="NEO4J_PASSWORD_FILE-beats-NEO4J_DATA",
        ),
        pytest.param({}, ["NEO4J_DATA"], "from-data-folder", id="NEO4J_DATA-beats-cwd"),
        pytest.param({}, [], "from-cwd", id="cwd-last"),
    ],
)
def test_the_first_source_that_is_set_wins(
    sources: dict[str, Any], given: dict[str, Any], env_keys: Any, expected: str
) -> None:
    env = sources["env"] if env_keys == "all" else {k: sources["env"][k] for k in env_keys}
    kwargs = {k: (sources["password_file"] if v is True else v) for k, v in given.items()}
    assert resolve_password(LOCAL, environ=env, cwd=sources["cwd"], **kwargs) == expected


def test_nothing_set_means_no_password(tmp_path: Path) -> None:
    assert resolve_password(LOCAL, environ={}, cwd=tmp_path) is None
    assert resolve_password(LOCAL, environ={"NEO4J_DATA": str(tmp_path / "none")}, cwd=tmp_path) is None


@pytest.mark.parametrize(
    "uri", ["neo4j://db.example.org:7687", "bolt://10.0.0.5", "neo4j+s://abc.databases.neo4j.io"]
)
def test_the_local_servers_password_is_never_sent_to_another_host(sources: dict[str, Any], uri: str) -> None:
    env = {"NEO4J_DATA": sources["env"]["NEO4J_DATA"]}
    assert resolve_password(uri, environ=env, cwd=sources["cwd"]) is None
    # What a person names explicitly still goes where they say.
    assert resolve_password(uri, environ={**env, "NEO4J_PASSWORD": "mine"}, cwd=sources["cwd"]) == "mine"


@pytest.mark.parametrize(
    ("uri", "loopback"),
    [
        ("bolt://127.0.0.1:7687", True),
        ("neo4j://localhost", True),
        ("bolt://127.3.2.1:1", True),
        ("bolt://[::1]:7687", True),
        ("neo4j://db.example.org:7687", False),
        ("bolt://192.168.1.2:7687", False),
        ("not a uri", False),
    ],
)
def test_is_loopback(uri: str, loopback: bool) -> None:
    assert is_loopback(uri) is loopback


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620, 0o606, 0o660])
def test_a_password_file_group_or_others_can_access_is_refused(tmp_path: Path, mode: int) -> None:
    path = private_file(tmp_path / "password", "long-enough-password", mode)
    with pytest.raises(
        UsageError, match=rf"accessible by group or others \(mode {mode:o}\): chmod 600 {path}$"
    ):
        read_password_file(path)
    with pytest.raises(UsageError):  # found implicitly, it is refused all the same
        resolve_password(LOCAL, environ={"NEO4J_DATA": str(tmp_path)}, cwd=tmp_path)


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_an_owner_only_password_file_is_read(tmp_path: Path, mode: int) -> None:
    assert read_password_file(private_file(tmp_path / "password", "s3cret pass", mode)) == "s3cret pass"


def test_a_missing_or_empty_named_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        resolve_password(LOCAL, password_file=tmp_path / "nope", environ={}, cwd=tmp_path)
    with pytest.raises(UsageError, match="does not exist"):
        resolve_password(LOCAL, environ={"NEO4J_PASSWORD_FILE": str(tmp_path / "nope")}, cwd=tmp_path)
    empty = tmp_path / "empty"
    empty.touch(mode=0o600)
    with pytest.raises(UsageError, match="is empty"):
        read_password_file(empty)


# -- the API's settings ----------------------------------------------------------------------


def test_the_api_finds_the_password_only_for_the_neo4j_backend(tmp_path: Path) -> None:
    private_file(tmp_path / "password", "from-data-folder")
    env = {"NEO4J_DATA": str(tmp_path)}
    assert ServerSettings.from_env(env, backend="neo4j").neo4j_password == "from-data-folder"
    assert ServerSettings.from_env(env).neo4j_password is None  # memory: no Neo4j, no password
    (tmp_path / "password").chmod(0o644)
    assert ServerSettings.from_env(env).backend == "memory"  # a bad file matters only when used
    with pytest.raises(UsageError, match="chmod 600"):
        ServerSettings.from_env(env, backend="neo4j")


def test_the_apis_password_file_option_beats_neo4j_password(tmp_path: Path) -> None:
    path = private_file(tmp_path / "pw", "from-option")
    env = {"NEO4J_PASSWORD": "from-env", "PITH_API_BACKEND": "neo4j"}
    assert ServerSettings.from_env(env).neo4j_password == "from-env"
    assert ServerSettings.from_env(env, neo4j_password_file=str(path)).neo4j_password == "from-option"
    env["NEO4J_PASSWORD_FILE"] = str(path)
    assert ServerSettings.from_env({**env, "NEO4J_PASSWORD": ""}).neo4j_password == "from-option"


# -- the command line ------------------------------------------------------------------------


def pith_graph(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``pith-graph ARGS`` in ``cwd`` with exactly ``env`` (see ``clean_env``)."""
    return run_cli(*args, env=env, inherit_env=False, cwd=cwd, timeout=300)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
    return {**env, **extra}


@pytest.mark.parametrize("how", ["--password-file", "NEO4J_PASSWORD_FILE", "NEO4J_DATA"])
def test_an_open_password_file_is_refused_in_one_line_with_exit_2(
    tmp_path: Path, samples: Path, how: str
) -> None:
    path = private_file(tmp_path / "password", "long-enough-password", 0o644)
    args = ["load", str(samples), "--backend", "neo4j", "--uri", LOCAL]
    env = clean_env()
    if how == "--password-file":
        args += ["--password-file", str(path)]
    else:
        env[how] = str(path) if how == "NEO4J_PASSWORD_FILE" else str(tmp_path)
    done = pith_graph(*args, env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"pith-graph: error: password file {path} is accessible by group or others (mode 644): chmod 600 {path}"
    ]


def test_password_and_password_file_together_are_a_usage_error(tmp_path: Path, samples: Path) -> None:
    done = pith_graph(
        "load",
        str(samples),
        "--backend",
        "neo4j",
        "--password",
        "x" * 8,
        "--password-file",
        "f",
        env=clean_env(),
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1
    assert "not allowed with argument --password" in done.stderr


@pytest.mark.parametrize("found_in", ["NEO4J_DATA", "cwd"])
def test_the_cli_loads_into_the_local_server_with_no_password_option(
    local_server: Neo4jServer, samples: Path, tmp_path: Path, found_in: str
) -> None:
    assert local_server.data is not None and local_server.password_file is not None
    if found_in == "NEO4J_DATA":
        env = clean_env(NEO4J_DATA=str(local_server.data))
    else:  # a checkout whose .neo4j/ holds the server's password file
        env = clean_env()
        (tmp_path / ".neo4j").mkdir()
        shutil.copy2(local_server.password_file, tmp_path / ".neo4j" / "password")
    store = local_server.connect()
    try:
        store.clear()
        done = pith_graph(
            "load",
            str(samples),
            "--backend",
            "neo4j",
            "--uri",
            local_server.uri,
            "--json",
            env=env,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["rejected"] == 0 and report["accepted"] > 0
        assert store.counts().nodes["Paper"] == report["accepted"]
    finally:
        store.close()
