"""The server's settings: one object, read from the environment and validated at start-up.

=====================================  ============================  ===================
variable                               meaning                       default
=====================================  ============================  ===================
``PITH_API_HOST``                      interface to listen on        ``127.0.0.1``
``PITH_API_PORT``                      port                          ``8000``
``PITH_API_BACKEND``                   ``memory`` or ``neo4j``       ``memory``
``PITH_API_TRUSTED_KEYS``              trusted-keys file             (registry key only)
``PITH_API_REGISTRY_KEYS``             registry-keys file (new keys  (none)
                                       of pith.science)
``PITH_API_REVOKED_KEYS``              revoked-keys file (the        (none)
                                       operator's revocations)
``PITH_API_GRAPH``                     saved graph to start from     (none: verify, load)
``PITH_API_MAX_DEPTH``                 query depth                   10
``PITH_API_MAX_ALIASES``               aliases per document          30
``PITH_API_MAX_TOKENS``                lexical tokens per document   2000
``PITH_API_MAX_PAGE_SIZE``             largest ``first``             100
``PITH_API_MAX_COST``                  query cost (``api.cost``)     25000
``PITH_API_MAX_BODY_BYTES``            request body size             65536
``PITH_API_HEADER_TIMEOUT_SECONDS``    time to send the headers      10
``PITH_API_BODY_TIMEOUT_SECONDS``      time to send the body         10
``PITH_API_MAX_HEADER_BYTES``          request line and headers      65536
``PITH_API_SEND_TIMEOUT_SECONDS``      time to take an answer        30
``PITH_API_MAX_CONNECTIONS``           open connections per process  256
                                       (beyond: 503)
``PITH_API_STOP_SECONDS``              time requests under way get   10
                                       to finish at a stop (whole
                                       seconds)
``PITH_API_TIMEOUT_SECONDS``           per-request time limit        10
``PITH_API_MAX_PATH_HOPS``             largest ``maxHops``           6
``PITH_API_MAX_BATCH_IDS``             ids per ``papersById``,       500
                                       ``nodes``
``PITH_API_MAX_ANSWER_BYTES``          bytes of an answer's JSON     33554432
``PITH_API_WORKERS``                   serving processes             one per core
``PITH_API_MEMORY_THREADS``            memory backend: threads       4
                                       running queries off the
                                       event loop
``PITH_API_HEAVY_EXECUTIONS``          of those, heavy executions    2
                                       at once (the rest queue)
``PITH_API_NEO4J_EXECUTIONS``          Neo4j backend: heavy          2
                                       executions at once (the rest
                                       queue)
``PITH_API_GRAPHIQL``                  serve GraphiQL (``0``/``1``)  ``1``
``PITH_API_CORS_ORIGINS``              browser origins allowed       (none)
                                       (comma-separated, or ``*``)
``PITH_API_CACHE_CONTROL``             ``Cache-Control`` of GETs     ``no-cache``
``PITH_API_ALLOWED_HOSTS``             ``Host`` names answered       (bound to loopback:
                                       (comma-separated, ``*`` for   its names; else any)
                                       any; ``api.hosts``)
``PITH_API_PERSISTED_QUERIES``         automatic persisted queries   1000
                                       kept per process (``0``: APQ
                                       off; ``api.persisted``)
``NEO4J_URI`` ...                      as for ``pith-graph load``
``NEO4J_PASSWORD_FILE``                Neo4j password in a file      (``neo4j_auth.py``)
=====================================  ============================  ===================
"""

from __future__ import annotations

import contextlib
import ipaddress
import math
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pith_graph import numbers
from pith_graph.api.hosts import allowed_entry, default_allowed_hosts
from pith_graph.api.limits import RequestLimits
from pith_graph.api.persisted import DEFAULT_PERSISTED_QUERIES, MAX_PERSISTED_QUERIES
from pith_graph.api.protocols import DEFAULT_MAX_HEAD_BYTES, DEFAULT_SEND_TIMEOUT
from pith_graph.errors import UsageError
from pith_graph.loader.parse import DEFAULT_MAX_BYTES, MAX_BYTES_LIMIT
from pith_graph.loader.stores.neo4j_auth import resolve_password
from pith_graph.loader.trust import check_clock_skew
from pith_graph.loader.verify import DEFAULT_CLOCK_SKEW

