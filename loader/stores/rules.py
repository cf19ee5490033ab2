"""The update rules both stores share: which bundle's paper a store keeps.

A store receives batches of :class:`~pith_graph.loader.rows.PaperRows` and decides, against
what it already holds (the bulk importer: against nothing, for all bundles at once), what each one does. Two rules, in this order:

1. **Precedence across signers** (:mod:`pith_graph.loader.keyring` ranks them). A source id
   (``sourceKind``, ``sourceId``: an arXiv id with all its versions) belongs to the
   highest-ranked signer whose bundle for it the store has seen: a bundle of a lower-ranked
   signer for it is ``outranked`` and changes nothing, whatever its ``built_at``; a bundle of
   a higher-ranked signer takes the source id over, and the lower-ranked signer's papers of
   it are removed (reported as displaced). So no lower-ranked key can change what a
   higher-ranked key's identifiers answer.
2. **Newest within a signer.** Per pith number, the bundle with the greatest
   ``(builtAt, bundleSha256)`` wins: a pith number never seen is ``inserted``; the same
   ``bundleSha256`` again is a ``duplicate``; a greater one ``replaced`` the paper's
   properties and edges (the digest breaks ties, so the winner never depends on input
   order); a smaller one is ``stale``.

After a replacement or removal, any Author, Category, Alias or Signer left without a paper is
removed, so nodes, edges and properties are a function of the set of winning bundles,
whatever the order of arrival — with one documented exception: ``Author.name`` is the
smallest display form seen since the author's node was created, which may come from a bundle
later replaced (names of one ``nameKey`` differ at most in case and compatibility forms).
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from pith_graph.loader.keyring import UNRANKED

__all__ = ["BatchPlan", "Candidate", "Outcome", "SourceKey", "StoredPaper", "decide", "plan_batch"]

#: ``(sourceKind, sourceId)``: the papers of every version of one arXiv id.
SourceKey = tuple[str, str]


class Candidate(Protocol):
    """What the rules read of a bundle: :class:`~pith_graph.loader.rows.PaperRows`, or the
    bulk importer's compact record of one."""

    @property
    def pith_number(self) -> str: ...
    @property
    def built_at(self) -> str: ...
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
    built_at: str
    bundle_sha256: str
    bundle_key_id: str | None  # None: written before bundleKeyId existed
    key_ids: tuple[str, ...] = ()  # every key that signed it: ranks a paper without bundleKeyId


@dataclass(frozen=True, slots=True)
class BatchPlan(Generic[C]):
    """What to do with a batch: ``write`` (one winning row per pith number, inserted or
    replacing), ``remove`` (pith numbers of stored papers displaced by a higher-ranked
    signer) and one outcome per input row."""

    write: list[C]
    remove: list[str]
    outcomes: list[Outcome] = field(default_factory=list)


def decide(existing: tuple[str, str] | None, rows: Candidate) -> Outcome:
    """Rule 2 alone: ``rows`` against the stored ``(builtAt, bundleSha256)`` of its paper."""
    if existing is None:
        return Outcome.INSERTED
    if existing[1] == rows.bundle_sha256:
        return Outcome.DUPLICATE
    if (rows.built_at, rows.bundle_sha256) > existing:
        return Outcome.REPLACED
    return Outcome.STALE


def _source(rows: Candidate) -> SourceKey:
    return rows.source


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

    top: dict[SourceKey, int] = {}
    for rows in batch:
        source, row_rank = _source(rows), rank(rows.bundle_key_id)
        top[source] = min(top.get(source, row_rank), row_rank)
    holders: defaultdict[SourceKey, list[StoredPaper]] = defaultdict(list)
    for paper in stored_by_pith.values():
        if paper.source in top:
            holders[paper.source].append(paper)
            top[paper.source] = min(top[paper.source], stored_rank(paper))

    best: dict[str, C] = {}
    for rows in batch:
        if rank(rows.bundle_key_id) > top[_source(rows)]:
            continue
        current = best.get(rows.pith_number)
        if current is None or (rows.built_at, rows.bundle_sha256) > (current.built_at, current.bundle_sha256):
            best[rows.pith_number] = rows
    plan: BatchPlan[C] = BatchPlan(write=[], remove=[])
    verdict: dict[str, Outcome] = {}
    for pith, rows in best.items():
        existing = stored_by_pith.get(pith)
        if existing is not None and stored_rank(existing) > top[_source(rows)]:
            verdict[pith] = Outcome.REPLACED  # a higher-ranked signer takes the paper over
        else:
            stored_key = None if existing is None else (existing.built_at, existing.bundle_sha256)
            verdict[pith] = decide(stored_key, rows)
        if verdict[pith] in (Outcome.INSERTED, Outcome.REPLACED):
            plan.write.append(rows)
    for source, papers in holders.items():
        plan.remove.extend(
            p.pith_number for p in papers if stored_rank(p) > top[source] and p.pith_number not in best
        )
    for rows in batch:
        winner = best.get(rows.pith_number)
        if rank(rows.bundle_key_id) > top[_source(rows)]:
            plan.outcomes.append(Outcome.OUTRANKED)
        elif rows is winner:
            plan.outcomes.append(verdict[rows.pith_number])
        elif winner is not None and rows.bundle_sha256 == winner.bundle_sha256:
            plan.outcomes.append(Outcome.DUPLICATE)
        else:
            plan.outcomes.append(Outcome.STALE)
    plan.remove.sort()
    return plan
