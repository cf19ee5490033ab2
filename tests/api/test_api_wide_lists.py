"""A paper's lists without ``first`` (``categories``, ``primaryCategory``, ``aliases``,
``signers``, ``versions``, a verification's ``signatures``) when its signer gave it far more
items than they show: both backends and both executions answer the first ones in the list's
order (each query text is sent twice: the resolvers answer it first, its plan after), the
readers read no more of a paper's list than their ``first``, and Neo4j sends no more rows
than that (it sorts and cuts them in Cypher).

The corpus: one paper with 82 categories and 77 aliases, among them names that code points
and UTF-16 order apart right at the cut (Neo4j sorts stored strings by code point, as Python
does), signed by two signers; and 60 versions of another arXiv id, each with 25 categories.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from apitest import Api, loaded_neo4j, memory_reader_of, served

from pith_graph.api.app import create_app
from pith_graph.api.bridge import BridgeRunner
from pith_graph.api.cost import LIST_SIZES, READ_SIZES
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.reader import GraphReader
from pith_graph.api.reads.records import PaperFilter, PaperSelection
from pith_graph.errors import StoreError
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import Keyring, PinnedKey
from pith_graph.testing import PaperSpec, build_bundle, resign
from pith_graph.testing.corpus import corpus_signers

REGISTRY, BUILDER = corpus_signers(23)
KEYRING = resolve_keyring([PinnedKey(s.key_id, s.public_key, s.signer_id) for s in (REGISTRY, BUILDER)])

WIDE = "2403.20000"
PRIMARY = "q.p"
#: Cut at 20 (the primary, then by code): code points put U+E000 before U+20000, UTF-16 after.
CROSS = [
    *(f"q.a{i:02d}" for i in range(18)),
    "q.\ue000",
    "q.\U00020000",
    *(f"r.{i:02d}" for i in range(61)),
]
#: Added to the six every bundle has; cut at 20, the same pair at the cut.
MORE_ALIASES = [
    *(("arxiv_mirror", f"m{i:02d}") for i in range(18)),
    ("arxiv_mirror", "\ue000"),
    ("arxiv_mirror", "\U00020000"),
    ("arxiv_mirror", "\U00020001"),
    *(("doi", f"10.9999/wide.{i:02d}") for i in range(50)),
]
VERSIONED = "2403.30000"
VERSIONS = 60
VERSION_CATEGORIES = ["v.k", *(f"v.c{i:02d}" for i in range(24))]  # primary first

CATEGORIES = [PRIMARY, *sorted(CROSS)]


def _wide() -> dict[str, Any]:
    spec = PaperSpec.example(WIDE, primary_cat=PRIMARY, cross_cats=CROSS, submitted_at="2024-03-30T00:00:00Z")
    bundle = build_bundle(spec, REGISTRY, extra_event_signer=BUILDER)  # BUILDER signs its snapshot
    bundle["source_aliases"] += [
        {"alias_kind": kind, "alias_value": value, "created_at": spec.created_at}
        for kind, value in MORE_ALIASES
    ]
    return resign(bundle, REGISTRY, event_signers={1: BUILDER})


def _version(version: int) -> dict[str, Any]:
    spec = PaperSpec.example(
        VERSIONED,
        version=version,
        primary_cat=VERSION_CATEGORIES[0],
        cross_cats=VERSION_CATEGORIES[1:],
        submitted_at=f"2024-01-01T{version // 60:02d}:{version % 60:02d}:00Z",
    )
    return build_bundle(spec, REGISTRY)


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Keyring]:
    """The bundles (one JSON Lines file) and the keyring trusting both signers."""
    bundles = [_wide(), *(_version(v) for v in range(1, VERSIONS + 1))]
    path = tmp_path_factory.mktemp("wide") / "bundles.jsonl"
    path.write_bytes(b"".join(orjson.dumps(bundle) + b"\n" for bundle in bundles))
    return path, KEYRING


@pytest.fixture(scope="module")
def wide_aliases(wide: tuple[Path, Keyring]) -> list[tuple[str, str]]:
    """Every alias of the wide paper, by (kind, value)."""
    (bundle,) = [orjson.loads(line) for line in wide[0].read_bytes().splitlines()[:1]]
    aliases = sorted((a["alias_kind"], a["alias_value"]) for a in bundle["source_aliases"])
    assert len(aliases) == 6 + len(MORE_ALIASES)
    return aliases


@pytest.fixture(scope="module")
def wide_memory(wide: tuple[Path, Keyring]) -> MemoryReader:
    return memory_reader_of(wide)


@pytest.fixture(scope="module")
def wide_neo4j(request: pytest.FixtureRequest, wide: tuple[Path, Keyring]) -> Iterator[Neo4jReader]:
    """The bundles in the session's Neo4j for this module, then removed."""
    with loaded_neo4j(request, wide, timeout=30) as reader:
        yield reader


