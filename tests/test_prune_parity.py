"""Revocation and ``prune`` on every store: a seeded, randomized differential test.

The worlds are those of :mod:`test_order_independence` (three signers of different ranks, a
second key of the top signer, versions, rebuilds at several ``built_at``, re-signed copies,
events signed by another signer). For each seed, one arrival (random runs, batch size and
layout) loads the world into the memory store and Neo4j under the keyring that revokes
nothing; then a keyring revokes one or two keys (:func:`revocation`: ``revoked: true``, or a
``revoked_at`` between, or equal in another spelling to, the worlds' ``built_at``), written as
the operator's ``--revoked-keys`` file or as ``revoked``/``revoked_at`` in the trusted-keys
file that defines the key, and:

1. ``prune`` removes from both stores exactly the papers whose winning bundle the revoking
   keyring rejects (``revoked_key``: its bundle signature, an event's or the receipt's),
   and both exports stay equal, names included;
2. the pruned graph is the graph of the bundles it still holds, and every one
   of its papers is the paper a load *from scratch* under the revoking keyring ends with. The
   one difference allowed (README "Threat model": *after a prune, bundles that had lost to
   the removed ones are not restored until they are loaded again*) is papers the load from
   scratch has and the pruned graph lacks; each must be of a source id (an arXiv id, every
   version: the unit the update rules rank and supersede in) one of the removed papers had;
3. loading the whole world again under the revoking keyring (another arrival, the same
   into both stores) rejects exactly the revoked bundles, leaves both stores equal, names
   included, and ends with the graph of the load from scratch (``Author.name`` the smallest
   of the winners' spellings: :func:`~test_order_independence.check_names`).

The memory store goes through more seeds and arrivals (and a reload under the old keyring,
which restores the graph before the prune); Neo4j through a few. Every random choice comes
from a seed named in the assertion messages.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_order_independence import (
    HIGH,
    HIGH_2,
    KEYRING,
    LOW,
    MIDDLE,
    Arrival,
    arrival,
    check_names,
    load,
    one_batch,
    world,
)

from pith_graph.errors import BundleError
from pith_graph.loader.keyfiles import operator_keyring
from pith_graph.loader.keyring import REVOKED_ALWAYS, Keyring
from pith_graph.loader.prune import prune_revoked
from pith_graph.loader.rows import build_rows
from pith_graph.loader.stores.base import GraphExport, GraphStore
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.verify import verify_bundle

KEYS = (HIGH, HIGH_2, MIDDLE, LOW)
#: ``revoked_at`` values: before every ``built_at`` of the worlds (``…00Z``, equal to the
#: first two), between them, and equal to ``…00.5Z`` in another spelling.
REVOKED_AT = (
    REVOKED_ALWAYS,
    "2026-07-01T00:00:00Z",
    "2026-07-01T00:00:00.25Z",
    "2026-07-01T00:00:00.500Z",
    "2026-07-01T12:00:00Z",
    "2026-07-15T00:00:00Z",
)


@dataclasses.dataclass(frozen=True)
class Revocation:
    """Key id → ``revoked_at`` (``""``: ``revoked: true``), written by the operator
    (``--revoked-keys``) or by the file that defines the keys."""

    keys: dict[str, str]
    by_operator: bool

    def __str__(self) -> str:
        return f"revoked={self.keys} by_operator={self.by_operator}"

    def keyring(self, folder: Path) -> Keyring:
        """The keyring the operator's options make, through the trusted-keys files."""

        def entry(key: Any, revoke: bool) -> dict[str, Any]:
            pinned = {**key.keyring_entry(), "signer_type": KEYRING[key.key_id].signer_type}
            pinned = {name: value for name, value in pinned.items() if value is not None}
            if revoke and key.key_id in self.keys:
                at = self.keys[key.key_id]
                pinned |= {"revoked": True} if at == REVOKED_ALWAYS else {"revoked_at": at}
            return pinned

        trusted = folder / "keyring.json"
        trusted.write_bytes(orjson.dumps([entry(key, not self.by_operator) for key in KEYS]))
        revoked: list[Path] = []
        if self.by_operator:
            revoked.append(folder / "revoked-keys.json")
            revoked[0].write_bytes(
                orjson.dumps([entry(key, True) for key in KEYS if key.key_id in self.keys])
            )
        keyring = operator_keyring(trusted_keys=[trusted], revoked_keys=revoked)
        assert {k: keyring.rank(k) for k in keyring} == {k: KEYRING.rank(k) for k in KEYRING}
        return keyring


