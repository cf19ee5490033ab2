"""The transaction functions of :class:`~pith_graph.loader.stores.neo4j.Neo4jStore`'s writes:
a batch (:func:`apply_batch`: lock its source ids, decide against what is stored, write) and
a removal (:func:`remove_papers`). Each is re-run from scratch when its transaction is
retried; see :mod:`~pith_graph.loader.stores.neo4j` for the steps and
:mod:`~pith_graph.loader.stores.neo4j_retry` for the retries."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import neo4j

from pith_graph.loader.rows import PaperRows
from pith_graph.loader.stores import cypher, cypher_locks
from pith_graph.loader.stores.base import AppliedBatch, Unchanged
from pith_graph.loader.stores.names import Spellings
from pith_graph.loader.stores.neo4j_connect import read_rows
from pith_graph.loader.stores.neo4j_connect import run_rows as _run
from pith_graph.loader.stores.neo4j_latest import LatestUpdates, StoredVersion, latest_updates
from pith_graph.loader.stores.neo4j_names import paper_author_names, refresh_authors
from pith_graph.loader.stores.neo4j_retry import LostCommits, Raced
from pith_graph.loader.stores.rules import SourceKey, StoredPaper, plan_batch
from pith_graph.schema.graph import PAPER, PROPERTY_NAMES, RELATIONSHIPS
from pith_graph.schema.rows import AuthorRow

__all__ = ["apply_batch", "lock_sources", "read_rows", "remove_papers"]

#: Every property of a Paper, null: what a paper written does not have is removed by
#: WRITE_PAPERS's ``SET p += row.props``, and only that (an analyst's own properties stay);
#: but ``isLatest``, which a load decides per paper (neo4j_latest), a removal by REFRESH_LATEST.
_NO_PAPER_PROPERTIES: dict[str, None] = dict.fromkeys(
    name for name in PAPER.property_names if name != "isLatest"
)
#: Each relationship type's own properties (the rest of an edge's are an analyst's), as the
#: lists a Cypher parameter holds.
_OWN_EDGE_PROPERTIES = {kind: sorted(PROPERTY_NAMES[kind]) for kind in RELATIONSHIPS}


def apply_batch(
    tx: neo4j.ManagedTransaction, batch: Sequence[PaperRows], rank: Callable[[str], int], commits: LostCommits
) -> AppliedBatch:
    """The transaction function: lock, decide, write. Re-run from scratch on a retry, which
    ``commits`` tells what an attempt whose commit was lost would have done."""
    sources = sorted({rows.source for rows in batch})
    stored: list[StoredPaper] = []
    locks: dict[SourceKey, str] = {}
    versions: dict[SourceKey, list[StoredVersion]] = {}  # what isLatest is decided from
    lock_sources(tx, [list(source) for source in sources])
    for record in read_rows(tx, cypher.LOCK_SOURCES, sources=[list(source) for source in sources]):
        source = (record["source"][0], record["source"][1])
        locks[source] = record["lockId"]
        versions[source] = []
        for pith, version, built_at, bundle_sha256, key_id, key_ids, latest in record["papers"]:
            versions[source].append((pith, version, built_at, latest))
            if pith is not None and bundle_sha256 is not None:
                stored.append(
                    StoredPaper(pith, source, version, built_at, bundle_sha256, key_id, tuple(key_ids or ()))
                )
    plan = plan_batch(batch, stored, rank)
    if plan.write or plan.remove:
        held = {paper.pith_number for paper in stored}
        # A lock alias a written paper carries has its edge: DELETE_ORPHANS need not look at it.
        carried = {(alias.kind, alias.value) for rows in plan.write for alias in rows.aliases}
        unused = [lock for source, lock in locks.items() if source not in carried]
        latest = latest_updates(versions, plan.write, plan.remove)
        _write(tx, plan.write, plan.remove, unused, held, [list(source) for source in sources], latest)
    elif locks:
        _run(tx, cypher.DELETE_ORPHANS, ids=list(locks.values()))  # lock aliases of outranked sources
    return commits.decide(batch, stored, plan)


def remove_papers(
    tx: neo4j.ManagedTransaction, piths: list[str], unchanged: Unchanged | None, commits: LostCommits
) -> list[str]:
    """Remove those of ``piths`` still as ``unchanged`` says; ``commits`` is told every one
    found (a retry after a lost commit reports one that lost attempt removed, found gone).
    Their sources are locked first, then the papers, their signers, and their authors and
    categories by key: a load's order (a prune beside a load of those sources took the
    papers' locks first, and one of the two deadlocked, retried)."""
    sources = _sources(r["source"] for r in read_rows(tx, cypher_locks.PAPER_SOURCES, piths=piths))
    held = _held(tx, sources, lock_sources(tx, sources))
    ids = [r["id"] for r in read_rows(tx, cypher_locks.PAPER_IDS, piths=piths)]
    # not one whose source is not held: a load wrote it since (judged again)
    locked = read_rows(tx, cypher_locks.LOCK_PAPERS_TO_REMOVE, ids=ids, sources=held)
    found = {r["pith"]: (r["builtAt"], list(r["keyIds"] or ())) for r in locked}
    remove = [pith for pith, now in found.items() if unchanged is None or unchanged.get(pith) == now]
    if remove:
        kept = set(remove)  # their sources: as read under their locks
        _write(tx, [], remove, [], kept, _sources(r["source"] for r in locked if r["pith"] in kept))
    return commits.decide_removal(found, remove)


