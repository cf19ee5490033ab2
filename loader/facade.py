"""The Python entry points for scripts: load bundles into a networkx graph in one call."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import networkx as nx

from pith_graph.loader.keyring import Keyring, PinnedKey, default_keyring, load_keyring_file
from pith_graph.loader.parse import DEFAULT_MAX_BYTES, InputLimits
from pith_graph.loader.pipeline import LoadReport, run
from pith_graph.loader.stores.memory import MemoryStore

__all__ = ["SAMPLES", "load_graph", "resolve_keyring"]

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
    paths: Iterable[str | Path],
    *,
    trusted_keys: TrustedKeys = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    workers: int | None = None,
    graph: nx.DiGraph | None = None,
) -> tuple[nx.DiGraph, LoadReport]:
    """Verify and load bundles into a networkx ``DiGraph`` (see :mod:`~pith_graph.loader.stores.memory`).

    Returns the graph and the :class:`~pith_graph.loader.pipeline.LoadReport` (accepted, rejected with
    reasons, stale, duplicate, counts). Pass ``graph`` to add to an existing graph.

    >>> G, report = load_graph([SAMPLES])
    >>> report.accepted, report.rejected
    (3, 0)
    """
    store = MemoryStore(graph)
    report = run(
        [str(path) for path in paths],
        keyring=resolve_keyring(trusted_keys),
        store=store,
        limits=InputLimits(max_bytes=max_bytes),
        workers=workers,
    )
    return store.graph, report
