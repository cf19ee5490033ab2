"""uvicorn's HTTP protocols with a deadline on request headers.

uvicorn closes a keep-alive connection left idle, but waits forever for the headers of a
request: a client that trickles a header line a byte at a time, or connects and says
nothing, holds a connection (and a file descriptor) as long as it likes (slowloris). These
subclasses give every request ``header_timeout`` seconds, counted from the connection's
start for its first request and from the request's first byte for the next ones on a
keep-alive connection, to finish its headers. Past that the connection is closed, after a
``408 Request Timeout`` if part of a request had arrived (and no response is being written).

The request *body* is bounded in the ASGI layer (:class:`pith_graph.api.app.Guard`), which
answers 408 with a GraphQL error. :func:`protocol_with_header_timeout` picks the parser
uvicorn would (httptools when installed, else h11).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HeaderDeadline", "protocol_with_header_timeout"]

log = logging.getLogger("pith_graph.api.protocols")

_MESSAGE = b"The request headers did not arrive in time.\n"
_REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: " + str(len(_MESSAGE)).encode() + b"\r\n"
    b"connection: close\r\n\r\n" + _MESSAGE
)


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
        self.loop = loop
        self.seconds = seconds
        self.transport = transport
        self.responding = responding
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


class H11WithHeaderTimeout(H11Protocol):
    """uvicorn's h11 protocol with :class:`HeaderDeadline`."""

    header_timeout = 10.0
    deadline: HeaderDeadline

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.deadline = HeaderDeadline(self.loop, self.header_timeout, transport, self._responding)
        self.deadline.start(begun=False)

    def _responding(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self.deadline.stop()  # h11 leaves IDLE once a request's headers are complete
        elif self.conn.trailing_data[0]:
            self.deadline.start(begun=True)  # part of a request line or headers is buffered

    def connection_lost(self, exc: Exception | None) -> None:
        self.deadline.stop()
        super().connection_lost(exc)


def _httptools_protocol(seconds: float) -> type[asyncio.Protocol] | None:
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # pragma: no cover - httptools is a dependency
        return None

    class HttpToolsWithHeaderTimeout(HttpToolsProtocol):
        """uvicorn's httptools protocol with :class:`HeaderDeadline`."""

        header_timeout = seconds
        deadline: HeaderDeadline

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self.deadline = HeaderDeadline(self.loop, self.header_timeout, transport, self._responding)
            self.deadline.start(begun=False)

        def _responding(self) -> bool:
            return self.cycle is not None and not self.cycle.response_complete

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.deadline.start(begun=True)

        def on_headers_complete(self) -> None:
            self.deadline.stop()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self.deadline.stop()
            super().connection_lost(exc)

    return HttpToolsWithHeaderTimeout


def protocol_with_header_timeout(seconds: float, *, parser: str = "auto") -> type[asyncio.Protocol]:
    """The uvicorn HTTP protocol class (``Config(http=...)``) that closes connections whose
    request headers take over ``seconds``. ``parser``: ``auto`` (httptools if installed),
    ``httptools`` or ``h11``."""
    if seconds <= 0:
        raise ValueError("the header timeout must be positive")
    if parser in ("auto", "httptools"):
        found = _httptools_protocol(seconds)
        if found is not None:
            return found
        if parser == "httptools":
            raise ValueError("httptools is not installed")
    return type("H11WithHeaderTimeout", (H11WithHeaderTimeout,), {"header_timeout": seconds})
