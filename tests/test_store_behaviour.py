"""One behaviour suite for both stores (the ``store`` fixture: memory and Neo4j).

The update rules, orphan removal, author identity and the re-load shortcut are specified
once here; the parity test at the end loads a generated corpus into both stores and
compares every node and edge.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import orjson
import pytest
from test_refold_candidates import VECTORS as REFOLD_VECTORS
from test_refold_candidates import old_fold

from pith_graph.errors import StoreError
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.identifiers import author_display_name, author_name_key
from pith_graph.loader.keyring import Keyring, PinnedKey, default_keyring
from pith_graph.loader.pipeline import LoadReport, run
from pith_graph.loader.prune import prune_revoked
from pith_graph.loader.stores import cypher_upgrades
from pith_graph.loader.stores.base import GraphExport, GraphStore
from pith_graph.loader.stores.memory import MemoryStore, open_graph
from pith_graph.loader.stores.names import folded_words
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.stores.rules import Outcome, StoredPaper, plan_batch
from pith_graph.testing import run_cli
from pith_graph.testing.corpus import write_corpus
from pith_graph.testing.signer import PaperSpec, SignerIdentity, build_bundle, resign

SIGNER = SignerIdentity.from_seed(b"behaviour", key_id="behaviour-key", signer_id="behaviour.invalid")
BUILDER = SignerIdentity.from_seed(
    b"behaviour-builder",
    key_id="behaviour-builder-key",
    signer_id="builder.invalid",
    signer_type="pith_builder",
)
KEYRING = resolve_keyring([PinnedKey(s.key_id, s.public_key, s.signer_id) for s in (SIGNER, BUILDER)])
LICENSE = "http://creativecommons.org/licenses/by/4.0/"


def spec(
    arxiv_id: str = "2401.00001",
    *,
    built_at: str = "2026-07-02T00:00:00Z",
    authors: Sequence[str] = ("Ann Lee", "Bo Chen", "Cy Dunn"),
    title: str = "Sparse attention for graphs",
    version: int = 1,
) -> PaperSpec:
    """A paper; bundles differing only in ``built_at``, authors or title case share a pith."""
    return PaperSpec(
        arxiv_id=arxiv_id,
        version=version,
        title=title,
        authors=list(authors),
        abstract_excerpt="We study sparse attention.",
        primary_cat="cs.LG",
        cross_cats=["stat.ML"],
        license=LICENSE,
        submitted_at="2024-01-05T10:00:00Z",
        created_at="2026-07-01T00:00:00Z",
        built_at=built_at,
    )


def bundle(paper: PaperSpec, *, extra: SignerIdentity | None = None) -> bytes:
    return orjson.dumps(build_bundle(paper, SIGNER, extra_event_signer=extra))


_runs = itertools.count()


def load(
    store: GraphStore,
    folder: Path,
    bundles: Sequence[bytes],
    *,
    batch_size: int = 1000,
    keyring: Keyring = KEYRING,
    skip_known: bool = True,
) -> LoadReport:
    """One loader run over ``bundles``, in this order (one file each)."""
    run_dir = folder / f"run-{next(_runs):03d}"
    run_dir.mkdir()
    for index, data in enumerate(bundles):
        (run_dir / f"{index:04d}.json").write_bytes(data)
    return run(
        [str(run_dir)],
        keyring=keyring,
        store=store,
        workers=1,
        batch_size=batch_size,
        skip_known=skip_known,
    )


def outcome(report: LoadReport) -> dict[str, int]:
    return {
        "inserted": report.inserted,
        "replaced": report.replaced,
        "duplicate": report.duplicate,
        "stale": report.stale,
        "rejected": report.rejected,
    }


def labelled(export: GraphExport, label: str) -> dict[str, dict[str, Any]]:
    return {key: node for key, node in export.nodes.items() if node["label"] == label}


def reference(folder: Path, bundles: Sequence[bytes]) -> GraphExport:
    """What the memory store holds after loading ``bundles`` in one run."""
    memory = MemoryStore()
    load(memory, folder, bundles)
    return memory.export()


# -- the sample bundles ----------------------------------------------------------------------


def test_an_empty_store_counts_every_label_and_type_as_0(store: GraphStore) -> None:
    """Since 0.8.9 a zero count is a key (Neo4j left out labels without nodes, memory gave {})."""
    counts = store.counts()
    assert counts.nodes == {"Alias": 0, "Author": 0, "Category": 0, "Paper": 0, "Signer": 0}
    assert counts.edges == {"AUTHORED": 0, "IDENTIFIES": 0, "IN_CATEGORY": 0, "SIGNED": 0}


def test_samples_load_into_the_schema(store: GraphStore, samples: Path) -> None:
    report = run([str(samples)], keyring=resolve_keyring(), store=store, workers=1)
    assert outcome(report) == {"inserted": 3, "replaced": 0, "duplicate": 0, "stale": 0, "rejected": 0}
    counts = store.counts()
    assert counts.nodes == {"Alias": 18, "Author": 19, "Category": 5, "Paper": 3, "Signer": 1}
    assert counts.edges == {"AUTHORED": 19, "IDENTIFIES": 18, "IN_CATEGORY": 10, "SIGNED": 3}

    graph = store.export()
    paper_id = "Paper:pith:2019:BR75OIUY7WDYHPO53K7WUNQ4NZ"
    paper = graph.nodes[paper_id]
    assert paper["title"] == "Optimizing Multi-GPU Parallelization Strategies for Deep Learning Training"
    assert (paper["sourceId"], paper["sourceVersion"], paper["submittedYear"]) == ("1907.13257", 1, 2019)
    assert paper["keyIds"] == ["pith-v1-2026-05"]
    assert graph.nodes["Signer:pith.science"] == {
        "label": "Signer",
        "signerId": "pith.science",
        "signerType": "pith_registry",
        "keyIds": ["pith-v1-2026-05"],
    }
    assert graph.nodes["Category:stat.ML"] == {"label": "Category", "code": "stat.ML", "archive": "stat"}
    assert graph.edges[(paper_id, "IN_CATEGORY", "Category:cs.LG")] == {"primary": True}
    assert graph.edges[(paper_id, "IN_CATEGORY", "Category:stat.ML")] == {"primary": False}
    assert (("Alias:arxiv:1907.13257", "IDENTIFIES", paper_id)) in graph.edges
    assert graph.edges[("Signer:pith.science", "SIGNED", paper_id)] == {
        "keyIds": ["pith-v1-2026-05"],
        "eventTypes": ["graph_snapshot", "record_created"],
        "signedBundle": True,
    }
    assert graph.nodes["Author:john d. owens"]["name"] == "John D. Owens"
    assert ("Author:john d. owens", "AUTHORED", "Paper:pith:2022:3YN673EVFOVJAYQNLYBADBBI3I") in graph.edges


# -- update rules ----------------------------------------------------------------------------

OLD = spec(built_at="2026-07-02T00:00:00Z", authors=("Ann Lee", "Bo Chen", "Cy Dunn"))
NEW = spec(
    built_at="2026-08-09T00:00:00Z", authors=("Ann Lee", "Bo Chen"), title="Sparse Attention for graphs"
)


@pytest.mark.parametrize("first_new", [False, True], ids=["old-then-new", "new-then-old"])
@pytest.mark.parametrize("mode", ["one-batch", "two-batches", "two-runs"])
def test_newest_bundle_wins_whatever_the_order(
    store: GraphStore, tmp_path: Path, first_new: bool, mode: str
) -> None:
    old, new = bundle(OLD), bundle(NEW)
    ordered = [new, old] if first_new else [old, new]
    if mode == "two-runs":
        reports = [load(store, tmp_path, [data]) for data in ordered]
    else:
        reports = [load(store, tmp_path, ordered, batch_size=2 if mode == "one-batch" else 1)]
    totals = {key: sum(outcome(r)[key] for r in reports) for key in outcome(reports[0])}
    later = "stale" if first_new or mode == "one-batch" else "replaced"
    assert totals == {"inserted": 1, "replaced": 0, "duplicate": 0, "stale": 0, "rejected": 0} | {later: 1}

    graph = store.export()
    assert graph == reference(tmp_path, [new])
    (paper,) = labelled(graph, "Paper").values()
    assert (paper["builtAt"], paper["title"]) == (NEW.built_at, NEW.title)
    # the author the newer bundle dropped lost its edge and, with no other paper, its node
    assert set(labelled(graph, "Author")) == {"Author:ann lee", "Author:bo chen"}
    assert sum(1 for (_, kind, _) in graph.edges if kind == "AUTHORED") == 2


def test_an_older_bundle_is_stale_in_a_later_run_against_stored_state(
    store: GraphStore, tmp_path: Path
) -> None:
    load(store, tmp_path, [bundle(NEW)])
    # a second store object has no memory of the first run: the decision comes from storage
    again = (
        Neo4jStore(store.driver, uri=store.uri, database=store.database)
        if isinstance(store, Neo4jStore)
        else store
    )
    report = load(again, tmp_path, [bundle(OLD)])
    assert outcome(report)["stale"] == 1
    assert (
        labelled(store.export(), "Paper")[f"Paper:{build_bundle(NEW, SIGNER)['pith_number']}"]["builtAt"]
        == NEW.built_at
    )


def test_replacement_drops_edges_and_orphans_and_recomputes_signer_keys(
    store: GraphStore, tmp_path: Path
) -> None:
    other = spec("2401.00002", authors=("Ann Lee", "Di Ek"), title="Another paper")
    load(store, tmp_path, [bundle(OLD, extra=BUILDER), bundle(other, extra=BUILDER)])
    graph = store.export()
    assert graph.nodes["Signer:builder.invalid"]["keyIds"] == ["behaviour-builder-key"]
    assert graph.nodes["Signer:behaviour.invalid"]["keyIds"] == ["behaviour-key"]

    load(store, tmp_path, [bundle(NEW)])  # signed by SIGNER alone, drops Cy Dunn
    graph = store.export()
    pith = build_bundle(NEW, SIGNER)["pith_number"]
    assert ("Signer:builder.invalid", "SIGNED", f"Paper:{pith}") not in graph.edges
    assert "Author:cy dunn" not in graph.nodes
    assert "Signer:builder.invalid" in graph.nodes  # still signs the other paper

    load(store, tmp_path, [bundle(replace_built(other, "2026-09-01T00:00:00Z"))])
    graph = store.export()
    assert "Signer:builder.invalid" not in graph.nodes  # no paper left: removed
    assert graph.nodes["Signer:behaviour.invalid"]["keyIds"] == ["behaviour-key"]
    assert graph == reference(tmp_path, [bundle(NEW), bundle(replace_built(other, "2026-09-01T00:00:00Z"))])


@pytest.mark.parametrize("greater_first", [False, True], ids=["smaller-then-greater", "greater-then-smaller"])
@pytest.mark.parametrize("mode", ["one-batch", "two-runs"])
def test_equal_built_at_the_greater_bundle_sha256_wins(
    store: GraphStore, tmp_path: Path, greater_first: bool, mode: str
) -> None:
    one = build_bundle(spec(authors=("Ann Lee",)), SIGNER)
    two = build_bundle(spec(authors=("Bo Chen",)), SIGNER)
    assert one["built_at"] == two["built_at"] and one["pith_number"] == two["pith_number"]
    smaller, greater = sorted((one, two), key=lambda b: b["bundle_signature"]["bundle_sha256"])
    ordered = [orjson.dumps(b) for b in ((greater, smaller) if greater_first else (smaller, greater))]
    if mode == "two-runs":
        reports = [load(store, tmp_path, [data]) for data in ordered]
    else:
        reports = [load(store, tmp_path, ordered, batch_size=2)]
    totals = {key: sum(outcome(r)[key] for r in reports) for key in outcome(reports[0])}
    later = "replaced" if (mode == "two-runs" and not greater_first) else "stale"
    assert totals == {"inserted": 1, "replaced": 0, "duplicate": 0, "stale": 0, "rejected": 0} | {later: 1}
    (paper,) = labelled(store.export(), "Paper").values()
    assert paper["bundleSha256"] == greater["bundle_signature"]["bundle_sha256"]
    winner_author = greater["events"][1]["payload"]["graph_snapshot"]["paper"]["authors_text"].lower()
    assert set(labelled(store.export(), "Author")) == {f"Author:{winner_author}"}


@pytest.mark.parametrize("later_first", [False, True], ids=["whole-second-first", "fraction-first"])
@pytest.mark.parametrize("mode", ["one-batch", "two-runs"])
def test_built_at_is_compared_as_an_instant(
    store: GraphStore, tmp_path: Path, later_first: bool, mode: str
) -> None:
    """``…:00.9Z`` is later than ``…:00Z``, though it sorts before it as a string; the stored
    value keeps the bundle's own spelling."""
    earlier = build_bundle(spec(authors=("Ann Lee",), built_at="2026-07-02T00:00:00Z"), SIGNER)
    later = build_bundle(spec(authors=("Bo Chen",), built_at="2026-07-02T00:00:00.9Z"), SIGNER)
    assert earlier["pith_number"] == later["pith_number"] and later["built_at"] < earlier["built_at"]
    ordered = [orjson.dumps(b) for b in ((later, earlier) if later_first else (earlier, later))]
    if mode == "two-runs":
        reports = [load(store, tmp_path, [data]) for data in ordered]
    else:
        reports = [load(store, tmp_path, ordered, batch_size=2)]
    totals = {key: sum(outcome(r)[key] for r in reports) for key in outcome(reports[0])}
    last = "replaced" if (mode == "two-runs" and not later_first) else "stale"
    assert totals == {"inserted": 1, "replaced": 0, "duplicate": 0, "stale": 0, "rejected": 0} | {last: 1}
    (paper,) = labelled(store.export(), "Paper").values()
    assert paper["builtAt"] == "2026-07-02T00:00:00.9Z"
    assert set(labelled(store.export(), "Author")) == {"Author:bo chen"}


