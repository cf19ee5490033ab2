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
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import cache, partial
from importlib.resources import files
from typing import Any, cast

import orjson
from cross_web import HTTPException
from graphql import GraphQLError, parse
from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse, process_result
from strawberry.types import ExecutionResult

from pith_graph.api.answer_size import is_too_large, measured
from pith_graph.api.closing import wait_for_endings
from pith_graph.api.coded_errors import INTERNAL_MESSAGE, coded, error_body
from pith_graph.api.context import Context, KeyInfo
from pith_graph.api.cost import query_cost
from pith_graph.api.guard import Guard, when_gone
from pith_graph.api.health import HealthCheck
from pith_graph.api.hosts import with_hosts
from pith_graph.api.http import (
    ALLOWED_METHODS,
    ETags,
    accept_of,
    json_refusal,
    negotiate,
    note_request_error,
    with_cors,
)
from pith_graph.api.lanes import Runner, run_inline
from pith_graph.api.limits import SPREAD_FACTOR, DocumentShape, RequestLimits, out_of_time, parser_bounds
from pith_graph.api.loops import LoopGate, LoopThreads, loop_time, run_execution
from pith_graph.api.persisted import (
    DEFAULT_PERSISTED_QUERIES,
    PersistedQueries,
    PersistedQueryRequests,
    PersistedRequestAdapter,
)
from pith_graph.api.plan.run import TORN_RETRIES
from pith_graph.api.planned import GAVE_WAY, answer_from_plan
from pith_graph.api.reads.reader import GraphReader
from pith_graph.api.schema import build_schema
from pith_graph.api.unbounded import reads_nothing
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
        key_id: KeyInfo(key.fingerprint, key.signer, keyring.rank(key_id)) for key_id, key in keyring.items()
    }