def lock_sources(tx: neo4j.ManagedTransaction, sources: list[list[str]]) -> dict[tuple[str, ...], str]:
    """Lock the stored lock aliases of ``sources`` (sorted), found by a read and then locked
    by id, so that no unique index entry is held while waiting for one (cypher_locks.SOURCE_LOCK_IDS);
    each source's alias id, for those that had one."""
    found = _alias_ids(tx, sources)
    if found:
        _run(tx, cypher_locks.LOCK_NODES, ids=list(found.values()))
    return found


def _held(
    tx: neo4j.ManagedTransaction, sources: list[list[str]], locked: dict[tuple[str, ...], str]
) -> list[list[str]]:
    """The sources of ``sources`` the removal holds once ``locked``: each whose lock alias is
    the one it locked still, not one whose alias was deleted while the removal waited for it
    (its lock then holds nothing) nor one a load wrote again since under a new alias (not
    held); and each without an alias, then or now (an analyst's; none locks it, as before)."""
    again = _alias_ids(tx, sources)
    return [source for source in sources if again.get(key := tuple(source)) == locked.get(key)]


def _alias_ids(tx: neo4j.ManagedTransaction, sources: list[list[str]]) -> dict[tuple[str, ...], str]:
    rows = read_rows(tx, cypher_locks.SOURCE_LOCK_IDS, sources=sources)
    return {tuple(r["source"]): r["id"] for r in rows}


def _sources(found: Iterable[list[Any]]) -> list[list[str]]:
    """The distinct sources ``[kind, id]`` of ``found``, sorted as a load sorts its sources (an
    analyst's paper without a text kind and id has none: no alias locks it, no source ranks it)."""
    distinct = {tuple(source) for source in found if all(type(part) is str for part in source)}
    return [list(source) for source in sorted(distinct)]


