"""Arguments that name a key take every key the graph holds (since 0.9.3), over HTTP, on both
backends and both executions (each query text is sent twice: the resolvers answer it first,
its plan after, and the two answers must be equal).

The loader takes a name key, a category code or a license of up to 4,096 bytes of UTF-8
(what Neo4j indexes), and the API lists them; but ``author(name:)``, ``category(code:)``,
``signer(id:)``, ``collaborationPath`` and the filter's ``author``, ``category``,
``categories``, ``excludeCategories``, ``archive`` and ``license`` refused more than 500
characters, so an author or category the API showed could not be looked up or filtered on.
The corpus: a 600-character name key, a 601-character code, a 4,096-byte name key and code
(whose archive holds 4,094 bytes), a 620-character license.
"""

from __future__ import annotations

import random
import unicodedata
from typing import Any

import pytest
from apitest import Api, each_backend_fixture
from test_api_author_pages import _both

from pith_graph.api import inputs
from pith_graph.api.inputs import _CHUNK, _SEAM, _key_surely_too_long, author_key
from pith_graph.errors import BadUserInput
from pith_graph.loader.identifiers import author_name_key
from pith_graph.testing.signer import PaperSpec

LONG_NAME = "Long " + "N" * 595  # its key: 600 characters
BIG_NAME = "É" * 2048  # its key, é × 2048: 4,096 bytes of UTF-8
LONG_CODE = "cs." + "x" * 598  # 601 characters
BIG_CODE = "é" * 2047 + ".x"  # 4,096 bytes; its archive é × 2047, 4,094 bytes
LONG_LICENSE = "http://example.org/" + "l" * 601
TOO_LONG = "x" * 4097
TOO_MANY_BYTES = "é" * 2049  # 2,049 characters, 4,098 bytes
KEY_GROWS = "ﷺ" * 228  # 228 characters (684 bytes): its name key, 4,104 characters

SPECS = [
    PaperSpec.example(
        "2405.00001",
        authors=[LONG_NAME, "Ann Lee"],
        primary_cat=LONG_CODE,
        cross_cats=["cs.LG"],
        license=LONG_LICENSE,
    ),
    PaperSpec.example(
        "2405.00002", authors=[BIG_NAME, "Ann Lee"], primary_cat=BIG_CODE, cross_cats=["cs.AI"]
    ),
    PaperSpec.example("2405.00003", authors=[LONG_NAME, BIG_NAME], primary_cat="cs.LG"),
    PaperSpec.example("2405.00004", authors=["Ann Lee", "Bo Chen"], primary_cat="cs.AI"),
]


keys = each_backend_fixture("long_keys", lambda: SPECS, seed=31)


def _data(api: Api, query: str, **variables: Any) -> dict[str, Any]:
    body = _both(api, query, **variables)
    assert "errors" not in body, body["errors"]
    data: dict[str, Any] = body["data"]
    return data


def _lookup(field: str, argument: str, selection: str) -> str:
    """A lookup of one ``field`` by its ``argument`` given as ``$v``."""
    return f"query($v: String!) {{ {field}({argument}: $v) {{ {selection} }} }}"


AUTHOR, CATEGORY = _lookup("author", "name", "nameKey paperCount"), _lookup("category", "code", "code")
SIGNER = _lookup("signer", "id", "signerId")
PATH = "query($a: String!, $b: String!) { collaborationPath(from: $a, to: $b) { paper { sourceId } } }"
PAPERS = "query($f: PaperFilter) { papers(filter: $f, first: 10) { totalCount nodes { sourceId } } }"


@pytest.mark.parametrize(
    ("name", "count"),
    [(LONG_NAME, 2), (LONG_NAME.lower(), 2), (BIG_NAME, 2), (BIG_NAME.lower(), 2), ("Ann Lee", 3)],
)
def test_an_author_the_graph_holds_is_found_by_name(keys: Api, name: str, count: int) -> None:
    found = _data(keys, AUTHOR, v=name)["author"]
    assert found == {"nameKey": author_name_key(name), "paperCount": count}


