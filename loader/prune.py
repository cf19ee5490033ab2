"""Removing what a revoked key vouched for: :func:`prune_revoked`.

A key revoked in the keyring (``revoked`` / ``revoked_at``, see
:mod:`pith_graph.loader.keyring`) is refused for new bundles at verification; papers already
in a store whose winning bundle it signed (any of its signatures: the bundle, an event, the
receipt) are removed here, with every node left without a paper. Bundles of other signers
that lost to the removed ones are not stored; loading them again restores those papers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.stores.base import GraphStore

__all__ = ["PRUNE_BATCH", "PruneReport", "prune_revoked"]


@dataclass(frozen=True, slots=True)
class PruneReport:
    """What pruning did: the revoked key ids looked for and the pith numbers removed (or,
    with ``dry_run``, that would be), and how long it took."""

    revoked_keys: list[str]
    removed: list[str] = field(default_factory=list)
    dry_run: bool = False
    #: Not compared: two reports of the same pruning are equal however long each took.
    seconds: float = field(default=0.0, compare=False)

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready summary (what ``--json`` prints), camelCase as every report's keys."""
        return {
            "revokedKeys": self.revoked_keys,
            "removed": self.removed,
            "dryRun": self.dry_run,
            "seconds": round(self.seconds, 3),
        }


#: Papers removed per call to the store (in Neo4j, per transaction). The whole of a large
#: key's papers in one transaction (5,000 papers of 8 authors each) ran into the server's
#: 300 s write timeout and removed nothing, on every run; a revocation could not be enforced.
PRUNE_BATCH = 1000


def prune_revoked(
    store: GraphStore, keyring: Keyring, *, dry_run: bool = False, batch_size: int = PRUNE_BATCH
) -> PruneReport:
    """Remove from ``store`` every paper whose winning bundle depends on a key ``keyring``
    revokes for it (``revoked_at`` compares with the paper's ``builtAt``), ``batch_size``
    papers at a time: interrupted, the batches removed stay removed, and pruning again
    removes the rest."""
    started = time.perf_counter()
    revoked = {key.key_id: key for key in keyring.revoked()}
    removed: set[str] = set()
    before: dict[str, tuple[str, list[str]]] | None = None
    while True:  # a paper a concurrent load changed after it was read is read and judged again
        doomed = {
            pith: (built_at, key_ids)
            for pith, built_at, key_ids in store.papers_signed_with(sorted(revoked))
            if any(revoked[key].revoked_for(built_at) for key in key_ids if key in revoked)
        }
        if dry_run:
            return PruneReport(sorted(revoked), sorted(doomed), dry_run, time.perf_counter() - started)
        ordered = sorted(doomed)
        gone: list[str] = []
        for start in range(0, len(ordered), batch_size):
            gone += store.remove_papers(ordered[start : start + batch_size], unchanged=doomed)
        removed.update(gone)
        if len(gone) == len(doomed):
            return PruneReport(sorted(revoked), sorted(removed), dry_run, time.perf_counter() - started)
        if not gone and doomed == before:  # nothing changed them, yet they stay: never loop
            raise StoreError(
                StoreErrorCode.WRITE_FAILED,
                f"{len(doomed)} papers signed with a revoked key could not be removed "
                f"({', '.join(sorted(doomed)[:3])}{', ...' if len(doomed) > 3 else ''}): "
                "the store lists papers it cannot find",
            )
        before = doomed
