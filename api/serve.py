"""Serve the GraphQL API: load or connect, then run uvicorn in workers until SIGTERM.

:func:`serve` is what ``pith-graph serve`` runs (the CLI only turns its options into
:class:`~pith_graph.api.settings.ServerSettings`). ``backend="memory"`` verifies and loads
the settings' bundles (default: the shipped samples) before the server accepts a request;
``backend="neo4j"`` serves what the database holds. With ``graph``, the memory backend starts
from a saved graph instead (:mod:`pith_graph.loader.stores.snapshot`: trusted, not verified
again), then loads any bundles on top. The socket is bound first; with
``workers`` above one, :mod:`pith_graph.api.workers` forks that many serving processes from
this one once the graph is loaded (so they share it) or the database answered. SIGTERM or
Ctrl-C stops accepting connections, lets running requests finish (up to 10 s), then closes
the reader.
"""

from __future__ import annotations

import gc
import logging
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import uvicorn

from pith_graph.api.app import create_app
from pith_graph.api.bridge import BridgeRunner
from pith_graph.api.http import with_cors
from pith_graph.api.lanes import Runner, ThreadRunner, run_inline
from pith_graph.api.loops import LoopGate, LoopThreads
from pith_graph.api.protocols import protocol_with_header_timeout, too_many_connections
from pith_graph.api.reads.reader import GraphReader
from pith_graph.api.settings import NEO4J_SERVES_ITS_DATABASE, ServerSettings
from pith_graph.api.workers import STARTUP_FAILURE, bind, default_workers, serve_in_workers
from pith_graph.errors import UsageError, quoted
from pith_graph.loader.facade import SAMPLES
from pith_graph.loader.keyfiles import operator_keyring
from pith_graph.loader.keyring import REVOKED_ALWAYS, Keyring
from pith_graph.loader.parse import InputLimits
from pith_graph.loader.pipeline import LoadReport, run
from pith_graph.schema.graph import LABEL_ATTRIBUTE, PAPER

__all__ = ["freeze_loaded_objects", "serve"]

log = logging.getLogger(__name__)

#: Opens a reader (and how to run its calls) in the process that will serve with it.
OpenReader = Callable[[], tuple[GraphReader, Runner | ThreadRunner, Runner | ThreadRunner]]


def freeze_loaded_objects() -> None:
    """Move everything alive now (the loaded graph) out of the cyclic collector's reach.

    The graph lives as long as the server; left tracked, every full collection rescans its
    millions of objects (about 1.5 s at 100k papers), which becomes the p99 of every query.
    Frozen objects are never written by the collector either, so forked workers keep
    sharing their pages.
    """
    gc.collect()
    gc.freeze()


#: How many key ids a warning of ``serve``'s names.
_NAMED_KEYS = 3


def _named(keys: list[str]) -> str:
    """``keys`` quoted, the first :data:`_NAMED_KEYS` of them.

    >>> _named(["k1"]), _named(["k1", "k2", "k3", "k4"])
    ("a key ('k1')", "keys ('k1', 'k2', 'k3', …)")
    """
    named = ", ".join(quoted(key) for key in keys[:_NAMED_KEYS])
    more = ", …" if len(keys) > _NAMED_KEYS else ""
    return f"{'a key' if len(keys) == 1 else 'keys'} ({named}{more})"


def trust_warnings(reader: GraphReader, keyring: Keyring) -> list[str]:
    """What ``serve`` warns of at start: the graph holds papers signed by keys ``keyring``
    does not pin (ranks come from the server's keyring, not from the graph: served unranked),
    or by keys it revokes for all time (served until ``prune`` removes them)."""
    warnings = []
    unpinned = reader.unpinned_key_ids(keyring, _NAMED_KEYS + 1)
    if unpinned:
        warnings.append(
            f"the graph holds papers signed by {_named(unpinned)} this server's keyring does not pin: "
            "they are served unranked (rank null), so where two signers claim one identifier the API "
            "cannot prefer the higher-ranked one; pass the --trusted-keys files the loads used"
        )
    revoked = [key.key_id for key in keyring.revoked() if key.revoked_at == REVOKED_ALWAYS]
    used = reader.used_key_ids(revoked) if revoked else []
    if used:
        warnings.append(
            f"the graph holds papers signed by {_named(used)} revoked in --revoked-keys: they are "
            "served as before until pith-graph prune, given the same --revoked-keys, removes them"
        )
    return warnings


