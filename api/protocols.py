"""uvicorn's HTTP protocols with bounds on a request's head and on sending its answer.

uvicorn closes a keep-alive connection left idle, but otherwise trusts the client:

* **Header deadline.** It waits forever for the headers of a request: a client that trickles
  a header line a byte at a time, or connects and says nothing, holds a connection (and a
  file descriptor) as long as it likes (slowloris). Here every request has ``header_timeout``
  seconds, counted from the connection's start for its first request and from the request's
  first byte for the next ones on a keep-alive connection, to finish its headers. Past that
  the connection is closed, after a ``408 Request Timeout`` if part of a request had arrived
  (and no response is being written).
* **Head size.** httptools buffers a request line or a header of any length (h11 stops at
  16 KiB, shorter than a long GET query). Here the request line and headers together may
  take ``max_head_bytes``; beyond, the answer is ``414 URI Too Long`` (the request line is
  not complete yet) or ``431 Request Header Fields Too Large``, and the connection is closed.
* **Send deadline.** An answer is handed to the socket; what the socket's buffers cannot take
  waits in the server's memory until the client reads it, for ever if it never does. Here a
  client must take at least :data:`MIN_SEND_PROGRESS` bytes of what waits (or all of it)
  in every ``send_timeout`` seconds, else the connection is dropped: a slow but steady
  reader keeps its connection, one that stops reading (or trickles) does not.

After the head, what is not body (httptools: chunk framing and trailer fields, which it
drops; h11: trailer fields) is bounded as a head is; httptools' protocol starts the header
deadline at line breaks sent between requests. The request *body* is bounded in the ASGI layer (:class:`pith_graph.api.guard.Guard`), which
answers 408 with a GraphQL error. :func:`protocol_with_header_timeout` picks the parser
uvicorn would (httptools when installed, else h11).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from pith_graph.api.http import accept_of, coded_refusal

__all__ = [
    "DEFAULT_MAX_HEAD_BYTES",
    "DEFAULT_SEND_TIMEOUT",
    "MIN_SEND_PROGRESS",
    "BoundedH11Connection",
    "HeadSize",
    "HeaderDeadline",
    "protocol_with_header_timeout",
    "too_many_connections",
]

log = logging.getLogger("pith_graph.api.protocols")

#: Request line and headers, together (a GET's query string included).
DEFAULT_MAX_HEAD_BYTES = 65536
#: Seconds in which a client must take MIN_SEND_PROGRESS bytes of an answer waiting for it.
DEFAULT_SEND_TIMEOUT = 30.0
#: Bytes a client must take in every ``send_timeout`` seconds while an answer waits for it.
MIN_SEND_PROGRESS = 16 * 1024
#: Most a single read hands a protocol (asyncio's selector transports read 256 KiB at most).
_MAX_READ = 262144


def _plain(status: bytes, message: bytes) -> bytes:
    return (
        b"HTTP/1.1 " + status + b"\r\n"
        b"content-type: text/plain; charset=utf-8\r\n"
        b"content-length: " + str(len(message)).encode() + b"\r\n"
        b"connection: close\r\n\r\n" + message
    )


_REQUEST_TIMEOUT = _plain(b"408 Request Timeout", b"The request headers did not arrive in time.\n")


class HeaderDeadline:
    """The timer of one connection: started when headers are awaited, stopped when they are
    complete; when it fires, the connection is closed."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        seconds: float,
        transport: asyncio.Transport,
        responding: Callable[[], bool],
    ) -> None:
        self.loop, self.seconds, self.transport, self.responding = loop, seconds, transport, responding
        self.begun = False
        self._timer: asyncio.TimerHandle | None = None

    def start(self, *, begun: bool) -> None:
        """Headers are awaited (``begun``: part of a request has arrived). A running timer
        keeps its deadline: sending a byte now and then does not buy time."""
        self.begun = self.begun or begun
        if self._timer is None:
            self._timer = self.loop.call_later(self.seconds, self._expired)

    def stop(self) -> None:
        """The headers are complete (or the connection is gone)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.begun = False

    def _expired(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        log.debug("closing a connection whose request headers took over %g s", self.seconds)
        if self.begun and not self.responding():
            self.transport.write(_REQUEST_TIMEOUT)
        self.transport.close()


class HeadSize:
    """The bytes of a request head (request line and headers) received so far, counted up
    to the blank line that ends it, before the parser sees them.

    >>> head = HeadSize(20)
    >>> head.add(b"GET /abcdefghijklmnopqrstu"); head.over(), head.refusal()[:21]
    (True, b'HTTP/1.1 414 URI Too ')
    >>> head.reset(); head.add(b"GET / HTTP/1.1\\r\\nX: 12345"); head.refusal()[:25]
    b'HTTP/1.1 431 Request Head'
    >>> head.reset(); head.add(b"GET / HTTP/1.1\\r"); head.add(b"\\n\\r\\nbody"); head.size, head.over()
    (18, False)
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.reset()

    def reset(self) -> None:
        """A new head is awaited."""
        self.size = 0
        self.line_size: int | None = None  # the request line's, once complete
        self.complete = False
        self._tail = b""

    def add(self, data: bytes) -> None:
        """Count ``data``, received while the head was awaited, up to the head's end."""
        if self.complete:
            return
        probe = self._tail + data[:3]  # the blank line may straddle two reads
        across = probe.find(b"\r\n\r\n")
        end = across + 4 - len(self._tail) if across >= 0 else data.find(b"\r\n\r\n")
        if across < 0 and end >= 0:
            end += 4
        counted = data if end < 0 else data[:end]
        if self.line_size is None and (newline := counted.find(b"\n")) >= 0:
            self.line_size = self.size + newline + 1
        self.size += len(counted)
        self.complete = end >= 0
        self._tail = (self._tail + data[-3:])[-3:]

    def over(self) -> bool:
        return self.size > self.limit

    def refusal(self) -> bytes:
        """The answer to a head over the limit: 414 when the request line alone is, else 431."""
        if self.line_size is not None and self.line_size <= self.limit:
            message = f"The request line and headers are larger than {self.limit} bytes.\n"
            return _plain(b"431 Request Header Fields Too Large", message.encode())
        message = f"The request line is longer than {self.limit} bytes: send long queries by POST.\n"
        return _plain(b"414 URI Too Long", message.encode())