def _write(
    tx: neo4j.ManagedTransaction,
    to_write: list[PaperRows],
    remove: list[str],
    locks: list[str],
    held: set[str],
    sources: list[list[str]],
    latest: LatestUpdates | None = None,
) -> None:
    """Write the winning rows of a batch (one per paper) and delete the ``remove`` papers in
    the current transaction; ``locks`` are the batch's lock aliases (deleted if unused),
    ``held`` the pith numbers stored before (only those have edges to detach), ``sources``
    those of every paper written or removed; ``latest``: their papers' ``isLatest`` as a load
    decided it, else (a removal) REFRESH_LATEST refreshes it."""
    signer_types: dict[str, str] = {}
    batch_keys: dict[str, set[str]] = {}
    authors: dict[str, AuthorRow] = {}
    categories: dict[str, str] = {}
    papers: list[dict[str, Any]] = []
    spellings = Spellings()
    if remove:
        spellings.remove(paper_author_names(tx, remove))
    for rows in sorted(to_write, key=lambda r: r.pith_number):
        for author in rows.authors:
            known = authors.get(author.name_key)
            if known is None or author.name < known.name:
                authors[author.name_key] = author
        for category in rows.categories:
            categories.setdefault(category.code, category.archive)
        for signer in rows.signers:
            signer_types.setdefault(signer.signer_id, signer.signer_type)
            batch_keys.setdefault(signer.signer_id, set()).update(signer.key_ids)
        props = {**_NO_PAPER_PROPERTIES, **rows.paper_properties()}
        if latest is not None and (flag := latest.written.get(rows.pith_number)) is not None:
            props["isLatest"] = flag
        papers.append(
            {
                "props": props,
                "authors": [author.name_key for author in rows.authors],
                "categories": [[c.code, c.primary] for c in rows.categories],
                "aliases": [[a.kind, a.value] for a in rows.aliases],
                "signers": [
                    [s.signer_id, list(s.key_ids), s.stored_event_types, s.signed_bundle]
                    for s in rows.signers
                ],
            }
        )

    piths = sorted(rows.pith_number for rows in to_write if rows.pith_number in held)
    _lock_neighbours(tx, remove + piths, signer_types, authors, categories)
    detached = read_rows(tx, cypher.DETACH_PAPERS, piths=remove) if remove else []
    extras: list[dict[str, Any]] = []  # an analyst's properties on the graph's edges
    deleted: set[str] = set()  # authors gone with all their papers: nothing left to count
    if remove:  # an author left without a paper goes first, as in the memory store
        _run(tx, cypher.DELETE_PAPERS, piths=remove)
        ids = _in_lock_order(r for r in detached if r["nameKey"] is not None)
        for gone in read_rows(tx, cypher.DELETE_ORPHANS, ids=ids):
            spellings.forget(gone["key"])  # gone with all its papers: a new one starts afresh
            deleted.add(gone["key"])
        if again := sorted(deleted & authors.keys()):  # merged above: created again, held since
            _run(tx, cypher.MERGE_AUTHORS, rows=[list(authors[key]) for key in again])
    if piths:
        spellings.remove(paper_author_names(tx, piths))
        extras = [
            {**r, "props": {k: v for k, v in r["props"].items() if k not in PROPERTY_NAMES[r["type"]]}}
            for r in read_rows(tx, cypher.EDGE_EXTRAS, piths=piths, own=_OWN_EDGE_PROPERTIES)
        ]
        detached += read_rows(tx, cypher.DETACH_PAPERS, piths=piths)
    for rows in to_write:
        for author in rows.authors:
            spellings.add(author.name_key, author.name)
    if papers:
        if raced := read_rows(tx, cypher.WRITE_PAPERS, rows=papers):
            raise Raced(f"{len(raced)} of its papers lost an author, category or signer deleted meanwhile")
        if extras:
            _run(tx, cypher.RESTORE_EDGE_EXTRAS, rows=extras)
    orphans = _in_lock_order([*detached, *({"id": lock} for lock in locks)])
    if orphans:
        _run(tx, cypher.DELETE_ORPHANS, ids=orphans)
    counted = set(authors)
    for record in detached:
        if isinstance(record["signerId"], str):  # (not a string: an analyst's node)
            batch_keys.setdefault(record["signerId"], set())
        elif isinstance(record["nameKey"], str) and record["nameKey"] not in deleted:
            counted.add(record["nameKey"])
    if counted:
        refresh_authors(tx, sorted(counted), spellings)
    signers = [{"signerId": s, "keyIds": sorted(keys)} for s, keys in sorted(batch_keys.items())]
    kept = read_rows(tx, cypher.REFRESH_SIGNER_KEYS, rows=signers)
    _run(
        tx,
        cypher.SET_SIGNER_KEYS,
        rows=[{"signerId": r["signerId"], "keyIds": sorted(r["keys"])} for r in kept],
    )
    if latest is None:
        _run(tx, cypher.REFRESH_LATEST, sources=sources)
        return
    if latest.stored:
        _run(tx, cypher.SET_LATEST, rows=sorted(latest.stored))
    if latest.refresh:
        _run(tx, cypher.REFRESH_LATEST, sources=latest.refresh)


def _lock_neighbours(
    tx: neo4j.ManagedTransaction,
    piths: list[str],
    signers: dict[str, str],
    authors: dict[str, AuthorRow],
    categories: dict[str, str],
) -> None:
    """Create or lock, before any edge is deleted, the ``signers`` (id: type), ``authors`` and
    ``categories`` the batch links and those of the papers ``piths`` it detaches (a displaced
    bundle's co-signer too), each kind in one statement in key order: a load's order
    (cypher_locks.DETACHED_NEIGHBOURS). Those only detached exist (their papers hold them):
    merged without values, they are locked, never created."""
    found = read_rows(tx, cypher_locks.DETACHED_NEIGHBOURS, piths=piths) if piths else []
    held: dict[str, list[Any]] = {key: list(row) for key, row in authors.items()}
    kinds: dict[str, str | None] = dict(signers)
    codes: dict[str, str | None] = dict(categories)
    for row in found[:1]:
        for key in row["signers"]:
            kinds.setdefault(key, None)  # LOCK_SIGNERS keeps the stored type
        for key in row["authors"]:
            held.setdefault(key, [key, None, None])
        for key in row["categories"]:
            codes.setdefault(key, None)
    if kinds:
        _run(tx, cypher.LOCK_SIGNERS, rows=[{"signerId": s, "signerType": kinds[s]} for s in sorted(kinds)])
    if held:
        _run(tx, cypher.MERGE_AUTHORS, rows=[held[key] for key in sorted(held)])
    if codes:
        _run(tx, cypher.MERGE_CATEGORIES, rows=sorted(codes.items()))


def _in_lock_order(nodes: Iterable[dict[str, Any]]) -> list[str]:
    """The distinct ids of ``nodes`` (rows with ``id`` and maybe ``signerId``, ``nameKey``,
    ``code``) in a load's lock order: signers by signerId, authors by nameKey, categories by
    code, then the rest (aliases, an analyst's nodes) by id."""
    order: dict[str, tuple[int, str]] = {}
    for node in nodes:
        for rank, name in enumerate(("signerId", "nameKey", "code")):
            if isinstance(key := node.get(name), str):
                order[node["id"]] = (rank, key)
                break
        else:
            order[node["id"]] = (3, node["id"])
    return sorted(order, key=order.__getitem__)
