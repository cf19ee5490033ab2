"""Servers started on "a free port": a port taken between the pick and the server's bind is
left for others, and a held port refuses connections for as long as it is held."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from pathlib import Path

import pytest
from conftest import alive, script

from pith_graph.loader.bulk.ports import (
    START_ATTEMPTS,
    free_ports,
    held_port,
    port_taken,
    start_on_free_ports,
)


def _start(data: Path, bolt: int, http: int, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``scripts/neo4j start`` of ``data`` on these ports, without authentication."""
    return script(
        data,
        "start",
        timeout=timeout,
        NEO4J_AUTH="none",
        NEO4J_BOLT_PORT=str(bolt),
        NEO4J_HTTP_PORT=str(http),
    )


def _processes_in(folder: Path) -> list[int]:
    """The live processes whose working folder is ``folder`` (a server's is its data folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if Path(os.readlink(entry / "cwd")) == folder.resolve() and alive(int(entry.name)):
                    found.append(int(entry.name))
    return found


@pytest.mark.own_server
def test_a_start_that_runs_out_of_its_timeout_leaves_no_server_behind(tmp_path: Path) -> None:
    """A test's own timeout on ``scripts/neo4j start`` killed the script, not the server it had
    begun (detached: setsid), which then ran on after the test run."""
    data = tmp_path / "data"
    bolt, http = free_ports(2)
    try:
        with pytest.raises(subprocess.TimeoutExpired):  # a JVM takes longer than this to start Neo4j
            _start(data, bolt, http, timeout=3)
        assert _processes_in(data) == []
    finally:
        script(data, "stop")


@pytest.mark.own_server
@pytest.mark.parametrize("which", [0, 1], ids=["bolt", "http"])
def test_a_port_taken_before_the_server_binds_it_is_left_for_others(tmp_path: Path, which: int) -> None:
    """The port is taken after it was picked, before the JVM binds it (seconds later), as the
    local end of another process's connection (the kernel hands out the same range for both;
    ``scripts/neo4j``'s own check sees no listener there). The start says the port is in use,
    and the caller starts again on others: under CI this failed the session's server, so every
    Neo4j test."""
    data = tmp_path / "data"
    listener = socket.create_server(("127.0.0.1", 0))
    taker = socket.socket()
    outcomes: list[subprocess.CompletedProcess[str]] = []
    tried: list[tuple[int, int]] = []

    def start(bolt: int, http: int) -> subprocess.CompletedProcess[str]:
        tried.append((bolt, http))
        if len(tried) == 1:  # the first pick is taken meanwhile
            taker.bind(("127.0.0.1", (bolt, http)[which]))
            taker.connect(listener.getsockname())
        outcomes.append(_start(data, bolt, http))
        return outcomes[-1]

    try:
        done = start_on_free_ports(start)
    finally:
        script(data, "stop")
        taker.close()
        listener.close()
    first = outcomes[0]
    assert port_taken(first), first.stderr
    assert "the server exited during start-up" in first.stderr, first.stderr
    assert done.returncode == 0, done.stderr
    assert len(tried) == 2 and done.stdout.strip().splitlines()[-1] == f"bolt://127.0.0.1:{tried[1][0]}"
    assert not (data / "neo4j.pid").exists()


def test_a_start_is_tried_again_only_while_a_port_was_taken() -> None:
    taken = subprocess.CompletedProcess(
        ["start"], 1, "", "neo4j: ERROR: 127.0.0.1:1 is already in use by x\n"
    )
    other = subprocess.CompletedProcess(["start"], 1, "", "neo4j: ERROR: the server exited during start-up\n")
    calls: list[tuple[int, int]] = []

    def always(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
        def start(bolt: int, http: int) -> subprocess.CompletedProcess[str]:
            calls.append((bolt, http))
            return result

        return start_on_free_ports(start)

    assert always(taken) is taken and len(calls) == START_ATTEMPTS  # then it gives up, saying so
    assert all(bolt != http for bolt, http in calls)
    calls.clear()
    assert always(other) is other and len(calls) == 1  # not a port: once
    assert not port_taken(subprocess.CompletedProcess(["start"], 0, "bolt://x\n", "already in use\n"))


def test_a_held_port_refuses_connections_and_cannot_be_listened_on() -> None:
    with held_port() as port:
        with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        with (
            pytest.raises(OSError, match="Address already in use"),
            socket.create_server(("127.0.0.1", port)),
        ):
            pass
    with socket.create_server(("127.0.0.1", port)):  # let go: free again
        pass


def test_free_ports_differ() -> None:
    assert len(set(free_ports(8))) == 8