_TOO_MANY = "The server has too many connections open: try again shortly."


async def too_many_connections(scope: Any, receive: Any, send: Any) -> None:
    """The ASGI app of a connection over the cap: each request answered 503 (coded JSON, in
    the media type it accepts, as the guard's refusals), then the connection closed."""
    headers, body = coded_refusal(_TOO_MANY, "SERVICE_UNAVAILABLE", accept_of(scope.get("headers", ())))
    headers += [(b"retry-after", b"1"), (b"x-content-type-options", b"nosniff"), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _Bounded(asyncio.Protocol):
    """What both parsers' protocols share: the header deadline, the head size, the send
    deadline and the cap on connections (uvicorn's methods extended, then called)."""

    header_timeout = 10.0
    max_head_bytes = DEFAULT_MAX_HEAD_BYTES
    send_timeout = DEFAULT_SEND_TIMEOUT
    max_connections: int | None = None
    over_limit_app: Any = staticmethod(too_many_connections)  # serve.py adds CORS to it
    app: Any
    connections: set[Any]
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    deadline: HeaderDeadline
    head: HeadSize
    cycle: Any
    _send_timer: asyncio.TimerHandle | None = None
    _unsent = 0  # bytes waiting when the send timer was last armed

    def _bound(self, transport: asyncio.Transport) -> None:
        """Start bounding ``transport``: what of an answer the socket cannot take at once
        pauses writing (:meth:`pause_writing` starts the send deadline) until taken."""
        transport.set_write_buffer_limits(high=0, low=0)
        if self.max_connections is not None and len(self.connections) > self.max_connections:
            # Only this connection is over the cap, its requests answered 503 (uvicorn's
            # limit_concurrency answered all while over: 257 idle sockets shut clients out).
            self.app = self.over_limit_app
        self.head = HeadSize(self.max_head_bytes)
        self.deadline = HeaderDeadline(self.loop, self.header_timeout, transport, self._responding)
        self.deadline.start(begun=False)

    def _responding(self) -> bool:
        """Whether an answer is being written (uvicorn's request-response cycle)."""
        return self.cycle is not None and not self.cycle.response_complete

    def _refuse_head(self) -> None:
        if self.transport.is_closing():
            return
        log.debug("closing a connection whose request head is over %d bytes", self.max_head_bytes)
        self.deadline.stop()
        if not self._responding():
            self.transport.write(self.head.refusal())
        self.transport.close()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._send_timer is None:
            self._arm_send_timer()

    def _arm_send_timer(self) -> None:
        self._unsent = self.transport.get_write_buffer_size()
        self._send_timer = self.loop.call_later(self.send_timeout, self._send_expired)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._stop_send_timer()

    def _stop_send_timer(self) -> None:
        if self._send_timer is not None:
            self._send_timer.cancel()
            self._send_timer = None

    def _send_expired(self) -> None:
        self._send_timer = None
        if self._unsent - self.transport.get_write_buffer_size() >= MIN_SEND_PROGRESS:
            self._arm_send_timer()  # slow, but reading: another period
            return
        log.debug("dropping a connection whose client did not read its answer in %g s", self.send_timeout)
        self.transport.abort()  # close() would wait for the client to read what is left

    def connection_lost(self, exc: Exception | None) -> None:
        self.deadline.stop()
        self._stop_send_timer()
        super().connection_lost(exc)


class BoundedH11Connection(h11.Connection):
    """h11's server side, trailer fields bounded as a head is: h11 checks its event size only
    while an event is incomplete (trailers whole in one read got up to a read past it)."""

    def __init__(self, max_head_bytes: int) -> None:  # h11's 16 KiB would refuse heads first
        super().__init__(h11.SERVER, max_incomplete_event_size=max_head_bytes + _MAX_READ)
        self.max_head_bytes = max_head_bytes

    def next_event(self) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:
        event = super().next_event()
        trailers = event.headers if isinstance(event, h11.EndOfMessage) else ()
        if sum(len(name) + len(value) + 4 for name, value in trailers) > self.max_head_bytes:
            raise h11.RemoteProtocolError("trailer fields past the head's bound")  # uvicorn: 400
        return event


class H11WithHeaderTimeout(_Bounded, H11Protocol):
    """uvicorn's h11 protocol, bounded (:class:`_Bounded`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = BoundedH11Connection(self.max_head_bytes)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._bound(transport)

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:
            self.head.add(data)
            if self.head.over():
                self._refuse_head()
                return
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self.deadline.stop()  # h11 leaves IDLE once a request's headers are complete
            self.head.reset()
        elif self.head.size:
            self.deadline.start(begun=True)  # part of a request line or headers is buffered


def _httptools_protocol() -> type[_Bounded] | None:
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # pragma: no cover - httptools is a dependency
        return None

    class HttpToolsWithHeaderTimeout(_Bounded, HttpToolsProtocol):
        """uvicorn's httptools protocol, bounded (:class:`_Bounded`), and:

        * bytes between requests that begin none (llhttp skips line breaks before a request
          line, and uvicorn stops its keep-alive timer at any byte) start the header deadline:
          a line break now and then used to hold a connection for ever;
        * a request's trailer fields may take ``max_head_bytes``, and all it sends after its
          head other than body bytes (chunk framing, trailers) that, one read and 8 bytes per
          body byte (the framing of tiny chunks); beyond, the connection is closed. Trailer
          fields are dropped (RFC 9110 lets a recipient): uvicorn added each to the request's
          headers, and 40 MB of them grew the server by 1 GB."""

        in_head = True  # awaiting (the rest of) a request line and headers
        _rest = 0  # bytes of the read being parsed that follow the head
        _after_head = 0  # bytes received since the head ended
        _body = 0  # body bytes among them
        _trailers = 0  # bytes of the trailer fields among them

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._bound(transport)

        def data_received(self, data: bytes) -> None:
            if self.in_head:
                counted = self.head.size
                self.head.add(data)
                if self.head.over():
                    self._refuse_head()
                    return
                self._rest = len(data) - (self.head.size - counted)
            else:
                self._after_head += len(data)
            super().data_received(data)
            if self.transport.is_closing():
                return
            if self.in_head:
                if not self._responding():
                    self.deadline.start(begun=False)  # a running deadline keeps its time
            elif self._after_head - self._body > self.max_head_bytes + _MAX_READ + 8 * self._body:
                log.debug(
                    "closing a connection whose request sent over %d bytes of framing and trailers",
                    self.max_head_bytes,
                )
                self.transport.close()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.deadline.start(begun=True)

        def on_header(self, name: bytes, value: bytes) -> None:
            if self.in_head:
                super().on_header(name, value)
                return
            self._trailers += len(name) + len(value) + 4  # a trailer field: dropped, counted
            if self._trailers > self.max_head_bytes and not self.transport.is_closing():
                log.debug(
                    "closing a connection whose request sent over %d bytes of trailers", self.max_head_bytes
                )
                self.transport.close()

        def on_headers_complete(self) -> None:
            self.deadline.stop()
            self.in_head = False
            self.head.reset()
            self._after_head, self._body, self._trailers = self._rest, 0, 0
            super().on_headers_complete()

        def on_body(self, body: bytes) -> None:
            self._body += len(body)
            super().on_body(body)

        def on_message_complete(self) -> None:
            self.in_head = True
            super().on_message_complete()

    return HttpToolsWithHeaderTimeout


def protocol_with_header_timeout(
    seconds: float,
    *,
    parser: str = "auto",
    max_head_bytes: int = DEFAULT_MAX_HEAD_BYTES,
    send_timeout: float = DEFAULT_SEND_TIMEOUT,
    max_connections: int | None = None,
    over_limit_app: Any = too_many_connections,
) -> type[asyncio.Protocol]:
    """The uvicorn HTTP protocol class (``Config(http=...)``) that closes connections whose
    request headers take over ``seconds`` or ``max_head_bytes``, or whose client does not
    take an answer within ``send_timeout`` seconds, and answers each request of a connection
    made while ``max_connections`` others are open with ``over_limit_app`` (503, then the
    connection closed). ``parser``: ``auto`` (httptools if installed), ``httptools`` or ``h11``."""
    if seconds <= 0 or send_timeout <= 0:
        raise ValueError("the header and send timeouts must be positive")
    if max_head_bytes < 1:
        raise ValueError("the head size must be at least 1 byte")
    bounds = {
        "header_timeout": seconds,
        "max_head_bytes": max_head_bytes,
        "send_timeout": send_timeout,
        "max_connections": max_connections,
        "over_limit_app": staticmethod(over_limit_app),
    }
    base: type[_Bounded] = H11WithHeaderTimeout
    if parser in ("auto", "httptools"):
        found = _httptools_protocol()
        if found is None and parser == "httptools":
            raise ValueError("httptools is not installed")
        base = found or base
    return type(base.__name__, (base,), bounds)
