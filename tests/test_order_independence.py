"""The graph is a function of the set of bundles loaded: a seeded, randomized differential test.

For each seed, a small world of bundles (:func:`world`): three signers of different ranks,
a second key of the top signer, a few arXiv ids with versions 1 to 3, several rebuilds of
one version (newer, older, equal ``built_at`` with other content, ``…:00.5Z``), corrected
records (a new pith number for one version), authors spelt in several case and
compatibility forms of one name, cross-listed categories, a journal DOI two ids share (in
two letter cases), graph snapshots signed by another signer and bodies re-signed by another
key. The bundles then arrive in random orders and batchings (batch size 1, 2 or all; one
file per bundle or one JSON Lines file; one to three consecutive runs) and every store must
end with the same export: the memory store over many orders, Neo4j over a few, and the bulk
import once. Every random choice comes from a seed named in the assertion message.

``Author.name`` (and ``nameFolded``, its folded words) is checked on its own as well
(:func:`check_names`): the smallest of the winning bundles' spellings, in every order. Until
0.8 it was the documented exception (the smallest form *seen*: a form from a bundle later
replaced stayed), which this test then allowed. Two differences found that way are tests of
their own at the end (Neo4j compared names by UTF-16 code unit, and kept the name of an
author whose only paper the batch removed).
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_store_behaviour import re_signed

from pith_graph.api.reads.folding import folded_name
from pith_graph.loader.bulk import bulk_import
from pith_graph.loader.keyring import Keyring, PinnedKey, default_keyring
from pith_graph.loader.pipeline import LoadReport, run
from pith_graph.loader.rows import build_rows
from pith_graph.loader.stores.base import GraphExport, GraphStore
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.verify import verify_bundle
from pith_graph.testing.signer import PaperSpec, SignerIdentity, build_bundle, resign

#: (Pinned as "mirror": only the registry's signer may be pinned "pith_registry" in a file.)
HIGH = SignerIdentity.from_seed(
    b"order-high", key_id="order-high-key", signer_id="high.invalid", signer_type="mirror"
)
#: A second key of HIGH's signer (same rank), greater than HIGH's key id.
HIGH_2 = SignerIdentity.from_seed(
    b"order-high-2", key_id="order-high-key-2", signer_id="high.invalid", signer_type="mirror"
)
MIDDLE = SignerIdentity.from_seed(
    b"order-middle", key_id="order-middle-key", signer_id="middle.invalid", signer_type="pith_builder"
)
LOW = SignerIdentity.from_seed(b"order-low", key_id="order-low-key", signer_id="low.invalid")
SIGNERS = (HIGH, MIDDLE, LOW)
# built by hand: HIGH is pinned with the type its events claim, pith_registry, which keys files and resolve_keyring keep for pith.science
KEYRING = default_keyring().with_keys(
    [PinnedKey(s.key_id, s.public_key, s.signer_id, signer_type=s.signer_type) for s in (HIGH, HIGH_2)]
    + [PinnedKey(MIDDLE.key_id, MIDDLE.public_key, MIDDLE.signer_id, signer_type=MIDDLE.signer_type)]
    + [PinnedKey(LOW.key_id, LOW.public_key, LOW.signer_id)]
)

#: Spellings of one author each (case, NFD, doubled space, compatibility forms).
NAMES = (
    ("Zoë Smith", "ZOË SMITH", "zoe\u0308 smith", "Zoë  Smith"),
    ("Ann Lee", "ANN LEE", "ann lee", "\uff21nn Lee", "\U0001d49cnn Lee"),
    ("Bo Chen", "bo chen", "BO CHEN"),
    ("Cy Dunn",),
    ("Di Ek", "DI EK"),
)
CATEGORIES = ("cs.LG", "stat.ML", "math.OC", "cs.AI")
#: ``built_at`` values: equal instants in two spellings, a fraction after a whole second.
BUILT = (
    "2026-07-01T00:00:00Z",
    "2026-07-01T00:00:00.000Z",
    "2026-07-01T00:00:00.5Z",
    "2026-07-02T00:00:00Z",
    "2026-08-01T12:00:00Z",
)
JOURNAL = ("10.1145/3600000.SHARED", "10.1145/3600000.shared")


@dataclasses.dataclass(frozen=True)
class World:
    seed: int
    bundles: list[bytes]


def world(seed: int, ids: int | None = None) -> World:
    """The bundles of seed ``seed``'s world, in the order they were made."""
    rng = random.Random(seed)
    count = ids or rng.randint(3, 5)
    arxiv_ids = [f"2401.{n:05d}" for n in sorted(rng.sample(range(1, 1000), count))]
    journal_ids = set(rng.sample(arxiv_ids, 2))
    bundles: list[bytes] = []
    for arxiv_id in arxiv_ids:
        base = PaperSpec.example(
            arxiv_id,
            title=f"On {arxiv_id}",
            primary_cat=rng.choice(CATEGORIES),
            cross_cats=rng.sample(CATEGORIES, rng.randint(0, 2)),
            submitted_at="2024-01-05T10:00:00Z",
        )
        signers = rng.sample(SIGNERS, rng.randint(1, 3))  # of this id: the first ranked may vary
        for version in range(1, rng.randint(1, 3) + 1):
            for signer in rng.sample(signers, rng.randint(1, len(signers))):
                for _ in range(rng.randint(1, 3)):
                    bundles.extend(_rebuild(rng, base, version, signer, arxiv_id in journal_ids))
    return World(seed, bundles)


