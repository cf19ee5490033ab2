"""A Bolt proxy that counts what a client asks of Neo4j: statements, transactions, their text.

``benchmarks/bench_peer.py`` puts one between a GraphQL server and Neo4j to learn how many
Cypher statements and transactions each server sends per GraphQL request, and how long the
database took over them (Neo4j Community has no query log). It forwards bytes unchanged in
both directions and reads Bolt's framing on the way: the handshake (the classic one and the
5.7+ "manifest" one), then chunked messages. A client's ``RUN`` is a statement (its first
field is the query text); ``BEGIN`` opens an explicit transaction, ``COMMIT``/``ROLLBACK``
close it, and a ``RUN`` outside one is an auto-commit transaction. Every client message but
``GOODBYE`` gets one summary (``SUCCESS``/``FAILURE``/``IGNORED``) in order, so a FIFO pairs
each ``PULL``/``DISCARD`` with its ``RUN``: the statement's time is from the ``RUN`` reaching
the proxy to the summary of its last ``PULL`` leaving the server.

Only for measurements on loopback: it adds a hop, so timed runs connect to Neo4j directly.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["BoltCounter", "Tally"]

MAGIC = b"\x60\x60\xb0\x17"
MANIFEST_V1 = b"\x00\x00\x01\xff"
HELLO, GOODBYE, RESET, BEGIN, COMMIT, ROLLBACK, RUN, DISCARD, PULL = (
    0x01,
    0x02,
    0x0F,
    0x11,
    0x12,
    0x13,
    0x10,
    0x2F,
    0x3F,
)
SUCCESS, RECORD, IGNORED, FAILURE = 0x70, 0x71, 0x7E, 0x7F


@dataclass
class Tally:
    """Counts since the last :meth:`BoltCounter.reset`."""

    statements: int = 0
    explicit_transactions: int = 0
    autocommit_transactions: int = 0
    records: int = 0
    failures: int = 0
    statement_seconds: float = 0.0
    #: query text (whitespace collapsed) -> [count, seconds]
    by_text: dict[str, list[float]] = field(default_factory=dict)
    messages: Counter[int] = field(default_factory=Counter)

    @property
    def transactions(self) -> int:
        return self.explicit_transactions + self.autocommit_transactions


@dataclass
class _Statement:
    """A RUN on its way: its text, when it reached the proxy, its time so far (None: no summary yet)."""

    text: str
    started: float
    seconds: float | None = None


def _string(payload: bytes, offset: int) -> str:
    """The PackStream string at ``offset`` (RUN's first field)."""
    marker = payload[offset]
    if 0x80 <= marker <= 0x8F:
        size, start = marker & 0x0F, offset + 1
    elif marker == 0xD0:
        size, start = payload[offset + 1], offset + 2
    elif marker == 0xD1:
        size, start = int.from_bytes(payload[offset + 1 : offset + 3], "big"), offset + 3
    elif marker == 0xD2:
        size, start = int.from_bytes(payload[offset + 1 : offset + 5], "big"), offset + 5
    else:
        return "?"
    return payload[start : start + size].decode("utf-8", "replace")


class _Messages:
    """Splits one direction's byte stream into Bolt messages (after the handshake)."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.message = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self.buffer += data
        out = []
        while len(self.buffer) >= 2:
            size = int.from_bytes(self.buffer[:2], "big")
            if size == 0:
                del self.buffer[:2]
                if self.message:
                    out.append(bytes(self.message))
                    self.message.clear()
                continue
            if len(self.buffer) < 2 + size:
                break
            self.message += self.buffer[2 : 2 + size]
            del self.buffer[: 2 + size]
        return out


def _varint_end(data: bytes | bytearray, start: int) -> int | None:
    """Index just past a base-128 varint starting at ``start``, or None if incomplete."""
    for index in range(start, len(data)):
        if not data[index] & 0x80:
            return index + 1
    return None


class _Connection:
    """One proxied client connection's parser state."""

    def __init__(self, counter: BoltCounter) -> None:
        self.counter = counter
        self.client_head = bytearray()  # handshake bytes not yet understood
        self.server_head = bytearray()
        self.client_phase = "handshake"  # handshake -> (selection) -> messages
        self.server_phase = "handshake"  # handshake -> (manifest) -> messages
        self.manifest = False
        self.client = _Messages()
        self.server = _Messages()
        self.pending: deque[tuple[int, _Statement | None]] = deque()
        self.in_transaction = False
        self.last_run: _Statement | None = None

    # client -> server
    def from_client(self, data: bytes) -> None:
        if self.client_phase != "messages":
            self.client_head += data
            if self.client_phase == "handshake" and len(self.client_head) >= 20:
                del self.client_head[:20]
                self.client_phase = "selection" if self.manifest else "await"
            if self.client_phase == "await" and self.server_phase != "handshake":
                self.client_phase = "selection" if self.manifest else "messages"
            if self.client_phase == "selection":
                end = _varint_end(self.client_head, 4) if len(self.client_head) > 4 else None
                if end is None:
                    return
                del self.client_head[:end]
                self.client_phase = "messages"
            if self.client_phase != "messages":
                return
            data, self.client_head = bytes(self.client_head), bytearray()
        for message in self.client.feed(data):
            self._client_message(message)

    def _client_message(self, message: bytes) -> None:
        if len(message) < 2:
            return
        signature = message[1]
        tally = self.counter.tally
        with self.counter.lock:
            tally.messages[signature] += 1
            statement: _Statement | None = None
            if signature == RUN:
                statement = _Statement(" ".join(_string(message, 2).split()), time.perf_counter())
                tally.statements += 1
                if not self.in_transaction:
                    tally.autocommit_transactions += 1
            elif signature == BEGIN:
                tally.explicit_transactions += 1
                self.in_transaction = True
            elif signature in (COMMIT, ROLLBACK, RESET):
                self.in_transaction = False
            if signature == GOODBYE:
                return
            if signature in (PULL, DISCARD):
                statement = self.last_run  # a PULL belongs to the connection's latest RUN
            elif signature == RUN:
                self.last_run = statement
            self.pending.append((signature, statement))

    # server -> client
    def from_server(self, data: bytes) -> None:
        if self.server_phase != "messages":
            self.server_head += data
            if self.server_phase == "handshake":
                if len(self.server_head) < 4:
                    return
                if bytes(self.server_head[:4]) == MANIFEST_V1:
                    self.manifest = True
                    self.server_phase = "manifest"
                else:
                    del self.server_head[:4]
                    self.server_phase = "messages"
            if self.server_phase == "manifest":
                end = _varint_end(self.server_head, 4)
                if end is None:
                    return
                count = int(self.server_head[4])  # a handful of versions: one varint byte
                versions_end = end + 4 * count
                capabilities_end = _varint_end(self.server_head, versions_end)
                if capabilities_end is None:
                    return
                del self.server_head[:capabilities_end]
                self.server_phase = "messages"
            data, self.server_head = bytes(self.server_head), bytearray()
        for message in self.server.feed(data):
            self._server_message(message)

    def _server_message(self, message: bytes) -> None:
        if len(message) < 2:
            return
        signature = message[1]
        with self.counter.lock:
            tally = self.counter.tally
            if signature == RECORD:
                tally.records += 1
                return
            if signature not in (SUCCESS, IGNORED, FAILURE) or not self.pending:
                return
            request, statement = self.pending.popleft()
            if signature == FAILURE:
                tally.failures += 1
            if request in (PULL, DISCARD) and statement is not None:
                seconds = time.perf_counter() - statement.started
                entry = tally.by_text.setdefault(statement.text, [0, 0.0])
                if statement.seconds is None:  # the RUN's first PULL summary: count the statement
                    entry[0] += 1
                else:  # a later PULL of the same RUN: its time runs to this summary
                    entry[1] -= statement.seconds
                    tally.statement_seconds -= statement.seconds
                statement.seconds = seconds
                entry[1] += seconds
                tally.statement_seconds += seconds


class BoltCounter:
    """A counting Bolt proxy on 127.0.0.1 in a background thread; ``uri`` is where to point a client."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.lock = threading.Lock()
        self.tally = Tally()
        self.loop = asyncio.new_event_loop()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.uri = f"bolt://127.0.0.1:{self.port}"
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait(10)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", self.port))
        ready.set()
        try:
            self.loop.run_forever()
        finally:
            server.close()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        connection = _Connection(self)
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            return

        async def pipe(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter, parse: Callable[[bytes], None]
        ) -> None:
            try:
                while data := await reader.read(65536):
                    writer.write(data)
                    parse(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                writer.close()

        try:
            await asyncio.gather(
                pipe(client_reader, server_writer, connection.from_client),
                pipe(server_reader, client_writer, connection.from_server),
            )
        except asyncio.CancelledError:  # close(): end quietly (start_server's callback reads the result)
            client_writer.close()
            server_writer.close()

    def reset(self) -> None:
        with self.lock:
            self.tally = Tally()

    def snapshot(self) -> Tally:
        with self.lock:
            return self.tally

    def close(self) -> None:
        """Stop listening, cut the connections still open, stop the thread."""

        async def shutdown() -> None:
            tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self.thread.is_alive():
            asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(10)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