def test_submitted_at_is_stored_to_the_second(store: GraphStore, tmp_path: Path) -> None:
    """A fraction of a second in ``submitted_at`` is dropped, so ``submittedAt`` sorts and
    compares as text (the API's filters and orders): kept, ``…:00.5Z`` sorted before
    ``…:00Z`` and fell outside a filter from that day."""
    half = build_bundle(
        dataclasses.replace(spec("2601.00001"), submitted_at="2026-01-05T00:00:00.5Z"), SIGNER
    )
    load(store, tmp_path, [orjson.dumps(half)])
    (paper,) = labelled(store.export(), "Paper").values()
    assert paper["submittedAt"] == "2026-01-05T00:00:00Z"


# A registry correction: the same arXiv version, a new canonical record (here its title), so
# a new pith number. The older record's bundle stays signed and public.
WRONG = spec("2401.00042", title="Wrong title (retracted record)", built_at="2026-07-02T00:00:00Z")
CORRECTED = spec("2401.00042", title="Corrected title", built_at="2026-08-09T00:00:00Z")


@pytest.mark.parametrize("first_new", [False, True], ids=["old-then-new", "new-then-old"])
@pytest.mark.parametrize("mode", ["one-batch", "two-batches", "two-runs"])
def test_a_corrected_record_supersedes_the_older_record_of_its_version(
    store: GraphStore, tmp_path: Path, first_new: bool, mode: str
) -> None:
    wrong, corrected = bundle(WRONG), bundle(CORRECTED)
    assert orjson.loads(wrong)["pith_number"] != orjson.loads(corrected)["pith_number"]
    ordered = [corrected, wrong] if first_new else [wrong, corrected]
    if mode == "two-runs":
        reports = [load(store, tmp_path, [data]) for data in ordered]
    else:
        reports = [load(store, tmp_path, ordered, batch_size=2 if mode == "one-batch" else 1)]
    totals = {key: sum(outcome(r)[key] for r in reports) for key in outcome(reports[0])}
    superseded_later = not first_new and mode != "one-batch"  # the older record was stored first
    expected = {"inserted": 2 if superseded_later else 1, "stale": 0 if superseded_later else 1}
    assert totals == {"inserted": 0, "replaced": 0, "duplicate": 0, "stale": 0, "rejected": 0} | expected
    assert sum(r.displaced for r in reports) == (1 if superseded_later else 0)
    assert store.export() == reference(tmp_path, [corrected])

    replay = load(store, tmp_path, [wrong], skip_known=False)  # the old bundle, signed and public
    assert outcome(replay)["stale"] == 1 and replay.displaced == 0
    (paper,) = labelled(store.export(), "Paper").values()
    assert paper["title"] == "Corrected title"


