"""The Starlette application: ``POST /graphql``, GraphiQL on ``GET /graphql``, ``GET /healthz``.

Every answer to a request that reaches ``/graphql`` is GraphQL JSON: a malformed body, a
wrong content type or an oversized body gets ``{"errors": [...]}`` with
``extensions.code`` and a 4xx status, never a bare 500 or a traceback. GraphiQL and its
scripts are served by the app itself (``api/static``), so it works without internet access.
"""

from __future__ import annotations

import asyncio
import gzip
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from contextvars import ContextVar
from functools import cache, partial
from importlib.resources import files
from typing import Any, cast

import orjson
from cross_web import HTTPException
from graphql import GraphQLError, parse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse, process_result
from strawberry.types import ExecutionResult

from pith_graph.api.coded_errors import INTERNAL_MESSAGE, coded, error_body
from pith_graph.api.context import Context, KeyInfo
from pith_graph.api.cost import query_cost
from pith_graph.api.health import HealthCheck
from pith_graph.api.http import ETags, negotiate, note_request_error, with_cors
from pith_graph.api.lanes import Runner, run_inline
from pith_graph.api.limits import SPREAD_FACTOR, DocumentShape, RequestLimits, out_of_time, parser_bounds
from pith_graph.api.loops import LoopThreads, run_execution
from pith_graph.api.plan.run import TORN_RETRIES
from pith_graph.api.planned import answer_from_plan
from pith_graph.api.reads.reader import GraphReader
from pith_graph.api.schema import build_schema
from pith_graph.loader.keyring import Keyring

__all__ = ["GraphQLView", "create_app", "key_infos"]

log = logging.getLogger("pith_graph.api.app")

_STATIC = files("pith_graph.api") / "static"
_ASSETS = {
    "graphiql.min.js": "text/javascript; charset=utf-8",
    "graphiql.min.css": "text/css; charset=utf-8",
    "react.production.min.js": "text/javascript; charset=utf-8",
    "react-dom.production.min.js": "text/javascript; charset=utf-8",
    "init.js": "text/javascript; charset=utf-8",
}
_GRAPHIQL_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
#: Seconds after the time limit at which a request still running is cancelled outright.
HARD_DEADLINE_MARGIN = 5.0
_HTTP_CODES = {400: "BAD_REQUEST", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 413: "LIMIT_EXCEEDED"}


def key_infos(keyring: Keyring) -> dict[str, KeyInfo]:
    """Fingerprint and signer of every key the server pins (for ``Paper.verification``)."""
    return {
        key_id: KeyInfo(key.fingerprint, key.signer_id, keyring.rank(key_id))
        for key_id, key in keyring.items()
    }


def _json(body: Any, status: int) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