def test_a_name_longer_than_its_key_is_taken() -> None:
    """The bound is on the key: full-width letters are 3 bytes each in the name, 1 in the key."""
    assert len(author_name_key("Ａ" * 4096).encode()) == 4096


@pytest.mark.parametrize("name", ["Ａ" * 4096, "a" * 4096, "Nobody " + "n" * 1000])
def test_a_name_whose_key_fits_but_no_author_has_is_null(keys: Api, name: str) -> None:
    assert _data(keys, AUTHOR, v=name) == {"author": None}


@pytest.mark.parametrize("code", [LONG_CODE, BIG_CODE])
def test_a_category_the_graph_holds_is_found_by_code(keys: Api, code: str) -> None:
    assert _data(keys, CATEGORY, v=code) == {"category": {"code": code}}
    assert _data(keys, CATEGORY, v=f"  {code} ") == {"category": {"code": code}}  # stripped as before


def test_a_signer_id_of_up_to_4096_bytes_is_looked_up(keys: Api) -> None:
    assert _data(keys, SIGNER, v="s" * 600) == {"signer": None}
    assert _data(keys, SIGNER, v="é" * 2048) == {"signer": None}


def test_the_path_between_two_long_names_is_found(keys: Api) -> None:
    found = _data(keys, PATH, a=LONG_NAME, b=BIG_NAME)["collaborationPath"]
    assert found == [{"paper": {"sourceId": "2405.00003"}}]


def _listed(api: Api, where: dict[str, Any]) -> list[str]:
    found = _data(api, PAPERS, f=where)["papers"]
    ids = sorted(node["sourceId"] for node in found["nodes"])
    assert found["totalCount"] == len(ids)
    return ids


@pytest.mark.parametrize(
    ("where", "ids"),
    [
        ({"author": LONG_NAME}, ["2405.00001", "2405.00003"]),
        ({"author": BIG_NAME.lower()}, ["2405.00002", "2405.00003"]),
        ({"category": LONG_CODE}, ["2405.00001"]),
        ({"category": BIG_CODE}, ["2405.00002"]),
        ({"categories": [LONG_CODE, BIG_CODE]}, ["2405.00001", "2405.00002"]),
        ({"excludeCategories": [LONG_CODE, BIG_CODE]}, ["2405.00003", "2405.00004"]),
        ({"archive": "é" * 2047}, ["2405.00002"]),
        ({"license": LONG_LICENSE}, ["2405.00001"]),
        ({"author": LONG_NAME, "categories": ["cs.LG"], "excludeCategories": [LONG_CODE]}, ["2405.00003"]),
        ({"category": "x" * 4096}, []),
    ],
)
def test_papers_are_filtered_on_long_keys(keys: Api, where: dict[str, Any], ids: list[str]) -> None:
    assert _listed(keys, where) == ids


def _refusal(api: Api, query: str, **variables: Any) -> dict[str, Any]:
    body = _both(api, query, **variables)
    assert body["data"] is None or not any(body["data"].values()), body
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    return error


def _longer(what: str) -> str:
    return f"{what} is longer than any key the graph holds (4096 bytes of UTF-8)."


@pytest.mark.parametrize("value", [TOO_LONG, TOO_MANY_BYTES])
def test_an_argument_longer_than_any_key_is_refused(keys: Api, value: str) -> None:
    error = _refusal(keys, CATEGORY, v=value)
    assert (error["message"], error["extensions"]["suggestion"]) == (
        _longer("code"),
        "Pass a code of at most 4096 bytes of UTF-8: no key, code, license or signer id the graph holds is longer.",
    )
    assert _refusal(keys, SIGNER, v=value)["message"] == _longer("id")
    assert _refusal(keys, AUTHOR, v=value)["message"] == _longer("name's name key")
    assert _refusal(keys, PATH, a=value, b=LONG_NAME)["message"] == _longer("from's name key")
    assert _refusal(keys, PATH, a=LONG_NAME, b=value)["message"] == _longer("to's name key")
    for field in ("category", "archive", "license"):
        assert _refusal(keys, PAPERS, f={field: value})["message"] == _longer(f"filter.{field}")
    assert _refusal(keys, PAPERS, f={"author": value})["message"] == _longer("filter.author's name key")
    for field in ("categories", "excludeCategories"):
        found = _refusal(keys, PAPERS, f={field: ["cs.LG", value]})
        assert found["message"] == _longer(f"filter.{field}[1]")


