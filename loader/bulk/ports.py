"""Loopback ports for servers started on "a free port": picked, and picked again when taken.

A port found free (bound to port 0, then closed) is free only at that moment: before the
server binds it, seconds later (a JVM's start-up), another process may take it, for a server
of its own or as the local end of a connection (the kernel hands out the same range to
both). ``scripts/neo4j start`` then fails saying the port ``is already in use``;
:func:`start_on_free_ports` starts again on other ports. :func:`held_port` is a port that
stays closed: bound, never listening, so connections to it are refused and nothing else can
listen there while it is held.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

__all__ = [
    "PORT_TAKEN",
    "START_ATTEMPTS",
    "free_port",
    "free_ports",
    "held_port",
    "port_taken",
    "start_on_free_ports",
]

#: What ``scripts/neo4j start`` says when a port was in use: before the start (another
#: process listens there) or during it (taken before the JVM bound it).
PORT_TAKEN = "already in use"
#: Starts on fresh ports before giving up: each collision is a chance of about one in ten
#: thousand, so a second one in a row means something else is wrong.
START_ATTEMPTS = 5


def free_port() -> int:
    """A port on 127.0.0.1 that nothing uses now (it may be taken before it is bound)."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` different ports on 127.0.0.1 that nothing uses now (all bound at once, so
    none is picked twice)."""
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in socks]


@contextmanager
def held_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections while the block runs: bound here, never
    listened on (no other process can listen there, unlike a :func:`free_port`)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        yield port


def port_taken(done: subprocess.CompletedProcess[str]) -> bool:
    """Whether a ``scripts/neo4j start`` failed because one of its ports was in use."""
    return done.returncode != 0 and PORT_TAKEN in done.stderr


def start_on_free_ports(
    start: Callable[[int, int], subprocess.CompletedProcess[str]], attempts: int = START_ATTEMPTS
) -> subprocess.CompletedProcess[str]:
    """``start(bolt_port, http_port)`` on two free ports; again on two others, up to
    ``attempts`` starts in all, while it fails because a port was taken (:func:`port_taken`).
    The last start's outcome, whatever it is."""
    done = start(*free_ports(2))
    for _ in range(attempts - 1):
        if not port_taken(done):
            break
        done = start(*free_ports(2))
    return done
