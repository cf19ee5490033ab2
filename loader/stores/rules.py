"""The update rules both stores share: which bundle's paper a store keeps.

A store receives batches of :class:`~pith_graph.loader.rows.PaperRows` and decides, against
what it already holds (the bulk importer: against nothing, for all bundles at once), what each one does. Two rules, in this order:

1. **Precedence across signers** (:mod:`pith_graph.loader.keyring` ranks them). A source id
   (``sourceKind``, ``sourceId``: an arXiv id with all its versions, in arXiv's spelling, which
   verification enforces) belongs to the highest-ranked signer whose bundle for it the store
   has seen: a bundle of a lower-ranked signer for it is ``outranked`` and changes nothing,
   whatever its ``built_at``; a bundle of a higher-ranked signer takes the source id over,
   and the lower-ranked signer's papers of it are removed (reported as displaced). So no
   lower-ranked key can change what a higher-ranked key's identifiers answer.
2. **Newest within a signer, per version.** Per source version (``sourceKind``,
   ``sourceId``, ``sourceVersion``), the bundle with the greatest ``(builtAt, bundleSha256)``
   wins, whatever its pith number: a corrected canonical record has a new pith number, and
   its bundle supersedes the older record's, whose paper is removed (reported as displaced)
   and whose bundle, loaded again, is ``stale``. The winner is ``inserted`` (a pith number not
   stored) or ``replaced`` (the paper's properties and edges); the same ``bundleSha256`` again
   is a ``duplicate``; a smaller one is ``stale``. ``builtAt`` is compared as an instant
   (:func:`~pith_graph.loader.keyring.instant`: ``…:00.9Z`` is after ``…:00Z``), the digest
   breaks ties, then the bundle key id, so the winner never depends on input order.

``bundleSha256`` does not cover ``bundle_signature``, so one body can come signed by several
keys: each copy is a bundle of its own signer. A copy whose key outranks the stored one's
takes the paper over (``replaced``: ``bundleKeyId``, ``keyIds`` and ``SIGNED`` edges become
its own), a lower-ranked one is ``outranked``, and between two keys of one signer the greater
key id wins (the other copy is a ``duplicate``).

After a replacement or removal, any Author, Category, Alias or Signer left without a paper is
removed, so nodes, edges and properties are a function of the set of winning bundles,
whatever the order of arrival: ``Author.name`` too, the smallest of the winners' spellings
(:mod:`~pith_graph.loader.stores.names`; until 0.8, the smallest seen since the author's node
was created, which could come from a bundle later replaced).
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from pith_graph.loader.keyring import UNRANKED, instant
from pith_graph.loader.stores.latest import Versioned

__all__ = [
    "BatchPlan",
    "Candidate",
    "Outcome",
    "SourceKey",
    "StoredPaper",
    "VersionKey",
    "decide",
    "plan_batch",
]

#: ``(sourceKind, sourceId)``: the papers of every version of one arXiv id.
SourceKey = tuple[str, str]
#: ``(sourceKind, sourceId, sourceVersion)``: one version, which one paper stands for.
VersionKey = tuple[str, str, int]


class Candidate(Versioned, Protocol):
    """What the rules read of a bundle: :class:`~pith_graph.loader.rows.PaperRows`, or the
    bulk importer's compact record of one (its pith number, version and build: :class:`Versioned`)."""

    @property
    def bundle_sha256(self) -> str: ...
    @property
    def source(self) -> SourceKey: ...
    @property
    def bundle_key_id(self) -> str: ...


C = TypeVar("C", bound=Candidate)


class Outcome(enum.StrEnum):
    """What applying one bundle did."""

    INSERTED = "inserted"
    REPLACED = "replaced"
    DUPLICATE = "duplicate"
    STALE = "stale"
    OUTRANKED = "outranked"


@dataclass(frozen=True, slots=True)
class StoredPaper:
    """What a store holds of a paper that the update rules need."""

    pith_number: str
    source: SourceKey
    source_version: int
    built_at: str
    bundle_sha256: str
    bundle_key_id: str | None  # None: written before bundleKeyId existed
    key_ids: tuple[str, ...] = ()  # every key that signed it: ranks a paper without bundleKeyId


@dataclass(frozen=True, slots=True)
class BatchPlan(Generic[C]):
    """What to do with a batch: ``write`` (one winning row per source version, inserted or
    replacing), ``remove`` (pith numbers of stored papers displaced by a higher-ranked
    signer or superseded by a newer record of their version) and one outcome per input
    row."""

    write: list[C]
    remove: list[str]
    outcomes: list[Outcome] = field(default_factory=list)


