"""HTTP for browsers and caches: media types, ETags, CORS.

* **Media types** (GraphQL over HTTP): a client that accepts
  ``application/graphql-response+json`` (ahead of ``application/json``) gets it; then a
  request that fails before execution — parse, validation (limits included) or variable
  coercion — is a 400 with no ``data`` entry. ``application/json`` (the default, also for
  ``*/*`` or no ``Accept``) keeps the legacy 200. Responses vary on ``Accept``.
* **ETags**: a ``GET /graphql`` answer carries a strong ``ETag`` (a digest of the body) and
  the operator's ``Cache-Control`` (``PITH_API_CACHE_CONTROL``, default ``no-cache``: reuse
  after revalidating); ``If-None-Match`` with that tag gets ``304 Not Modified``, no body.
* **CORS**: only the origins an operator lists (``PITH_API_CORS_ORIGINS``; none by
  default) may call the API from a browser; preflights are answered, ``ETag`` is exposed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import orjson
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "GRAPHQL_RESPONSE",
    "ETags",
    "negotiate",
    "note_request_error",
    "wants_graphql_response",
    "with_cors",
]

GRAPHQL_RESPONSE = "application/graphql-response+json"
#: Codes of errors raised before execution starts (a malformed request, not a failed one).
REQUEST_ERROR_CODES = frozenset(
    {"GRAPHQL_PARSE_FAILED", "GRAPHQL_VALIDATION_FAILED", "BAD_USER_INPUT", "LIMIT_EXCEEDED", "BAD_REQUEST"}
)
_JSON_TYPES = (b"application/json", GRAPHQL_RESPONSE.encode())


def _quality(accept: str) -> dict[str, float]:
    """Media range -> q from an ``Accept`` header (malformed q counts as 0)."""
    found: dict[str, float] = {}
    for item in accept.split(","):
        media, *parameters = (part.strip() for part in item.split(";"))
        q = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if media:
            found[media.lower()] = max(q, found.get(media.lower(), 0.0))
    return found


def wants_graphql_response(accept: str | None) -> bool:
    """Whether to answer in ``application/graphql-response+json``: the client names it, and
    does not prefer ``application/json`` to it.

    >>> wants_graphql_response("application/graphql-response+json, application/json;q=0.9")
    True
    >>> wants_graphql_response("application/json, application/graphql-response+json;q=0.5")
    False
    >>> wants_graphql_response("*/*"), wants_graphql_response(None)
    (False, False)
    """
    if not accept:
        return False
    quality = _quality(accept)
    wanted = quality.get(GRAPHQL_RESPONSE, 0.0)
    return wanted > 0 and wanted >= quality.get("application/json", 0.0)


def note_request_error(request: Request, body: dict[str, Any]) -> None:
    """When the client takes graphql-response+json and ``body`` failed before execution
    (no data, errors without a path, request-error codes), drop ``data`` and mark the
    request for a 400 (:func:`negotiate` applies it)."""
    errors = body.get("errors") or []
    if body.get("data") is not None or not errors:
        return
    if not wants_graphql_response(request.headers.get("accept")):
        return
    if all(
        "path" not in e and (e.get("extensions") or {}).get("code") in REQUEST_ERROR_CODES for e in errors
    ):
        body.pop("data", None)
        request.state.graphql_status = 400


def negotiate(request: Request, response: Response) -> Response:
    """Give a GraphQL JSON response the media type (and request-error status) the client
    asked for, and ``Vary: Accept``."""
    content_type = response.headers.get("content-type", "").encode()
    if not content_type.startswith(_JSON_TYPES):
        return response
    response.headers.append("vary", "Accept")
    if not wants_graphql_response(request.headers.get("accept")):
        return response
    response.headers["content-type"] = GRAPHQL_RESPONSE
    status = getattr(request.state, "graphql_status", None)
    if status is not None:
        response.status_code = status
    elif response.status_code >= 400:  # an HTTP-level refusal: no data entry either
        body = orjson.loads(bytes(response.body))
        if isinstance(body, dict) and body.get("data") is None:
            body.pop("data", None)
            response.body = orjson.dumps(body)
            response.headers["content-length"] = str(len(response.body))
    return response


def _etag(body: bytes) -> bytes:
    return b'"' + hashlib.blake2b(body, digest_size=16).hexdigest().encode() + b'"'


def _matches(if_none_match: bytes, etag: bytes) -> bool:
    """``If-None-Match`` (weak comparison, ``*`` matches anything)."""
    tags = [tag.strip() for tag in if_none_match.split(b",")]
    return any(tag == b"*" or tag.removeprefix(b"W/") == etag for tag in tags)


class ETags:
    """``ETag`` and ``Cache-Control`` on ``GET /graphql`` JSON answers; 304 on a match."""

    def __init__(self, app: ASGIApp, cache_control: str, path: str = "/graphql") -> None:
        self.app = app
        self.cache_control = cache_control.encode("latin-1")
        self.paths = (path, path + "/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in ("GET", "HEAD")
            or scope["path"] not in self.paths
        ):
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def buffer(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            await self._finish(scope, start, b"".join(chunks), send)

        await self.app(scope, receive, buffer)

    async def _finish(self, scope: Scope, start: Message, body: bytes, send: Send) -> None:
        headers = list(start.get("headers", []))
        content_type = next((value for name, value in headers if name == b"content-type"), b"")
        if start["status"] != 200 or not content_type.startswith(_JSON_TYPES):
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return
        etag = _etag(content_type + b"\n" + body)  # one tag per representation
        headers += [(b"etag", etag), (b"cache-control", self.cache_control)]
        if_none_match = next((value for name, value in scope["headers"] if name == b"if-none-match"), None)
        if if_none_match is not None and _matches(if_none_match, etag):
            kept = [(n, v) for n, v in headers if n not in (b"content-length", b"content-type")]
            await send({"type": "http.response.start", "status": 304, "headers": kept})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def with_cors(app: ASGIApp, origins: Sequence[str]) -> ASGIApp:
    """``app`` behind CORS for ``origins`` (``*`` for any); unchanged when there are none."""
    if not origins:
        return app
    return CORSMiddleware(
        app,
        allow_origins=list(origins),
        allow_methods=["GET", "POST"],
        allow_headers=["content-type", "accept", "if-none-match"],
        expose_headers=["etag"],
        max_age=600,
    )
