"""The HTTP path of a planned request: read the body, answer from the plan, send JSON.

A ``POST /graphql`` with a JSON body whose document already has an execution plan
(:mod:`pith_graph.api.plan`) is answered here, without strawberry's HTTP view: the body is
parsed with orjson, the plan runs under the request's time limit (on the execution
threads of :mod:`pith_graph.api.loops` when there are, the memory backend, unless it is
cheap and its reads bounded: :func:`~pith_graph.api.loops.run_execution`), and the data is sent as
the view would send it (status 200, ``{"data": ...}``, in the media type the client
asked for, :mod:`pith_graph.api.http`). Anything else — another method or
content type, a batch, ``extensions``, a document without a plan, or a plan that gives way —
goes on to the view with the body replayed, so every error is the view's own. After a plan
that gave way, the view's resolvers answer without running it again, in what is left of the
request's time (:data:`GAVE_WAY`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Protocol

import orjson
from starlette.types import Receive, Scope, Send
from strawberry.types import ExecutionResult

from pith_graph.api.answer_size import answer_bytes, too_large
from pith_graph.api.context import Context, KeyInfo
from pith_graph.api.guard import when_gone
from pith_graph.api.http import GRAPHQL_RESPONSE, accept_of, wants_graphql_response
from pith_graph.api.http import replay as replay_body  # its local name is the answer's `replay`
from pith_graph.api.lanes import Runner, ThreadRunner
from pith_graph.api.limits import RequestLimits
from pith_graph.api.loops import LoopGate, LoopThreads, run_execution
from pith_graph.api.plan import plan_cost, run_plan
from pith_graph.api.reads.reader import GraphReader
from pith_graph.errors import QueryTimeout

__all__ = ["GAVE_WAY", "answer_from_plan"]

#: The key of a request's ASGI scope that holds, once its plan gave way, the request's
#: deadline (``time.monotonic()``) and the error its reads met if the store could not be
#: reached, for the view's :class:`Context` (``deadline``, ``planned``, ``unreachable``).
GAVE_WAY = "pith_graph.plan_gave_way"

_REQUEST_KEYS = frozenset({"query", "variables", "operationName"})


class PlannedView(Protocol):
    """What this needs of the API's view (:class:`pith_graph.api.app.GraphQLView`)."""

    schema: Any
    reader: GraphReader
    limits: RequestLimits
    keys: dict[str, KeyInfo] | Any
    runner: Runner | ThreadRunner
    threads: LoopThreads | LoopGate | None

    def timed_out(self) -> ExecutionResult: ...

    async def process_result(self, request: Any, result: ExecutionResult) -> Any: ...


def _json_content(scope: Scope) -> bytes | None:
    """The media type to answer in, when the request is JSON (else ``None``). A repeated
    ``Content-Type``: the first, as the view reads it."""
    headers = scope["headers"]
    content_type = next((value for name, value in headers if name == b"content-type"), b"")
    accept = accept_of(headers)
    if content_type.split(b";", 1)[0].strip().lower() != b"application/json" or "multipart" in (accept or ""):
        return None
    return GRAPHQL_RESPONSE.encode() if wants_graphql_response(accept) else b"application/json"


async def _body(receive: Receive) -> bytes | None:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _send_json(send: Send, payload: Any, media_type: bytes) -> None:
    body = orjson.dumps(payload)
    headers = [
        (b"content-length", str(len(body)).encode()),
        (b"content-type", media_type),
        (b"vary", b"Accept"),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def answer_from_plan(view: PlannedView, scope: Scope, receive: Receive, send: Send) -> Receive | None:
    """Answer the request from a plan (returns ``None``), or return a ``receive`` that
    replays what was read, for the view to answer it."""
    plans = view.schema.plans
    media_type = _json_content(scope) if scope["method"] == "POST" else None
    if plans is None or media_type is None:
        return receive
    body = await _body(receive)
    if body is None:
        return receive
    replay = replay_body(body, receive)
    try:
        request = orjson.loads(body)
    except orjson.JSONDecodeError:
        return replay
    if not isinstance(request, dict) or not request.keys() <= _REQUEST_KEYS:
        return replay
    query, variables = request.get("query"), request.get("variables")
    operation_name = request.get("operationName")
    if not isinstance(query, str) or not isinstance(variables, dict | None):
        return replay
    if not isinstance(operation_name, str | None):
        return replay
    plan = plans.get(query, operation_name)
    if plan is None:
        return replay
    context = Context(view.reader, view.limits, view.keys, view.runner)
    when_gone(scope, context.hang_up)  # the plan stops at its next level
    try:
        async with asyncio.timeout(view.limits.timeout_seconds):
            schema = view.schema._schema
            data = await run_execution(
                view.threads,
                lambda: _measured(
                    run_plan(plan, schema, context, variables, alone=True), view.limits.max_answer_bytes
                ),
                lambda: plan_cost(plan, schema, context, variables),
                lambda: plan.reads_bounded,
                context.deadline,  # it waits for a thread until then at most
            )
    except (TimeoutError, QueryTimeout):  # the plan saw the time run out: no time for the view
        await _send_json(send, await view.process_result(None, view.timed_out()), media_type)
        return None
    finally:
        context.close()  # nothing reads through it after the plan (run_plan's alone)
    if data is None:
        plans.gave_way += 1
        scope[GAVE_WAY] = (context.deadline, context.reader.unreachable())
        return replay
    plans.answered += 1
    if data is _TOO_LARGE:
        too_big = await view.process_result(None, too_large(view.limits.max_answer_bytes))
        await _send_json(send, too_big, media_type)
        return None
    await _send_json(send, {"data": data}, media_type)
    return None


#: A plan's answer over ``max_answer_bytes`` (measured where the plan ran: :func:`_measured`).
_TOO_LARGE: Any = object()


async def _measured(answer: Coroutine[Any, Any, Any], limit: int) -> Any:
    data = await answer
    return _TOO_LARGE if data is not None and answer_bytes(data, limit) > limit else data
