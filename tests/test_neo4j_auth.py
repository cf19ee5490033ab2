"""Finding the Neo4j password without typing it (``loader/stores/neo4j_auth.py``), and the CLI
and the API using it: the order of the sources, private password files only, the local
server's file never sent to another host, and ``pith-graph load`` into a server with
authentication on and no password option.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Neo4jServer

from pith_graph.api.settings import ServerSettings
from pith_graph.errors import StoreError, UsageError
from pith_graph.loader.bulk.ports import held_port
from pith_graph.loader.stores.neo4j_auth import (
    MAX_PASSWORD_FILE_BYTES,
    check_listener,
    is_loopback,
    read_password_file,
    resolve_password,
)
from pith_graph.testing import run_cli

LOCAL = "bolt://127.0.0.1:7687"
NOBODY = 65534


class Listener:
    """A socket listening on a free loopback port, created as ``uid``; :meth:`serve` answers
    one connection like a Bolt server accepting any login (fakebolt) and keeps what it got."""

    def __init__(self, uid: int | None = None) -> None:
        if uid is not None:
            os.seteuid(uid)  # a socket belongs to the (effective) uid that creates it
        try:
            self.sock = socket.socket()
        finally:
            if uid is not None:
                os.seteuid(0)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.uri = f"bolt://127.0.0.1:{self.sock.getsockname()[1]}"
        self.received = b""
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def serve(self) -> Listener:
        self.thread.start()
        return self

    def _serve(self) -> None:
        self.sock.settimeout(60)
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(2)
            try:
                self.received += conn.recv(20)  # magic and versions
                conn.sendall(bytes([0, 0, 4, 5]))  # Bolt 5.4
                for _ in range(4):
                    data = conn.recv(65536)
                    if not data:
                        break
                    self.received += data
                    conn.sendall(bytes([0, 3, 0xB1, 0x70, 0xA0, 0, 0]))  # SUCCESS {}
            except OSError:
                pass  # the client hung up: what it sent is kept

    def close(self) -> None:
        with contextlib.suppress(OSError):  # not listening any more
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes a waiting accept()
        self.sock.close()
        if self.thread.is_alive():
            self.thread.join(timeout=10)


@pytest.fixture
def own_listener() -> Iterator[Listener]:
    """A loopback listener of this user's: the local password file may go there."""
    listener = Listener()
    yield listener
    listener.close()


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
    sources: dict[str, Any], given: dict[str, Any], env_keys: Any, expected: str, own_listener: Listener
) -> None:
    env = sources["env"] if env_keys == "all" else {k: sources["env"][k] for k in env_keys}
    kwargs = {k: (sources["password_file"] if v is True else v) for k, v in given.items()}
    assert resolve_password(own_listener.uri, environ=env, cwd=sources["cwd"], **kwargs) == expected


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


def test_a_device_is_refused_as_a_device_not_for_its_mode() -> None:
    """``/dev/null`` (mode 666) was refused with "chmod 600 /dev/null" as its advice."""
    with pytest.raises(UsageError) as refused:
        read_password_file("/dev/null")
    assert str(refused.value) == (
        "password file /dev/null is not a regular file or a pipe (a device or socket)"
    )


@pytest.mark.parametrize(
    ("text", "password"),
    [
        pytest.param("a\vb\fc\x1cd\u2028e\u0085f\nsecond", "a\vb\fc\x1cd\u2028e\u0085f", id="only-line-ends"),
        pytest.param("crlf pass\r\nsecond", "crlf pass", id="crlf"),
        pytest.param("cr pass\rsecond", "cr pass", id="cr"),
        pytest.param("no newline", "no newline", id="no-newline"),
    ],
)
def test_the_first_line_is_split_as_the_launcher_splits_it(tmp_path: Path, text: str, password: str) -> None:
    """Java's String.lines() (scripts/neo4j's launcher) ends a line at \\n, \\r\\n, \\r only."""
    path = tmp_path / "password"
    path.write_bytes(text.encode("utf-8"))
    path.chmod(0o600)
    assert read_password_file(path) == password


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


