"""Slow clients cannot hold connections: request headers and bodies must arrive in time.

Over real sockets, against ``pith-graph serve`` (httptools, the parser uvicorn picks) and
against the h11 parser, with both deadlines set to one second.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import h11
import httpx
import orjson
import pytest
from apitest import ThreadServer, address, corpus, memory_reader  # noqa: F401 (fixtures)

from pith_graph.api.app import create_app
from pith_graph.api.limits import RequestLimits
from pith_graph.api.protocols import (
    DEFAULT_MAX_HEAD_BYTES,
    BoundedH11Connection,
    protocol_with_header_timeout,
)
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.testing.serving import serving

BOUND = 1.0  # seconds, for headers and for bodies
SLACK = 1.5  # what a loaded machine may add before the server acts
QUERY = b'{"query": "{ categories { code } }"}'


@pytest.fixture(scope="module")
def served_cli() -> Iterator[tuple[str, int]]:
    env = {"PITH_API_HEADER_TIMEOUT_SECONDS": str(BOUND), "PITH_API_BODY_TIMEOUT_SECONDS": str(BOUND)}
    with serving(["--port", "0", "--workers", "1"], env, stop_timeout=30) as url:
        address = httpx.URL(url)
        assert address.host and address.port
        yield address.host, address.port


@pytest.fixture(scope="module")
def served_h11(memory_reader: MemoryReader) -> Iterator[tuple[str, int]]:
    limits = RequestLimits(body_timeout_seconds=BOUND)
    app = create_app(memory_reader, limits=limits)
    with ThreadServer(app, http=protocol_with_header_timeout(BOUND, parser="h11")) as server:
        yield "127.0.0.1", server.port


def _connect(address: tuple[str, int], data: bytes = b"") -> socket.socket:
    sock = socket.create_connection(address, timeout=30)
    if data:
        sock.sendall(data)
    return sock


def _until_closed(sock: socket.socket, limit: float = 30) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    started = time.monotonic()
    sock.settimeout(limit)
    received = b""
    with sock:
        while chunk := sock.recv(65536):
            received += chunk
    return received, time.monotonic() - started


def _post_head(length: int) -> bytes:
    return (
        b"POST /graphql HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(length).encode() + b"\r\n\r\n"
    )


def test_a_silent_connection_is_closed(address: tuple[str, int]) -> None:
    received, seconds = _until_closed(_connect(address))
    assert received == b""
    assert seconds < BOUND + SLACK


def test_half_a_header_line_is_closed_with_408(address: tuple[str, int]) -> None:
    received, seconds = _until_closed(_connect(address, b"GET /healthz HTTP/1.1\r\nHost: te"))
    assert received.startswith(b"HTTP/1.1 408 ")
    assert seconds < BOUND + SLACK


def test_trickled_headers_gain_no_time(address: tuple[str, int]) -> None:
    sock = _connect(address, b"GET /healthz HTTP/1.1\r\n")
    started = time.monotonic()
    try:
        for _ in range(int((BOUND + SLACK) / 0.2) + 5):
            time.sleep(0.2)
            sock.sendall(b"X-Slow: 1\r\n")
    except OSError:
        pass  # closed by the server, as it should be
    assert time.monotonic() - started < BOUND + SLACK
    received, _ = _until_closed(sock)
    assert not received or received.startswith(b"HTTP/1.1 408 ")


def test_half_a_body_gets_408(address: tuple[str, int]) -> None:
    received, seconds = _until_closed(_connect(address, _post_head(len(QUERY)) + QUERY[:10]))
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ")
    assert orjson.loads(body)["errors"][0]["extensions"]["code"] == "TIMEOUT"
    assert seconds < BOUND + SLACK


@pytest.mark.parametrize(
    ("accept", "media_type", "keys"),
    [
        (b"application/graphql-response+json", b"application/graphql-response+json", ["errors"]),
        (b"application/json", b"application/json", ["data", "errors"]),
    ],
)
def test_half_a_body_gets_408_in_the_media_type_asked_for(
    address: tuple[str, int], accept: bytes, media_type: bytes, keys: list[str]
) -> None:
    """As the view answers its own refusals (api/http.negotiate): graphql-response+json has no
    data entry; either way the answer varies by Accept."""
    head = _post_head(len(QUERY)).replace(b"\r\n\r\n", b"\r\nAccept: " + accept + b"\r\n\r\n")
    received, _ = _until_closed(_connect(address, head + QUERY[:10]))
    head, _, body = received.partition(b"\r\n\r\n")
    headers = dict(line.split(b": ", 1) for line in head.lower().split(b"\r\n")[1:])
    assert head.startswith(b"HTTP/1.1 408 ")
    assert headers[b"content-type"] == media_type
    assert b"accept" in headers[b"vary"]
    assert sorted(orjson.loads(body)) == keys


def test_half_a_get_body_is_not_left_open(address: tuple[str, int]) -> None:
    request = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\nab"
    received, seconds = _until_closed(_connect(address, request))
    assert received.startswith(b"HTTP/1.1 408 ")
    assert seconds < BOUND + SLACK


def test_many_half_sent_bodies_are_all_closed(address: tuple[str, int]) -> None:
    sockets = [_connect(address, _post_head(len(QUERY)) + QUERY[:5]) for _ in range(50)]
    with ThreadPoolExecutor(50) as pool:
        results = list(pool.map(_until_closed, sockets))
    assert all(received.startswith(b"HTTP/1.1 408 ") for received, _ in results)
    assert max(seconds for _, seconds in results) < BOUND + SLACK


def test_normal_and_slow_but_timely_requests_are_unaffected(address: tuple[str, int]) -> None:
    with _connect(address) as sock:
        sock.settimeout(30)
        for pause in (0.0, BOUND * 1.5):  # the deadline counts from a request's first byte
            time.sleep(pause)
            sock.sendall(_post_head(len(QUERY)) + QUERY[:10])
            time.sleep(BOUND / 3)  # a body sent in two parts, within its time
            sock.sendall(QUERY[10:])
            head = b""
            while b"\r\n\r\n" not in head:
                head += sock.recv(65536)
            assert head.startswith(b"HTTP/1.1 200 "), head
            length = int(re.search(rb"content-length: (\d+)", head, re.IGNORECASE).group(1))  # type: ignore[union-attr]
            body = head.partition(b"\r\n\r\n")[2]
            while len(body) < length:
                body += sock.recv(65536)
            assert orjson.loads(body)["data"]["categories"]


def _answer(sock: socket.socket) -> bytes:
    """One answer with a Content-Length, read whole from a kept-alive connection."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    length = int(re.search(rb"content-length: (\d+)", head, re.IGNORECASE).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        body += sock.recv(65536)
    return head


