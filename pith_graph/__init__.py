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

from pith_graph.errors import (
    BundleError,
    KeyringError,
    PithGraphError,
    RejectCode,
    StoreError,
    UsageError,
)
from pith_graph.loader import (
    SAMPLES,
    Keyring,
    LoadReport,
    MemoryStore,
    coauthorship_graph,
    export_graph,
    load_graph,
    papers_of,
)

__all__ = [
    "SAMPLES",
    "BundleError",
    "Keyring",
    "KeyringError",
    "LoadReport",
    "MemoryStore",
    "PithGraphError",
    "RejectCode",
    "StoreError",
    "UsageError",
    "coauthorship_graph",
    "export_graph",
    "load_graph",
    "papers_of",
]
__version__ = "0.7.2"