def test_a_password_file_may_be_a_pipe_but_never_blocks_and_is_bounded(tmp_path: Path, samples: Path) -> None:
    """A pipe (``--password-file <(pass neo4j)``) is read; a FIFO no process writes to is
    empty at once, not waited on (it blocked the command for ever); a file of 100 MB was
    read whole (430 MB of memory), then reported as the server refusing it."""
    read, write = os.pipe()
    os.write(write, b"from-a-pipe\n")
    os.close(write)
    try:
        assert read_password_file(f"/dev/fd/{read}") == "from-a-pipe"
    finally:
        os.close(read)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(UsageError, match="is empty"):
        read_password_file(fifo)
    done = pith_graph(
        "load", str(samples), "--backend", "neo4j", "--uri", LOCAL, "--password-file", str(fifo),
        env=clean_env(), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and f"password file {fifo} is empty" in done.stderr, done.stderr
    large = private_file(tmp_path / "large", "x" * (MAX_PASSWORD_FILE_BYTES + 1))
    with pytest.raises(UsageError, match=f"holds more than {MAX_PASSWORD_FILE_BYTES} bytes"):
        read_password_file(large)
    at_most = "y" * (MAX_PASSWORD_FILE_BYTES - 1)  # and its line break
    assert read_password_file(private_file(tmp_path / "ok", at_most)) == at_most


# -- the API's settings ----------------------------------------------------------------------


def test_the_api_finds_the_password_only_for_the_neo4j_backend(
    tmp_path: Path, own_listener: Listener
) -> None:
    private_file(tmp_path / "password", "from-data-folder")
    env = {"NEO4J_DATA": str(tmp_path), "NEO4J_URI": own_listener.uri}
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


# -- the local password goes only to a listener of the file's owner ---------------------------


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root (another uid's socket)"
)
def test_the_local_password_is_not_sent_to_another_users_listener(tmp_path: Path, samples: Path) -> None:
    path = private_file(tmp_path / "data" / "password", "local-server-secret")
    listener = Listener(uid=NOBODY).serve()
    try:
        args = ["load", str(samples), "--backend", "neo4j", "--uri", listener.uri]
        done = pith_graph(*args, env=clean_env(NEO4J_DATA=str(path.parent)), cwd=tmp_path)
    finally:
        listener.close()
    assert b"local-server-secret" not in listener.received
    assert listener.received == b""  # not even a handshake
    port = listener.uri.rsplit(":", 1)[1]
    assert done.returncode == 3
    assert done.stderr.splitlines() == [
        f"pith-graph: store error: auth: the listener on 127.0.0.1 port {port} is owned by uid "
        f"{NOBODY}, but the password file {path} belongs to uid 0: its password was not sent "
        "(is the local server running, as the file's owner? scripts/neo4j start)"
    ]
    # What a person names explicitly is theirs to send.
    assert resolve_password(listener.uri, password_file=path, environ={}) == "local-server-secret"


def test_no_listener_no_local_password(tmp_path: Path) -> None:
    private_file(tmp_path / "password", "local-server-secret")
    with (
        held_port() as port,
        pytest.raises(  # bound, not listened on: nobody listens there
            StoreError,
            match=r"^unavailable: cannot reach Neo4j at bolt://127.0.0.1:\d+: nothing listens on 127.0.0.1 port \d+, so the",
        ) as err,
    ):
        resolve_password(f"bolt://127.0.0.1:{port}", environ={"NEO4J_DATA": str(tmp_path)}, cwd=tmp_path)
    assert err.value.code == "unavailable"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["schema", "--uri", "http://127.0.0.1:7474"],
            "bad Neo4j URI 'http://127.0.0.1:7474': http:// is not",
        ),
        (
            ["serve", "--backend", "neo4j", "--port", "0", "bundles/"],
            "--backend neo4j serves what the database",
        ),
    ],
    ids=["http-uri", "serve-paths"],
)
def test_a_usage_error_is_said_before_the_local_password_is_looked_for(
    tmp_path: Path, args: list[str], said: str
) -> None:
    """Run where a local server's password lies (``.neo4j/password``, nothing listening): a
    wrong command line is still a usage error (exit 2), not ``unavailable`` (exit 3) from the
    listener check of a password no driver would send. Before, both exited 3."""
    private_file(tmp_path / ".neo4j" / "password", "local-server-secret")
    done = pith_graph(*args, env=clean_env(), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"pith-graph: error: {said}"), done.stderr


def test_a_listener_of_the_files_owner_gets_the_connection(
    tmp_path: Path, samples: Path, own_listener: Listener
) -> None:
    path = private_file(tmp_path / "data" / "password", "local-server-secret")
    own_listener.serve()
    args = ["load", str(samples), "--backend", "neo4j", "--uri", own_listener.uri]
    done = pith_graph(*args, env=clean_env(NEO4J_DATA=str(path.parent)), cwd=tmp_path)
    own_listener.close()
    assert "password was not sent" not in done.stderr
    assert own_listener.received.startswith(bytes.fromhex("6060b017"))  # Bolt's magic: it connected


def proc_line(address: str, port: int, uid: int) -> str:
    return (
        f"   0: {address}:{port:04X} 00000000:0000 0A 00000000:00000000 00:00000000 00000000 {uid:5d} 0 1\n"
    )


@pytest.mark.parametrize(
    ("tcp", "tcp6", "refused"),
    [
        pytest.param(None, None, False, id="no-proc-net-tcp-no-check"),
        pytest.param("0100007F", None, False, id="loopback-owner"),
        pytest.param("00000000", None, False, id="wildcard-owner"),
        pytest.param(
            None, "00000000000000000000000000000000", True, id="owner-missing-other-uid-on-ipv6-any"
        ),
        pytest.param("0100007F", "0000000000000000FFFF00000100007F", True, id="other-uid-on-ipv4-mapped"),
        pytest.param("0200007F", "00000000000000000000000001000000", True, id="none-on-the-address"),
    ],
)
def test_check_listener_reads_proc_net(
    tmp_path: Path, tcp: str | None, tcp6: str | None, refused: bool
) -> None:
    """The owner's socket on ``tcp``; another uid's on ``tcp6`` (little-endian words)."""
    path = private_file(tmp_path / "password", "secret-secret")
    owner, other = path.stat().st_uid, path.stat().st_uid + 1000
    proc = tmp_path / "net"
    proc.mkdir()
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
    if tcp is not None or tcp6 is not None:
        (proc / "tcp").write_text(header + (proc_line(tcp, 7687, owner) if tcp else ""))
    if tcp6 is not None:
        (proc / "tcp6").write_text(header + proc_line(tcp6, 7687, other) + proc_line(tcp6, 7688, owner))
    if refused:
        with pytest.raises(
            StoreError, match=r"(port 7687 is owned by uid|nothing listens on 127.0.0.1 port 7687)"
        ):
            check_listener(LOCAL, path, proc=str(proc))
    else:
        check_listener(LOCAL, path, proc=str(proc))