def test_a_name_whose_key_is_too_long_is_refused(keys: Api) -> None:
    """A 228-character name whose key holds 4,104 characters: no author can have it."""
    error = _refusal(keys, AUTHOR, v=KEY_GROWS)
    assert error["message"] == _longer("name's name key")
    assert "Author.nameKey" in error["extensions"]["suggestion"]


def test_free_text_keeps_its_500_characters(keys: Api) -> None:
    """Search words and a title name no key: 500 characters, as before."""
    query = "query($t: String!) { search(text: $t, first: 1) { totalCount } }"
    assert _refusal(keys, query, t="w " * 251)["message"] == "text is longer than 500 characters."
    found = _refusal(keys, PAPERS, f={"title": "w" * 501})
    assert found["message"] == "filter.title is longer than 500 characters."


@pytest.mark.parametrize(
    "name",
    [
        "Ａ" * 4096,  # 12,288 bytes; its key, a × 4096: 4,096 bytes
        unicodedata.normalize("NFD", "ᾂ") * 800,  # 3,200 characters (4 per letter); its key, 4,000 bytes
        "\u1100\u1161\u11a8" * 1365,  # Hangul jamo, 3 per syllable: 4,095 characters, key 4,095 bytes
        "a" + " " * 30000 + "b",  # spacing collapses
    ],
)
def test_a_name_whose_key_fits_is_not_refused_however_long(name: str) -> None:
    """The key is made a chunk at a time to refuse a name whose key is surely too long early;
    no name whose key fits is refused by that."""
    assert len(name) > _CHUNK and not _key_surely_too_long(name)
    assert len(author_key(name, "name").encode()) <= 4096


_PIECES = "aeαΩ\u0300\u0301\u0308\u0313\u0314\u0342\u0345\u0323\u1100\u1161\u11a8\uac00ｶﾞ\uff9f \t\u3000ß\ufdfaＡİﬀ\u0f73\u0f71\u0f72\u1f82x\u0338<="


def test_a_chunk_key_holds_at_most_the_seam_more() -> None:
    """What the early refusal rests on: the keys of a name cut in two hold at most ``_SEAM``
    characters more than its key (a letter and three marks compose into one at most)."""
    rng = random.Random(5)
    worst = 0
    for _ in range(4000):
        name = "".join(rng.choice(_PIECES) for _ in range(rng.randint(2, 10)))
        whole = len(author_name_key(name))
        for cut in range(1, len(name)):
            worst = max(worst, len(author_name_key(name[:cut])) + len(author_name_key(name[cut:])) - whole)
    assert 0 < worst <= _SEAM


@pytest.mark.parametrize(
    ("name", "chunks"),
    [
        ("\ufdfa" * 21000, 1),  # 18 characters in a key: refused after the first chunk
        # 2 bytes a mark: counted in characters the chunks let this 8,280-byte key through, to
        # be made whole (NFKC sorts a run of marks in quadratic time: 56 ms a name); in bytes,
        # refused after 9 chunks of the name's 17
        ("a" + "\u0301" * 2070 + "\u0316" * 2070, 9),
    ],
)
def test_a_name_whose_key_is_too_long_is_refused_before_it_is_made_whole(
    keys: Api, monkeypatch: pytest.MonkeyPatch, name: str, chunks: int
) -> None:
    """Making the key of a 64 KB name of U+FDFA whole took 60 ms of the event loop (167 ms a
    request over HTTP, against 2 ms for a lookup). The key is made a chunk at a time and the
    name refused once the chunks' keys are surely too long, in bytes (counted by wrapping the
    real key function)."""
    assert _refusal(keys, AUTHOR, v=name)["message"] == _longer("name's name key")
    made: list[int] = []

    def counted(text: str) -> str:
        made.append(len(text))
        return author_name_key(text)

    monkeypatch.setattr(inputs, "author_name_key", counted)
    with pytest.raises(BadUserInput):
        author_key(name, "name")
    assert made == [_CHUNK] * chunks