def _rebuild(
    rng: random.Random, base: PaperSpec, version: int, signer: SignerIdentity, journal: bool
) -> Iterator[bytes]:
    """One bundle of ``base``'s version by ``signer``, and at times a copy by another key."""
    authors = [rng.choice(forms) for forms in rng.sample(NAMES, rng.randint(1, 3))]
    title = base.title if rng.random() < 0.8 else f"{base.title}, corrected"  # a new pith number
    paper = dataclasses.replace(
        base, version=version, title=title, authors=authors, built_at=rng.choice(BUILT)
    )
    extra = rng.choice([s for s in SIGNERS if s is not signer]) if rng.random() < 0.25 else None
    bundle = build_bundle(paper, signer, extra_event_signer=extra)
    if journal and rng.random() < 0.7:
        bundle["source_aliases"].append(
            {"alias_kind": "doi", "alias_value": rng.choice(JOURNAL), "created_at": paper.created_at}
        )
        resign(bundle, signer, event_signers={1: extra} if extra else None)
    yield orjson.dumps(bundle)
    if rng.random() < 0.15:  # the same body signed by another key: its signer's bundle
        by = rng.choice([HIGH_2, *(s for s in SIGNERS if s is not signer)])
        yield re_signed(orjson.dumps(bundle), by)


@dataclasses.dataclass(frozen=True)
class Arrival:
    """How a world's bundles arrive: ``runs`` (indices into its bundles, one list per loader
    run), each with ``batch_size`` and ``layout`` (``files``: one file per bundle; ``jsonl``)."""

    runs: list[list[int]]
    batch_size: int
    layout: str

    def __str__(self) -> str:
        return f"runs={self.runs} batch_size={self.batch_size} layout={self.layout}"


def arrival(rng: random.Random, count: int) -> Arrival:
    order = rng.sample(range(count), count)
    cuts = sorted(rng.sample(range(1, count), rng.randint(0, min(2, count - 1))))
    runs = [order[a:b] for a, b in itertools.pairwise([0, *cuts, count])]
    return Arrival(runs, rng.choice([1, 2, count]), rng.choice(["files", "jsonl"]))


def one_batch(count: int) -> Arrival:
    return Arrival([list(range(count))], count, "jsonl")


_folders = itertools.count()


def load(
    store: GraphStore,
    folder: Path,
    bundles: Sequence[bytes],
    how: Arrival,
    keyring: Keyring | None = None,
) -> list[LoadReport]:
    """``how``'s runs into ``store``: under :data:`KEYRING`, where no bundle may be rejected,
    or under ``keyring`` (rejections allowed)."""
    reports = []
    for indices in how.runs:
        run_dir = folder / f"arrival-{next(_folders):04d}"
        run_dir.mkdir()
        if how.layout == "jsonl":
            (run_dir / "bundles.jsonl").write_bytes(b"".join(bundles[i] + b"\n" for i in indices))
        else:
            for position, index in enumerate(indices):
                (run_dir / f"{position:04d}.json").write_bytes(bundles[index])
        reports.append(
            run([str(run_dir)], keyring=keyring or KEYRING, store=store, workers=1, batch_size=how.batch_size)
        )
    if keyring is None:
        assert all(r.rejected == 0 for r in reports), [r.rejections for r in reports]
    return reports


def _forms(bundles: Sequence[bytes]) -> list[tuple[str, str, str, str]]:
    """``(bundleSha256, bundleKeyId, nameKey, name)`` of every author of every bundle."""
    found = []
    for data in bundles:
        rows = build_rows(verify_bundle(orjson.loads(data), KEYRING), KEYRING)
        paper = rows.paper
        found += [(paper.bundle_sha256, paper.bundle_key_id, a.name_key, a.name) for a in rows.authors]
    return found


