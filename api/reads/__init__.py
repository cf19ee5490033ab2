"""The API's read side: the :class:`GraphReader` seam, its records, and two readers.

:mod:`~pith_graph.api.reads.memory` reads the networkx graph, :mod:`~pith_graph.api.reads.neo4j`
reads Neo4j with the statements of :mod:`~pith_graph.api.reads.cypher`; both answer every
call identically (orderings are defined in :mod:`~pith_graph.api.reads.reader`).
"""

from __future__ import annotations

from pith_graph.api.reads.reader import GraphReader
from pith_graph.api.reads.records import IdentifierKey, PaperFilter, PaperKey
from pith_graph.api.reads.words import search_terms, title_words
from pith_graph.schema.rows import PaperRow

__all__ = [
    "GraphReader",
    "IdentifierKey",
    "PaperFilter",
    "PaperKey",
    "PaperRow",
    "search_terms",
    "title_words",
]
