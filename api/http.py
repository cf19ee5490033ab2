"""HTTP for browsers and caches: media types, ETags, CORS.

* **Media types** (GraphQL over HTTP): a client that accepts
  ``application/graphql-response+json`` (ahead of ``application/json``) gets it; then a
  request that fails before execution — parse, validation (limits included) or variable
  coercion — is a 400 with no ``data`` entry. ``application/json`` (the default, also for
  ``*/*`` or no ``Accept``) keeps the legacy 200. Responses vary on ``Accept``.
* **ETags**: a ``GET /graphql`` answer carries a strong ``ETag`` (a digest of the body) and
  the operator's ``Cache-Control`` (``PITH_API_CACHE_CONTROL``, default ``no-cache``: reuse
  after revalidating); ``If-None-Match`` with that tag gets ``304 Not Modified``, no body.
  An answer with ``errors`` (or another status than 200, whatever its body: a 304 stands
  only for a 200) is ``no-store``, with no tag: some errors pass (``TIMEOUT``, ``SERVICE_UNAVAILABLE``, ``INTERNAL_SERVER_ERROR``, a limit the
  operator raises), and none is worth keeping. ``HEAD`` is a ``GET`` without the body.
* **Methods and media types**: ``/graphql`` takes ``GET``, ``HEAD`` and ``POST`` (a 405
  says so in ``Allow``); a ``POST`` body must be ``application/json`` (the media type
  parsed, parameters such as ``charset`` aside: ``application/jsonx`` is refused, 400).
* **Malformed JSON**: a body (or a GET's ``variables``) that is not JSON is refused (400,
  ``BAD_REQUEST``); one the standard library would read but that holds an escaped lone
  surrogate (``"\\ud83d"``, what ``JSON.stringify`` makes of a text cut inside an emoji) is
  refused too, and the message says so (:func:`json_refusal`).
* **CORS**: only the origins an operator lists (``PITH_API_CORS_ORIGINS``; none by
  default) may call the API from a browser; preflights are answered, ``ETag`` and
  ``Retry-After`` (of the 503 of a connection too many) are exposed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

import orjson
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pith_graph.api.coded_errors import error_body
from pith_graph.errors import quoted

__all__ = [
    "ALLOWED_METHODS",
    "GRAPHQL_RESPONSE",
    "ETags",
    "accept_of",
    "coded_refusal",
    "is_json_request",
    "json_refusal",
    "negotiate",
    "note_request_error",
    "replay",
    "wants_graphql_response",
    "with_cors",
]

GRAPHQL_RESPONSE = "application/graphql-response+json"
#: Codes of errors raised before execution starts (a malformed request, not a failed one).
REQUEST_ERROR_CODES = frozenset(
    {"GRAPHQL_PARSE_FAILED", "GRAPHQL_VALIDATION_FAILED", "BAD_USER_INPUT", "LIMIT_EXCEEDED", "BAD_REQUEST"}
)
_JSON_TYPES = (b"application/json", GRAPHQL_RESPONSE.encode())
#: What ``/graphql`` answers (``Allow`` of a 405).
ALLOWED_METHODS = "GET, HEAD, POST"
_NO_STORE = b"no-store"


#: A UTF-16 surrogate left alone in a parsed string (json pairs up the escapes of a whole one).
_SURROGATE = re.compile("[\ud800-\udfff]")


def json_refusal(data: str | bytes, what: str) -> str:
    """The message refusing ``data``, ``what`` orjson could not parse: whether it is JSON that
    holds an escaped lone surrogate (the standard library reads it; only then, on failure, is
    it tried), naming the string that holds it, or is not JSON at all.

    >>> print(json_refusal(b'{"p": ["Zo\\\\ud83d"]}', "request body"))
    The request body holds an unpaired surrogate in 'Zo\\ud83d': half of a UTF-16 character, as a text cut inside an emoji gives. Send whole characters.
    >>> json_refusal(b"{not json", "request body")
    'Unable to parse request body as JSON'
    """
    try:
        stack = [json.loads(data)]
    except (ValueError, RecursionError):
        stack = []
    while stack:
        value = stack.pop()
        if isinstance(value, str) and _SURROGATE.search(value):
            return (
                f"The {what.removeprefix('the ')} holds an unpaired surrogate in {quoted(value)}: half of a UTF-16 character,"
                " as a text cut inside an emoji gives. Send whole characters."
            )
        if isinstance(value, dict):
            stack.extend(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return f"Unable to parse {what} as JSON"


def replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the body already read, whole, then defers to ``receive``
    (which tells of a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def is_json_request(content_type: bytes | None) -> bool:
    """Whether a request's ``Content-Type`` is ``application/json`` (any parameters).

    >>> is_json_request(b"Application/JSON; charset=utf-8"), is_json_request(b"application/jsonx")
    (True, False)
    >>> is_json_request(b"text/plain; x=application/json"), is_json_request(None)
    (False, False)
    """
    if content_type is None:
        return False
    return content_type.split(b";", 1)[0].strip().lower() == b"application/json"


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


def coded_refusal(message: str, code: str, accept: str | None) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """Headers and body of an error answered before the GraphQL view (the guard's 408/413, a
    connection over the cap's 503), as the view answers its own: in the media type ``accept``
    asks for (graphql-response+json has no ``data`` entry), ``Vary: Accept``, ``no-store``."""
    answer = error_body(message, code)
    media_type = b"application/json"
    if wants_graphql_response(accept):
        answer.pop("data")
        media_type = GRAPHQL_RESPONSE.encode()
    body = orjson.dumps(answer)
    headers = [
        (b"content-type", media_type),
        (b"content-length", str(len(body)).encode()),
        (b"vary", b"Accept"),
        (b"cache-control", b"no-store"),
    ]
    return headers, body


def accept_of(headers: Sequence[tuple[bytes, bytes]]) -> str | None:
    """A request's ``Accept``: all its ``Accept`` lines as one list, as RFC 9110 (5.3) combines
    a repeated field (``None`` when there is none). Every answer reads it so: the media type of
    an answer never depends on which line a part of the server looked at.

    >>> accept_of([(b"accept", b"application/json"), (b"x", b"y"), (b"accept", b"text/html")])
    'application/json, text/html'
    """
    lines = [value.decode("latin-1") for name, value in headers if name == b"accept"]
    return ", ".join(lines) if lines else None


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
    if not wants_graphql_response(accept_of(request.scope["headers"])):
        return
    if all(
        "path" not in e and (e.get("extensions") or {}).get("code") in REQUEST_ERROR_CODES for e in errors
    ):
        body.pop("data", None)
        request.state.graphql_status = 400


def negotiate(request: Request, response: Response) -> Response:
    """Give a GraphQL JSON response the media type (and request-error status) the client
    asked for, and ``Vary: Accept``; a 405 its ``Allow``."""
    if response.status_code == 405:
        response.headers["allow"] = ALLOWED_METHODS
    content_type = response.headers.get("content-type", "").encode()
    if not content_type.startswith(_JSON_TYPES):
        return response
    response.headers.append("vary", "Accept")
    if not wants_graphql_response(accept_of(request.scope["headers"])):
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
    """On ``/graphql``: ``ETag`` and ``Cache-Control`` on ``GET`` (and ``HEAD``) JSON
    answers, 304 on a match, ``no-store`` on errors; a ``POST`` not in JSON refused."""

    def __init__(self, app: ASGIApp, cache_control: str, path: str = "/graphql") -> None:
        self.app = app
        self.cache_control = cache_control.encode("latin-1")
        self.paths = (path, path + "/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        if scope["method"] == "POST":
            content_type = next((value for name, value in scope["headers"] if name == b"content-type"), None)
            if not is_json_request(content_type):
                await _unsupported_media_type(scope, receive, send)
                return
            coding = b",".join(value for name, value in scope["headers"] if name == b"content-encoding")
            if coding.strip().lower() not in (b"", b"identity"):
                await _unsupported_encoding(coding, scope, receive, send)
                return
        if scope["method"] not in ("GET", "HEAD"):
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

        await self.app({**scope, "method": "GET"}, receive, buffer)  # HEAD: the GET's headers

    async def _finish(self, scope: Scope, start: Message, body: bytes, send: Send) -> None:
        headers = list(start.get("headers", []))
        content_type = next((value for name, value in headers if name == b"content-type"), b"")
        sent = b"" if scope["method"] == "HEAD" else body
        if not content_type.startswith(_JSON_TYPES):
            await send(start)
            await send({"type": "http.response.body", "body": sent})
            return
        if start["status"] != 200 or _has_errors(body):
            headers = [(n, v) for n, v in headers if n != b"cache-control"] + [(b"cache-control", _NO_STORE)]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": sent})
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
        await send({"type": "http.response.body", "body": sent})


def _has_errors(body: bytes) -> bool:
    """Whether a GraphQL JSON answer has an ``errors`` entry (parsed only when the bytes
    ``"errors":`` occur, which a JSON string cannot hold unescaped)."""
    if b'"errors":' not in body:
        return False
    parsed = orjson.loads(body)
    return isinstance(parsed, dict) and bool(parsed.get("errors"))


async def _unsupported_media_type(scope: Scope, receive: Receive, send: Send) -> None:
    """Refuse a ``POST /graphql`` whose body is not ``application/json`` (400, as strawberry
    would: it takes any media type whose name *contains* ``application/json``)."""
    body = error_body("Unsupported content type: send the request as application/json.", "BAD_REQUEST")
    response = Response(orjson.dumps(body), status_code=400, media_type="application/json")
    await negotiate(Request(scope, receive), response)(scope, receive, send)


async def _unsupported_encoding(coding: bytes, scope: Scope, receive: Receive, send: Send) -> None:
    """Refuse a body sent compressed (``Content-Encoding: gzip``): 415, with the one coding
    taken (RFC 7694). It was read as it came: a gzip body was "malformed JSON", a body marked
    ``br`` but sent plain was answered."""
    named = coding.decode("latin-1")[:40]
    message = f"Unsupported content encoding {named!r}: send the request body uncompressed."
    response = Response(orjson.dumps(error_body(message, "BAD_REQUEST")), status_code=415)
    response.headers.update({"content-type": "application/json", "accept-encoding": "identity"})
    await negotiate(Request(scope, receive), response)(scope, receive, send)


def with_cors(app: ASGIApp, origins: Sequence[str]) -> ASGIApp:
    """``app`` behind CORS for ``origins`` (``*`` for any); unchanged when there are none."""
    if not origins:
        return app
    return CORSMiddleware(
        app,
        allow_origins=list(origins),
        allow_methods=["GET", "POST"],
        allow_headers=["content-type", "accept", "if-none-match"],
        expose_headers=["etag", "retry-after"],  # Retry-After: the 503 of a connection too many
        max_age=600,
    )