def check_names(export: GraphExport, bundles: Sequence[bytes], *, context: str) -> None:
    """Each author's name is the smallest form among the winning bundles, its forms theirs,
    counted; ``nameFolded`` is always its key's folded words (since 0.9.8)."""
    winners = {
        (node["bundleSha256"], node["bundleKeyId"])
        for node in export.nodes.values()
        if node["label"] == "Paper"
    }
    forms = _forms(bundles)
    for key, node in export.nodes.items():
        if node["label"] != "Author":
            continue
        won = Counter(name for sha, kid, nk, name in forms if nk == node["nameKey"] and (sha, kid) in winners)
        assert node["nameFolded"] == folded_name(node["nameKey"]), (context, key)
        assert node["name"] == min(won), (context, key, node["name"], min(won))
        spelt = dict(
            zip(
                node.get("nameForms", [node["name"]]),
                node.get("nameFormCounts", [node["paperCount"]]),
                strict=True,
            )
        )
        assert spelt == won, (context, key, spelt, won)


def describe(seed: int, how: Arrival | str) -> str:
    return f"seed={seed} {how}"


# -- the memory store: many orders -------------------------------------------------------------


def check_latest(export: GraphExport, *, context: str) -> None:
    """Each source's newest paper, and it alone, is marked ``isLatest`` (since 0.9.4): the
    exports compared below then hold it the same in every order, store and import."""
    sources: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for node in export.nodes.values():
        if node["label"] == "Paper":
            sources.setdefault((node["sourceKind"], node["sourceId"]), []).append(node)
    assert any(len(papers) > 1 for papers in sources.values()), context
    for papers in sources.values():
        newest = max(papers, key=lambda p: (p["sourceVersion"], p["builtAt"], p["pithNumber"]))
        assert [p["isLatest"] for p in papers] == [p is newest for p in papers], context


SEEDS = tuple(range(1, 9))
ORDERS = 8


@pytest.mark.parametrize("seed", SEEDS)
def test_every_order_and_batching_ends_in_the_same_graph(seed: int, tmp_path: Path) -> None:
    bundles = world(seed).bundles
    reference = MemoryStore()
    load(reference, tmp_path, bundles, one_batch(len(bundles)))
    expected = reference.export()
    check_names(expected, bundles, context=describe(seed, "one batch"))
    check_latest(expected, context=describe(seed, "one batch"))
    rng = random.Random(f"orders-{seed}")
    for _ in range(ORDERS):
        how = arrival(rng, len(bundles))
        store = MemoryStore()
        load(store, tmp_path, bundles, how)
        actual = store.export()
        assert actual == expected, describe(seed, how)


def test_the_worlds_exercise_every_rule(tmp_path: Path) -> None:
    """Over the seeds, one batch and one bundle per batch meet every outcome, and the graphs
    hold a journal DOI two papers share, authors of several spellings and a signer of events
    only."""
    totals: dict[str, int] = {}
    shared_doi = spelt_apart = event_signer = False
    for seed in SEEDS:
        bundles = world(seed).bundles
        reports = load(MemoryStore(), tmp_path, bundles, one_batch(len(bundles)))
        store = MemoryStore()
        reports += load(store, tmp_path, bundles, Arrival([list(range(len(bundles)))], 1, "files"))
        for report in reports:
            for outcome in ("inserted", "replaced", "duplicate", "stale", "outranked", "displaced"):
                totals[outcome] = totals.get(outcome, 0) + getattr(report, outcome)
        graph = store.export()
        shared_doi |= sum(1 for (start, _, _) in graph.edges if start.startswith("Alias:doi:10.1145/")) > 1
        forms = {name for _sha, _kid, key, name in _forms(bundles) if key == "ann lee"}
        spelt_apart |= len(forms) > 2
        event_signer |= any(not edge.get("signedBundle", True) for edge in graph.edges.values())
    assert min(totals.values()) > 0, totals
    assert shared_doi and spelt_apart and event_signer


# -- Neo4j: a few orders, each against the memory store's graph after the same order ------------

#: Before the fixes the last two tests check, each of these found one of those differences.
NEO4J_SEEDS = (4, 8)


