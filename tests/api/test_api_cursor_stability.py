"""Cursors are keyset positions, so they stay valid while papers are added (README, "Lists
are newest first"): a listing paged on from a cursor handed out before more papers were
loaded skips none of the papers that were there and repeats none of the first page, and
holds exactly the papers that now sort after the cursor's, new ones included. Every paper
listing (``papers``, ``author.papers``, ``category.papers``, ``signer.papers``), over HTTP,
on both backends: Neo4j keeps serving while the papers are written; a memory graph is
served as loaded, so it is served again (a restart) on the bigger graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from apitest import Api, api_of, load_signed

from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import PinnedKey
from pith_graph.loader.stores.base import GraphStore
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle

SIGNER = SignerIdentity.from_seed(b"cursor-stability", key_id="cursor-key", signer_id="cursor.example")
KEYRING = resolve_keyring([PinnedKey(SIGNER.key_id, SIGNER.public_key, SIGNER.signer_id)])
AUTHOR, CATEGORY = "Cora Cursor", "cs.LG"
PAGE = 4


def _spec(number: int, submitted_at: str, *, elsewhere: bool = False) -> PaperSpec:
    """Paper ``2403.<number>`` of the author in the category, or (``elsewhere``) of neither."""
    return PaperSpec.example(
        f"2403.{number:05d}",
        authors=["Ed Elsewhere"] if elsewhere else [AUTHOR],
        primary_cat="math.PR" if elsewhere else CATEGORY,
        submitted_at=submitted_at,
    )


def _day(day: int, hour: int = 10) -> str:
    return f"2024-03-{day:02d}T{hour:02d}:00:00Z"


CURSOR_DAY = _day(7)
#: Ten papers, one a day: the first page (four) ends with the paper of 7 March,
#: pith:2024:JJGJ….
BEFORE = [_spec(1 if day == 7 else 100 + day, _day(day)) for day in range(1, 11)]
#: Loaded after the first page: newer ones, six submitted at the very second of the cursor's
#: paper (the pith number orders them: pith:2024:ESGK… after the cursor, XLE6…, NUOI…, OJNL…,
#: WT5K… and KQED… before it), older ones, and two papers of another author and category.
ADDED = [
    _spec(201, _day(12)),
    _spec(202, _day(11)),
    *(_spec(number, CURSOR_DAY) for number in range(13, 19)),
    _spec(203, _day(5, hour=12)),
    _spec(204, "2024-02-28T10:00:00Z"),
    _spec(205, _day(8), elsewhere=True),
    _spec(206, _day(3), elsewhere=True),
]

_PAGE_FIELDS = "edges { node { pithNumber } } pageInfo { hasNextPage endCursor }"
LISTINGS = {
    "papers": "papers(first: $first, after: $after) { %s }",
    "author.papers": f'author(name: "{AUTHOR}") {{ papers(first: $first, after: $after) {{ %s }} }}',
    "category.papers": f'category(code: "{CATEGORY}") {{ papers(first: $first, after: $after) {{ %s }} }}',
    "signer.papers": f'signer(id: "{SIGNER.signer_id}") {{ papers(first: $first, after: $after) {{ %s }} }}',
}


def _key(spec: PaperSpec) -> tuple[str, str]:
    """A paper's place, newest first: (submittedAt, pithNumber), both descending."""
    return spec.submitted_at, str(build_bundle(spec, SIGNER)["pith_number"])


def _listed(listing: str, specs: Sequence[PaperSpec]) -> list[tuple[str, str]]:
    """The places of the papers of ``specs`` a listing holds, in its order."""
    kept = [spec for spec in specs if listing in ("papers", "signer.papers") or spec.authors == [AUTHOR]]
    return sorted(map(_key, kept), reverse=True)


def _load(store: GraphStore, folder: Path, specs: Sequence[PaperSpec]) -> None:
    load_signed(store, folder, specs, SIGNER, KEYRING)


def _page(api: Api, listing: str, after: str | None) -> tuple[list[str], dict[str, Any]]:
    query = "query($first: Int, $after: String) { " + LISTINGS[listing] % _PAGE_FIELDS + " }"
    found: Any = api.data(query, first=PAGE, after=after)
    while "edges" not in found:  # down to the connection
        (found,) = found.values()
    return [edge["node"]["pithNumber"] for edge in found["edges"]], found["pageInfo"]


def _page_on(api: Api, listing: str, after: str) -> list[str]:
    seen: list[str] = []
    for _ in range(len(BEFORE) + len(ADDED)):  # more pages than there are papers: a loop
        papers, info = _page(api, listing, after)
        seen += papers
        if not info["hasNextPage"]:
            return seen
        after = info["endCursor"]
    raise AssertionError(f"{listing}: paging on never ends: {seen}")


def test_the_added_papers_sort_on_both_sides_of_the_cursor() -> None:
    """The test below means something: papers are added before the first page's last paper
    and after it, at its very second too."""
    cursor = _listed("papers", BEFORE)[PAGE - 1]
    assert cursor[0] == CURSOR_DAY
    ties = [_key(spec) for spec in ADDED if spec.submitted_at == CURSOR_DAY]
    assert any(tie > cursor for tie in ties) and any(tie < cursor for tie in ties)
    assert any(_key(spec) > cursor for spec in ADDED if spec.submitted_at != CURSOR_DAY)
    assert any(_key(spec) < cursor for spec in ADDED if spec.submitted_at != CURSOR_DAY)


def test_a_cursor_stays_valid_while_papers_are_added(store: GraphStore, tmp_path: Path) -> None:
    store.ensure_schema()
    _load(store, tmp_path / "before", BEFORE)
    firsts: dict[str, tuple[list[str], str]] = {}
    with api_of(store, KEYRING) as api:
        for listing in LISTINGS:
            papers, info = _page(api, listing, None)
            assert info["hasNextPage"]
            firsts[listing] = (papers, info["endCursor"])
        _load(store, tmp_path / "added", ADDED)
        if isinstance(store, MemoryStore):  # served as loaded: serve the bigger graph anew
            with api_of(store, KEYRING) as again:
                following = {listing: _page_on(again, listing, firsts[listing][1]) for listing in LISTINGS}
        else:  # the same server, reading the database as it is now
            following = {listing: _page_on(api, listing, firsts[listing][1]) for listing in LISTINGS}
    for listing, (first, _) in firsts.items():
        before, now = _listed(listing, BEFORE), _listed(listing, BEFORE + ADDED)
        assert first == [pith for _, pith in before[:PAGE]], listing
        shown = first + following[listing]
        assert len(set(shown)) == len(shown), f"{listing}: a paper came twice"
        assert {pith for _, pith in before} <= set(shown), f"{listing}: a paper that was there was skipped"
        # Exactly the papers that sort after the cursor now, the new ones among them.
        assert following[listing] == [place[1] for place in now if place < before[PAGE - 1]], listing