def revocation(rng: random.Random) -> Revocation:
    chosen = rng.sample(KEYS, rng.randint(1, 2))
    return Revocation({key.key_id: rng.choice(REVOKED_AT) for key in chosen}, rng.random() < 0.5)


@functools.cache
def identity(data: bytes) -> tuple[str, str]:
    """``(bundleSha256, bundleKeyId)``: which bundle a Paper node holds."""
    paper = build_rows(verify_bundle(orjson.loads(data), KEYRING), KEYRING).paper
    return paper.bundle_sha256, paper.bundle_key_id


def rejection(data: bytes, keyring: Keyring) -> str | None:
    """The code ``keyring`` rejects the bundle with (``None``: accepted)."""
    try:
        verify_bundle(orjson.loads(data), keyring)
    except BundleError as error:
        return str(error.code)
    return None


def papers(export: GraphExport) -> dict[str, dict[str, Any]]:
    return {key: node for key, node in export.nodes.items() if node["label"] == "Paper"}


@dataclasses.dataclass
class Case:
    """One seed's world, revocation and reference graphs."""

    seed: int
    bundles: list[bytes]
    revoked: Revocation
    keyring: Keyring
    #: ``(bundleSha256, bundleKeyId)`` of the bundles the keyring rejects.
    rejected: set[tuple[str, str]]
    #: The memory store's graph after loading the world from scratch under ``keyring``.
    scratch: GraphExport
    folder: Path

    @classmethod
    def make(cls, seed: int, rng: random.Random, folder: Path) -> Case:
        bundles = world(seed).bundles
        revoked = revocation(rng)
        keyring = revoked.keyring(folder)
        codes = {identity(data): rejection(data, keyring) for data in bundles}
        assert set(codes.values()) <= {None, "revoked_key"}, (seed, str(revoked))
        rejected = {bundle for bundle, code in codes.items() if code is not None}
        scratch = MemoryStore()
        reports = load(scratch, folder, bundles, one_batch(len(bundles)), keyring)
        assert reports[0].rejected == sum(identity(data) in rejected for data in bundles), (
            seed,
            str(revoked),
        )
        expected = scratch.export()
        accepted = [data for data in bundles if identity(data) not in rejected]
        check_names(expected, accepted, context=f"seed={seed} {revoked} from scratch")
        return cls(seed, bundles, revoked, keyring, rejected, expected, folder)

    def context(self, *how: object) -> str:
        return " ".join([f"seed={self.seed}", str(self.revoked), *map(str, how)])

    def holding(self, export: GraphExport) -> list[bytes]:
        """The bundles ``export``'s papers hold."""
        held = {(node["bundleSha256"], node["bundleKeyId"]) for node in papers(export).values()}
        return [data for data in self.bundles if identity(data) in held]

    def check_pruned(
        self, before: GraphExport, pruned: GraphExport, removed: list[str], context: str
    ) -> None:
        """Steps 1 and 2 of the module docstring, on one store."""
        doomed = sorted(
            node["pithNumber"]
            for node in papers(before).values()
            if (node["bundleSha256"], node["bundleKeyId"]) in self.rejected
        )
        assert removed == doomed, context
        alone = MemoryStore()
        held = self.holding(pruned)
        load(alone, self.folder, held, one_batch(len(held)), self.keyring)
        assert pruned == alone.export(), context
        check_names(pruned, self.bundles, context=context)
        kept, scratch = papers(pruned), papers(self.scratch)
        lost_sources = {
            (node["sourceKind"], node["sourceId"])
            for node in papers(before).values()
            if node["pithNumber"] in removed
        }
        missing = scratch.keys() - kept.keys()
        for key in missing:
            assert (scratch[key]["sourceKind"], scratch[key]["sourceId"]) in lost_sources, (context, key)
        # isLatest (since 0.9.4) is of the papers the graph holds: a source that lacks a paper the
        # load from scratch has may have another newest version; every other property is equal.
        short = {(scratch[key]["sourceKind"], scratch[key]["sourceId"]) for key in missing}
        for key, node in kept.items():
            if (node["sourceKind"], node["sourceId"]) in short:
                assert scratch.get(key, {}) | {"isLatest": node["isLatest"]} == node, (context, key)
            else:
                assert scratch.get(key) == node, (context, key)