__all__ = ["NEO4J_SERVES_ITS_DATABASE", "ServerSettings"]

Backend = Literal["memory", "neo4j"]
#: Why ``serve --backend neo4j`` takes no bundle paths (a usage error).
NEO4J_SERVES_ITS_DATABASE = (
    "--backend neo4j serves what the database holds: load bundles with pith-graph load"
)
_ORIGIN = re.compile(r"https?://[A-Za-z0-9.\-\[\]:]+")


def _as_browsers_send(origin: str) -> str | None:
    """``origin`` as a browser's ``Origin`` header spells it (host in lower case, an IP
    address in its usual form, no :80 on http nor :443 on https, no empty port), which CORS
    compares exactly; ``None`` for a port no browser can use (0, past 65535).

    >>> _as_browsers_send("https://App.Example.org:443"), _as_browsers_send("http://[::1]:8080")
    ('https://app.example.org', 'http://[::1]:8080')
    >>> _as_browsers_send("http://127.1:5173"), _as_browsers_send("http://[0:0::0:1]:")
    ('http://127.0.0.1:5173', 'http://[::1]')
    """
    scheme, _, rest = origin.partition("://")
    rest = rest.lower()
    host, _, port = rest.rpartition(":") if ":" in rest.rpartition("]")[2] else (rest, "", "")
    if host.startswith("[") and host.endswith("]"):
        with contextlib.suppress(ValueError):
            host = f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
    elif re.fullmatch(r"[0-9a-fx.]+", host):  # 127.1, 0x7f.1: as a browser reads them
        with contextlib.suppress(OSError):
            host = socket.inet_ntoa(socket.inet_aton(host))
    if not port:
        return f"{scheme}://{host}"
    number = int(port) if port.isascii() and port.isdigit() else 0
    if not 0 < number <= 65535:
        return None
    return (
        f"{scheme}://{host}"
        if (scheme, number) in (("http", 80), ("https", 443))
        else f"{scheme}://{host}:{number}"
    )


_SWITCHES = {
    "0": False,
    "false": False,
    "no": False,
    "off": False,
    "1": True,
    "true": True,
    "yes": True,
    "on": True,
}

_LIMIT_VARIABLES: dict[str, tuple[str, type]] = {
    "PITH_API_MAX_DEPTH": ("max_depth", int),
    "PITH_API_MAX_ALIASES": ("max_aliases", int),
    "PITH_API_MAX_TOKENS": ("max_tokens", int),
    "PITH_API_MAX_PAGE_SIZE": ("max_page_size", int),
    "PITH_API_MAX_COST": ("max_cost", int),
    "PITH_API_MAX_BODY_BYTES": ("max_body_bytes", int),
    "PITH_API_TIMEOUT_SECONDS": ("timeout_seconds", float),
    "PITH_API_HEADER_TIMEOUT_SECONDS": ("header_timeout_seconds", float),
    "PITH_API_BODY_TIMEOUT_SECONDS": ("body_timeout_seconds", float),
    "PITH_API_MAX_PATH_HOPS": ("max_path_hops", int),
    "PITH_API_MAX_BATCH_IDS": ("max_batch_ids", int),
    "PITH_API_MAX_ANSWER_BYTES": ("max_answer_bytes", int),
}
_CONNECTION_VARIABLES: dict[str, tuple[str, type]] = {
    "PITH_API_MAX_HEADER_BYTES": ("max_header_bytes", int),
    "PITH_API_SEND_TIMEOUT_SECONDS": ("send_timeout_seconds", float),
    "PITH_API_MAX_CONNECTIONS": ("max_connections", int),
    "PITH_API_STOP_SECONDS": ("stop_seconds", int),
}


