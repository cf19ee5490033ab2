"""How Neo4j reads a page of ``PaperFilter.allAuthors``: by the rarest author's papers (a walk)
or on the ``submittedAt`` index (a scan), by the papers they are estimated to share.

Two authors of 40 papers each among 200, who never wrote together: alone, each holds a large
share of the papers, so a page of one of them scans the index (and stops at once, its papers
being everywhere); together they are estimated to share 8 papers (40 × 40/200), too few for a
scan to find a page quickly, so the page walks the rarer one's 40 papers. Judged by the rarest
one's size alone, the page scanned the whole index and found nothing. What each read is told
by ``PROFILE``: the rows the ``submittedAt`` index seek produced.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from apitest import loaded_neo4j, signed_jsonl

from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.records import PaperFilter
from pith_graph.testing.signer import PaperSpec

pytestmark = pytest.mark.neo4j


def _byline(index: int) -> list[str]:
    """Eve Apart on papers 0–39, Fay Apart on 40–79, Gus Along with Eve on 0–39; a filler."""
    names = ["Eve Apart", "Gus Along"] if index < 40 else ["Fay Apart"] if index < 80 else []
    return [*names, f"Filler {index}"]


def _specs() -> list[PaperSpec]:
    return [
        PaperSpec.example(
            f"2402.{index + 1:05d}",
            authors=_byline(index),
            submitted_at=f"20{10 + index // 12:02d}-{index % 12 + 1:02d}-01T00:00:00Z",
        )
        for index in range(200)
    ]


@pytest.fixture(scope="module")
def reader(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neo4jReader]:
    bundles = signed_jsonl(tmp_path_factory.mktemp("all-authors-walk"), _specs(), seed=41)
    with loaded_neo4j(request, bundles, timeout=30) as loaded:
        yield loaded


def _index_rows(reader: Neo4jReader, where: PaperFilter, first: int) -> tuple[int, int]:
    """(papers on the page, rows the ``submittedAt`` index seek produced) of the statement
    the reader runs for the page, run again with ``PROFILE``."""
    ran: list[tuple[str, dict[str, Any]]] = []
    rows = reader._rows

    def recorded(statement: str, **parameters: Any) -> Any:
        ran.append((statement, parameters))
        return rows(statement, **parameters)

    reader._rows = recorded  # type: ignore[method-assign]
    try:
        page = reader.list_papers(where, first, None)
    finally:
        del reader._rows
    (statement, parameters), *_ = (step for step in ran if "submittedAt" in step[0])
    profile = reader.driver.execute_query("PROFILE " + statement, parameters).summary.profile
    seeks, plan = 0, [profile]
    while plan:
        step = plan.pop()
        details = str(step.get("args", {}).get("Details", ""))
        if step["operatorType"].startswith("NodeIndexSeekByRange") and "submittedAt" in details:
            seeks += int(step["rows"])
        plan += step.get("children", [])
    return len(page.items), seeks


def test_two_authors_who_never_wrote_together_walk_the_rarer_ones_papers(reader: Neo4jReader) -> None:
    assert _index_rows(reader, PaperFilter(all_authors=("eve apart", "fay apart")), 1) == (0, 0)


def test_one_author_of_a_large_share_scans_and_a_shared_page_is_found(reader: Neo4jReader) -> None:
    """The other side: ``author`` alone scans (rows from the index), and a pair who wrote
    everything together answers its page whichever way it reads."""
    papers, seeks = _index_rows(reader, PaperFilter(author="eve apart"), 1)
    assert papers == 1 and seeks > 0
    assert _index_rows(reader, PaperFilter(all_authors=("eve apart", "gus along")), 1)[0] == 1
