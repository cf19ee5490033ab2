"""pith-graph's loader: read Pith bundles, verify them against pinned keys, build the graph.

Scripts start with :func:`load_graph`; the stages (:func:`parse_bundle`,
:func:`verify_bundle`, :func:`build_rows`, a :class:`GraphStore`) are plain functions and
classes usable on their own.
"""

from __future__ import annotations

from pith_graph.errors import (
    BundleError,
    KeyringError,
    PithGraphError,
    RejectCode,
    Source,
    StoreError,
    UsageError,
)
from pith_graph.loader.analysis import coauthorship_graph, papers_of
from pith_graph.loader.facade import SAMPLES, export_graph, load_graph, resolve_keyring
from pith_graph.loader.graphml import save_graphml
from pith_graph.loader.keyfiles import load_keyring_file
from pith_graph.loader.keyring import REGISTRY_KEY, Keyring, PinnedKey, default_keyring
from pith_graph.loader.parse import InputLimits, parse_bundle
from pith_graph.loader.pipeline import run
from pith_graph.loader.report import GraphLoadReport, LoadReport, Rejection
from pith_graph.loader.rows import PaperRows, build_rows
from pith_graph.loader.stores.base import GraphCounts, GraphExport, GraphStore, Outcome
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.verify import VerifiedBundle, verify_bundle

__all__ = [
    "REGISTRY_KEY",
    "SAMPLES",
    "BundleError",
    "GraphCounts",
    "GraphExport",
    "GraphLoadReport",
    "GraphStore",
    "InputLimits",
    "Keyring",
    "KeyringError",
    "LoadReport",
    "MemoryStore",
    "Outcome",
    "PaperRows",
    "PinnedKey",
    "PithGraphError",
    "RejectCode",
    "Rejection",
    "Source",
    "StoreError",
    "UsageError",
    "VerifiedBundle",
    "build_rows",
    "coauthorship_graph",
    "default_keyring",
    "export_graph",
    "load_graph",
    "load_keyring_file",
    "papers_of",
    "parse_bundle",
    "resolve_keyring",
    "run",
    "save_graphml",
    "verify_bundle",
]
