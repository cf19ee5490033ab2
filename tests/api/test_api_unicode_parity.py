"""Both backends answer alike on hostile strings (a trusted key's bundles choose them freely).

A small corpus whose titles, abstracts, author names, categories and licenses hold
characters beyond U+FFFF next to high BMP ones (UTF-16 and code points order them apart),
ligatures, dotted and dotless i, ß and ẞ, final sigma, combining marks, zero-width and
bidi marks, full-width forms, NUL, and words longer than Lucene's 255 UTF-16 code units
(astral letters count two; ``ß`` folds to two letters). Every query below is sent over
HTTP to the memory and the Neo4j backend; the answers must be equal.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apitest import Api, served_both, signed_jsonl
from test_lucene_fidelity import _lucene_tokens

from pith_graph.api.reads.words import tokens
from pith_graph.loader.keyring import Keyring
from pith_graph.testing.signer import PaperSpec

ASTRAL = "\U0001d49c"  # 𝒜, a letter: two UTF-16 code units
EMOJI = "\U0001f600"
LONG_ASTRAL = ASTRAL * 200  # 400 code units: Lucene cuts it at 127 + 73 letters
LONG_MARKED = "q" * 250 + "\u0301" * 10  # Lucene keeps 255 and drops the marks after
LONG_DOTTED = "k" * 254 + ".z"  # the dot ends no word: Lucene cuts before it
LONG_SHARP = "ß" * 128 + "xyz"  # folds to 259 letters: the whitespace analyzer cuts it

_PAPERS: list[tuple[str, list[str], str, str, list[str], str]] = [
    # (title, authors, abstract, primary, cross-lists, license)
    (f"Words {LONG_ASTRAL} beyond the buffer", ["Pia \ue000", "ﬁona Ng"], "plain", "cs.LG", [], "L1"),
    (f"Marks {LONG_MARKED} end", ["Pia \U00020000", f"{ASTRAL}da Ng"], "plain", "cs.LG", ["cs.AI"], "L2"),
    (f"Dots {LONG_DOTTED} end", [f"{EMOJI} Ng", "\ufffd Ng"], "plain", "math.PR", [], "L1"),
    ("İstanbul ıi ẞtraße straße ΣΟΦΟΣ σοφος", ["İlker Öz", "ẞig Sharp"], f"{ASTRAL} x", "cs.AI", [], "L2"),
    (
        "Zero\u200bwidth \u200fRTL\u200e ｆｕｌｌ ﬃx",
        [LONG_SHARP, "Zoe\u0308 Smith"],
        "n\x00ul",
        "cs.LG",
        [],
        "L1",
    ),
    (
        "Null\x00byte and  spaces\u3000here",
        ["Zoë Smith", "Pia \ue000"],
        EMOJI * 3,
        "math.PR",
        ["cs.LG"],
        "L3",
    ),
    (f"{EMOJI} vs \ufffd order", ["Pia \U00020000", "ﬁona Ng", f"{EMOJI} Ng"], "x", "cs.AI", [], "L3"),
    ("Codes", ["ﬁona Ng", "Pia \ue000"], "y", "x.\ufffd", [f"x.{EMOJI}", "x.ﬁ", "cs.LG"], "L2"),
    ("More codes", [f"{ASTRAL}da Ng", "ıan Dotless"], "y", f"x.{EMOJI}", ["x.\ufffd", "cs.AI"], "L3"),
]
LICENSES = {"L1": "http://x.org/\ufffd", "L2": f"http://x.org/{EMOJI}", "L3": "http://x.org/ﬁ"}


def _specs() -> list[PaperSpec]:
    return [
        PaperSpec.example(
            f"2403.{20000 + index}",
            title=title,
            authors=authors,
            abstract_excerpt=abstract,
            primary_cat=primary,
            cross_cats=cross,
            license=LICENSES[license],
            submitted_at=f"2024-03-0{1 + index % 3}T00:00:00Z",  # ties in the order
        )
        for index, (title, authors, abstract, primary, cross, license) in enumerate(_PAPERS)
    ]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Keyring]:
    return signed_jsonl(tmp_path_factory.mktemp("hostile"), _specs(), seed=17)


@pytest.fixture(scope="module")
def both(request: pytest.FixtureRequest, hostile: tuple[Path, Keyring]) -> Iterator[tuple[Api, Api]]:
    """The corpus served by the memory and the Neo4j backend."""
    with served_both(request, hostile) as found:
        yield found


PAPER = "pithNumber title license categories { code } authors { nameKey name }"
FACETS = "facets(first: 50) { years { value count } categories { value count } archives { value count } licenses { value count } authors { value count } }"
LISTING = f"totalCount {FACETS} edges {{ cursor node {{ {PAPER} }} }} pageInfo {{ hasNextPage endCursor }}"
SEARCH = f"totalCount {FACETS} edges {{ cursor score node {{ pithNumber title }} }} pageInfo {{ hasNextPage endCursor }}"
AUTHOR = "nameKey name paperCount"

#: The words looked for, by search and by the title filter: whole long words, the pieces only
#: one splitting finds, and plain ones.
WORDS = [
    LONG_ASTRAL,
    ASTRAL * 127,
    ASTRAL * 73,
    "q" * 250 + "\u0301" * 5,
    "\u0301" * 5,
    "k" * 254,
    "k" * 254 + ".",
    "z",
    "ıi",
    "istanbul",
    "straße",
    "ΣΟΦΟΣ",
    "σοφοσ",
    "width",
    "zero",
    "ffix",
    "ﬃx",
    "full",
    "null",
    "byte",
    EMOJI,
    "\ufffd order",
]
#: What is typed into the author typeahead.
TYPED = [
    "sxyz",
    "sssx",
    "ss",
    "xyz",
    "pia",
    "fi",
    "fiona",
    "ada",
    "i",
    "ilker",
    "ss sharp",
    EMOJI,
    "zoe",
    "zoe\u0308 sm",  # typed decomposed: normalised as the names are
    "n",
]


def _queries() -> list[tuple[str, dict[str, Any]]]:
    queries: list[tuple[str, dict[str, Any]]] = [
        (f"{{ papers(first: 50) {{ {LISTING} }} }}", {}),
        ("{ categories { code archive paperCount } }", {}),
    ]
    for text in WORDS:
        for order in ("RELEVANCE", "NEWEST"):
            queries.append(
                (
                    f"query($t: String!) {{ search(text: $t, first: 50, orderBy: {order}) {{ {SEARCH} }} }}",
                    {"t": text},
                )
            )
        queries.append(
            (
                f"query($t: String!) {{ papers(filter: {{title: $t}}, first: 50) {{ {LISTING} }} }}",
                {"t": text},
            )
        )
    for typed in TYPED:
        queries.append(
            (f"query($p: String!) {{ authors(prefix: $p, first: 50) {{ {AUTHOR} }} }}", {"p": typed})
        )
    for license in LICENSES.values():
        queries.append(
            (
                f"query($l: String!) {{ papers(filter: {{license: $l}}, first: 50) {{ {LISTING} }} }}",
                {"l": license},
            )
        )
    for archive in ("cs", "x"):
        queries.append(
            (
                f"query($a: String!) {{ papers(filter: {{archive: $a}}, first: 50) {{ {LISTING} }} }}",
                {"a": archive},
            )
        )
    for code in ("cs.LG", "cs.AI", "math.PR", "x.\ufffd", f"x.{EMOJI}", "x.ﬁ"):
        queries.append(
            (
                "query($c: String!) { category(code: $c) { paperCount"
                f" topAuthors(first: 50) {{ count author {{ {AUTHOR} }} }}"
                " coListed(first: 50) { count category { code } } } }",
                {"c": code},
            )
        )
    for name in ("Pia \ue000", "ﬁona Ng", f"{EMOJI} Ng", "Zoë Smith", LONG_SHARP):
        queries.append(
            (
                "query($n: String!) { author(name: $n) { nameKey"
                f" coauthors(first: 50) {{ sharedPapers author {{ {AUTHOR} }} }}"
                " categories(first: 50) { count category { code } } } }",
                {"n": name},
            )
        )
    return queries


@pytest.mark.neo4j
def test_every_query_answers_alike_on_both_backends(both: tuple[Api, Api]) -> None:
    memory, neo4j = both
    different = []
    for query, variables in _queries():
        answers = [api.post(query, variables) for api in (memory, neo4j)]
        if answers[0] != answers[1]:
            different.append((query, variables, *answers))
    assert different == []


def _walk(api: Api, field: str, arguments: str, variables: dict[str, Any]) -> list[Any]:
    """Every page of a connection, one paper at a time, from its first cursor to its last."""
    declared = "$after: String" + (", $t: String!" if variables else "")
    query = (
        f"query({declared}) {{ {field}({arguments}, first: 1, after: $after)"
        " { edges { cursor node { pithNumber } } pageInfo { hasNextPage endCursor } } }"
    )
    pages: list[Any] = []
    after = None
    while len(pages) <= len(_PAPERS):
        page = api.data(query, after=after, **variables)[field]
        pages.append(page)
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    return pages


@pytest.mark.neo4j
@pytest.mark.parametrize(
    ("field", "arguments", "variables"),
    [
        ("papers", "filter: null", {}),
        ("papers", "filter: {archive: $t}", {"t": "x"}),
        ("search", "text: $t, orderBy: RELEVANCE", {"t": "plain"}),
        ("search", "text: $t, orderBy: NEWEST", {"t": "plain"}),
    ],
)
def test_cursors_walk_ties_alike(
    both: tuple[Api, Api], field: str, arguments: str, variables: dict[str, Any]
) -> None:
    memory, neo4j = both
    walked = _walk(memory, field, arguments, variables)
    assert walked == _walk(neo4j, field, arguments, variables)


@pytest.mark.lucene
def test_long_words_end_where_lucenes_buffer_ends_them() -> None:
    """Words past 255 UTF-16 code units: astral letters count two and a pair is never split,
    the cut is the longest word in the buffer (a trailing dot or mark is not kept into the
    next piece), and what follows is split again (seeded runs of one letter, few breaks)."""
    rng = random.Random(20261202)
    pool = ["a", ASTRAL, "\u0301", ".", "1", ",", "_", "'", "ß", "カ", "\u200d", EMOJI, "ก", "李", " ", "x"]
    texts = [LONG_ASTRAL, LONG_MARKED, LONG_DOTTED, "a" * 253 + ASTRAL * 2, "1" * 254 + ",5"]
    for _ in range(1500):
        base = rng.choice(["a", ASTRAL, "1", "カ", "ก", "é"])
        texts.append(
            "".join(base if rng.random() < 0.93 else rng.choice(pool) for _ in range(rng.randint(200, 700)))
        )
    assert [
        text for text, found in zip(texts, _lucene_tokens(texts), strict=True) if tokens(text) != found
    ] == []