@pytest.mark.parametrize("seed", NEO4J_SEEDS)
def test_neo4j_ends_in_the_memory_stores_graph(seed: int, neo4j_server: Any, tmp_path: Path) -> None:
    """The same arrival into both stores: the same export, names included; and the same
    graph as one batch."""
    bundles = world(seed).bundles
    rng = random.Random(f"neo4j-{seed}")
    neo4j = neo4j_server.connect()
    try:
        expected: GraphExport | None = None
        for how in (one_batch(len(bundles)), arrival(rng, len(bundles)), arrival(rng, len(bundles))):
            memory = MemoryStore()
            load(memory, tmp_path, bundles, how)
            neo4j.clear()
            load(neo4j, tmp_path, bundles, how)
            wanted, actual = memory.export(), neo4j.export()
            assert actual.nodes == wanted.nodes, describe(seed, how)
            assert actual.edges == wanted.edges, describe(seed, how)
            expected = expected or wanted
            assert actual == expected, describe(seed, how)
    finally:
        neo4j.close()


# -- the bulk import: once, over every seed's world ----------------------------------------------


def test_the_bulk_import_builds_the_graph_of_one_batch(
    start_neo4j: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """All worlds together (their ids rarely meet; where they do, one world is larger), in a
    shuffled order: the import's graph is the memory store's after one batch, names included."""
    rng = random.Random("bulk")
    bundles = [data for seed in SEEDS for data in world(seed).bundles]
    rng.shuffle(bundles)
    folder = tmp_path_factory.mktemp("bulk-input")
    corpus = folder / "bundles.jsonl"
    corpus.write_bytes(b"".join(data + b"\n" for data in bundles))
    memory = MemoryStore()
    load(memory, tmp_path_factory.mktemp("bulk-memory"), bundles, one_batch(len(bundles)))
    expected = memory.export()
    check_names(expected, bundles, context="bulk")

    data = tmp_path_factory.mktemp("bulk-data")
    report = bulk_import([str(corpus)], keyring=KEYRING, data=data, workers=1)
    assert report.rejected == 0
    server = start_neo4j(data=data)
    store = server.connect()
    try:
        actual = store.export()
        assert actual.nodes == expected.nodes
        assert actual.edges == expected.edges
    finally:
        store.close()
        server.script("stop")


# -- found by the randomized tests ----------------------------------------------------------------


@pytest.mark.parametrize("astral_first", [False, True], ids=["fullwidth-first", "astral-first"])
def test_the_smallest_name_is_by_code_point_on_every_store(
    store: GraphStore, tmp_path: Path, astral_first: bool
) -> None:
    """``Ａnn Lee`` (U+FF21) and ``𝒜nn Lee`` (U+1D49C) are one author; the smaller by code point,
    as the memory store and the bulk import compare, is its name whatever the order. (Neo4j kept
    ``𝒜nn Lee`` in both orders: Cypher compared the new name, a parameter, with the stored one
    by UTF-16 code unit, where U+1D49C's surrogate U+D835 comes first.)"""
    forms = ["\uff21nn Lee", "\U0001d49cnn Lee"]
    bundles = [
        orjson.dumps(build_bundle(PaperSpec.example(f"2401.0000{i}", authors=[name]), HIGH))
        for i, name in enumerate(forms[::-1] if astral_first else forms, 1)
    ]
    load(store, tmp_path, bundles, Arrival([[0], [1]], 1, "files"))
    (author,) = (node for node in store.export().nodes.values() if node["label"] == "Author")
    assert (author["name"], author["paperCount"]) == ("\uff21nn Lee", 2)
    assert author["nameFolded"] == folded_name("ann lee") == "ann lee"


@pytest.mark.parametrize("how", ["corrected", "displaced"])
def test_an_author_whose_only_paper_a_batch_removes_takes_the_new_papers_name(
    store: GraphStore, tmp_path: Path, how: str
) -> None:
    """A paper naming ``ANN LEE``, then in a later batch the bundle that removes it (a
    corrected record of its version, or a higher-ranked signer's record) naming ``Ann Lee``: the
    author lost its only paper, so it is named as the new paper names it, as a load of the
    new bundle alone (and the bulk import) names it. (Neo4j kept ``ANN LEE``: it deleted
    the authors left without a paper only after merging the batch's authors.)"""
    first = PaperSpec.example("2401.00001", authors=["ANN LEE"])
    later = dataclasses.replace(
        first, title="Another record", authors=["Ann Lee"], built_at="2026-03-01T00:00:00Z"
    )
    bundles = [
        orjson.dumps(build_bundle(first, LOW if how == "displaced" else HIGH)),
        orjson.dumps(build_bundle(later, HIGH)),
    ]
    reports = load(store, tmp_path, bundles, Arrival([[0], [1]], 1, "files"))
    assert reports[1].displaced == 1
    alone = MemoryStore()
    load(alone, tmp_path, bundles[1:], one_batch(1))
    assert store.export() == alone.export()
    assert store.export().nodes["Author:ann lee"]["name"] == "Ann Lee"
