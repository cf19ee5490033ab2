"""pith-graph: verify signed Pith open graph bundles, load them as a graph, serve it over GraphQL.

One import package; the repository's folders map into it:

* :mod:`pith_graph.loader` (``loader/``): read → parse → verify → rows → write, and the
  two graph stores (networkx in memory, Neo4j);
* :mod:`pith_graph.schema` (``schema/``): labels, keys, properties, relationships and the
  Neo4j constraints and indexes derived from them;
* :mod:`pith_graph.api` (``api/``): the GraphQL API and its read side;
* :mod:`pith_graph.errors`: the one exception tree; :mod:`pith_graph.cli`: the
  ``pith-graph`` command; :mod:`pith_graph.testing`: a bundle signer and a corpus
  generator for tests and benchmarks.

Scripts need only the names below::

    >>> import pith_graph
    >>> G, report = pith_graph.load_graph([pith_graph.SAMPLES])
    >>> report.accepted, report.rejected
    (3, 0)
"""

from __future__ import annotations

import importlib
import typing

from pith_graph.errors import (
    BundleError,
    KeyringError,
    PithGraphError,
    RejectCode,
    StoreError,
    UsageError,
)

if typing.TYPE_CHECKING:
    from pith_graph.loader import (
        SAMPLES,
        GraphLoadReport,
        Keyring,
        LoadReport,
        MemoryStore,
        PinnedKey,
        coauthorship_graph,
        export_graph,
        load_graph,
        papers_of,
        save_graphml,
    )

__all__ = [
    "SAMPLES",
    "BundleError",
    "GraphLoadReport",
    "Keyring",
    "KeyringError",
    "LoadReport",
    "MemoryStore",
    "PinnedKey",
    "PithGraphError",
    "RejectCode",
    "StoreError",
    "UsageError",
    "coauthorship_graph",
    "export_graph",
    "load_graph",
    "papers_of",
    "save_graphml",
]
__version__ = "0.9.18"


def _imported_on_first_use(namespace: dict[str, typing.Any], module: str, names: frozenset[str]) -> None:
    """Give the module whose globals are ``namespace`` ``__getattr__`` and ``__dir__`` (PEP 562)
    that import ``names`` from ``module`` when one is first asked for. For this package's own
    modules (here and :mod:`pith_graph.testing`). Set through ``namespace``, so mypy does not
    take them for a module that accepts any name."""

    def __getattr__(name: str) -> object:
        if name in names:
            return getattr(importlib.import_module(module), name)
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    namespace["__getattr__"], namespace["__dir__"] = __getattr__, __dir__


#: The names from :mod:`pith_graph.loader` are imported on first use: every module of the
#: package imports this one first, and the loader's imports (networkx, rich) take most of a
#: second, during which the command line could not yet turn Ctrl-C into exit 130.
_imported_on_first_use(
    globals(),
    "pith_graph.loader",
    frozenset(
        {
            "SAMPLES",
            "GraphLoadReport",
            "Keyring",
            "LoadReport",
            "MemoryStore",
            "PinnedKey",
            "coauthorship_graph",
            "export_graph",
            "load_graph",
            "papers_of",
            "save_graphml",
        }
    ),
)