@pytest.mark.parametrize("pause", [None, 0.3], ids=["once", "trickled"])
def test_line_breaks_between_requests_buy_no_time(address: tuple[str, int], pause: float | None) -> None:
    """llhttp skips line breaks before a request line, and uvicorn stopped its keep-alive
    timer at any byte: one CRLF after an answer held the connection for ever (256 such held
    every slot, /healthz 503). The header deadline now runs from them."""
    sock = _connect(address, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    sock.settimeout(30)
    assert _answer(sock).startswith(b"HTTP/1.1 200 ")
    started = time.monotonic()
    try:
        sock.sendall(b"\r\n")
        while pause is not None and time.monotonic() - started < BOUND + SLACK + 1:
            time.sleep(pause)
            sock.sendall(b"\r\n")
    except OSError:
        pass  # closed by the server, as it should be
    received, _ = _until_closed(sock)
    assert not received or received.startswith((b"HTTP/1.1 408 ", b"HTTP/1.1 400 "))  # h11: 400
    assert time.monotonic() - started < BOUND + SLACK + 1.5


@pytest.mark.parametrize("padding", [0, 60_000], ids=["small-body", "64k-body"])
def test_trailer_fields_are_bounded_as_a_head_is(address: tuple[str, int], padding: int) -> None:
    """A chunked body's trailer fields came after the head's bound and before the body's:
    40 MB of them grew the server by 1 GB (uvicorn added each to the request's headers), and
    the request was answered. Past the head's bound (64 KiB, and a read) the connection is
    closed; a trailer within it is dropped, and the request answered."""
    head = b"POST /graphql HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
    body = (
        QUERY[:-1] + b', "padding": "' + b"p" * padding + b'"}'
    )  # a large body earns its framing no trailers
    chunked = head + b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(body) + body + b"\r\n0\r\n"
    # a trailer that would change the answer's media type, were it taken for a header
    with _connect(address, chunked + b"Accept: application/graphql-response+json\r\n\r\n") as sock:
        sock.settimeout(30)
        head = _answer(sock)
        assert head.startswith(b"HTTP/1.1 200 ")
        assert b"content-type: application/json" in head.lower()
    sock = _connect(address, chunked)
    try:
        for _ in range(8):  # 512 KiB of trailer fields (past 64 KiB and a read), then the blank line
            sock.sendall(b"X-Trailer: " + b"a" * 50 + b"\r\n" * 1 + (b"X-More: b\r\n" * 5000))
        sock.sendall(b"\r\n")
    except OSError:
        pass  # closed by the server, as it should be
    try:
        received, seconds = _until_closed(sock)
    except ConnectionResetError:  # closed with fields unread: as it should be
        return
    assert not received.startswith(b"HTTP/1.1 200 "), received[:200]
    assert seconds < BOUND + SLACK


@pytest.mark.parametrize("trailers", [DEFAULT_MAX_HEAD_BYTES - 100, DEFAULT_MAX_HEAD_BYTES + 100, 200_000])
def test_h11_trailer_fields_past_the_heads_bound_are_refused_however_they_arrive(trailers: int) -> None:
    """h11 checks its event-size cap only while an event is incomplete: trailer fields that
    arrived whole in one read (as a slow server's reads of a fast client's bytes do) passed
    up to a read over the head's bound. Fed all at once here, past the bound they are a
    protocol error (uvicorn answers 400 and closes); within it, the request ends."""
    field = b"X-Pad: " + b"a" * 93 + b"\r\n"  # 102 bytes, on the wire and as counted
    request = (
        b"POST /graphql HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n"
    )
    count = trailers // len(field)
    connection = BoundedH11Connection(DEFAULT_MAX_HEAD_BYTES)
    connection.receive_data(request + field * count + b"\r\n")
    events = [connection.next_event(), connection.next_event()]
    assert isinstance(events[0], h11.Request) and isinstance(events[1], h11.Data)
    if count * len(field) > DEFAULT_MAX_HEAD_BYTES:
        with pytest.raises(h11.RemoteProtocolError):
            connection.next_event()
    else:
        assert isinstance(connection.next_event(), h11.EndOfMessage)
