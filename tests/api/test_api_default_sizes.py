"""The sizes a list answers when ``first`` is left out, over real HTTP on both backends: the
README's defaults (a page and lists of related things 20, facet values and typeahead 10),
each the head of the same list asked for in full, in the order the README gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from apitest import (  # noqa: F401 (fixtures)
    Api,
    _neo4j_api,
    api,
    corpus,
    memory_api,
    memory_reader,
    neo4j_api,
    neo4j_corpus,
    neo4j_reader,
    served,
)

from pith_graph.api.facets import FACETS_FIRST
from pith_graph.api.limits import RequestLimits
from pith_graph.api.lookups import TYPEAHEAD_FIRST

PAGE = RequestLimits().default_page_size


def _head(full: list[Any], default: list[Any], size: int) -> None:
    assert len(full) > size  # enough for the default to cut the list
    assert default == full[:size]


def test_the_readme_s_default_sizes_are_the_code_s() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text("utf-8")
    assert f"| page size (`first`) | 100 (default {PAGE}) |" in readme
    assert f"`Author.categories`) | `first` (default {PAGE}) |" in readme
    assert f"`licenses`, `authors` (display names): the `first` (default {FACETS_FIRST}," in readme
    assert f"`authors(prefix:)` | `maxHops`, the identifiers, `first` (default {TYPEAHEAD_FIRST}) |" in readme


def test_typeahead_answers_its_default_most_papers_first(api: Api) -> None:
    query = "query($p: String!, $first: Int) { authors(prefix: $p, first: $first) { nameKey paperCount } }"
    everyone = api.data(query, p="a", first=100)["authors"]
    assert everyone == sorted(everyone, key=lambda a: (-a["paperCount"], a["nameKey"]))
    _head(everyone, api.data(query, p="a")["authors"], TYPEAHEAD_FIRST)


@pytest.mark.parametrize("facet", ["categories", "authors", "years"])
def test_facets_answer_their_default_most_papers_first(api: Api, facet: str) -> None:
    data = api.data(
        f"{{ full: papers {{ facets(first: 100) {{ {facet} {{ value count }} }} }}"
        f"   dflt: papers {{ facets {{ {facet} {{ value count }} }} }} }}"
    )
    full = data["full"]["facets"][facet]
    assert full == sorted(full, key=lambda v: (-v["count"], v["value"]))
    _head(full, data["dflt"]["facets"][facet], FACETS_FIRST)


def test_pages_and_lists_answer_their_default(api: Api) -> None:
    data = api.data(
        "{ full: papers(first: 100) { edges { cursor } } dflt: papers { edges { cursor } }"
        '  fs: search(text: "learning", first: 100) { edges { cursor } }'
        '  ds: search(text: "learning") { edges { cursor } } }'
    )
    _head(data["full"]["edges"], data["dflt"]["edges"], PAGE)
    _head(data["fs"]["edges"], data["ds"]["edges"], PAGE)
    top = api.data("{ categories { code paperCount } }")["categories"]
    code = max(top, key=lambda c: (c["paperCount"], c["code"]))["code"]
    lists = api.data(
        "query($code: String!) { category(code: $code) {"
        "  full: topAuthors(first: 100) { author { nameKey } count }"
        "  dflt: topAuthors { author { nameKey } count } } }",
        code=code,
    )["category"]
    _head(lists["full"], lists["dflt"], PAGE)
    key = lists["full"][0]["author"]["nameKey"]
    author = api.data(
        "query($key: String!) { author(name: $key) {"
        "  full: coauthors(first: 100) { author { nameKey } sharedPapers }"
        "  dflt: coauthors { author { nameKey } sharedPapers }"
        "  fp: papers(first: 100) { edges { cursor } } dp: papers { edges { cursor } } } }",
        key=key,
    )["author"]
    _head(author["full"], author["dflt"], PAGE)
    _head(author["fp"]["edges"], author["dp"]["edges"], PAGE)