def decide(existing: tuple[str, str] | None, rows: Candidate) -> Outcome:
    """Rule 2 alone, for one pith number: ``rows`` against the stored ``(builtAt,
    bundleSha256)`` of its paper."""
    if existing is None:
        return Outcome.INSERTED
    if existing[1] == rows.bundle_sha256:
        return Outcome.DUPLICATE
    if (instant(rows.built_at), rows.bundle_sha256) > (instant(existing[0]), existing[1]):
        return Outcome.REPLACED
    return Outcome.STALE


def _order(bundle: Candidate | StoredPaper) -> tuple[tuple[str, int], str, str]:
    """What rule 2 compares: the build instant, then the digest, then the bundle key id (one
    body signed by two keys of one signer; a paper from before ``bundleKeyId``: ``""``)."""
    return instant(bundle.built_at), bundle.bundle_sha256, bundle.bundle_key_id or ""


def _version(bundle: Candidate | StoredPaper) -> VersionKey:
    return (*bundle.source, bundle.source_version)


def plan_batch(batch: Sequence[C], stored: Iterable[StoredPaper], rank: Callable[[str], int]) -> BatchPlan[C]:
    """Decide a whole batch under both rules.

    ``stored`` must hold every stored paper sharing a source id with a row of the batch
    (which covers the batch's own pith numbers); ``rank`` ranks a key id (lower wins).
    """
    stored_by_pith = {paper.pith_number: paper for paper in stored}

    def stored_rank(paper: StoredPaper) -> int:  # from before bundleKeyId: its best key's rank
        if paper.bundle_key_id is not None:
            return rank(paper.bundle_key_id)
        return min((rank(key) for key in paper.key_ids), default=UNRANKED)

    # Rule 1: the top rank per source id, over the batch and the store.
    top: dict[SourceKey, int] = {}
    for rows in batch:
        source, row_rank = rows.source, rank(rows.bundle_key_id)
        top[source] = min(top.get(source, row_rank), row_rank)
    displaced: list[StoredPaper] = []
    kept: defaultdict[VersionKey, list[StoredPaper]] = defaultdict(list)
    for paper in stored_by_pith.values():
        if paper.source in top:
            top[paper.source] = min(top[paper.source], stored_rank(paper))
    for paper in stored_by_pith.values():
        if paper.source in top:
            if stored_rank(paper) > top[paper.source]:
                displaced.append(paper)
            else:
                kept[_version(paper)].append(paper)

    # Rule 2: per source version, the newest of the batch's top-ranked rows and the kept papers.
    best: dict[VersionKey, C] = {}
    for rows in batch:
        if rank(rows.bundle_key_id) > top[rows.source]:
            continue
        version = _version(rows)
        current = best.get(version)
        if current is None or _order(rows) > _order(current):
            best[version] = rows
    plan: BatchPlan[C] = BatchPlan(write=[], remove=[])
    winner_digest: dict[VersionKey, str] = {}
    verdict: dict[VersionKey, Outcome] = {}
    for version, rows in best.items():
        rivals = kept.get(version, [])
        newest = max(rivals, key=_order, default=None)
        if newest is not None and _order(newest) >= _order(rows):
            # the stored paper stays (newer, or this very bundle); any older stored record of
            # the version (written before this rule went per version) goes
            winner_digest[version] = newest.bundle_sha256
            verdict[version] = (
                Outcome.DUPLICATE if newest.bundle_sha256 == rows.bundle_sha256 else Outcome.STALE
            )
            plan.remove.extend(p.pith_number for p in rivals if p is not newest)
            continue
        winner_digest[version] = rows.bundle_sha256
        verdict[version] = Outcome.REPLACED if rows.pith_number in stored_by_pith else Outcome.INSERTED
        plan.write.append(rows)
        plan.remove.extend(p.pith_number for p in rivals if p.pith_number != rows.pith_number)
    written = {rows.pith_number for rows in plan.write}
    plan.remove.extend(p.pith_number for p in displaced if p.pith_number not in written)

    for rows in batch:
        version = _version(rows)
        if rank(rows.bundle_key_id) > top[rows.source]:
            plan.outcomes.append(Outcome.OUTRANKED)
        elif rows is best[version]:
            plan.outcomes.append(verdict[version])
        elif rows.bundle_sha256 == winner_digest[version]:
            plan.outcomes.append(Outcome.DUPLICATE)
        else:
            plan.outcomes.append(Outcome.STALE)
    plan.remove.sort()
    return plan