@pytest.mark.parametrize("mode", ["one-batch", "two-runs"])
def test_every_version_of_an_arxiv_id_is_kept(store: GraphStore, tmp_path: Path, mode: str) -> None:
    """Only records of one version supersede each other: the versions of an id (v1 built
    last) are distinct papers, and so are other ids."""
    papers = [
        spec("2401.00042", version=v, title=f"Version {v}", built_at=f"2026-07-0{5 - v}T00:00:00Z")
        for v in (1, 2, 3)
    ] + [spec("2401.00043", title="Another id", built_at="2026-07-09T00:00:00Z")]
    data = [bundle(p) for p in papers]
    if mode == "two-runs":
        reports = [load(store, tmp_path, [d]) for d in data]
    else:
        reports = [load(store, tmp_path, data)]
    assert sum(r.inserted for r in reports) == 4 and sum(r.displaced for r in reports) == 0
    titles = sorted(node["title"] for node in labelled(store.export(), "Paper").values())
    assert titles == ["Another id", "Version 1", "Version 2", "Version 3"]


@pytest.mark.parametrize(
    ("held", "variant"),
    [
        pytest.param("hep-th/9901001", "HEP-TH/9901001", id="archive-case"),
        pytest.param("math/0309136", "math.GT/0309136", id="subject-class"),
    ],
)
@pytest.mark.parametrize("low_first", [False, True], ids=["high-first", "low-first"])
def test_another_spelling_of_an_arxiv_id_cannot_dodge_precedence(
    store: GraphStore, tmp_path: Path, held: str, variant: str, low_first: bool
) -> None:
    """A lower-ranked signer's fake version under another spelling of the id a higher-ranked
    signer holds (with that signer's exact arXiv DOI, when letter case is all that differs)
    is rejected: it never reaches the graph, whatever the order."""
    genuine = bundle(spec(held, title="Genuine paper"))
    fake = build_bundle(spec(variant, version=2, title="Fake v2"), BUILDER)
    if variant.lower() == held:
        for alias in fake["source_aliases"]:
            if alias["alias_kind"] == "doi":
                alias["alias_value"] = f"10.48550/arxiv.{held}"
        resign(fake, BUILDER)
    assert KEYRING.rank(BUILDER.key_id) > KEYRING.rank(SIGNER.key_id)
    ordered = [orjson.dumps(fake), genuine] if low_first else [genuine, orjson.dumps(fake)]
    reports = [load(store, tmp_path, [data]) for data in ordered]
    assert sum(r.inserted for r in reports) == 1
    assert [rejection.code for r in reports for rejection in r.rejections] == ["identifier_mismatch"]
    graph = store.export()
    assert graph == reference(tmp_path, [genuine])
    pith = orjson.loads(genuine)["pith_number"]
    doi = f"Alias:doi:10.48550/arxiv.{held}"
    assert [end for (start, _kind, end) in graph.edges if start == doi] == [f"Paper:{pith}"]


# -- signers ---------------------------------------------------------------------------------

REPUBLISHER = SignerIdentity.from_seed(
    b"behaviour-republisher", key_id="republisher-key", signer_id="republisher.invalid", signer_type="mirror"
)


def republished() -> tuple[bytes, bytes]:
    """REPUBLISHER's bundle of SIGNER's paper, with SIGNER's receipt copied in (SIGNER signed
    no event of it), and SIGNER's own bundle of another paper."""
    copy = build_bundle(spec("2401.00007"), REPUBLISHER)
    receipt = build_bundle(spec("2401.00007"), SIGNER)["events"][0]["payload"]["receipt"]
    copy["events"][0]["payload"]["receipt"] = receipt
    resign(copy, REPUBLISHER, sign_receipt=False)
    return orjson.dumps(copy), bundle(spec("2401.00008"))


def fresh(store: GraphStore) -> GraphStore:
    """An empty store of ``store``'s kind (Neo4j: the same one, cleared)."""
    if isinstance(store, Neo4jStore):
        store.clear()
        return store
    return MemoryStore()


def signer_keyring(pinned: bool) -> Keyring:
    """SIGNER pinned (``pinned``) with the type its events claim, ``pith_registry``: a keyring
    built by hand, as a keys file or ``resolve_keyring`` refuse that type to any signer but
    ``pith.science``; the stores must still take the keyring's type whatever the order."""
    return default_keyring().with_keys(
        [
            PinnedKey(s.key_id, s.public_key, s.signer_id, signer_type=s.signer_type if pinned else None)
            for s in (SIGNER, REPUBLISHER)
        ]
    )


@pytest.mark.parametrize("pinned", [False, True], ids=["unpinned", "pinned"])
def test_a_signers_type_is_the_keyrings_whatever_the_order(
    store: GraphStore, tmp_path: Path, pinned: bool
) -> None:
    """Signer.signerType is the type the keyring pins, else "unknown": never what its events
    claim. (Taking the claim, SIGNER's type was "unknown" or "pith_registry" depending on
    whether REPUBLISHER's bundle, which names SIGNER only through the copied receipt, came
    first.)"""
    keyring = signer_keyring(pinned)
    copy, own = republished()
    graphs = []
    for ordered in ([copy, own], [own, copy]):
        store = fresh(store)
        for data in ordered:
            assert outcome(load(store, tmp_path, [data], keyring=keyring))["inserted"] == 1
        graphs.append(store.export())
    assert graphs[0] == graphs[1]
    types = {node["signerId"]: node["signerType"] for node in labelled(graphs[0], "Signer").values()}
    expected = (SIGNER.signer_type, "mirror") if pinned else ("unknown", "unknown")
    assert types == dict(zip((SIGNER.signer_id, REPUBLISHER.signer_id), expected, strict=True))


def test_a_re_pinned_type_reaches_the_stored_signer(store: GraphStore, tmp_path: Path) -> None:
    """The stored type is the keyring's of the latest write of one of the signer's papers."""
    copy, own = republished()
    load(store, tmp_path, [copy], keyring=signer_keyring(False))
    assert store.export().nodes[f"Signer:{REPUBLISHER.signer_id}"]["signerType"] == "unknown"
    later = orjson.dumps(build_bundle(spec("2401.00009"), REPUBLISHER))
    load(store, tmp_path, [later, own], keyring=signer_keyring(True))
    types = {node["signerId"]: node["signerType"] for node in labelled(store.export(), "Signer").values()}
    assert types == {SIGNER.signer_id: SIGNER.signer_type, REPUBLISHER.signer_id: "mirror"}


def test_a_signer_of_no_event_has_no_event_types(store: GraphStore, tmp_path: Path) -> None:
    """A SIGNED edge of a signer that signed no event (only the bundle, re-wrapping another
    signer's events; or only the receipt) has no eventTypes, in every store: Neo4j's importer
    cannot write an empty list, so none is written."""
    rewrapped = build_bundle(spec("2401.00010"), SIGNER)
    resign(
        rewrapped, REPUBLISHER, event_signers={0: SIGNER, 1: SIGNER}, sign_receipt=False, refresh_events=False
    )
    copy, _ = republished()
    keyring = signer_keyring(False)
    assert outcome(load(store, tmp_path, [orjson.dumps(rewrapped), copy], keyring=keyring))["inserted"] == 2
    graph = store.export()
    signer, republisher = f"Signer:{SIGNER.signer_id}", f"Signer:{REPUBLISHER.signer_id}"
    wrapped_paper = f"Paper:{rewrapped['pith_number']}"
    copy_paper = f"Paper:{orjson.loads(copy)['pith_number']}"
    events = ["graph_snapshot", "record_created"]
    assert graph.edges[(republisher, "SIGNED", wrapped_paper)] == {
        "keyIds": [REPUBLISHER.key_id],
        "signedBundle": True,
    }
    assert graph.edges[(signer, "SIGNED", wrapped_paper)] == {
        "keyIds": [SIGNER.key_id],
        "eventTypes": events,
        "signedBundle": False,
    }
    assert graph.edges[(signer, "SIGNED", copy_paper)] == {"keyIds": [SIGNER.key_id], "signedBundle": False}
    assert graph.edges[(republisher, "SIGNED", copy_paper)] == {
        "keyIds": [REPUBLISHER.key_id],
        "eventTypes": events,
        "signedBundle": True,
    }