def _json(body: Any, status: int, headers: Mapping[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json", headers=headers)


def _not_allowed(allowed: str) -> dict[str, Any]:
    """The body of a 405: which methods are, as ``Allow`` says."""
    return error_body(f"Only {allowed} are answered here.", "METHOD_NOT_ALLOWED")


class GraphQLView(GraphQL[Context, None]):
    """strawberry's ASGI view with our context, time limit, error codes and GraphiQL page."""

    request_adapter_class = PersistedRequestAdapter  # a GET's persisted query (api/persisted.py)

    def __init__(
        self,
        reader: GraphReader,
        limits: RequestLimits,
        keys: Mapping[str, KeyInfo],
        run: Runner,
        *,
        graphiql: bool,
        threads: LoopThreads | LoopGate | None = None,
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
        """The request's context; after its plan gave way (:data:`GAVE_WAY`), with what is
        left of its time, for the resolvers alone, and failing at once if the plan found the
        store unreachable."""
        deadline, unreachable = (None, None) if request is None else request.scope.get(GAVE_WAY, (None, None))
        context = Context(
            self.reader,
            self.limits,
            self.keys,
            self.runner,
            deadline=deadline,
            planned=deadline is not None,
            unreachable=unreachable,  # the plan found the store unreachable: no second wait
        )
        if request is not None:
            when_gone(request.scope, context.hang_up)
        return context

    def should_render_graphql_ide(self, request: Any) -> bool:
        """As strawberry's (a GET without a query that takes HTML), reading every ``Accept``
        line (:func:`~pith_graph.api.http.accept_of`); it read the first alone, so the page
        or an error answered depending on the lines' order."""
        raw = getattr(request.headers, "raw", None)  # Starlette's: the lines as received
        accept = (accept_of(raw) if raw is not None else request.headers.get("accept")) or ""
        return (
            request.method == "GET"
            and request.query_params.get("query") is None
            and ("text/html" in accept or "*/*" in accept)
        )

    async def render_graphql_ide(self, request: Request) -> Response:
        html = (_STATIC / "graphiql.html").read_text(encoding="utf-8")
        # GET /graphql is this page or an answer, by Accept: a cache must not serve one for the other
        return HTMLResponse(html, headers={"Content-Security-Policy": _GRAPHIQL_CSP, "Vary": "Accept"})

    def parse_json(self, data: str | bytes) -> Any:
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError as err:
            raise HTTPException(400, json_refusal(data, "request body")) from err
        if not isinstance(parsed, (dict, list)):
            raise HTTPException(400, "The request body must be a JSON object")
        return parsed

    def parse_query_params(self, params: Any) -> dict[str, Any]:
        """A GET's parameters, ``variables`` and ``extensions`` read as JSON: any JSON value,
        so that ``variables=null`` is no variables, as in a POST body (a body must be an
        object: :meth:`parse_json`); strawberry then refuses values that are not objects."""
        found = dict(params)
        for name in ("variables", "extensions"):
            if found.get(name):
                try:
                    found[name] = orjson.loads(found[name])
                except orjson.JSONDecodeError as err:
                    raise HTTPException(400, json_refusal(found[name], f"the {name} parameter")) from err
        return found

    def encode_json(self, data: object) -> bytes:
        return orjson.dumps(data)

    async def execute_single(self, **kwargs: Any) -> ExecutionResult:  # type: ignore[override]
        """Run one operation under the time limit, on the execution threads if there are
        (:mod:`pith_graph.api.loops`): at the limit the request's abort signal stops
        execution (a timer; execution also checks the time itself at every read and list,
        for a loop too busy to run the timer, see :meth:`Context.produced`); a hard
        deadline a little later answers anyway. Then end the request's reads (its
        transaction and lane, see :class:`Context`)."""
        context = kwargs.get("context")
        limit, deadline = self.limits.timeout_seconds, None
        if isinstance(context, Context):  # its time may have begun before (GAVE_WAY)
            deadline = context.deadline  # it waits for a thread until then at most
            limit = max(0.0, deadline - time.monotonic())
        threads, cost = self.threads, None
        if threads is not None:
            cost, cpu_only = self._cost_before(kwargs.get("request_data"))
            if cpu_only and isinstance(threads, LoopGate) and threads.cpu is not None:
                threads = threads.cpu  # no reads to wait on the loop for: off it
        try:
            async with asyncio.timeout(limit + HARD_DEADLINE_MARGIN):
                return await run_execution(
                    threads, lambda: self._execute_in_time(kwargs), cost, deadline=deadline
                )
        except TimeoutError:
            return self.timed_out()

    def _cost_before(self, data: Any) -> tuple[Callable[[], int] | None, bool]:
        """The request's cost, known before it runs, so that a light execution never waits
        behind heavy ones (:func:`run_execution`; it still runs on a thread, not inline);
        ``None`` (heavy) unless its document parses within the parser's limits
        (:class:`~pith_graph.api.limits.ParserLimits`, which refuses it in execution). And
        whether it reads nothing (:func:`~pith_graph.api.unbounded.reads_nothing`)."""
        query, variables = getattr(data, "query", None), getattr(data, "variables", None)
        if not isinstance(query, str) or not isinstance(variables, (dict, type(None))):
            return None, False
        tokens = self.limits.max_tokens
        try:
            document = parse(query, no_location=True, **parser_bounds(tokens))  # type: ignore[arg-type]
        except GraphQLError:
            return None, False
        if DocumentShape(document).fields > tokens * SPREAD_FACTOR:
            return None, False
        schema = self.schema._schema  # type: ignore[attr-defined]
        operation = getattr(data, "operation_name", None)
        cost = partial(query_cost, schema, document, operation, variables, self.limits)
        return cost, reads_nothing(document, operation)

    async def _execute_in_time(self, kwargs: dict[str, Any]) -> ExecutionResult:
        """strawberry's execution, aborted at the time limit (a timer on the running loop);
        run again with a new context (a new transaction) when a paper changed between two of
        its statements (:class:`~pith_graph.api.reads.torn.TornRead`: the context's
        ``torn``), as a plan does."""
        loop = asyncio.get_running_loop()
        context: Context = kwargs["context"]
        deadline = loop_time(loop, context.deadline)
        for attempt in range(TORN_RETRIES + 1):
            context = kwargs["context"]
            timer = loop.call_later(deadline - loop.time(), context.abort.abort, out_of_time(self.limits))
            try:
                result: ExecutionResult = await super().execute_single(**kwargs)
                torn = context.torn  # the errors come coded, without their cause
            finally:
                timer.cancel()
                context.close()
            if not torn or not result.errors or attempt == TORN_RETRIES or loop.time() >= deadline:
                return measured(result, self.limits.max_answer_bytes)  # here: off the loop if heavy
            again = Context(
                self.reader,
                self.limits,
                self.keys,
                self.runner,
                deadline=context.deadline,
                planned=context.planned,
            )
            kwargs = {**kwargs, "context": again}
        raise AssertionError("unreachable")

    def timed_out(self) -> ExecutionResult:
        """The result of a request that ran out of time."""
        error = out_of_time(self.limits)
        return ExecutionResult(data=None, errors=[GraphQLError(str(error), original_error=error)])

    async def process_result(self, request: Request | None, result: ExecutionResult) -> GraphQLHTTPResponse:
        if result.errors:
            result.errors = [coded(error) for error in result.errors]
        body = process_result(result)
        if request is not None and not is_too_large(result):  # None: a plan's (no request error)
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
            body = _not_allowed(ALLOWED_METHODS) if err.status_code == 405 else error_body(err.reason, code)
            response = _json(body, err.status_code)
        except Exception:
            log.exception("unexpected error answering %s %s", scope.get("method"), scope.get("path"))
            response = _json(error_body(INTERNAL_MESSAGE, "INTERNAL_SERVER_ERROR"), 500)
        await negotiate(request, response)(scope, receive, send)


@cache
def _asset(name: str) -> tuple[bytes, bool]:
    """The asset's bytes and whether they are gzip-compressed."""
    plain = _STATIC / "graphiql" / name
    if plain.is_file():
        return plain.read_bytes(), False
    return (_STATIC / "graphiql" / f"{name}.gz").read_bytes(), True


@cache
def _plain_asset(name: str) -> bytes:
    """A compressed asset decompressed, once per process: decompressing GraphiQL's script
    (730 KB into 3.5 MB, about 13 ms) on the event loop for each client that takes no gzip
    held /healthz back for seconds under 200 such requests."""
    return gzip.decompress(_asset(name)[0])


def _takes_gzip(accept_encoding: str) -> bool:
    """Whether ``Accept-Encoding`` allows gzip: named, else ``*``, with a q above 0.

    >>> [_takes_gzip(v) for v in ("gzip, br", "gzip;q=0", "*", "*;q=0, gzip", "gzip;q=0, *", "br")]
    [True, False, True, True, False, False]
    """
    quality: dict[str, float] = {}
    for item in accept_encoding.lower().split(","):
        coding, _, params = item.partition(";")
        q = params.strip().removeprefix("q=") if params.strip().startswith("q=") else "1"
        try:
            quality[coding.strip()] = float(q)
        except ValueError:
            quality[coding.strip()] = 0.0
    return quality.get("gzip", quality.get("*", 0.0)) > 0


async def _graphiql_asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in _ASSETS:
        return _json(error_body("Not found.", "NOT_FOUND"), 404)
    data, compressed = _asset(name)
    headers = {"Cache-Control": "public, max-age=86400"}
    if compressed:
        headers["Vary"] = "Accept-Encoding"  # gzip to those who take it, else plain
        if _takes_gzip(request.headers.get("accept-encoding", "")):
            headers["Content-Encoding"] = "gzip"
        else:
            data = _plain_asset(name)
    return Response(data, media_type=_ASSETS[name], headers=headers)


async def _unserved(request: Request, exc: Exception) -> Response:
    """A path the server does not serve (404), or a method a path does not take (405, with
    its ``Allow``): coded JSON, as every other refusal is, not Starlette's plain text."""
    status = exc.status_code if isinstance(exc, StarletteHTTPException) else 404
    headers = dict(exc.headers or {}) if isinstance(exc, StarletteHTTPException) else {}
    if "Allow" in headers:  # a route's methods are a set: in an order each hash seed picks
        headers["Allow"] = ", ".join(sorted(method.strip() for method in headers["Allow"].split(",")))
    body = _not_allowed(headers.get("Allow", "")) if status == 405 else error_body("Not found.", "NOT_FOUND")
    return _json(body, status, headers)


def create_app(
    reader: GraphReader,
    *,
    limits: RequestLimits | None = None,
    keyring: Keyring | None = None,
    run: Runner = run_inline,
    ping_run: Runner | None = None,
    threads: LoopThreads | LoopGate | None = None,
    graphiql: bool = True,
    backend: str = "memory",
    on_shutdown: Callable[[], None] | None = None,
    cors_origins: Sequence[str] = (),
    cache_control: str = "no-cache",
    allowed_hosts: Sequence[str] = ("*",),
    persisted_queries: int = DEFAULT_PERSISTED_QUERIES,
) -> ASGIApp:
    """The ASGI app serving ``reader``. ``ping_run`` runs the health check's pings (default:
    ``run``; give Neo4j a thread of its own, see :mod:`pith_graph.api.health`). ``threads``
    runs GraphQL executions off the server's event loop (the memory backend's, which are
    CPU work; see :mod:`pith_graph.api.loops`).
    ``on_shutdown`` runs once the server has stopped accepting requests (close the reader
    and the runners' threads there). Browsers on
    ``cors_origins`` may call it; ``GET /graphql`` answers carry ``cache_control``; requests
    for a host not in ``allowed_hosts`` are refused (:mod:`pith_graph.api.hosts`; ``serve``
    gives its settings', by default loopback's names on loopback); it keeps up to
    ``persisted_queries`` automatic persisted queries (0: none, :mod:`~pith_graph.api.persisted`)."""
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
                await wait_for_endings()  # requests answered early: their transactions end first
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
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: _unserved, 405: _unserved})
    store = PersistedQueries(persisted_queries) if persisted_queries > 0 else None
    resolved = PersistedQueryRequests(app, store)  # inside ETags: its answers are tagged (or no-store)
    guarded = Guard(ETags(resolved, cache_control), limits.max_body_bytes, limits.body_timeout_seconds)
    return with_hosts(with_cors(guarded, cors_origins), allowed_hosts)
