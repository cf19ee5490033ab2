"""The outermost layer of the app: request bodies capped in size (413) and in time (408),
safe response headers, and the answer to a request the server's stop cuts short (503, or a
line in the log), each a GraphQL error where an answer can still be sent."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import suppress
from contextvars import ContextVar

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pith_graph.api.http import accept_of, coded_refusal, replay

__all__ = ["GONE", "Gone", "Guard", "when_gone"]

log = logging.getLogger("pith_graph.api.app")  # the app's logger: operators filter on it


#: Set in a request's task once :meth:`Guard._stopped` has logged it: uvicorn's own line
#: about the app returning without (completing) its answer, logged next in that task, then
#: says nothing more (:class:`_SaidAlready`).
_stop_logged: ContextVar[bool] = ContextVar("pith_graph_stop_logged", default=False)


class _SaidAlready(logging.Filter):
    """Drops uvicorn's "ASGI callable returned without starting response." (or "completing")
    for a request whose cancellation by the stop :meth:`Guard._stopped` has logged: an ERROR
    that reads like a bug in the app, after the line that says what happened."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.msg if isinstance(record.msg, str) else ""
        return not (_stop_logged.get() and message.startswith("ASGI callable returned without"))


_SAID_ALREADY = _SaidAlready()


#: The key of a request's ASGI scope holding its :class:`Gone`.
GONE = "pith_graph.gone"


class Gone:
    """Whether a request's client went away before its answer began, and what stops its
    execution then (:meth:`hook`: the view's context aborts it)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._hooks: list[Callable[[], None]] = []

    def hook(self, stop: Callable[[], None]) -> None:
        self._hooks.append(stop)

    def is_set(self) -> bool:
        return self._event.is_set()

    def stop(self) -> bool:
        """Note that the client went away; run the hooks; whether there were any."""
        self._event.set()
        for stop in self._hooks:
            stop()
        return bool(self._hooks)

    async def wait(self) -> Message:
        """What the application hears after the body: a disconnect, once there is one."""
        await self._event.wait()
        return {"type": "http.disconnect"}


def when_gone(scope: Scope, stop: Callable[[], None]) -> None:
    """Have ``stop`` run if the client of the request of ``scope`` goes away before its
    answer begins (a request :class:`Guard` watches: one with a body)."""
    gone = scope.get(GONE)
    if isinstance(gone, Gone):
        gone.hook(stop)


class Guard:
    """Caps request bodies in size (413) and in time (408), each answered with a GraphQL
    error, adds safe response headers, and ends a request the server's stop cancels with a
    503 or a line in the log (:meth:`_stopped`), never uvicorn's traceback."""

    def __init__(self, app: ASGIApp, max_body_bytes: int, body_timeout: float = 10.0) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout
        logging.getLogger("uvicorn.error").addFilter(_SAID_ALREADY)  # once: a filter is added once

    async def _refuse(self, send: Send, status: int, message: str, code: str, accept: str | None) -> None:
        """Answer an error, in the media type the client asked for (``accept``), as the view
        answers its own refusals (:func:`~pith_graph.api.http.negotiate`: graphql-response+json
        has no ``data`` entry), and close the connection."""
        headers, body = coded_refusal(message, code, accept)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [*headers, (b"connection", b"close")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _read_body(
        self, headers: dict[bytes, bytes], accept: str | None, receive: Receive, send: Send
    ) -> bytes | None:
        """The whole body, or ``None`` once refused (too large, too slow, malformed) or the
        client went away. Any body is read, even a GET's: one left half-sent would hold the
        connection after the answer."""
        too_large = f"The request body is larger than {self.max_body_bytes} bytes."
        length = headers.get(b"content-length")
        if length is not None and not length.isdigit():
            await self._refuse(send, 400, "Invalid Content-Length.", "BAD_REQUEST", accept)
            return None
        if length is not None and int(length) > self.max_body_bytes:
            await self._refuse(send, 413, too_large, "LIMIT_EXCEEDED", accept)
            return None
        body = bytearray()
        try:
            async with asyncio.timeout(self.body_timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    body += message.get("body", b"")
                    if len(body) > self.max_body_bytes:
                        await self._refuse(send, 413, too_large, "LIMIT_EXCEEDED", accept)
                        return None
                    if not message.get("more_body", False):
                        return bytes(body)
        except TimeoutError:
            late = f"The request body did not arrive within {self.body_timeout:g} s."
            await self._refuse(send, 408, late, "TIMEOUT", accept)
            return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"x-content-type-options", b"nosniff"))
                headers.append((b"referrer-policy", b"no-referrer"))
                message = {**message, "headers": headers}
            await send(message)

        started = False

        async def send_noting_start(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send_with_headers(message)

        try:
            await self._answer(scope, receive, send_noting_start)
        except asyncio.CancelledError:  # the server stopped, and this request outlived its wait
            await self._stopped(scope, send_noting_start, started)

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers", []))
        declares_body = b"transfer-encoding" in headers or headers.get(b"content-length", b"0") != b"0"
        if scope["method"] in ("GET", "HEAD", "OPTIONS") and not declares_body:
            await self.app(scope, receive, send)
            return
        body = await self._read_body(headers, accept_of(scope.get("headers", [])), receive, send)
        if body is None:
            return
        await self._unless_gone(scope, body, receive, send)

    async def _unless_gone(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        """Answer a request whose body was read, stopping it if its client goes away before
        the answer begins, rather than leaving it to run to its time limit for nobody (a
        client that sends and hangs up could keep any number running while holding no
        connection, past the server's limit on them). An execution that hooked itself to
        the request's :class:`Gone` (the view's) is aborted, as at its time limit, and
        winds down; anything else (a plan) is cancelled."""
        gone = Gone()
        started = False

        async def noting_start(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        work = asyncio.ensure_future(self.app({**scope, GONE: gone}, replay(body, gone.wait), noting_start))

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            if not started and not gone.stop():
                work.cancel()

        watcher = asyncio.ensure_future(watch())
        try:
            await work  # cancelled with this task (the server's stop)
        except asyncio.CancelledError:
            this = asyncio.current_task()
            if not gone.is_set() or (this is not None and this.cancelling()):
                raise
            log.debug(
                "the client of %s %s went away: its request was stopped", scope["method"], scope["path"]
            )
        finally:
            watcher.cancel()

    async def _stopped(self, scope: Scope, send: Send, started: bool) -> None:
        """A request cancelled by the server's stop (uvicorn cancels what still runs when its
        graceful wait is over): one line in the log and, if nothing was sent yet, a 503 that
        says so. Not the traceback and the plain-text 500 uvicorn gives a cancelled request.
        The cancellation ends here: the task ends, as the stop wants.

        Our answers are one body each, so a send waits (and so is cancelled after it began)
        only when the connection takes no more data: its client is not reading, e.g. an answer
        pipelined behind a large one it has not read."""
        log.warning(
            "a request (%s %s) was still under way when the server stopped: %s",
            scope.get("method"),
            scope.get("path"),
            "answered 503" if not started else "not answered: its client was not reading",
        )
        _stop_logged.set(True)  # this task's context: uvicorn's next line about it is dropped
        if not started:
            with suppress(Exception):  # the client may be gone too
                await self._refuse(
                    send,
                    503,
                    "The server is stopping: send the request again.",
                    "SERVICE_UNAVAILABLE",
                    accept_of(scope.get("headers", [])),
                )