def test_every_kind_of_node_left_without_a_paper_is_removed(store: GraphStore, tmp_path: Path) -> None:
    """Author, Alias and Signer by a rebuild that drops them; Category (fixed per paper by its
    record) and everything else when the paper itself goes."""
    first = build_bundle(OLD, SIGNER, extra_event_signer=BUILDER)
    lonely = spec("2401.00009", authors=("Lo Nely",), title="Alone in its category")
    lonely = dataclasses.replace(lonely, primary_cat="math.AG", cross_cats=["math.CT"])
    load(store, tmp_path, [orjson.dumps(first), bundle(lonely)])
    pith = first["pith_number"]
    short16 = next(a["alias_value"] for a in first["source_aliases"] if a["alias_kind"] == "pith_short_16")
    graph = store.export()
    for node in (
        "Author:cy dunn",
        f"Alias:pith_short_16:{short16}",
        "Signer:builder.invalid",
        "Category:math.AG",
    ):
        assert node in graph.nodes

    rebuilt = build_bundle(NEW, SIGNER)  # drops Cy Dunn and the builder's signature
    rebuilt["source_aliases"] = [a for a in rebuilt["source_aliases"] if a["alias_kind"] != "pith_short_16"]
    resign(rebuilt, SIGNER)
    assert rebuilt["pith_number"] == pith
    assert load(store, tmp_path, [orjson.dumps(rebuilt)]).replaced == 1
    graph = store.export()
    assert "Author:cy dunn" not in graph.nodes
    assert f"Alias:pith_short_16:{short16}" not in graph.nodes
    assert "Signer:builder.invalid" not in graph.nodes
    assert "Category:math.AG" in graph.nodes

    lonely_pith = build_bundle(lonely, SIGNER)["pith_number"]
    assert store.remove_papers([lonely_pith, "pith:2000:NOSUCHPAPERXXXXXXXXXXXXXXXX"]) == [lonely_pith]
    graph = store.export()
    assert not [n for n in graph.nodes if "math." in n or "lo nely" in n or "2401.00009" in n]
    assert graph == reference(tmp_path, [orjson.dumps(rebuilt)])


def replace_built(paper: PaperSpec, built_at: str) -> PaperSpec:
    return dataclasses.replace(paper, built_at=built_at)


def test_the_same_author_under_different_spellings_is_one_node(store: GraphStore, tmp_path: Path) -> None:
    # the smallest display form comes last, in the second batch: it must replace the stored one
    spellings = ["zoë smith", "Zoe\u0308 Smith", "Zoë Smith", "ZOË  SMITH"]
    papers = [
        spec(f"2402.0000{i}", authors=[name], title=f"Paper number {i}")
        for i, name in enumerate(spellings, 1)
    ]
    load(store, tmp_path, [bundle(p) for p in papers], batch_size=2)
    graph = store.export()
    assert labelled(graph, "Author") == {
        "Author:zoë smith": {
            "label": "Author",
            "nameKey": "zoë smith",
            "name": "ZOË SMITH",
            "nameFolded": "zoe smith",
            "paperCount": 4,
            # NFC makes the second spelling the third: each paper's own form, counted
            "nameForms": ["ZOË SMITH", "Zoë Smith", "zoë smith"],
            "nameFormCounts": [1, 2, 1],
        }
    }
    assert sum(1 for (start, kind, _) in graph.edges if start == "Author:zoë smith") == 4
    assert sorted(name for paper in labelled(graph, "Paper").values() for name in paper["authorNames"]) == [
        "ZOË SMITH",
        "Zoë Smith",
        "Zoë Smith",
        "zoë smith",
    ]


def test_an_authors_name_follows_the_papers_that_spell_it(store: GraphStore, tmp_path: Path) -> None:
    """README *The graph*: ``name`` is the smallest spelling among the papers held, whatever
    the order (until 0.8 a replaced paper's ``ZOË SMITH`` stayed while the author kept another
    paper); ``nameForms``/``nameFormCounts`` count them, absent once all papers agree."""
    first = spec("2402.00001", authors=("ZOË SMITH", "Bo Chen"), title="First")
    other = spec("2402.00002", authors=("Zoë Smith",), title="Other")
    load(store, tmp_path, [bundle(first), bundle(other)])
    zoe = store.export().nodes["Author:zoë smith"]
    assert (zoe["name"], zoe["nameForms"], zoe["nameFormCounts"]) == (
        "ZOË SMITH",
        ["ZOË SMITH", "Zoë Smith"],
        [1, 1],
    )
    respelt = dataclasses.replace(first, authors=("Zoë Smith", "Bo Chen"), built_at="2026-07-03T00:00:00Z")
    assert outcome(load(store, tmp_path, [bundle(respelt)]))["replaced"] == 1
    graph = store.export()
    zoe = graph.nodes["Author:zoë smith"]
    assert (zoe["name"], zoe["paperCount"], zoe["nameFolded"]) == ("Zoë Smith", 2, "zoe smith")
    assert "nameForms" not in zoe and "nameFormCounts" not in zoe
    assert graph == reference(tmp_path, [bundle(other), bundle(respelt)])  # as if loaded alone
    # the paper of the old spelling back (a higher rank is not needed: a newer bundle of it)
    again = dataclasses.replace(first, built_at="2026-07-04T00:00:00Z")
    load(store, tmp_path, [bundle(again)])
    assert store.export() == reference(tmp_path, [bundle(other), bundle(again)])
    assert store.export().nodes["Author:zoë smith"]["name"] == "ZOË SMITH"


def _as_written_before_0_8(store: GraphStore) -> None:
    """Remove what 0.8 added (a paper's authorNames, an author's forms), as 0.7 wrote it."""
    if isinstance(store, Neo4jStore):
        store.driver.execute_query(
            "MATCH (n) WHERE n:Paper OR n:Author REMOVE n.authorNames, n.nameForms, n.nameFormCounts"
        )
        return
    for _node, data in store.graph.nodes(data=True):
        for name in ("authorNames", "nameForms", "nameFormCounts"):
            data.pop(name, None)


def test_a_graph_written_before_0_8_takes_updates(store: GraphStore, tmp_path: Path) -> None:
    """Papers without authorNames (CHANGELOG.md, 0.8.0): one replaced or removed counts
    as spelling each author as the author is named then; both stores end alike."""
    first = spec("2402.00011", authors=("ANN LEE", "Bo Chen"), title="First")
    other = spec("2402.00012", authors=("Ann Lee",), title="Other")
    load(store, tmp_path, [bundle(first), bundle(other)])
    _as_written_before_0_8(store)
    respelt = dataclasses.replace(first, authors=("Ann Lee", "Cy Dunn"), built_at="2026-07-03T00:00:00Z")
    assert outcome(load(store, tmp_path, [bundle(respelt)]))["replaced"] == 1
    graph = store.export()
    ann = graph.nodes["Author:ann lee"]
    # the old paper counted as ANN LEE (as named then), the new one spells Ann Lee; the other
    # paper, written before 0.8, counts as ANN LEE too: rebuilding gives Ann Lee (README)
    assert (ann["name"], ann["paperCount"], ann["nameForms"], ann["nameFormCounts"]) == (
        "ANN LEE",
        2,
        ["ANN LEE", "Ann Lee"],
        [1, 1],
    )
    assert "Author:bo chen" not in graph.nodes  # its only paper no longer names it
    assert graph.nodes[f"Paper:{_pith(respelt)}"]["authorNames"] == ["Ann Lee", "Cy Dunn"]
    assert "authorNames" not in graph.nodes[f"Paper:{_pith(other)}"]


