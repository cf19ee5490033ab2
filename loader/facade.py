"""The Python entry points for scripts: load bundles into a networkx graph in one call."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import networkx as nx

from pith_graph.loader.keyfiles import load_keyring_file
from pith_graph.loader.keyring import Keyring, PinnedKey, default_keyring
from pith_graph.loader.parse import DEFAULT_MAX_BYTES, InputLimits
from pith_graph.loader.pipeline import LoadReport, run
from pith_graph.loader.stores.memory import MemoryStore

__all__ = ["SAMPLES", "export_graph", "load_graph", "resolve_keyring"]

#: The real registry bundles shipped with pith-graph (a folder of ``*.json``).
SAMPLES = str(Path(__file__).parent / "samples")

TrustedKeys = Keyring | str | Path | Sequence[PinnedKey] | None


def resolve_keyring(trusted_keys: TrustedKeys = None) -> Keyring:
    """The built-in keyring plus ``trusted_keys``: a keyring, a trusted-keys file or keys."""
    if trusted_keys is None:
        return default_keyring()
    if isinstance(trusted_keys, Keyring):
        return trusted_keys
    if isinstance(trusted_keys, (str, Path)):
        return load_keyring_file(trusted_keys)
    return default_keyring().with_keys(trusted_keys)


def load_graph(
    paths: str | Path | Iterable[str | Path],
    *,
    trusted_keys: TrustedKeys = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    workers: int | None = None,
    graph: nx.DiGraph | None = None,
) -> tuple[nx.DiGraph, LoadReport]:
    """Verify and load bundles into a networkx ``DiGraph`` (see :mod:`~pith_graph.loader.stores.memory`).

    ``paths``: files, folders, ``-`` (stdin), or one of them. Returns the graph and the
    :class:`~pith_graph.loader.pipeline.LoadReport` (accepted, rejected with reasons, stale,
    duplicate, counts). Pass ``graph`` to add to an existing graph.

    >>> G, report = load_graph([SAMPLES])
    >>> report.accepted, report.rejected
    (3, 0)
    >>> load_graph(SAMPLES)[1].accepted  # one path alone
    3
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    store = MemoryStore(graph)
    report = run(
        [str(path) for path in paths],
        keyring=resolve_keyring(trusted_keys),
        store=store,
        limits=InputLimits(max_bytes=max_bytes),
        workers=workers,
        exclude=[trusted_keys] if isinstance(trusted_keys, (str, Path)) else (),
    )
    return store.graph, report


def export_graph(
    uri: str | None = None,
    *,
    user: str | None = None,
    password: str | None = None,
    database: str | None = None,
    category: str | None = None,
    author: str | None = None,
    hops: int = 1,
    submitted_from: str | None = None,
    submitted_to: str | None = None,
) -> nx.DiGraph:
    """A subgraph of a Neo4j database as the networkx graph :func:`load_graph` would build
    (see :mod:`pith_graph.loader.export`): the papers of ``category``, of ``author`` (and
    coauthors up to ``hops``), submitted between the dates (inclusive), and all they touch;
    with no selection, the whole graph. Connection settings default to ``NEO4J_URI``,
    ``NEO4J_USER``, ``NEO4J_DATABASE``; the password is found as ``pith-graph load`` finds
    it (:func:`~pith_graph.loader.stores.neo4j_auth.resolve_password`).
    """
    import os

    from pith_graph.loader.export import Selection, export_subgraph
    from pith_graph.loader.stores.neo4j import Neo4jStore
    from pith_graph.loader.stores.neo4j_auth import resolve_password

    selection = Selection(category, author, hops, submitted_from, submitted_to)  # checked before connecting
    env = os.environ
    uri = uri or env.get("NEO4J_URI", "bolt://127.0.0.1:7687")
    with Neo4jStore.connect(
        uri,
        user or env.get("NEO4J_USER", "neo4j"),
        resolve_password(uri, password=password),
        database or env.get("NEO4J_DATABASE", "neo4j"),
    ) as store:
        return export_subgraph(store, selection)
