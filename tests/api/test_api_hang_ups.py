"""A client that hangs up stops its request (api/guard.py): its execution is cancelled
before the next read, not left to run to its time limit for nobody.

Before, a hostile client could send requests and drop each connection at once: holding no
connection, past the server's limit on them, it kept any number of executions running (on
Neo4j, 61 transactions still running 2 s after 400 such requests, and /healthz 25 s late).
Over a real socket, against uvicorn, with a reader that counts its reads.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator, Sequence
from typing import Any

import orjson
import pytest
from apitest import corpus, memory_reader, served  # noqa: F401 (fixtures)

from pith_graph.api.app import create_app
from pith_graph.api.limits import RequestLimits
from pith_graph.api.loops import LoopThreads
from pith_graph.api.reads.memory import MemoryReader

#: Three levels of reads: the page, then its authors' papers, then theirs. Costly enough
#: (1,310) to run on the execution threads, as heavy queries do, planned or not.
QUERY = (
    "{ papers(first: 10) { nodes { authors(first: 5) { papers(first: 5) { nodes { authors(first: 2) { "
    "papers(first: 1) { nodes { title } } } } } } } } }"
)


class SlowFirstRead(MemoryReader):
    """The corpus; its page of papers takes ``delay`` seconds, and it counts the reads of
    authors' papers (the levels below)."""

    def __init__(self, graph: Any, delay: float) -> None:
        super().__init__(graph)
        self.delay = delay
        self.later_reads = 0

    def list_papers(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(self.delay)
        return super().list_papers(*args, **kwargs)

    def papers_of_authors(self, *args: Any, **kwargs: Any) -> Any:
        self.later_reads += 1
        return super().papers_of_authors(*args, **kwargs)


@pytest.fixture
def slow(memory_reader: MemoryReader, corpus: Any) -> Iterator[tuple[SlowFirstRead, tuple[str, int]]]:
    reader = SlowFirstRead(memory_reader.G, delay=0.5)
    threads = LoopThreads(1)  # as serve runs the memory backend: executions off the loop
    app = create_app(
        reader, keyring=corpus.keyring, limits=RequestLimits(), threads=threads, on_shutdown=threads.close
    )
    with served(app, "memory", reader) as api:
        host, port = api.url.removeprefix("http://").split(":")
        yield reader, (host, int(port))


def _post(address: tuple[str, int], query: str) -> socket.socket:
    body = orjson.dumps({"query": query})
    head = f"POST /graphql HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    sock = socket.create_connection(address, timeout=30)
    sock.sendall(head.encode() + body)
    return sock


def _answer(sock: socket.socket) -> bytes:
    received = b""
    with sock:
        while chunk := sock.recv(65536):
            received += chunk
            if b"\r\n\r\n" in received and received.endswith(b"}"):
                break
    return received


def _reads_after(reader: SlowFirstRead, queries: Sequence[str], address: tuple[str, int]) -> int:
    reader.later_reads = 0
    for query in queries:
        sock = _post(address, query)
        time.sleep(0.1)  # the execution is in its first, slow read
        sock.close()
    time.sleep(1.5)  # what an execution left running would read meanwhile
    return reader.later_reads


def test_a_request_whose_client_hangs_up_reads_no_further(
    slow: tuple[SlowFirstRead, tuple[str, int]],
) -> None:
    reader, address = slow
    answered = _answer(_post(address, QUERY + " # answered"))  # the same request, waited for
    assert answered.startswith(b"HTTP/1.1 200 ") and b'"errors"' not in answered
    assert reader.later_reads > 0, "the query reads below its first level"
    # New documents: the resolvers execute them (aborted, as at the time limit).
    assert _reads_after(reader, [QUERY + f" # {index}" for index in range(3)], address) == 0
    # The document answered above, again: its plan runs (cancelled).
    assert _reads_after(reader, [QUERY + " # answered"] * 3, address) == 0
    # The server goes on answering.
    assert _answer(_post(address, "{ categories { code } }")).startswith(b"HTTP/1.1 200 ")