@pytest.mark.parametrize("new_first", [True, False], ids=["new-first", "replaced-first"])
def test_a_graph_written_before_0_8_counts_a_batch_whatever_its_order(
    store: GraphStore, tmp_path: Path, new_first: bool
) -> None:
    """A paper without authorNames counts as spelling its authors as they are named before
    the batch, not as an earlier paper of the same batch renamed them (the memory store, a
    paper at a time, did: its name then depended on the batch's order, and Neo4j's did not)."""
    q = spec("2402.00021", authors=("Zoë Smith",), title="Q")
    r = spec("2402.00022", authors=("Zoë Smith",), title="R")
    load(store, tmp_path, [bundle(q), bundle(r)])
    _as_written_before_0_8(store)
    n = spec("2402.00023", authors=("ZOË SMITH",), title="N")
    newer = dataclasses.replace(q, built_at="2026-07-03T00:00:00Z")
    load(store, tmp_path, [bundle(n), bundle(newer)] if new_first else [bundle(newer), bundle(n)])
    zoe = store.export().nodes["Author:zoë smith"]
    assert (zoe["name"], zoe["nameForms"], zoe["nameFormCounts"], zoe["paperCount"]) == (
        "ZOË SMITH",
        ["ZOË SMITH", "Zoë Smith"],
        [1, 2],
        3,
    )


def _pith(paper: PaperSpec) -> str:
    pith: str = orjson.loads(bundle(paper))["pith_number"]
    return pith


def test_paper_count_follows_every_write_and_removal(store: GraphStore, tmp_path: Path) -> None:
    """``Author.paperCount`` counts the author's papers after inserts, a newer version that
    drops the author, and a removal; every other author of those papers is kept exact too."""
    papers = [spec(f"2404.0000{i}", authors=("Ann Lee", f"Dee {i}"), title=f"Paper {i}") for i in range(3)]
    load(store, tmp_path, [bundle(p) for p in papers], batch_size=2)

    def counts() -> dict[str, int]:
        return {key: node["paperCount"] for key, node in labelled(store.export(), "Author").items()}

    assert counts() == {"Author:ann lee": 3, "Author:dee 0": 1, "Author:dee 1": 1, "Author:dee 2": 1}
    dropped = replace_built(
        dataclasses.replace(papers[0], authors=["Dee 0", "Dee 1"]), "2026-08-01T00:00:00Z"
    )
    assert load(store, tmp_path, [bundle(dropped)]).replaced == 1
    assert counts() == {"Author:ann lee": 2, "Author:dee 0": 1, "Author:dee 1": 2, "Author:dee 2": 1}
    removed = build_bundle(papers[2], SIGNER)["pith_number"]
    assert store.remove_papers([removed]) == [removed]
    assert counts() == {"Author:ann lee": 1, "Author:dee 0": 1, "Author:dee 1": 2}
    assert store.export() == reference(tmp_path, [bundle(dropped), bundle(papers[1])])
    assert labelled(store.export(), "Author")["Author:dee 1"]["nameFolded"] == "dee 1"


def test_a_graph_written_before_0_3_gets_folded_names_and_paper_counts(
    store: GraphStore, tmp_path: Path
) -> None:
    """Authors without ``nameFolded`` and ``paperCount`` (and, on Neo4j, the retired index
    instead of the new one) are brought up to date when the store is opened again."""
    papers = [spec(f"2405.0000{i}", authors=("Zoë Smith", f"Ed {i}"), title=f"Paper {i}") for i in range(3)]
    load(store, tmp_path, [bundle(p) for p in papers])
    expected = store.export()
    if isinstance(store, MemoryStore):
        for _node, data in store.graph.nodes(data=True):
            if data["label"] == "Author":
                del data["nameFolded"], data["paperCount"]
        assert MemoryStore(store.graph).export() == expected
        return
    assert isinstance(store, Neo4jStore)
    with store.driver.session(database=store.database) as session:
        session.run("MATCH (a:Author) REMOVE a.nameFolded, a.paperCount").consume()
        session.run("DROP INDEX author_namefolded_fulltext IF EXISTS").consume()
        session.run(
            "CREATE FULLTEXT INDEX author_name_fulltext IF NOT EXISTS FOR (n:Author) ON EACH [n.name]"
        ).consume()
    store.ensure_schema()
    assert store.export() == expected
    with store.driver.session(database=store.database) as session:
        names = {record["name"] for record in session.run("SHOW INDEXES YIELD name")}
    assert "author_namefolded_fulltext" in names and "author_name_fulltext" not in names