#: Most serving processes (``PITH_API_WORKERS``): more than one per core gains nothing.
MAX_SERVING_WORKERS = 128
#: Longest a stop (SIGTERM, Ctrl-C) lets requests under way run (``PITH_API_STOP_SECONDS``).
MAX_STOP_SECONDS = 3600


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """How to serve: where, from which backend, with which limits."""

    host: str = "127.0.0.1"
    port: int = 8000
    backend: Backend = "memory"
    paths: tuple[str, ...] = ()
    #: Memory backend: a saved graph (snapshot or node-link JSON) to start from.
    graph: str | None = None
    trusted_keys: tuple[str, ...] = ()
    registry_keys: tuple[str, ...] = ()
    #: The operator's revocations of pinned keys (``--revoked-keys``).
    revoked_keys: tuple[str, ...] = ()
    limits: RequestLimits = field(default_factory=RequestLimits)
    neo4j_uri: str = "bolt://127.0.0.1:7687"
    neo4j_user: str = "neo4j"
    neo4j_password: str | None = None
    neo4j_password_file: str | None = None
    neo4j_database: str = "neo4j"
    #: Memory backend: threads that run GraphQL executions off the event loop.
    memory_threads: int = 4
    #: Memory backend: heavy executions at once per process (``api.loops``; the rest queue).
    heavy_executions: int = 2
    #: Neo4j backend: heavy executions at once per process (``api.loops.LoopGate``).
    neo4j_executions: int = 2
    graphiql: bool = True
    #: Serving processes (``None``: one per core), forked once the graph is loaded.
    workers: int | None = None
    #: Origins whose pages may call the API (CORS), e.g. ``https://app.example.org``.
    cors_origins: tuple[str, ...] = ()
    #: Hosts a request may name (``api.hosts``; ``None``: by ``host``, :attr:`hosts_answered`).
    allowed_hosts: tuple[str, ...] | None = None
    #: ``Cache-Control`` of ``GET /graphql`` answers (which carry an ``ETag``).
    cache_control: str = "no-cache"
    #: Memory backend: verification processes for the load (``None``: one per core).
    load_workers: int | None = None
    #: Memory backend: the largest bundle the load accepts (``--max-bytes``, as ``load``'s).
    max_bytes: int = DEFAULT_MAX_BYTES
    #: Memory backend: how far ahead of this clock a bundle's times may lie (``--clock-skew``).
    clock_skew: float = DEFAULT_CLOCK_SKEW
    #: Bytes of a request line and headers together (beyond: 414 or 431, ``api.protocols``).
    max_header_bytes: int = DEFAULT_MAX_HEAD_BYTES
    #: Seconds in which a client must take some of an answer its socket could not take at once.
    send_timeout_seconds: float = DEFAULT_SEND_TIMEOUT
    #: Connections a serving process holds open; a request beyond them is answered 503.
    max_connections: int = 256
    #: Seconds a stop (SIGTERM, Ctrl-C) lets the requests under way run before it answers
    #: them 503 and closes their connections (uvicorn's graceful shutdown; ``api.guard``).
    stop_seconds: int = 10
    #: Automatic persisted queries a serving process keeps (``api.persisted``; 0: APQ off).
    persisted_queries: int = DEFAULT_PERSISTED_QUERIES

    def __post_init__(self) -> None:
        if self.backend not in ("memory", "neo4j"):
            raise UsageError(f"backend must be memory or neo4j, not {self.backend!r}")
        if not 0 <= self.port <= 65535:
            raise UsageError(f"port must be between 0 and 65535, not {self.port}")
        if self.graph is not None and self.backend != "memory":
            raise UsageError("--graph starts the memory backend from a saved graph: not with neo4j")
        if self.workers is not None and not 1 <= self.workers <= MAX_SERVING_WORKERS:
            raise UsageError(
                f"workers (--workers, PITH_API_WORKERS) must be from 1 to {MAX_SERVING_WORKERS}, not {self.workers}"
            )
        if self.load_workers is not None and self.load_workers < 1:
            raise UsageError("--load-workers must be at least 1")
        if not 1 <= self.max_bytes <= MAX_BYTES_LIMIT:
            raise UsageError(f"--max-bytes must be positive and at most {MAX_BYTES_LIMIT} (64 MiB)")
        check_clock_skew(self.clock_skew)
        if self.memory_threads < 1:
            raise UsageError("PITH_API_MEMORY_THREADS must be at least 1")
        if self.heavy_executions < 1:
            raise UsageError("PITH_API_HEAVY_EXECUTIONS must be at least 1")
        if self.neo4j_executions < 1:
            raise UsageError("PITH_API_NEO4J_EXECUTIONS must be at least 1")
        for origin in self.cors_origins:
            if origin != "*" and not _ORIGIN.fullmatch(origin):
                raise UsageError(
                    f"PITH_API_CORS_ORIGINS: {origin!r} is not an origin (scheme://host[:port], no path)"
                )
            sent = origin if origin == "*" else _as_browsers_send(origin)
            if sent is None:
                raise UsageError(f"PITH_API_CORS_ORIGINS: {origin!r} has no port a browser uses (1 to 65535)")
            if sent != origin:
                raise UsageError(  # compared exactly: it would never match, and nothing said so
                    f"PITH_API_CORS_ORIGINS: {origin!r} is not an origin a browser sends "
                    f"(host in lower case, no default port): write {sent!r}"
                )
        if self.allowed_hosts is not None and not self.allowed_hosts:
            raise UsageError("PITH_API_ALLOWED_HOSTS is empty: name the hosts clients ask for, or * for any")
        for entry in self.allowed_hosts or ():
            try:
                allowed_entry(entry)
            except ValueError as err:
                raise UsageError(f"PITH_API_ALLOWED_HOSTS: {err}") from err
        if not self.cache_control.isascii() or not self.cache_control.isprintable():
            raise UsageError("PITH_API_CACHE_CONTROL must be printable ASCII")
        if self.max_header_bytes < 1024:
            raise UsageError("PITH_API_MAX_HEADER_BYTES must be at least 1024")
        if not 0 < self.send_timeout_seconds < math.inf:
            raise UsageError("PITH_API_SEND_TIMEOUT_SECONDS must be a positive number of seconds")
        if self.max_connections < 1:
            raise UsageError("PITH_API_MAX_CONNECTIONS must be at least 1")
        if not 1 <= self.stop_seconds <= MAX_STOP_SECONDS:
            raise UsageError(
                f"PITH_API_STOP_SECONDS must be a whole number of seconds from 1 to {MAX_STOP_SECONDS}, "
                f"not {self.stop_seconds}"
            )
        if not 0 <= self.persisted_queries <= MAX_PERSISTED_QUERIES:
            raise UsageError(
                f"PITH_API_PERSISTED_QUERIES must be from 0 (off) to {MAX_PERSISTED_QUERIES}, not {self.persisted_queries}"
            )

    @property
    def hosts_answered(self) -> tuple[str, ...]:
        """The hosts requests may name: ``allowed_hosts``, else by the interface listened on
        (:func:`~pith_graph.api.hosts.default_allowed_hosts`)."""
        return self.allowed_hosts if self.allowed_hosts is not None else default_allowed_hosts(self.host)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ServerSettings:
        """ServerSettings from ``environ`` (default: ``os.environ``), then ``overrides`` (not None).

        Raises :class:`~pith_graph.errors.UsageError` naming the variable that is wrong.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        limits: dict[str, Any] = {}

        def number(name: str, kind: type) -> Any:
            try:
                return (numbers.integer if kind is int else numbers.decimal)(env[name])
            except ValueError as err:
                what = "a whole number" if kind is int else "a number"  # (2.5 is a number)
                raise UsageError(f"{name} must be {what}, not {env[name]!r}") from err

        if "PITH_API_HOST" in env:
            if not env["PITH_API_HOST"].strip():
                raise UsageError("PITH_API_HOST is empty: name an interface, e.g. 127.0.0.1")
            values["host"] = env["PITH_API_HOST"].strip()
        if "PITH_API_PORT" in env:
            values["port"] = number("PITH_API_PORT", int)
        if "PITH_API_BACKEND" in env:
            values["backend"] = env["PITH_API_BACKEND"]
        if env.get("PITH_API_GRAPH"):
            values["graph"] = env["PITH_API_GRAPH"]
        if env.get("PITH_API_TRUSTED_KEYS"):
            values["trusted_keys"] = (env["PITH_API_TRUSTED_KEYS"],)
        if env.get("PITH_API_REGISTRY_KEYS"):
            values["registry_keys"] = (env["PITH_API_REGISTRY_KEYS"],)
        if env.get("PITH_API_REVOKED_KEYS"):
            values["revoked_keys"] = (env["PITH_API_REVOKED_KEYS"],)
        if "PITH_API_WORKERS" in env:
            values["workers"] = number("PITH_API_WORKERS", int)
        if "PITH_API_MEMORY_THREADS" in env:
            values["memory_threads"] = number("PITH_API_MEMORY_THREADS", int)
        if "PITH_API_HEAVY_EXECUTIONS" in env:
            values["heavy_executions"] = number("PITH_API_HEAVY_EXECUTIONS", int)
        if "PITH_API_NEO4J_EXECUTIONS" in env:
            values["neo4j_executions"] = number("PITH_API_NEO4J_EXECUTIONS", int)
        if "PITH_API_CORS_ORIGINS" in env:
            values["cors_origins"] = tuple(
                o.strip() for o in env["PITH_API_CORS_ORIGINS"].split(",") if o.strip()
            )
        if "PITH_API_ALLOWED_HOSTS" in env:
            values["allowed_hosts"] = tuple(
                h.strip() for h in env["PITH_API_ALLOWED_HOSTS"].split(",") if h.strip()
            )
        if "PITH_API_PERSISTED_QUERIES" in env:
            values["persisted_queries"] = number("PITH_API_PERSISTED_QUERIES", int)
        if "PITH_API_CACHE_CONTROL" in env:
            values["cache_control"] = env["PITH_API_CACHE_CONTROL"].strip()
        for variable, (name, kind) in _CONNECTION_VARIABLES.items():
            if variable in env:
                values[name] = number(variable, kind)
        if "PITH_API_GRAPHIQL" in env:
            switch = env["PITH_API_GRAPHIQL"].strip().lower()
            if switch not in _SWITCHES:
                raise UsageError(
                    f"PITH_API_GRAPHIQL must be 0 or 1 (or off/on), not {env['PITH_API_GRAPHIQL']!r}"
                )
            values["graphiql"] = _SWITCHES[switch]
        for variable, key in (
            ("NEO4J_URI", "neo4j_uri"),
            ("NEO4J_USER", "neo4j_user"),
            ("NEO4J_DATABASE", "neo4j_database"),
        ):
            if variable in env:
                values[key] = env[variable]
        for variable, (name, kind) in _LIMIT_VARIABLES.items():
            if variable in env:
                limits[name] = number(variable, kind)
        try:
            defaults = RequestLimits()
            # A cap below its default lowers the default with it (first: 20, maxHops: 4).
            if "max_page_size" in limits:
                limits["default_page_size"] = min(defaults.default_page_size, limits["max_page_size"])
            if "max_path_hops" in limits:
                limits["default_path_hops"] = min(defaults.default_path_hops, limits["max_path_hops"])
            values["limits"] = replace(defaults, **limits)
        except ValueError as err:
            message = str(err)
            for variable, (name, _) in _LIMIT_VARIABLES.items():  # name the variable set
                if message.startswith(name + " ") and variable in env:
                    message = variable + message[len(name) :]
            raise UsageError(f"bad limit setting: {message}") from err
        values.update({key: value for key, value in overrides.items() if value is not None})
        settings = cls(**values)
        if settings.backend != "neo4j":
            return settings
        if settings.paths:  # said before any password is looked for or connection tried
            raise UsageError(NEO4J_SERVES_ITS_DATABASE)
        # NEO4J_PASSWORD, NEO4J_PASSWORD_FILE, the local server's file: in resolve_password's order.
        password = resolve_password(
            settings.neo4j_uri,
            password=settings.neo4j_password,
            password_file=settings.neo4j_password_file,
            environ=env,
        )
        return replace(settings, neo4j_password=password)