class GraphQLView(GraphQL[Context, None]):
    """strawberry's ASGI view with our context, time limit, error codes and GraphiQL page."""

    def __init__(
        self,
        reader: GraphReader,
        limits: RequestLimits,
        keys: Mapping[str, KeyInfo],
        run: Runner,
        *,
        graphiql: bool,
        threads: LoopThreads | None = None,
    ) -> None:
        super().__init__(
            build_schema(limits),
            graphql_ide="graphiql" if graphiql else None,
            allow_queries_via_get=True,
            multipart_uploads_enabled=False,
        )
        self.reader = reader
        self.limits = limits
        self.keys = keys
        self.runner = run
        self.threads = threads

    async def get_context(self, request: Any, response: Any) -> Context:
        return Context(self.reader, self.limits, self.keys, self.runner)

    async def render_graphql_ide(self, request: Request) -> Response:
        html = (_STATIC / "graphiql.html").read_text(encoding="utf-8")
        return HTMLResponse(html, headers={"Content-Security-Policy": _GRAPHIQL_CSP})

    def parse_json(self, data: str | bytes) -> Any:
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError as err:
            raise HTTPException(400, "Unable to parse request body as JSON") from err
        if not isinstance(parsed, (dict, list)):
            raise HTTPException(400, "The request body must be a JSON object")
        return parsed

    def encode_json(self, data: object) -> bytes:
        return orjson.dumps(data)

    async def execute_single(self, **kwargs: Any) -> ExecutionResult:  # type: ignore[override]
        """Run one operation under the time limit, on the execution threads if there are
        (:mod:`pith_graph.api.loops`): at the limit the request's abort signal stops
        execution (a timer; execution also checks the time itself at every read and list,
        for a loop too busy to run the timer, see :meth:`Context.produced`); a hard
        deadline a little later answers anyway. Then end the request's reads (its
        transaction and lane, see :class:`Context`)."""
        limit = self.limits.timeout_seconds
        cost = self._cost_before(kwargs.get("request_data")) if self.threads is not None else None
        try:
            async with asyncio.timeout(limit + HARD_DEADLINE_MARGIN):
                return await run_execution(self.threads, lambda: self._execute_in_time(kwargs), cost)
        except TimeoutError:
            return self.timed_out()

    def _cost_before(self, data: Any) -> Callable[[], int] | None:
        """The request's cost, known before it runs, so that a light execution never waits
        behind heavy ones (:func:`run_execution`; it still runs on a thread, not inline);
        ``None`` (heavy) unless its document parses within the parser's limits
        (:class:`~pith_graph.api.limits.ParserLimits`, which refuses it in execution)."""
        query, variables = getattr(data, "query", None), getattr(data, "variables", None)
        if not isinstance(query, str) or not isinstance(variables, (dict, type(None))):
            return None
        tokens = self.limits.max_tokens
        try:
            document = parse(query, no_location=True, **parser_bounds(tokens))  # type: ignore[arg-type]
        except GraphQLError:
            return None
        if DocumentShape(document).fields > tokens * SPREAD_FACTOR:
            return None
        schema = self.schema._schema  # type: ignore[attr-defined]
        return partial(
            query_cost, schema, document, getattr(data, "operation_name", None), variables, self.limits
        )

    async def _execute_in_time(self, kwargs: dict[str, Any]) -> ExecutionResult:
        """strawberry's execution, aborted at the time limit (a timer on the running loop);
        run again with a new context (a new transaction) when a paper changed between two of
        its statements (:class:`~pith_graph.api.reads.torn.TornRead`: the context's
        ``torn``), as a plan does."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.limits.timeout_seconds
        for attempt in range(TORN_RETRIES + 1):
            context: Context = kwargs["context"]
            timer = loop.call_later(deadline - loop.time(), context.abort.abort, out_of_time(self.limits))
            try:
                result: ExecutionResult = await super().execute_single(**kwargs)
                torn = context.torn  # the errors come coded, without their cause
            finally:
                timer.cancel()
                context.close()
            if not torn or not result.errors or attempt == TORN_RETRIES or loop.time() >= deadline:
                return result
            kwargs = {**kwargs, "context": await self.get_context(None, None)}
        raise AssertionError("unreachable")

    def timed_out(self) -> ExecutionResult:
        """The result of a request that ran out of time."""
        error = out_of_time(self.limits)
        return ExecutionResult(data=None, errors=[GraphQLError(str(error), original_error=error)])

    async def process_result(self, request: Request | None, result: ExecutionResult) -> GraphQLHTTPResponse:
        if result.errors:
            result.errors = [coded(error) for error in result.errors]
        body = process_result(result)
        if request is not None:  # None: a planned request that ran out of time
            note_request_error(request, cast(dict[str, Any], body))
        return body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # no subscriptions: refuse websockets
            await send({"type": "websocket.close", "code": 1003})
            return
        unanswered = await answer_from_plan(self, scope, receive, send)  # planned: no view
        if unanswered is None:
            return
        request = Request(scope, receive=unanswered)
        try:
            response = await self.run(request)
        except HTTPException as err:
            code = _HTTP_CODES.get(err.status_code, "BAD_REQUEST")
            response = _json(error_body(err.reason, code), err.status_code)
        except Exception:
            log.exception("unexpected error answering %s %s", scope.get("method"), scope.get("path"))
            response = _json(error_body(INTERNAL_MESSAGE, "INTERNAL_SERVER_ERROR"), 500)
        await negotiate(request, response)(scope, receive, send)


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


class Guard:
    """Caps request bodies in size (413) and in time (408), each answered with a GraphQL
    error, and adds safe response headers."""

    def __init__(self, app: ASGIApp, max_body_bytes: int, body_timeout: float = 10.0) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout
        logging.getLogger("uvicorn.error").addFilter(_SAID_ALREADY)  # once: a filter is added once

    async def _refuse(self, send: Send, status: int, message: str, code: str) -> None:
        body = orjson.dumps(error_body(message, code))
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _read_body(self, length: bytes | None, receive: Receive, send: Send) -> bytes | None:
        """The whole body, or ``None`` once refused (too large, too slow, malformed) or the
        client went away. Any body is read, even a GET's: one left half-sent would hold the
        connection after the answer."""
        too_large = f"The request body is larger than {self.max_body_bytes} bytes."
        if length is not None and not length.isdigit():
            await self._refuse(send, 400, "Invalid Content-Length.", "BAD_REQUEST")
            return None
        if length is not None and int(length) > self.max_body_bytes:
            await self._refuse(send, 413, too_large, "LIMIT_EXCEEDED")
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
                        await self._refuse(send, 413, too_large, "LIMIT_EXCEEDED")
                        return None
                    if not message.get("more_body", False):
                        return bytes(body)
        except TimeoutError:
            late = f"The request body did not arrive within {self.body_timeout:g} s."
            await self._refuse(send, 408, late, "TIMEOUT")
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
        body = await self._read_body(headers.get(b"content-length"), receive, send)
        if body is None:
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

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
                    send, 503, "The server is stopping: send the request again.", "SERVICE_UNAVAILABLE"
                )


@cache
def _asset(name: str) -> tuple[bytes, bool]:
    """The asset's bytes and whether they are gzip-compressed."""
    plain = _STATIC / "graphiql" / name
    if plain.is_file():
        return plain.read_bytes(), False
    return (_STATIC / "graphiql" / f"{name}.gz").read_bytes(), True