def test_a_graph_written_before_0_9_8_gets_its_keys_folded_names(
    store: GraphStore, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Before 0.9.8 ``nameFolded`` was folded from the display name, the smallest spelling of
    any signer (``QU𝐄NTIN``: bold letters kept, typeahead found no *quentin*; ``Σοφος``: its
    final sigma, where a typed key is case-folded). A memory graph opened from a snapshot or
    a node-link file, and a Neo4j database by ``pith-graph schema`` (not by every load: a pass
    over the authors), get each author's folded from its key where it differs."""
    names = ("QU\U0001d404NTIN Truthful", "Σοφος Bo", "Zoë Smith", "Ann Lee")
    more = tuple(dict.fromkeys(d for n, *_ in REFOLD_VECTORS if (d := author_display_name(n)) not in names))
    load(store, tmp_path, [bundle(spec("2406.00001", authors=names + more, title="Paper"))])
    expected = store.export()
    assert {
        labelled(expected, "Author")[f"Author:{k}"]["nameFolded"] for k in ("quentin truthful", "σοφοσ bo")
    } == {
        "quentin truthful",
        "σοφοσ bo",
    }
    stale = [[author_name_key(name), old_fold(name)] for name in names + more]  # as 0.9.7 wrote them
    assert stale[:2] == [["quentin truthful", "qu\U0001d404ntin truthful"], ["σοφοσ bo", "σοφος bo"]]
    assert sum(1 for key, folded in stale if folded != folded_words(key)) == 7  # the vectors' differing ones
    if isinstance(store, MemoryStore):
        for key, folded in stale:
            store.graph.nodes[f"Author:{key}"]["nameFolded"] = folded
        for path, save in ((tmp_path / "g.snapshot", store.save_snapshot), (tmp_path / "g.json", store.save)):
            save(path)  # (its checks pass: nothing but typeahead reads nameFolded)
            assert MemoryStore(open_graph(path)).export() == expected, path
            opened = MemoryStore.open(path)
            assert opened.export() == expected, path
            opened.save_snapshot(tmp_path / "again.snapshot")  # saved and read back, its digest checked
            assert MemoryStore.open(tmp_path / "again.snapshot").export() == expected
        return
    assert isinstance(store, Neo4jStore)
    with store.driver.session(database=store.database) as session:
        session.run(cypher_upgrades.REFOLD_AUTHORS, rows=stale).consume()
    store.ensure_schema()  # (every load's)
    assert store.export() != expected
    done = run_cli("schema", *request.getfixturevalue("neo4j_server").cli_args(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert store.export() == expected
    assert store.refold_authors() == 0  # up to date: nothing more to write


# -- idempotence, duplicates, the re-load shortcut -----------------------------------------

CORPUS = [spec(f"2403.{i:05d}", authors=("Ann Lee", f"Author {i}"), title=f"Paper {i}") for i in range(6)]


def test_loading_twice_changes_nothing(store: GraphStore, tmp_path: Path) -> None:
    bundles = [bundle(p) for p in CORPUS]
    load(store, tmp_path, bundles, batch_size=4)
    first = store.export()
    report = load(store, tmp_path, bundles, batch_size=4, skip_known=False)
    assert outcome(report) == {"inserted": 0, "replaced": 0, "duplicate": 6, "stale": 0, "rejected": 0}
    assert store.export() == first


def test_duplicates_are_counted_within_and_across_runs(store: GraphStore, tmp_path: Path) -> None:
    data = bundle(CORPUS[0])
    report = load(store, tmp_path, [data, data, bundle(CORPUS[1])], batch_size=10)
    assert outcome(report) == {"inserted": 2, "replaced": 0, "duplicate": 1, "stale": 0, "rejected": 0}
    report = load(store, tmp_path, [data], skip_known=False)
    assert outcome(report)["duplicate"] == 1
    assert store.counts().nodes["Paper"] == 2


def test_reloading_an_unchanged_corpus_skips_verification(store: GraphStore, tmp_path: Path) -> None:
    bundles = [bundle(p) for p in CORPUS]
    load(store, tmp_path, bundles)
    digests = {orjson.loads(b)["bundle_signature"]["bundle_sha256"] for b in bundles}
    assert store.known_bundle_digests() == digests

    # ``bundle_signature.signature_b64`` is not covered by the digest: with it broken, only a
    # bundle whose signatures are not checked is still a duplicate.
    broken = [orjson.dumps(with_bundle_signature(orjson.loads(b), "A" * 86 + "==")) for b in bundles]
    skipped = load(store, tmp_path, broken)
    assert outcome(skipped) == {"inserted": 0, "replaced": 0, "duplicate": 6, "stale": 0, "rejected": 0}
    verified = load(store, tmp_path, broken, skip_known=False)
    assert verified.rejected == 6
    assert {r.code for r in verified.rejections} == {"bad_signature"}
    assert store.export() == reference(tmp_path, bundles)


def with_bundle_signature(bundle: dict[str, Any], signature_b64: str) -> dict[str, Any]:
    return {**bundle, "bundle_signature": {**bundle["bundle_signature"], "signature_b64": signature_b64}}


@pytest.mark.parametrize("keyring", ["unpinned", "revoked"])
def test_a_stored_bundle_whose_key_is_no_longer_trusted_is_rejected_not_skipped(
    store: GraphStore, tmp_path: Path, keyring: str
) -> None:
    """Skipping a stored bundle never changes its outcome: loaded again under a keyring that
    no longer pins its key, or revokes it, it is rejected as a full verification would reject
    it, and the stored paper stays until ``prune`` (before: a ``duplicate``)."""
    bundles = [bundle(p) for p in CORPUS]
    load(store, tmp_path, bundles)
    before = store.export()
    untrusting = resolve_keyring() if keyring == "unpinned" else copies_keyring(revoked=SIGNER.key_id)
    expected = {"unpinned": "untrusted_key", "revoked": "revoked_key"}[keyring]
    for skip_known in (True, False):
        report = load(store, tmp_path, bundles, keyring=untrusting, skip_known=skip_known)
        assert (report.duplicate, report.rejected) == (0, 6)
        assert {r.code for r in report.rejections} == {expected}
    assert store.export() == before


# -- one body, several bundle keys ----------------------------------------------------------
# ``bundleSha256`` does not cover ``bundle_signature``: anyone whose key is pinned can re-sign a
# stored bundle's body. Such a copy is a bundle of its own signer: verified and ranked as one,
# never taken for the stored bundle (nor the stored bundle for it).

THIEF = SignerIdentity.from_seed(b"behaviour-thief", key_id="thief-key", signer_id="thief.invalid")
#: A second key of SIGNER's (same signer, same rank), greater than SIGNER's key id.
ROTATED = SignerIdentity.from_seed(b"behaviour-rotated", key_id="behaviour-key-2", signer_id=SIGNER.signer_id)


def copies_keyring(*, revoked: str | None = None) -> Keyring:
    """SIGNER (with ROTATED), then BUILDER, then THIEF; ``revoked``: that key, for all time."""
    return resolve_keyring(
        [
            PinnedKey(s.key_id, s.public_key, s.signer_id, "" if s.key_id == revoked else None)
            for s in (SIGNER, ROTATED, BUILDER, THIEF)
        ]
    )


def re_signed(data: bytes, by: SignerIdentity) -> bytes:
    """``data``'s bundle with its body untouched (the same ``bundleSha256``), signed by ``by``."""
    copy = resign(
        orjson.loads(data),
        by,
        refresh_canonical=False,
        sign_receipt=False,
        refresh_events=False,
        refresh_public_keys=False,
        refresh_state=False,
    )
    assert (
        copy["bundle_signature"]["bundle_sha256"] == orjson.loads(data)["bundle_signature"]["bundle_sha256"]
    )
    return orjson.dumps(copy)


def test_copies_keyring_ranks() -> None:
    rank = copies_keyring().rank
    assert rank(SIGNER.key_id) == rank(ROTATED.key_id) < rank(BUILDER.key_id) < rank(THIEF.key_id)


@pytest.mark.parametrize(
    "order",
    list(itertools.permutations(range(3))),
    ids=lambda order: "-".join(("genuine", "copy", "rival")[i] for i in order),
)
def test_a_copy_re_signed_by_a_lower_ranked_key_changes_nothing_whatever_the_order(
    store: GraphStore, tmp_path: Path, order: tuple[int, ...]
) -> None:
    """SIGNER's bundle, THIEF's copy of it and BUILDER's rival bundle for the same arXiv id,
    each loaded in a run of its own: the graph is SIGNER's paper alone, in every order. (The
    copy loaded first once made SIGNER's bundle a skipped "duplicate", left the paper at
    THIEF's rank, and BUILDER's bundle then took it over.)"""
    genuine = bundle(spec(title="Genuine paper"))
    rival = build_bundle(
        spec(title="Hijacked", authors=("Mal Lory",), built_at="2026-08-01T00:00:00Z"), BUILDER
    )
    bundles = [genuine, re_signed(genuine, THIEF), orjson.dumps(rival)]
    names = ["genuine", "copy", "rival"]
    reports = {names[i]: load(store, tmp_path, [bundles[i]], keyring=copies_keyring()) for i in order}
    assert store.export() == reference(tmp_path, [genuine])
    assert sum(r.duplicate for r in reports.values()) == 0
    assert reports["genuine"].accepted == 1
    if order.index(0) < order.index(1):  # the copy after the genuine bundle: outranked
        assert reports["copy"].outranked == 1


def test_a_copy_re_signed_by_an_untrusted_key_is_verified_not_skipped(
    store: GraphStore, tmp_path: Path
) -> None:
    """Only the stored digest with the stored bundle key is skipped unverified."""
    genuine = bundle(spec())
    load(store, tmp_path, [genuine])
    report = load(store, tmp_path, [re_signed(genuine, THIEF)])  # KEYRING does not pin THIEF
    assert (report.duplicate, [r.code for r in report.rejections]) == (0, ["untrusted_key"])
    assert load(store, tmp_path, [genuine]).duplicate == 1  # still skipped
    assert store.export() == reference(tmp_path, [genuine])


def test_pruning_the_key_of_a_re_signed_copy_keeps_the_genuine_paper(
    store: GraphStore, tmp_path: Path
) -> None:
    genuine = bundle(spec())
    copy = re_signed(genuine, THIEF)
    assert outcome(load(store, tmp_path, [copy], keyring=copies_keyring()))["inserted"] == 1
    assert outcome(load(store, tmp_path, [genuine], keyring=copies_keyring()))["replaced"] == 1
    (paper,) = labelled(store.export(), "Paper").values()
    assert paper["bundleKeyId"] == SIGNER.key_id
    assert prune_revoked(store, copies_keyring(revoked=THIEF.key_id)).removed == []
    assert store.export() == reference(tmp_path, [genuine])


@pytest.mark.parametrize("runs", ["one-run", "two-runs"])
def test_two_keys_of_one_signer_the_greater_key_id_holds_the_paper(
    store: GraphStore, tmp_path: Path, runs: str
) -> None:
    """One body signed by two keys of one signer (equal rank): the greater key id's copy holds
    the paper whatever the order, and the other is a duplicate."""
    genuine = bundle(spec())
    rotated = re_signed(genuine, ROTATED)
    graphs = []
    for ordered in ([genuine, rotated], [rotated, genuine]):
        store = fresh(store)
        if runs == "one-run":
            reports = [load(store, tmp_path, ordered, keyring=copies_keyring())]
        else:
            reports = [load(store, tmp_path, [data], keyring=copies_keyring()) for data in ordered]
        # in two runs, SIGNER's key first: inserted, then replaced by ROTATED's copy
        replaced = runs == "two-runs" and ordered[0] is genuine
        assert [sum(r.accepted for r in reports), sum(r.duplicate for r in reports)] == (
            [2, 0] if replaced else [1, 1]
        )
        graphs.append(store.export())
    assert graphs[0] == graphs[1]
    (paper,) = labelled(graphs[0], "Paper").values()
    assert paper["bundleKeyId"] == ROTATED.key_id


def test_a_paper_stored_before_bundle_key_ids_gets_its_key_when_loaded_again(tmp_path: Path) -> None:
    """Its digest alone no longer skips verification: the same bundle again re-writes the
    paper with its ``bundleKeyId`` (once)."""
    store = MemoryStore()
    load(store, tmp_path, [bundle(NEW)])
    first = store.export()
    (paper,) = labelled(first, "Paper")
    del store.graph.nodes[paper]["bundleKeyId"]
    legacy = MemoryStore(store.graph)
    assert outcome(load(legacy, tmp_path, [bundle(NEW)]))["replaced"] == 1
    assert legacy.export() == first
    assert outcome(load(legacy, tmp_path, [bundle(NEW)]))["duplicate"] == 1


# -- parity on a generated corpus -----------------------------------------------------------


@pytest.mark.neo4j
@pytest.mark.parametrize("batch_size", [37, 500])
def test_memory_and_neo4j_hold_the_same_graph(
    neo4j_server: Any, tmp_path_factory: pytest.TempPathFactory, batch_size: int
) -> None:
    folder = tmp_path_factory.mktemp("corpus")
    info = write_corpus(folder, 400, seed=11, workers=1, layout="jsonl", shard_size=150, extra_signer_every=9)
    keyring = resolve_keyring(info.keyring_path)
    paths = [str(shard) for shard in info.shards]

    memory = MemoryStore()
    memory_report = run(paths, keyring=keyring, store=memory, workers=1, batch_size=batch_size)
    neo4j = neo4j_server.connect()
    try:
        neo4j.clear()
        neo4j_report = run(paths, keyring=keyring, store=neo4j, workers=1, batch_size=batch_size)
        assert outcome(neo4j_report) == outcome(memory_report)
        assert memory_report.stale > 0 and memory_report.rejected == 0
        if batch_size < 100:
            assert memory_report.replaced > 0  # rebuilds arrived in later batches
        expected, actual = memory.export(), neo4j.export()
        assert neo4j.counts() == memory.counts()
        assert actual.nodes == expected.nodes
        assert actual.edges == expected.edges
        # the corpus exercised what parity is about
        assert len(labelled(expected, "Signer")) == 2
        assert any(
            sum(1 for (start, kind, _) in expected.edges if start == alias) > 1
            for alias in labelled(expected, "Alias")
        ), "no arXiv id with several versions"
    finally:
        neo4j.close()


def test_a_paper_stored_before_bundle_key_ids_is_ranked_by_its_keys(tmp_path: Path) -> None:
    """Papers written before ``bundleKeyId`` existed carry none: their best key ranks them."""
    store = MemoryStore()
    load(store, tmp_path, [bundle(NEW)])
    (paper,) = labelled(store.export(), "Paper")
    del store.graph.nodes[paper]["bundleKeyId"]
    legacy = MemoryStore(store.graph)  # a store opened over such a graph
    assert load(legacy, tmp_path, [bundle(OLD)]).stale == 1  # same signer: the newest still wins
    outsider = SignerIdentity.from_seed(b"behaviour-outsider", key_id="outsider-key", signer_id="out.invalid")
    keyring = KEYRING.with_keys([PinnedKey(outsider.key_id, outsider.public_key, outsider.signer_id)])
    forged = orjson.dumps(
        build_bundle(spec(authors=("Al Tacker",), built_at="2026-09-09T00:00:00Z"), outsider)
    )
    assert load(legacy, tmp_path, [forged], keyring=keyring).outranked == 1  # ranked below SIGNER
    assert legacy.graph.nodes[paper]["builtAt"] == NEW.built_at


def test_a_paper_stored_before_bundle_key_ids_is_ranked_by_its_best_key(tmp_path: Path) -> None:
    """Signed by SIGNER and BUILDER (ranked below SIGNER), such a paper keeps SIGNER's rank: a
    newer bundle of BUILDER's for it is outranked, not a replacement."""
    store = MemoryStore()
    load(store, tmp_path, [bundle(OLD, extra=BUILDER)])
    (paper,) = labelled(store.export(), "Paper")
    assert KEYRING.rank(SIGNER.key_id) < KEYRING.rank(BUILDER.key_id)
    del store.graph.nodes[paper]["bundleKeyId"]
    legacy = MemoryStore(store.graph)
    by_builder = orjson.dumps(build_bundle(NEW, BUILDER))
    assert load(legacy, tmp_path, [by_builder]).outranked == 1
    assert legacy.graph.nodes[paper]["builtAt"] == OLD.built_at


@dataclasses.dataclass(frozen=True)
class _Row:
    """A candidate as the rules read it."""

    pith_number: str
    built_at: str
    bundle_sha256: str
    source: tuple[str, str] = ("arxiv", "2401.00042")
    source_version: int = 1
    bundle_key_id: str = SIGNER.key_id


def test_papers_of_one_version_stored_before_the_rule_are_reduced_to_the_newest() -> None:
    """A store written before rule 2 went per version may hold two records of one version:
    the next batch touching that version keeps only the newest."""
    older = StoredPaper(
        "pith:2024:OLD", ("arxiv", "2401.00042"), 1, "2026-07-02T00:00:00Z", "a" * 64, SIGNER.key_id
    )
    newer = StoredPaper(
        "pith:2024:NEW", ("arxiv", "2401.00042"), 1, "2026-08-01T00:00:00Z", "b" * 64, SIGNER.key_id
    )
    other = StoredPaper(
        "pith:2024:V2", ("arxiv", "2401.00042"), 2, "2026-06-01T00:00:00Z", "c" * 64, SIGNER.key_id
    )
    stale = _Row("pith:2024:OLD", "2026-07-02T00:00:00Z", "a" * 64)
    plan = plan_batch([stale], [older, newer, other], KEYRING.rank)
    assert (plan.write, plan.remove, plan.outcomes) == ([], ["pith:2024:OLD"], [Outcome.STALE])
    corrected = _Row("pith:2024:FIX", "2026-09-01T00:00:00Z", "d" * 64)
    plan = plan_batch([corrected], [older, newer, other], KEYRING.rank)
    assert (plan.write, plan.remove, plan.outcomes) == (
        [corrected],
        ["pith:2024:NEW", "pith:2024:OLD"],
        [Outcome.INSERTED],
    )


def test_a_signers_key_ids_are_sorted_by_code_point(store: GraphStore, tmp_path: Path) -> None:
    """Signer.keyIds is sorted as Python sorts, on every store: Neo4j's transactional load
    sorted it in Cypher, by UTF-16 code unit ('k-𝒜' before 'k-Ａ'), unlike memory and the bulk
    import, and a later load flipped an imported signer's list (differential fuzz)."""
    keys = [
        SignerIdentity.from_seed(f"sort-{name}".encode(), key_id=name, signer_id="sort.invalid")
        for name in ("k-Ａ", "k-𝒜")
    ]
    # built by hand: keys files and load_graph take printable ASCII ids only (since 0.8.7), but
    # a Keyring a script builds itself reaches the stores as it is
    keyring = default_keyring().with_keys([PinnedKey(k.key_id, k.public_key, k.signer_id) for k in keys])
    papers = [orjson.dumps(build_bundle(spec(f"2401.0002{i}"), key)) for i, key in enumerate(keys)]
    for ordered in (papers, papers[::-1]):
        store = fresh(store)
        for data in ordered:  # one batch each: the stored list and the batch's are merged
            assert outcome(load(store, tmp_path, [data], keyring=keyring))["inserted"] == 1
        assert store.export().nodes["Signer:sort.invalid"]["keyIds"] == ["k-Ａ", "k-𝒜"]


class _PrunedOnceRead:
    """``store``, whose papers ``piths`` a prune alongside removes just after a load has read
    which bundles are stored (the first time only): the race a concurrent-runs review found."""

    def __init__(self, store: GraphStore, piths: list[str]) -> None:
        self.store, self.piths = store, piths

    def known_bundles(self) -> dict[str, str]:
        known = self.store.known_bundles()
        if self.piths:
            assert self.store.remove_papers(self.piths) == self.piths
            self.piths = []
        return known

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_bundles_skipped_as_stored_and_pruned_meanwhile_are_loaded_again(
    store: GraphStore, tmp_path: Path
) -> None:
    """A load skips the bundles stored when it starts; one a prune removed after that was
    counted as a duplicate and left out, a graph no order of the two gives. It is read again,
    verified and written, as a load after the prune would."""
    papers = [bundle(spec(f"2401.0003{i}")) for i in range(3)]
    load(store, tmp_path, papers)
    whole = store.export()
    gone = sorted(node["pithNumber"] for node in labelled(whole, "Paper").values())[:1]
    report = load(_PrunedOnceRead(store, gone), tmp_path, papers, batch_size=2)  # type: ignore[arg-type]
    assert (report.inserted, report.duplicate, report.seen) == (1, 2, 3)
    assert store.export() == whole
    by_stdin = _PrunedOnceRead(store, gone)
    with pytest.raises(StoreError, match="1 bundles this load skipped as stored were removed while it ran"):
        run(["-"], keyring=KEYRING, store=by_stdin, workers=1, stdin=io.BytesIO(b"\n".join(papers)))  # type: ignore[arg-type]
    assert sorted(node["pithNumber"] for node in labelled(store.export(), "Paper").values()) == sorted(
        node["pithNumber"] for node in labelled(whole, "Paper").values() if node["pithNumber"] not in gone
    )
    assert load(store, tmp_path, papers).inserted == 1  # as the message says: loading again restores it
    assert store.export() == whole


def test_a_skipped_bundle_counts_as_stored_only_while_the_store_holds_it_or_what_outranks_it(
    store: GraphStore, tmp_path: Path
) -> None:
    """The check of skipped bundles asked only whether their pith numbers were stored papers:
    a load skipped the stored newest bundle of a paper, a prune removed the paper, the load
    wrote an older bundle of it from the same input, and kept it, exit 0 (a review's repro),
    a graph no order of the load and the prune gives. The newest is read again and wins
    (with stdin the load fails). Superseded in the store, by a newer bundle or a higher-ranked
    signer's, a skipped bundle is held: not read again, and stdin does not fail."""
    keyring = copies_keyring()
    older, newest, newer_still = (
        bundle(spec("2401.00051", built_at=f"2026-07-0{day}T00:00:00Z")) for day in (2, 3, 4)
    )
    load(store, tmp_path, [newest], keyring=keyring)
    whole = store.export()
    [pith] = labelled(whole, "Paper")
    pruned = _PrunedOnceRead(store, [whole.nodes[pith]["pithNumber"]])
    report = load(pruned, tmp_path, [newest, older], keyring=keyring)  # type: ignore[arg-type]
    assert outcome(report) == {"inserted": 1, "replaced": 1, "duplicate": 0, "stale": 0, "rejected": 0}
    assert store.export() == whole
    pruned = _PrunedOnceRead(store, [whole.nodes[pith]["pithNumber"]])
    with pytest.raises(StoreError, match="1 bundles this load skipped as stored were removed while it ran"):
        run(["-"], keyring=keyring, store=pruned, workers=1, stdin=io.BytesIO(newest + b"\n" + older))  # type: ignore[arg-type]
    assert store.export().nodes[pith]["builtAt"] == "2026-07-02T00:00:00Z"  # written before the check
    assert outcome(load(store, tmp_path, [newest], keyring=keyring))["replaced"] == 1  # as the message says
    assert store.export() == whole
    builders = orjson.dumps(build_bundle(spec("2401.00051", built_at="2026-07-09T00:00:00Z"), BUILDER))
    for stored, skipped_and_written, counts in (
        (newest, [newest, newer_still], (0, 1, 1, 0)),  # newer: the skipped bundle is stale
        (builders, [builders, newest], (0, 1, 1, 0)),  # SIGNER's: BUILDER's is outranked
    ):
        store = fresh(store)
        load(store, tmp_path, [stored], keyring=keyring)
        report = run(
            ["-"], keyring=keyring, store=store, workers=1, stdin=io.BytesIO(b"\n".join(skipped_and_written))
        )
        assert (report.inserted, report.replaced, report.duplicate, report.outranked) == counts
    store = fresh(store)  # pruned, SIGNER's skipped bundle is read again and outranks BUILDER's written
    load(store, tmp_path, [newest], keyring=keyring)
    pruned = _PrunedOnceRead(store, [whole.nodes[pith]["pithNumber"]])
    report = load(pruned, tmp_path, [newest, builders], keyring=keyring)  # type: ignore[arg-type]
    assert (report.inserted, report.replaced, report.duplicate, report.outranked) == (1, 1, 0, 0)
    assert store.export() == whole


class _StopsAfter:
    """``store``, whose ``remove_papers`` is interrupted (Ctrl-C) once it has run ``calls`` times."""

    def __init__(self, store: GraphStore, calls: int) -> None:
        self.store, self.calls, self.batches = store, calls, list[list[str]]()

    def papers_signed_with(self, key_ids: Sequence[str]) -> list[tuple[str, str, list[str]]]:
        return self.store.papers_signed_with(key_ids)

    def remove_papers(self, pith_numbers: Sequence[str], unchanged: Any = None) -> list[str]:
        if len(self.batches) == self.calls:
            raise KeyboardInterrupt
        self.batches.append(list(pith_numbers))
        return self.store.remove_papers(pith_numbers, unchanged)


def test_pruning_removes_in_batches_and_an_interrupted_prune_is_finished_by_the_next(
    store: GraphStore, tmp_path: Path
) -> None:
    """Prune removes ``batch_size`` papers per call (per transaction in Neo4j: all of a large
    key's papers in one ran into the server's write timeout, 5,000 papers of 8 authors each,
    and removed nothing, on every run). Interrupted, what it removed stays removed; the next
    prune removes the rest, and the graph is as if nothing had been loaded."""
    papers = [bundle(spec(f"2401.0000{n}", authors=[f"Au{n} One", "Shared Author"])) for n in range(1, 6)]
    load(store, tmp_path, papers, keyring=copies_keyring())
    revoking = copies_keyring(revoked=SIGNER.key_id)
    stopping = _StopsAfter(store, 2)
    with pytest.raises(KeyboardInterrupt):
        prune_revoked(cast(GraphStore, stopping), revoking, batch_size=2)
    assert [len(batch) for batch in stopping.batches] == [2, 2]
    left = labelled(store.export(), "Paper")
    assert len(left) == 1 and labelled(store.export(), "Author").keys() >= {"Author:shared author"}
    assert len(prune_revoked(store, revoking, batch_size=2).removed) == 1
    assert store.export() == MemoryStore().export()


class _LoadedMeanwhile:
    """``store``, where ``bundles`` are loaded once pruning has read what to remove and before
    it removes them (in Neo4j, two transactions: a concurrent load can commit between them)."""

    def __init__(self, store: GraphStore, folder: Path, bundles: Sequence[bytes]) -> None:
        self.store, self.folder, self.bundles = store, folder, bundles

    def papers_signed_with(self, key_ids: Sequence[str]) -> list[tuple[str, str, list[str]]]:
        found = self.store.papers_signed_with(key_ids)
        if self.bundles:
            load(self.store, self.folder, self.bundles, keyring=copies_keyring())
            self.bundles = ()
        return found

    def remove_papers(self, pith_numbers: Sequence[str], unchanged: Any = None) -> list[str]:
        return self.store.remove_papers(pith_numbers, unchanged)


def test_a_paper_a_load_takes_from_a_revoked_key_while_pruning_runs_stays(
    store: GraphStore, tmp_path: Path
) -> None:
    """THIEF's copy is doomed when pruning reads it; the genuine bundle replaces it before
    pruning removes it: the genuine paper stays, as after either order alone (removing the
    pith numbers it had read, whatever bundle they held by then, took the genuine paper)."""
    genuine = bundle(spec())
    load(store, tmp_path, [re_signed(genuine, THIEF)], keyring=copies_keyring())
    racing = _LoadedMeanwhile(store, tmp_path, [genuine])
    assert prune_revoked(cast(GraphStore, racing), copies_keyring(revoked=THIEF.key_id)).removed == []
    assert store.export() == reference(tmp_path, [genuine])
