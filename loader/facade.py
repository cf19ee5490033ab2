"""The Python entry points for scripts: load bundles into a networkx graph in one call."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import networkx as nx

from pith_graph.errors import UsageError
from pith_graph.loader.keyfiles import check_pinned_key, load_keyring_file
from pith_graph.loader.keyring import Keyring, PinnedKey, default_keyring
from pith_graph.loader.parse import DEFAULT_MAX_BYTES, MAX_BYTES_LIMIT, InputLimits
from pith_graph.loader.pipeline import run
from pith_graph.loader.pool import MAX_WORKERS
from pith_graph.loader.report import GraphLoadReport
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.memory_graph import check_structure
from pith_graph.loader.stores.memory_guard import checked_graph

__all__ = ["SAMPLES", "export_graph", "load_graph", "resolve_keyring"]

#: The real registry bundles shipped with pith-graph (a folder of ``*.json``).
SAMPLES = str(Path(__file__).parent / "samples")

TrustedKeys = Keyring | str | Path | Sequence[PinnedKey] | None


def resolve_keyring(trusted_keys: TrustedKeys = None) -> Keyring:
    """The keyring ``trusted_keys`` makes: with a trusted-keys file or ``PinnedKey`` values,
    the built-in keyring plus those keys (ranked after the registry's); a :class:`Keyring`
    is taken whole, as the complete ranked keyring (the registry's key only if it holds it).
    Keys are checked as a file's entries are (:class:`UsageError` for anything else)."""
    if trusted_keys is None:
        return default_keyring()
    if isinstance(trusted_keys, (str, Path)):
        return load_keyring_file(trusted_keys)
    if isinstance(trusted_keys, Keyring):
        keys = list(trusted_keys.values())
    else:
        keys = _listed(trusted_keys, "trusted_keys", "a Keyring, a file path or PinnedKey values")
    odd = next((key for key in keys if not isinstance(key, PinnedKey)), None)
    if odd is not None:
        raise UsageError(
            f"trusted_keys: expected PinnedKey values (keyfiles.parse_keyring reads a trusted-keys file's entries), not {_kind(odd)}"
        )
    for index, key in enumerate(keys):  # as a trusted-keys file's entries are
        check_pinned_key(key, f"trusted_keys[{index}]")
    return trusted_keys if isinstance(trusted_keys, Keyring) else default_keyring().with_keys(keys)


def _kind(value: object) -> str:
    return f"a value of type {type(value).__name__}"


def _listed(value: object, name: str, expected: str) -> list[Any]:
    """The values of the iterable ``value``; :class:`UsageError` for anything else (bytes and
    mappings, which iterate, included)."""
    if isinstance(value, (bytes, Mapping)) or not isinstance(value, Iterable):
        raise UsageError(f"{name}: expected {expected}, not {_kind(value)}")
    return list(value)


def _load_arguments(paths: object, max_bytes: object, workers: object, graph: object) -> list[str]:
    """The paths as strings, once the other arguments are checked as the command line checks
    its options; :class:`UsageError` naming the first that is not."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    found = _listed(paths, "paths", "a path or an iterable of paths")
    odd = next((path for path in found if not isinstance(path, (str, Path)) or str(path) == ""), None)
    if odd is not None:
        raise UsageError(
            f"paths: expected str or Path values, not {'an empty one' if odd == '' else _kind(odd)}"
        )
    if type(max_bytes) is not int or not 1 <= max_bytes <= MAX_BYTES_LIMIT:
        raise UsageError(
            f"max_bytes: expected an int from 1 to {MAX_BYTES_LIMIT} (64 MiB), not {max_bytes!r:.40}"
        )
    if workers is not None and (type(workers) is not int or not 1 <= workers <= MAX_WORKERS):
        raise UsageError(f"workers: expected None or an int from 1 to {MAX_WORKERS}, not {workers!r:.40}")
    if graph is not None:
        built = checked_graph(graph, "graph", added_to=True)
        try:
            check_structure(built)
        except (ValueError, KeyError, TypeError) as err:
            raise UsageError(f"graph: not one the loader could have built: {err}") from err
    return [str(path) for path in found]


def load_graph(
    paths: str | Path | Iterable[str | Path],
    *,
    trusted_keys: TrustedKeys = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    workers: int | None = None,
    graph: nx.DiGraph | None = None,
) -> tuple[nx.DiGraph, GraphLoadReport]:
    """Verify and load bundles into a networkx ``DiGraph`` (see :mod:`~pith_graph.loader.stores.memory`).

    ``paths``: files, folders, ``-`` (stdin), or one of them. Returns the graph and the
    :class:`~pith_graph.loader.report.GraphLoadReport` (accepted, rejected with reasons, stale,
    duplicate, and the graph's counts, never ``None``). ``trusted_keys``: see :func:`resolve_keyring` (a ``Keyring`` replaces
    the built-in one). Pass ``graph`` to add to an existing graph (one a load built: it is
    checked first, as a node-link file is). Arguments out of the command line's ranges
    (``max_bytes`` 1 to 64 MiB, ``workers`` 1 to 128) raise :class:`~pith_graph.errors.UsageError`.

    >>> G, report = load_graph([SAMPLES])
    >>> report.accepted, report.rejected
    (3, 0)
    >>> load_graph(SAMPLES)[1].accepted  # one path alone
    3
    """
    files = _load_arguments(paths, max_bytes, workers, graph)
    store = MemoryStore(graph)
    report = run(
        files,
        keyring=resolve_keyring(trusted_keys),
        store=store,
        limits=InputLimits(max_bytes=max_bytes),
        workers=workers,
        exclude=[trusted_keys] if isinstance(trusted_keys, (str, Path)) else (),
    )
    counts = report.counts if report.counts is not None else store.counts()
    return store.graph, GraphLoadReport.of(report, counts)


def export_graph(
    uri: str | None = None,
    *,
    user: str | None = None,
    password: str | None = None,
    database: str | None = None,
    category: str | None = None,
    author: str | None = None,
    hops: int = 1,
    submitted_from: str | date | None = None,
    submitted_to: str | date | None = None,
    latest_versions: bool = False,
) -> nx.DiGraph:
    """A subgraph of a Neo4j database as the networkx graph :func:`load_graph` would build
    (see :mod:`pith_graph.loader.export`): the papers of ``category``, of ``author`` (and
    coauthors up to ``hops``), submitted between the dates (inclusive), only the newest
    version of each source id if ``latest_versions`` (since 0.9.5), and all they touch;
    with no selection, the whole graph (dates as ISO 8601 text, or ``date`` and ``datetime``
    values, read as their ISO 8601 text). Connection settings default to ``NEO4J_URI``,
    ``NEO4J_USER``, ``NEO4J_DATABASE``; the password is found as ``pith-graph load`` finds
    it (:func:`~pith_graph.loader.stores.neo4j_auth.resolve_password`).
    """
    import os

    from pith_graph.loader.export import Selection, export_subgraph
    from pith_graph.loader.stores.neo4j import Neo4jStore
    from pith_graph.loader.stores.neo4j_auth import resolve_password
    from pith_graph.loader.stores.neo4j_connect import check_uri

    low, high = (d.isoformat() if isinstance(d, date) else d for d in (submitted_from, submitted_to))
    selection = Selection(category, author, hops, low, high, latest_versions=latest_versions)  # checked first
    for name, value in (("uri", uri), ("user", user), ("password", password), ("database", database)):
        if value is not None and not isinstance(value, str):  # (uri=5 raised AttributeError)
            raise UsageError(f"{name}: expected None or a string, not {_kind(value)}")
    env = os.environ
    uri = uri or env.get("NEO4J_URI", "bolt://127.0.0.1:7687")
    check_uri(uri)
    with Neo4jStore.connect(
        uri,
        user or env.get("NEO4J_USER", "neo4j"),
        resolve_password(uri, password=password),
        database or env.get("NEO4J_DATABASE", "neo4j"),
    ) as store:
        return export_subgraph(store, selection)