async def _graphiql_asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in _ASSETS:
        return _json(error_body("Not found.", "NOT_FOUND"), 404)
    data, compressed = _asset(name)
    headers = {"Cache-Control": "public, max-age=86400"}
    if compressed:
        if "gzip" in request.headers.get("accept-encoding", ""):
            headers["Content-Encoding"] = "gzip"
            headers["Vary"] = "Accept-Encoding"
        else:
            data = gzip.decompress(data)
    return Response(data, media_type=_ASSETS[name], headers=headers)


def create_app(
    reader: GraphReader,
    *,
    limits: RequestLimits | None = None,
    keyring: Keyring | None = None,
    run: Runner = run_inline,
    ping_run: Runner | None = None,
    threads: LoopThreads | None = None,
    graphiql: bool = True,
    backend: str = "memory",
    on_shutdown: Callable[[], None] | None = None,
    cors_origins: Sequence[str] = (),
    cache_control: str = "no-cache",
) -> ASGIApp:
    """The ASGI app serving ``reader``. ``ping_run`` runs the health check's pings (default:
    ``run``; give Neo4j a thread of its own, see :mod:`pith_graph.api.health`). ``threads``
    runs GraphQL executions off the server's event loop (the memory backend's, which are
    CPU work; see :mod:`pith_graph.api.loops`).
    ``on_shutdown`` runs once the server has stopped accepting requests (close the reader
    and the runners' threads there). Browsers on
    ``cors_origins`` may call it; ``GET /graphql`` answers carry ``cache_control``."""
    limits = limits if limits is not None else RequestLimits()
    keys = key_infos(keyring) if keyring is not None else {}
    view = GraphQLView(reader, limits, keys, run, graphiql=graphiql, threads=threads)
    healthy = HealthCheck(reader.ping, ping_run if ping_run is not None else run)

    async def healthz(request: Request) -> Response:
        if not await healthy():
            return JSONResponse({"status": "unavailable", "backend": backend}, status_code=503)
        return JSONResponse({"status": "ok", "backend": backend})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            try:
                await reader.aclose()  # what bridged requests opened on this loop
            finally:
                if on_shutdown is not None:
                    on_shutdown()

    routes = [
        Route("/graphql", view),
        Route("/graphql/", view),
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
    ]
    if graphiql:
        routes.append(Route("/graphiql/{name}", _graphiql_asset, methods=["GET", "HEAD"]))
    app = Starlette(routes=routes, lifespan=lifespan)
    return with_cors(
        Guard(ETags(app, cache_control), limits.max_body_bytes, limits.body_timeout_seconds), cors_origins
    )