class Watched(Neo4jReader):
    """A reader over another's driver whose request readers note every row their statements
    return (in :attr:`returned`)."""

    def __init__(self, reader: Neo4jReader) -> None:
        super().__init__(
            reader.driver,
            reader.database,
            uri=reader.uri,
            timeout=reader.timeout,
            open_async=reader.open_async,
        )
        self.returned: list[Any] = []

    def for_request(self, *, bridged: bool = False, unreachable: StoreError | None = None) -> Neo4jReader:
        request = super().for_request(bridged=bridged, unreachable=unreachable)
        statements = request._statements
        rows = statements.rows

        def noted(statement: str, parameters: dict[str, Any]) -> Any:
            found = rows(statement, parameters)
            self.returned.extend(found)
            return found

        statements.rows = noted  # type: ignore[method-assign]
        return request


@pytest.fixture(scope="module", params=["memory", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def lists(request: pytest.FixtureRequest, wide: tuple[Path, Keyring]) -> Iterator[Api]:
    """The corpus served from each backend in turn (Neo4j: through a :class:`Watched` reader)."""
    if request.param == "memory":
        reader: GraphReader = request.getfixturevalue("wide_memory")
        app = create_app(reader, keyring=wide[1])
    else:
        reader = Watched(request.getfixturevalue("wide_neo4j"))
        app = create_app(reader, keyring=wide[1], run=BridgeRunner(), backend="neo4j")
    with served(app, request.param, reader) as api:
        yield api


_SENT = itertools.count()


def _both(api: Api, query: str, **variables: Any) -> dict[str, Any]:
    """The data of ``query`` from the resolvers (its text is new to the server) and from its
    plan (the same text again), which must be equal."""
    text = f"{query} # {next(_SENT)}"
    first = api.data(text, **variables)
    assert api.data(text, **variables) == first
    return first


def _widths(records: list[Any]) -> dict[str, int]:
    """The longest of each of a paper's lists that came back from the server: its categories
    (read alone, ``links``, or embedded with it), aliases, signatures and versions."""
    widths: dict[str, int] = {}

    def note(kind: str, items: list[Any]) -> None:
        widths[kind] = max(widths.get(kind, 0), len(items))

    def papers(rows: list[Any]) -> None:
        for row in rows:
            if row[2] is not None:
                note("embedded categories", row[2])

    for record in records:
        found = dict(record)
        for column in ("links", "aliases", "signatures", "versions"):
            if column in found:
                note(column, found[column])
        papers([found["paper"]] if "paper" in found else found.get("papers", found.get("versions", [])))
    return widths


PAPER = (
    "query($id: String!) { paper(id: $id) { primaryCategory { code } categories { code paperCount } "
    "aliases { kind value } signers { signerId } verification { signatures { signer { signerId } } } } }"
)
VERSIONS_QUERY = (
    "query($id: String!) { paper(id: $id) { versions { sourceVersion primaryCategory { code } "
    "categories { code } } } }"
)
LISTING = (
    "{ papers(first: 3) { nodes { sourceId sourceVersion primaryCategory { code } categories { code } } } }"
)


def test_a_paper_answers_the_first_of_its_lists_in_order(
    lists: Api, wide_aliases: list[tuple[str, str]]
) -> None:
    paper = _both(lists, PAPER, id=WIDE)["paper"]
    assert CATEGORIES[19:21] == ["q.\ue000", "q.\U00020000"]  # the cut falls between them
    assert paper["primaryCategory"] == {"code": PRIMARY}
    assert paper["categories"] == [{"code": c, "paperCount": 1} for c in CATEGORIES[:20]]
    assert [(a["kind"], a["value"]) for a in paper["aliases"]] == wide_aliases[:20]
    assert wide_aliases[19][1] == "\ue000"  # not U+20000, which UTF-16 puts first
    signers = sorted([REGISTRY.signer_id, BUILDER.signer_id])
    assert [s["signerId"] for s in paper["signers"]] == signers
    assert [s["signer"]["signerId"] for s in paper["verification"]["signatures"]] == signers


def test_versions_answer_the_oldest_with_their_first_categories(lists: Api) -> None:
    for version, shown in ((1, list(range(2, 52))), (VERSIONS, list(range(1, 51)))):
        paper = _both(lists, VERSIONS_QUERY, id=f"{VERSIONED}v{version}")["paper"]
        assert [v["sourceVersion"] for v in paper["versions"]] == shown
        for found in paper["versions"]:
            assert found["primaryCategory"] == {"code": VERSION_CATEGORIES[0]}
            assert [c["code"] for c in found["categories"]] == VERSION_CATEGORIES[:20]


def test_a_listing_answers_each_papers_first_categories(lists: Api) -> None:
    nodes = _both(lists, LISTING)["papers"]["nodes"]
    assert [(n["sourceId"], n["sourceVersion"]) for n in nodes] == [
        (WIDE, 1),
        (VERSIONED, VERSIONS),
        (VERSIONED, VERSIONS - 1),
    ]
    assert [c["code"] for c in nodes[0]["categories"]] == CATEGORIES[:20]
    assert [c["code"] for c in nodes[1]["categories"]] == VERSION_CATEGORIES[:20]
    assert [n["primaryCategory"]["code"] for n in nodes] == [PRIMARY, "v.k", "v.k"]


@pytest.mark.neo4j
def test_only_the_shown_items_leave_the_server(wide_neo4j: Neo4jReader, wide: tuple[Path, Keyring]) -> None:
    """Resolvers and plans alike: each paper's lists come cut to what the API shows."""
    reader = Watched(wide_neo4j)
    app = create_app(reader, keyring=wide[1], run=BridgeRunner(), backend="neo4j")
    cases = [
        (PAPER, {"id": WIDE}, {"links": 20, "aliases": 20, "signatures": 2, "embedded categories": 20}),
        (VERSIONS_QUERY, {"id": f"{VERSIONED}v1"}, {"versions": 50, "links": 20, "embedded categories": 20}),
        (LISTING, {}, {"links": 20, "embedded categories": 20}),
    ]
    with served(app, "neo4j", reader) as api:
        for query, variables, expected in cases:
            text = f"{query} # {next(_SENT)}"
            widths = []
            for _ in ("resolvers", "plan"):
                reader.returned.clear()
                api.data(text, **variables)
                widths.append(_widths(reader.returned))
            merged = {kind: max(w.get(kind, 0) for w in widths) for kind in {*widths[0], *widths[1]}}
            assert merged == expected, query


def _pith(reader: GraphReader, arxiv_id: str) -> str:
    (paper,) = reader.papers_by_identifiers([("arxiv_version", arxiv_id)])[("arxiv_version", arxiv_id)]
    return paper.pith_number


@pytest.mark.neo4j
@pytest.mark.parametrize("first", [0, 1, 19, 20, 21, 100])
def test_readers_read_the_first_of_each_papers_lists_alike(
    wide_memory: MemoryReader, wide_neo4j: Neo4jReader, wide_aliases: list[tuple[str, str]], first: int
) -> None:
    piths = [_pith(wide_memory, f"{WIDE}v1"), _pith(wide_memory, f"{VERSIONED}v7"), "no such paper"]
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
        ("categories_of_papers", (piths, first), {}),
        ("categories_of_papers", (piths, first), {"counts": False}),
        ("aliases_of_papers", (piths, first), {}),
        ("signatures_of_papers", (piths, first), {}),
        ("versions_of_papers", (piths, first), {}),
    ]
    for name, args, options in calls:
        found = getattr(wide_neo4j, name)(*args, **options)
        assert found == getattr(wide_memory, name)(*args, **options), name
        assert all(len(items) <= first for items in found.values()), name
    wide_pith, versioned = piths[:2]
    categories = wide_neo4j.categories_of_papers([wide_pith], first)[wide_pith]
    assert [link.category.code for link in categories] == CATEGORIES[:first]
    aliases = wide_neo4j.aliases_of_papers([wide_pith], first)[wide_pith]
    assert [(a.kind, a.value) for a in aliases] == wide_aliases[:first]
    signatures = wide_neo4j.signatures_of_papers([wide_pith], first)[wide_pith]
    assert [s.signer.signer_id for s in signatures] == sorted([REGISTRY.signer_id, BUILDER.signer_id])[:first]
    versions = wide_neo4j.versions_of_papers([versioned], first)[versioned]
    assert [p.source_version for p in versions] == [v for v in range(1, VERSIONS + 1) if v != 7][:first]


@pytest.mark.neo4j
def test_a_request_reader_answers_from_embedded_categories_only_what_they_hold(
    wide_memory: MemoryReader, wide_neo4j: Neo4jReader
) -> None:
    """A listing embedding each paper's first 5 categories answers up to 5 without a
    statement; more takes one (the wide paper has more)."""
    request = wide_neo4j.for_request()
    statements = request._statements
    ran: list[str] = []
    rows = statements.rows

    def counted(statement: str, parameters: dict[str, Any]) -> Any:
        ran.append(statement)
        return rows(statement, parameters)

    try:
        page = request.list_papers(
            PaperFilter(), 3, None, PaperSelection(categories=False, categories_first=5)
        )
        piths = [paper.pith_number for paper in page.items]
        statements.rows = counted  # type: ignore[method-assign]
        for first in (0, 5, 6, 20):
            found = request.categories_of_papers(piths, first, counts=False)
            assert found == wide_memory.categories_of_papers(piths, first, counts=False)
            assert len(ran) == (0 if first <= 5 else 1 if first == 6 else 2), first
    finally:
        request.close()


def test_the_memory_reader_makes_only_the_records_it_returns(
    wide: tuple[Path, Keyring], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paper's first few categories and versions cost a few records, not its whole lists
    (its long lists are sorted once and kept)."""
    reader = memory_reader_of(wide)
    reader.warm()
    wide_pith, versioned = _pith(reader, f"{WIDE}v1"), _pith(reader, f"{VERSIONED}v1")
    made: list[str] = []
    category, paper = reader._category, reader._paper

    def counted_category(node: str, counts: bool = True) -> Any:
        made.append(node)
        return category(node, counts)

    def counted_paper(pith: str) -> Any:
        made.append(pith)
        return paper(pith)

    monkeypatch.setattr(reader, "_category", counted_category)
    monkeypatch.setattr(reader, "_paper", counted_paper)
    assert [
        link.category.code for link in reader.categories_of_papers([wide_pith], 3)[wide_pith]
    ] == CATEGORIES[:3]
    assert len(made) == 3
    made.clear()
    assert [p.source_version for p in reader.versions_of_papers([versioned], 3)[versioned]] == [2, 3, 4]
    assert len(made) == 1 + 3  # the paper itself, then its first three others


def test_a_selection_embeds_as_many_categories_as_a_paper_shows() -> None:
    assert (
        PaperSelection().categories_first
        == READ_SIZES["categories_of_papers"]
        == LIST_SIZES["Paper.categories"]
    )