#: ``serve``'s warning of a Neo4j database written before 0.9.4 (:meth:`Neo4jReader.outdated`).
OUTDATED = (
    "the database holds papers written before 0.9.4, without Paper.isLatest: latestVersions leaves "
    "them out until pith-graph schema (or a load) gives them theirs"
)
#: ``serve``'s warning of a Neo4j database whose authors' ``nameFolded`` a 0.9.7 load folded from
#: their display names (:meth:`~pith_graph.api.reads.neo4j_upkeep.Neo4jUpkeep.unfolded_author`).
UNFOLDED = (
    "the database holds authors whose nameFolded was written before 0.9.8, from their display name "
    "(the first: {key}): typeahead does not find such a name by its own spelling (a Greek final sigma, "
    "a ligature, full-width or bold letters) until pith-graph schema folds them again"
)


def _prepare(
    settings: ServerSettings,
    keyring: Keyring,
    on_loaded: Callable[[LoadReport], None],
    on_opened: Callable[[str, int, float], None],
    on_warmed: Callable[[float, bool], None],
) -> tuple[OpenReader, list[str]]:
    """Open the saved graph and/or verify and load bundles (memory), or check the database
    answers (neo4j), here, once; return how a serving process opens its reader, and what to
    warn of (:func:`trust_warnings`)."""
    if settings.backend == "memory":
        from pith_graph.api.reads.memory import MemoryReader
        from pith_graph.api.reads.saved_indexes import INDEX_READERS
        from pith_graph.loader.stores.memory import MemoryStore, open_saved
        from pith_graph.loader.stores.snapshot_pieces import SKIP_INDEXES

        graph = None
        indexes: dict[str, Any] = {}
        if settings.graph is not None:
            started = time.perf_counter()
            written_to = bool(settings.paths)
            readers = SKIP_INDEXES if written_to else INDEX_READERS  # (loaded onto: built again)
            graph, indexes = open_saved(settings.graph, checked=written_to, readers=readers)
            papers = sum(1 for _, label in graph.nodes(data=LABEL_ATTRIBUTE) if label == PAPER.label)
            on_opened(settings.graph, papers, time.perf_counter() - started)
        if graph is None or settings.paths:
            store = MemoryStore(graph)
            report = run(
                list(settings.paths) or [SAMPLES],
                keyring=keyring,
                store=store,
                limits=InputLimits(max_bytes=settings.max_bytes),
                workers=settings.load_workers,
                clock_skew=settings.clock_skew,
                exclude=(*settings.registry_keys, *settings.trusted_keys, *settings.revoked_keys),
            )
            on_loaded(report)
            graph = store.graph
        reader = MemoryReader(graph)
        reused = False
        if indexes and not settings.paths:  # saved with this very graph, nothing loaded since
            try:
                reused = reader.adopt(indexes)
            except ValueError as err:
                raise UsageError(f"cannot open saved graph {settings.graph}: {err}") from err
        started = time.perf_counter()
        try:
            reader.warm()  # indexes built before any fork, so workers share them too
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as err:
            if settings.graph is None:
                raise
            raise UsageError(  # a snapshot's structure is trusted, not checked as it opens
                f"cannot open saved graph {settings.graph}: not a graph a load builds "
                f"({type(err).__name__}: {quoted(str(err))}); write it again with pith-graph load"
            ) from err
        on_warmed(time.perf_counter() - started, reused)
        warnings = trust_warnings(reader, keyring)
        freeze_loaded_objects()
        return (lambda: (reader, run_inline, run_inline)), warnings
    if settings.paths:
        raise UsageError(NEO4J_SERVES_ITS_DATABASE)
    from pith_graph.api.reads.neo4j import Neo4jReader

    def connect() -> Neo4jReader:
        return Neo4jReader.connect(
            settings.neo4j_uri,
            settings.neo4j_user,
            settings.neo4j_password,
            settings.neo4j_database,
            timeout=settings.limits.timeout_seconds,
        )

    probe = connect()  # fail now on a bad address or password; each process connects itself
    try:
        warnings = trust_warnings(probe, keyring)
        if probe.outdated():
            warnings.append(OUTDATED)
        if (key := probe.unfolded_author()) is not None:
            warnings.append(UNFOLDED.format(key=quoted(key)))
    finally:
        probe.close()
    return (lambda: (connect(), BridgeRunner(), ThreadRunner(1))), warnings


