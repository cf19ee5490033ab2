"""Serve the GraphQL API: load or connect, then run uvicorn until SIGTERM.

:func:`serve` is what ``pith-graph serve`` runs (the CLI only turns its options into
:class:`~pith_graph.api.settings.ServerSettings`). ``backend="memory"`` verifies and loads
the settings' bundles (default: the shipped samples) before the server accepts a request;
``backend="neo4j"`` serves what the database holds. SIGTERM or Ctrl-C stops accepting
connections, lets running requests finish (up to 10 s), then closes the reader.
"""

from __future__ import annotations

import gc
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import uvicorn

from pith_graph.api.app import create_app
from pith_graph.api.context import Runner, ThreadRunner, run_inline
from pith_graph.api.reads.reader import GraphReader
from pith_graph.api.settings import ServerSettings
from pith_graph.errors import UsageError
from pith_graph.loader.facade import SAMPLES, resolve_keyring
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.pipeline import LoadReport, run

__all__ = ["freeze_loaded_objects", "serve"]

log = logging.getLogger(__name__)

GRACEFUL_SECONDS = 10


def freeze_loaded_objects() -> None:
    """Move everything alive now (the loaded graph) out of the cyclic collector's reach.

    The graph lives as long as the server; left tracked, every full collection rescans its
    millions of objects (about 1.5 s at 100k papers), which becomes the p99 of every query.
    """
    gc.collect()
    gc.freeze()


def _keyring(settings: ServerSettings) -> Keyring:
    keyring = resolve_keyring()
    for path in settings.trusted_keys:
        keyring = keyring.with_keys(resolve_keyring(path).values())
    return keyring


def _open_reader(
    settings: ServerSettings, keyring: Keyring, on_loaded: Callable[[LoadReport], None]
) -> tuple[GraphReader, Runner]:
    if settings.backend == "memory":
        from pith_graph.api.reads.memory import MemoryReader
        from pith_graph.loader.stores.memory import MemoryStore

        store = MemoryStore()
        report = run(
            list(settings.paths) or [SAMPLES], keyring=keyring, store=store, workers=settings.load_workers
        )
        on_loaded(report)
        memory = MemoryReader(store.graph)
        memory.warm()  # search and typeahead indexes, before the first request
        freeze_loaded_objects()
        return memory, run_inline
    if settings.paths:
        raise UsageError("--backend neo4j serves what the database holds: load bundles with pith-graph load")
    from pith_graph.api.reads.neo4j import Neo4jReader

    reader = Neo4jReader.connect(
        settings.neo4j_uri,
        settings.neo4j_user,
        settings.neo4j_password,
        settings.neo4j_database,
        timeout=settings.limits.timeout_seconds,
    )
    return reader, ThreadRunner(settings.neo4j_threads)


def serve(
    settings: ServerSettings,
    *,
    on_loaded: Callable[[LoadReport], None] = lambda report: None,
    on_listening: Callable[[str], None] = lambda url: None,
) -> int:
    """Serve until stopped; return 0 after a clean stop, 3 if the server never started.

    ``on_loaded`` receives the memory backend's load report; ``on_listening`` the URL.
    Raises :class:`~pith_graph.errors.UsageError` or
    :class:`~pith_graph.errors.StoreError` before serving when it cannot.
    """
    keyring = _keyring(settings)
    reader, runner = _open_reader(settings, keyring, on_loaded)

    def shutdown() -> None:
        if isinstance(runner, ThreadRunner):
            runner.close()
        reader.close()

    app = create_app(
        reader,
        limits=settings.limits,
        keyring=keyring,
        run=runner,
        graphiql=settings.graphiql,
        backend=settings.backend,
        on_shutdown=shutdown,
        cors_origins=settings.cors_origins,
        cache_control=settings.cache_control,
    )
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
        server_header=False,
        log_config=None,
        access_log=False,
    )
    on_listening(f"http://{settings.host}:{settings.port}/graphql")
    server = _Server(config)
    server.run()
    return 0 if server.started else 3


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