def prune_and_reload(
    case: Case, stores: Sequence[GraphStore], first: Arrival, again: Arrival
) -> tuple[dict[str, dict[str, Any]], list[str], int]:
    """The three steps on ``stores`` (each gets the same arrivals); the papers before the
    prune, the pith numbers it removed and how many papers only the second load restored."""
    context = case.context(f"first=[{first}]")
    exports = []
    for store in stores:
        reports = load(store, case.folder, case.bundles, first, KEYRING)
        assert all(r.rejected == 0 for r in reports), (context, [r.rejections for r in reports])
        exports.append(store.export())
    before = exports[0]
    assert all(export == before for export in exports), context
    removed = [prune_revoked(store, case.keyring).removed for store in stores]
    pruned = [store.export() for store in stores]
    for export, gone in zip(pruned, removed, strict=True):
        case.check_pruned(before, export, gone, context)
    assert all(export == pruned[0] for export in pruned), context
    context = case.context(f"first=[{first}]", f"again=[{again}]")
    for store in stores:
        reports = load(store, case.folder, case.bundles, again, case.keyring)
        rejections = [r for report in reports for r in report.rejections]
        assert {r.code for r in rejections} <= {"revoked_key"}, context
        assert len(rejections) == sum(identity(data) in case.rejected for data in case.bundles), context
    reloaded = [store.export() for store in stores]
    assert all(export == reloaded[0] for export in reloaded), context
    assert reloaded[0] == case.scratch, context
    check_names(reloaded[0], case.bundles, context=context)
    return papers(before), removed[0], len(papers(case.scratch).keys() - papers(pruned[0]).keys())


# -- the memory store: more seeds and arrivals ----------------------------------------------------

SEEDS = tuple(range(1, 9))
REVOCATIONS = 4


@pytest.mark.parametrize("seed", SEEDS)
def test_prune_then_reload_on_the_memory_store(seed: int, tmp_path: Path) -> None:
    """For each of a few revocations: the three steps; then the world loaded again under the
    keyring that revokes nothing restores the graph before the prune, names aside."""
    rng = random.Random(f"prune-memory-{seed}")
    for _ in range(REVOCATIONS):
        case = Case.make(seed, rng, tmp_path)
        count = len(case.bundles)
        first, again = arrival(rng, count), arrival(rng, count)
        store = MemoryStore()
        prune_and_reload(case, [store], first, again)
        restored = MemoryStore()
        load(restored, tmp_path, case.bundles, first, KEYRING)
        undo = arrival(rng, count)
        load(store, tmp_path, case.bundles, undo, KEYRING)
        assert store.export() == restored.export(), case.context(undo)


def test_the_cases_exercise_revocation_and_the_exception(tmp_path: Path) -> None:
    """Over the memory store's cases: both ways of revoking, a key revoked from a time with
    bundles on both sides of it, papers removed for a key that signed an event but not the
    bundle, and papers only the second load restored (the documented exception)."""
    by_operator = in_defining_file = split = event_only = restored = removed = 0
    for seed in SEEDS:
        rng = random.Random(f"prune-memory-{seed}")
        for _ in range(REVOCATIONS):
            case = Case.make(seed, rng, tmp_path)
            first, again = arrival(rng, len(case.bundles)), arrival(rng, len(case.bundles))
            arrival(rng, len(case.bundles))  # the memory test's third arrival
            before, gone, lost = prune_and_reload(case, [MemoryStore()], first, again)
            by_operator += case.revoked.by_operator
            in_defining_file += not case.revoked.by_operator
            removed += len(gone)
            restored += lost
            for key_id, at in case.revoked.keys.items():
                mine = [data for data in case.bundles if identity(data)[1] == key_id]
                split += at != "" and 0 < sum(identity(d) in case.rejected for d in mine) < len(mine)
            event_only += any(
                node["bundleKeyId"] not in case.revoked.keys
                for node in before.values()
                if node["pithNumber"] in gone
            )
    assert min(by_operator, in_defining_file, split, event_only, restored, removed) > 0, (
        by_operator,
        in_defining_file,
        split,
        event_only,
        restored,
        removed,
    )


# -- Neo4j: the same arrivals into both stores -----------------------------------------------------

NEO4J_SEEDS = (1, 3, 5)


@pytest.mark.parametrize("seed", NEO4J_SEEDS)
def test_prune_then_reload_on_neo4j_and_memory(seed: int, neo4j_server: Any, tmp_path: Path) -> None:
    """The three steps with the same arrivals into the memory store and Neo4j, both compared
    exactly after the first load, the prune and the second load."""
    rng = random.Random(f"prune-neo4j-{seed}")
    neo4j = neo4j_server.connect()
    try:
        for _ in range(2):
            case = Case.make(seed, rng, tmp_path)
            count = len(case.bundles)
            neo4j.clear()
            prune_and_reload(case, [MemoryStore(), neo4j], arrival(rng, count), arrival(rng, count))
    finally:
        neo4j.close()