def _serve_one(
    settings: ServerSettings, keyring: Keyring, open_reader: OpenReader, sock: socket.socket
) -> int:
    """Serve on the listening socket ``sock`` in this process until stopped; 0, or 3 if it
    never started."""
    reader, runner, ping_runner = open_reader()
    # The memory backend's executions are CPU work: off the event loop (api.loops); made
    # here, in the serving process (threads do not survive a fork).
    # Neo4j's run on the loop, admitted as the memory backend's are (api.loops.LoopGate);
    # those that read nothing (introspection: CPU work alone) on a thread of their own.
    threads = (
        LoopThreads(settings.memory_threads, settings.heavy_executions)
        if settings.backend == "memory"
        else LoopGate(settings.neo4j_executions, LoopThreads(1))
    )

    def shutdown() -> None:
        for pool in (runner, ping_runner):
            if isinstance(pool, ThreadRunner):
                pool.close()
        if threads is not None:
            threads.close()
        reader.close()

    app = create_app(
        reader,
        limits=settings.limits,
        keyring=keyring,
        run=runner,
        ping_run=ping_runner,
        threads=threads,
        graphiql=settings.graphiql,
        backend=settings.backend,
        on_shutdown=shutdown,
        cors_origins=settings.cors_origins,
        cache_control=settings.cache_control,
        allowed_hosts=settings.hosts_answered,
        persisted_queries=settings.persisted_queries,
    )
    config = uvicorn.Config(
        app,
        lifespan="on",
        http=protocol_with_header_timeout(
            settings.limits.header_timeout_seconds,
            max_head_bytes=settings.max_header_bytes,
            send_timeout=settings.send_timeout_seconds,
            max_connections=settings.max_connections,  # the one after it: its requests 503
            over_limit_app=with_cors(too_many_connections, settings.cors_origins),  # readable by them
        ),
        timeout_graceful_shutdown=settings.stop_seconds,
        server_header=False,
        log_config=None,
        access_log=False,
    )
    server = _Server(config)
    freeze_loaded_objects()  # this process's imports, schema and driver too: short GC pauses
    server.run(sockets=[sock])
    return 0 if server.started else STARTUP_FAILURE


def serve(
    settings: ServerSettings,
    *,
    on_loaded: Callable[[LoadReport], None] = lambda report: None,
    on_opened: Callable[[str, int, float], None] = lambda path, papers, seconds: None,
    on_warmed: Callable[[float, bool], None] = lambda seconds, reused: None,
    on_listening: Callable[[str], None] = lambda url: None,
) -> int:
    """Serve until stopped; return 0 after a clean stop, 3 if the server never started.

    ``on_loaded`` receives the memory backend's load report, ``on_opened`` the saved graph
    it started from (path, papers, seconds), ``on_warmed`` the seconds its reader's indexes
    took to build (memory; minutes at all of arXiv, so an operator sees where start-up goes)
    and whether the search index came saved with the graph instead,
    ``on_listening`` the URL.
    Raises :class:`~pith_graph.errors.UsageError` or
    :class:`~pith_graph.errors.StoreError` before serving when it cannot.
    """
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    keyring = operator_keyring(settings.trusted_keys, settings.registry_keys, settings.revoked_keys)
    workers = settings.workers or default_workers()
    try:  # one worker listens on this socket; several listen on their own (it keeps the port)
        sock = bind(settings.host, settings.port, listen=workers == 1)
    except OSError as err:
        raise UsageError(f"cannot listen on {settings.host}:{settings.port}: {err.strerror}") from err
    try:
        open_reader, warnings = _prepare(settings, keyring, on_loaded, on_opened, on_warmed)
        hosts = settings.hosts_answered  # once: a name listened on is resolved to decide them
        if hosts == ("*",) and settings.allowed_hosts is None:
            warnings.append(
                f"serving on {settings.host} answers requests for any Host: a page whose DNS name is "
                "pointed at this machine reads the API as its own origin (DNS rebinding); set "
                "PITH_API_ALLOWED_HOSTS to the names clients use (* to answer any, without this warning)"
            )
        for warning in warnings:  # once it can serve
            logging.getLogger("pith_graph.api.serve").warning(warning)
        settings = replace(settings, allowed_hosts=hosts)  # each serving process answers those
        port = sock.getsockname()[1]
        host = f"[{settings.host}]" if ":" in settings.host else settings.host
        url = f"http://{host}:{port}"

        def announce() -> None:  # once a socket listens on the port
            logging.getLogger("uvicorn.error").info(
                "Uvicorn running on %s (Press CTRL+C to quit), %d worker%s", url, workers, "s"[: workers > 1]
            )
            on_listening(f"{url}/graphql")

        if workers == 1:
            announce()
            return _serve_one(settings, keyring, open_reader, sock)
        return serve_in_workers(
            workers,
            lambda: bind(settings.host, port),
            lambda listener: _serve_one(settings, keyring, open_reader, listener),
            on_listening=announce,
        )
    finally:
        sock.close()


class _Server(uvicorn.Server):
    """uvicorn's server, but a SIGTERM/SIGINT that stopped it cleanly ends the command with
    exit code 0 instead of being raised again once it has stopped."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
