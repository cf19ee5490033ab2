"""Automatic persisted queries: Apollo's APQ protocol (version 1), since 0.9.2.

A client (Apollo Client's persisted-query link, urql's persisted exchange, Relay's
equivalents) sends ``extensions: {"persistedQuery": {"version": 1, "sha256Hash": H}}``
without ``query``, ``H`` the SHA-256 of the query text in hex. A server that knows ``H``
answers as it would the query; one that does not answers ``PersistedQueryNotFound``
(``PERSISTED_QUERY_NOT_FOUND``), and the client sends the query with ``H`` again: the
server checks that ``H`` is the query's digest, answers it and keeps the pair. In a ``GET``
(``/graphql?extensions=…&variables=…``) that makes short URLs a CDN can key on; their
answers carry the ``ETag`` and ``Cache-Control`` of any ``GET`` (:class:`~.http.ETags`).

* **Where.** :class:`PersistedQueryRequests` sits between :class:`~.http.ETags` and the
  application, so both executions (the plans of :mod:`.planned` and strawberry's view)
  see a request a known hash stands for as the plain request: its query put in, the
  ``persistedQuery`` extension taken out, everything else (variables, operation name,
  other extensions) as sent. Its answer, error masking, limits, cost and time limit are
  the plain query's, byte for byte.
* **What is kept.** A query sent with its hash is kept only once it has been *executed*:
  its answer is a ``200`` whose ``data`` is an object, which GraphQL gives only to a
  document that parsed, validated (every limit, :mod:`.limits`) and passed the cost limit
  (:mod:`.cost`) with the variables sent. A document refused by any of them, or whose
  variables are (or that ran out of time, or whose answer was too large) is not kept: junk
  cannot fill the store, and a kept query obeys the token and size limits.
* **The store** (:class:`PersistedQueries`) is a least-recently-used map of at most
  ``PITH_API_PERSISTED_QUERIES`` documents (default 1,000) and :data:`BYTES_PER_QUERY` bytes
  of query text per document on average (16 MiB for 1,000), behind a lock (executions run
  on several threads). A client holding no key can only register valid queries, each
  pushing out the least recently used one: memory stays bounded, and a query pushed out
  costs its client one round trip (not found, sent again). Each serving process
  (``serve --workers N``) has its own store: a hash registered with one worker and asked of
  another is not found there, and its client sends the query once more, as APQ expects.
* **Refusals.** A hash must be 64 lower-case hex digits and ``version`` the integer 1,
  else ``400 BAD_REQUEST``; a query whose SHA-256 is not the hash sent is ``400
  BAD_REQUEST`` ("provided sha does not match query", Apollo's words) and nothing is kept.
  ``PITH_API_PERSISTED_QUERIES=0`` turns APQ off: every request naming a persisted query is
  answered ``PersistedQueryNotSupported`` (``PERSISTED_QUERY_NOT_SUPPORTED``), after which
  Apollo Client sends plain queries.
* **Status.** ``PersistedQueryNotFound`` and ``PersistedQueryNotSupported`` are answered
  ``200`` in either media type, as Apollo Server answers them (its clients, seeing a 400,
  turn persisted queries off for good), with ``"data": null`` (GraphQL over HTTP lets a
  ``application/graphql-response+json`` answer without ``data`` be 4xx only), and
  ``Cache-Control: no-store``: a CDN that kept a miss would serve it after the query is
  registered.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

import orjson
from cross_web import StarletteRequestAdapter
from starlette.datastructures import QueryParams
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pith_graph.api.coded_errors import error_body
from pith_graph.api.documents import text_digest
from pith_graph.api.http import accept_of, coded_refusal, is_json_request, replay
from pith_graph.api.lru import BoundedLRU, memory_of

__all__ = [
    "BYTES_PER_QUERY",
    "DEFAULT_PERSISTED_QUERIES",
    "MAX_PERSISTED_QUERIES",
    "NOT_FOUND",
    "NOT_SUPPORTED",
    "RESOLVED_PARAMS",
    "PersistedQueries",
    "PersistedQueryRequests",
    "PersistedRequestAdapter",
]

log = logging.getLogger("pith_graph.api.persisted")

#: Documents a serving process keeps by default (``PITH_API_PERSISTED_QUERIES``).
DEFAULT_PERSISTED_QUERIES = 1000
#: The most that setting may be.
MAX_PERSISTED_QUERIES = 100_000
#: Bytes of query text kept per document allowed, on average (the store's byte bound).
BYTES_PER_QUERY = 16 * 1024
#: The message and code of a hash the store does not hold (Apollo's; clients match them).
NOT_FOUND = ("PersistedQueryNotFound", "PERSISTED_QUERY_NOT_FOUND")
#: ... and of a request naming a persisted query while APQ is off.
NOT_SUPPORTED = ("PersistedQueryNotSupported", "PERSISTED_QUERY_NOT_SUPPORTED")
_HASH = re.compile(r"[0-9a-f]{64}")
#: The scope key of a ``GET`` hit's parameters, the query put in: the view reads them
#: (:meth:`~pith_graph.api.app.GraphQLView`'s request adapter) in place of the query string.
RESOLVED_PARAMS = "pith_graph.persisted_params"
#: How an executed answer begins (orjson writes no spaces; ``data`` comes first).
_EXECUTED = b'{"data":{'


class PersistedQueries:
    """Query texts by their SHA-256 (hex): at most ``max_queries`` of them and ``max_bytes``
    bytes of memory for their texts (``sys.getsizeof``: a text holding one character beyond
    the BMP takes 4 bytes a character, so its UTF-8 length let 16 MiB hold 64 MiB), the least
    recently used going first; safe to share between threads.

    >>> import hashlib
    >>> store = PersistedQueries(2)
    >>> for text in ("{ a }", "{ b }", "{ c }"):
    ...     store.put(hashlib.sha256(text.encode()).hexdigest(), text)
    >>> len(store), store.get(hashlib.sha256(b"{ a }").hexdigest()), store.get(hashlib.sha256(b"{ c }").hexdigest())
    (2, None, '{ c }')
    """

    def __init__(self, max_queries: int, max_bytes: int | None = None) -> None:
        if max_queries < 1:
            raise ValueError("a store of persisted queries holds at least one")
        self.max_queries = max_queries
        self.max_bytes = max_queries * BYTES_PER_QUERY if max_bytes is None else max_bytes
        self._queries: BoundedLRU[str, str] = BoundedLRU(max_queries, self.max_bytes)

    def __len__(self) -> int:
        return len(self._queries)

    @property
    def bytes(self) -> int:
        """Of the texts kept."""
        return self._queries.bytes

    def get(self, sha256: str) -> str | None:
        """The text of ``sha256``, now the most recently used; ``None`` if not kept."""
        return self._queries.get(sha256)

    def put(self, sha256: str, query: str) -> None:
        """Keep ``query`` under ``sha256`` (its digest: the caller checked), pushing out the
        least recently used past either bound; a text larger than all the bytes is not kept."""
        self._queries.put(sha256, query, memory_of(query))


def sha256_of(query: str) -> str:
    """The hex SHA-256 of a query's UTF-8 text, as clients compute it.

    >>> import hashlib
    >>> sha256_of("abc")
    'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'
    >>> sha256_of('{ author(name: "Zoë") { name } }') == hashlib.sha256('{ author(name: "Zoë") { name } }'.encode()).hexdigest()
    True
    """
    return text_digest(query).hex()


class _Refused(Exception):
    """A request naming a persisted query that is answered here: status, message, code."""

    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


class PersistedQueryRequests:
    """On ``path``: requests that name a persisted query (``extensions.persistedQuery``, in
    a ``GET``'s parameters or a JSON ``POST`` body) resolved against ``store`` (``None``:
    APQ off), passed on as plain requests or answered here; every other request untouched."""

    def __init__(self, app: ASGIApp, store: PersistedQueries | None, path: str = "/graphql") -> None:
        self.app = app
        self.store = store
        self.paths = (path, path + "/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"] if scope["type"] == "http" and scope["path"] in self.paths else None
        if method == "GET":  # a HEAD too: ETags asks a GET for it
            await self._get(scope, receive, send)
        elif method == "POST" and is_json_request(_header(scope, b"content-type")):
            await self._post(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _get(self, scope: Scope, receive: Receive, send: Send) -> None:
        # As Starlette reads a query string (the view's QueryParams): a repeated name's last value.
        pairs = parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)
        params = dict(pairs)
        try:
            extensions = orjson.loads(params.get("extensions") or "null")
        except orjson.JSONDecodeError:
            extensions = None  # the view refuses it, in its words
        request = {"query": params.get("query"), "extensions": extensions}
        try:
            resolved = self._resolve(request)
        except _Refused as refused:
            await _refuse(scope, send, refused)
            return
        if resolved is None:
            await self.app(scope, receive, send)
            return
        query, register = resolved
        # The view reads these in place of the query string (RESOLVED_PARAMS): a stored query
        # written into the URL and read back cost 18-55 ms of the event loop for 32,000 "é"
        # (percent-encoded, then decoded), bought by a request of 250 bytes.
        params = {name: value for name, value in pairs if name not in ("query", "extensions")}
        if isinstance(query, str):
            params["query"] = query
        if request["extensions"]:
            params["extensions"] = orjson.dumps(request["extensions"]).decode()
        resolved_scope = {**scope, RESOLVED_PARAMS: params}
        await self.app(resolved_scope, receive, self._registering(register, send))

    async def _post(self, scope: Scope, receive: Receive, send: Send) -> None:
        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # gone: the app hears it too
                await self.app(scope, receive, send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError:
            request = None  # the view refuses it, in its words
        try:
            resolved = self._resolve(request) if isinstance(request, dict) else None
        except _Refused as refused:
            await _refuse(scope, send, refused)
            return
        if resolved is None:
            await self.app(scope, replay(body, receive), send)
            return
        query, register = resolved
        assert isinstance(request, dict)
        if not request["extensions"]:
            del request["extensions"]
        request["query"] = query
        await self.app(scope, replay(orjson.dumps(request), receive), self._registering(register, send))

    def _resolve(self, request: dict[str, Any]) -> tuple[Any, tuple[str, str] | None] | None:
        """The query ``request`` stands for, and the (hash, query) to keep once it executed;
        ``None`` if it names no persisted query. Takes ``persistedQuery`` out of its
        ``extensions``; raises :class:`_Refused` for a request answered here."""
        extensions = request.get("extensions")
        if not isinstance(extensions, dict) or extensions.get("persistedQuery") is None:
            return None  # absent or null: none named (as Apollo Server reads it)
        persisted = extensions["persistedQuery"]
        if self.store is None:
            raise _Refused(200, *NOT_SUPPORTED)
        version = persisted.get("version") if isinstance(persisted, dict) else None
        if type(version) is not int or version != 1:
            raise _Refused(
                400, "Unsupported persisted query version: send version 1 (a SHA-256 hash).", "BAD_REQUEST"
            )
        sha256 = persisted.get("sha256Hash")
        if not isinstance(sha256, str) or not _HASH.fullmatch(sha256):
            raise _Refused(
                400,
                "persistedQuery.sha256Hash must be the SHA-256 of the query text: 64 lower-case hex digits.",
                "BAD_REQUEST",
            )
        request["extensions"] = {
            name: value for name, value in extensions.items() if name != "persistedQuery"
        }
        query = request.get("query")
        if query is None:
            found = self.store.get(sha256)
            if found is None:
                raise _Refused(200, *NOT_FOUND)
            return found, None
        if not isinstance(query, str):
            return query, None  # the view refuses it, in its words
        if sha256_of(query) != sha256:
            raise _Refused(400, "provided sha does not match query", "BAD_REQUEST")
        return query, (None if self.store.get(sha256) is not None else (sha256, query))

    def _registering(self, register: tuple[str, str] | None, send: Send) -> Send:
        """``send``, keeping ``register`` once its answer shows the query executed."""
        store = self.store
        if register is None or store is None:
            return send
        status = 0
        head = b""

        async def watching(message: Message) -> None:
            nonlocal status, head
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and status == 200 and len(head) < len(_EXECUTED):
                head += message.get("body", b"")[: len(_EXECUTED)]
                if head.startswith(_EXECUTED):
                    store.put(*register)
                    log.debug("persisted query %s kept (%d kept)", register[0], len(store))
            await send(message)

        return watching


class PersistedRequestAdapter(StarletteRequestAdapter):
    """strawberry's request adapter reading a ``GET`` hit's parameters from its scope
    (:data:`RESOLVED_PARAMS`) instead of the query string, so that both the query and the
    GraphiQL check (a ``GET`` with no ``query``) see the stored query."""

    @property
    def query_params(self) -> Mapping[str, str | None]:
        resolved = self._request.scope.get(RESOLVED_PARAMS)
        return QueryParams(resolved) if resolved is not None else super().query_params


def _header(scope: Scope, name: bytes) -> bytes | None:
    return next((value for key, value in scope["headers"] if key == name), None)


async def _refuse(scope: Scope, send: Send, refused: _Refused) -> None:
    headers, body = coded_refusal(refused.message, refused.code, accept_of(scope["headers"]))
    if refused.status == 200:  # Apollo's status, so data null in either media type
        body = orjson.dumps(error_body(refused.message, refused.code))
        headers = [(n, str(len(body)).encode() if n == b"content-length" else v) for n, v in headers]
    await send({"type": "http.response.start", "status": refused.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
