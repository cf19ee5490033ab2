"""A text index saved as plain data and taken back answers every search as the one built
from the documents, and a saved index that does not hold together is refused."""

from __future__ import annotations

import base64
import copy
from array import array
from typing import Any

import orjson
import pytest

from pith_graph.api.reads import text_index
from pith_graph.api.reads.text_index import ANALYSIS, FIELDS, TextIndex, TextIndexPieces

DOCUMENTS = [
    ("Graph neural networks for molecules", "We learn graph representations of molecules."),
    ("Quantum field theory on curved space", "Fields, curvature and graph-like diagrams."),
    ("", "An abstract without a title: networks of networks."),
    ("Zoë's Schrödinger equation", ""),
    ("Graph graph graph", "graph"),
]
SEARCHES = [["graph"], ["networks"], ["graph", "molecules"], ["zoë's"], ["schrödinger"], ["absent"]]


def _saved() -> dict[str, Any]:
    """The index's state, through JSON as a snapshot carries it."""
    state: dict[str, Any] = orjson.loads(orjson.dumps(TextIndex(DOCUMENTS).state()))
    return state


def test_a_saved_index_answers_as_the_built_one() -> None:
    built = TextIndex(DOCUMENTS)
    taken = TextIndex.from_state(_saved())
    assert taken.size == built.size == len(DOCUMENTS)
    for terms in SEARCHES:
        assert taken.search(terms) == built.search(terms), terms
    assert taken.search(["graph"])  # the searches above are not all empty


def _set(path: str, value: Any) -> Any:
    def edit(state: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = state
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(last) if last.isdigit() else last] = value

    return edit


def _ints(typecode: str, values: list[int]) -> str:
    return base64.b64encode(array(typecode, values).tobytes()).decode()


def _first_doc(state: dict[str, Any], doc: int) -> None:
    field = state["fields"][0]
    docs = array("i", base64.b64decode(field["docs"]))
    docs[0] = doc
    field["docs"] = base64.b64encode(docs.tobytes()).decode()


def _twice(state: dict[str, Any]) -> None:
    field = state["fields"][1]
    field["terms"][1] = field["terms"][0]


def _no_words(field: int, total: int | None) -> Any:
    """Field ``field`` said to have no word in any document (norms 0, docCount 0; totalTerms
    ``total``, or as it was), its postings kept: a search divided by its docCount."""

    def edit(state: dict[str, Any]) -> None:
        found = state["fields"][field]
        found["norms"] = base64.b64encode(bytes(state["size"])).decode()
        found["docCount"] = 0
        if total is not None:
            found["totalTerms"] = total

    return edit


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        pytest.param(_set("analysis", "older"), "another word splitting", id="other-analysis"),
        pytest.param(_set("size", -1), "no size", id="negative-size"),
        pytest.param(_set("fields", []), "one entry per field", id="no-fields"),
        pytest.param(_set("fields.0", [1, 2]), "lacks", id="field-not-a-map"),
        pytest.param(_set("fields.0.docs", "not base64!"), "not base64", id="not-base64"),
        pytest.param(_set("fields.0.docs", 7), "not a base64 string", id="docs-not-a-string"),
        pytest.param(_set("fields.0.docs", "AAA="), "whole number of items", id="partial-item"),
        pytest.param(_set("fields.0.counts", _ints("I", [1])), "do not add up", id="counts-short"),
        pytest.param(_set("fields.0.norms", "AA=="), "do not fit", id="norms-short"),
        pytest.param(_set("fields.0.docCount", 99), "do not fit", id="doc-count-too-big"),
        pytest.param(_set("fields.0.totalTerms", "many"), "not numbers", id="total-not-a-number"),
        pytest.param(_set("fields.0.docCount", 0), "do not match its norms", id="doc-count-zero"),
        pytest.param(_set("fields.0.docCount", 3), "do not match its norms", id="doc-count-short"),
        pytest.param(_set("fields.1.totalTerms", 0), "do not match its norms", id="no-terms"),
        pytest.param(_no_words(0, None), "do not match its norms", id="no-words-but-terms"),
        pytest.param(_no_words(1, 0), "more documents than have a word", id="no-words-but-postings"),
        pytest.param(_set("fields.0.terms", "graph"), "not a list of strings", id="terms-not-a-list"),
        pytest.param(lambda state: _first_doc(state, len(DOCUMENTS)), "names a document", id="doc-past-end"),
        pytest.param(lambda state: _first_doc(state, -1), "names a document", id="negative-doc"),
        pytest.param(_twice, "holds a term twice", id="term-twice"),
    ],
)
def test_a_saved_index_that_does_not_hold_together_is_refused(damage: Any, message: str) -> None:
    state = copy.deepcopy(_saved())
    damage(state)
    with pytest.raises(ValueError, match=message):
        TextIndex.from_state(state)


def test_the_analysis_names_what_the_index_depends_on() -> None:
    assert _saved()["analysis"] == ANALYSIS
    assert len(ANALYSIS) == 16 and int(ANALYSIS, 16) >= 0


def _pieces(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The index's pieces, two postings a piece at most, through JSON as a snapshot carries them."""
    monkeypatch.setattr(text_index, "PIECE_POSTINGS", 2)
    return [orjson.loads(orjson.dumps(piece)) for piece in TextIndex(DOCUMENTS).pieces()]


def _read(pieces: list[dict[str, Any]]) -> TextIndex | None:
    reader = TextIndexPieces()
    for piece in pieces:
        reader.add(piece)
    return reader.done()


def test_an_index_saved_in_pieces_answers_as_the_built_one(monkeypatch: pytest.MonkeyPatch) -> None:
    built = TextIndex(DOCUMENTS)
    pieces = _pieces(monkeypatch)
    assert len(pieces) > 2 * len(FIELDS) + 4  # a head, each field's head and several of postings
    taken = _read(pieces)
    assert taken is not None and taken.size == built.size
    for terms in SEARCHES:
        assert taken.search(terms) == built.search(terms), terms
    assert list(taken.pieces()) == pieces  # and saved again, the same pieces


def _drop_last(pieces: list[dict[str, Any]]) -> None:
    pieces.pop()


def _postings_first(pieces: list[dict[str, Any]]) -> None:
    pieces.insert(1, pieces.pop(3))  # postings before their field's head


def _fields_swapped(pieces: list[dict[str, Any]]) -> None:
    second = next(at for at, piece in enumerate(pieces) if piece.get("field") == 1)
    pieces[1:] = pieces[second:] + pieces[1:second]


def _head_twice(pieces: list[dict[str, Any]]) -> None:
    pieces.insert(2, pieces[0])


def _count_short(pieces: list[dict[str, Any]]) -> None:
    pieces[2]["counts"] = _ints("I", [1])


def _more_terms_than_said(pieces: list[dict[str, Any]]) -> None:
    pieces[1]["terms"] -= 1


def _more_postings_than_said(pieces: list[dict[str, Any]]) -> None:
    pieces[1]["postings"] -= 1


def _term_again(pieces: list[dict[str, Any]]) -> None:
    """A later piece of postings (of one term) of the first field holds its first term again."""
    later = next(piece for piece in pieces[3:] if "docs" in piece and len(piece["terms"]) == 1)
    later.update(
        terms=pieces[2]["terms"][:1], counts=_ints("I", [1]), docs=_ints("i", [0]), freqs=_ints("H", [1])
    )


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        pytest.param(_drop_last, "lacks terms or postings its head counts", id="truncated"),
        pytest.param(lambda pieces: pieces.pop(0), "does not start with its head", id="no-head"),
        pytest.param(_postings_first, "out of its place", id="postings-before-their-field"),
        pytest.param(_fields_swapped, "out of its place", id="fields-swapped"),
        pytest.param(_head_twice, "out of its place", id="head-twice"),
        pytest.param(lambda pieces: pieces.append(pieces[-1]), "holds a term twice", id="piece-again"),
        pytest.param(_count_short, "do not add up", id="counts-short"),
        pytest.param(_more_terms_than_said, "more terms or postings", id="terms-over-count"),
        pytest.param(_more_postings_than_said, "more terms or postings", id="postings-over-count"),
        pytest.param(lambda pieces: pieces[1].pop("norms"), "lacks 'norms'", id="field-without-norms"),
        pytest.param(lambda pieces: pieces.__setitem__(2, [1]), "not a map", id="piece-not-a-map"),
        pytest.param(lambda pieces: pieces[1].update(terms="many"), "not numbers", id="terms-count-text"),
        pytest.param(lambda pieces: pieces[0].update(size=-1), "no size", id="negative-size"),
        pytest.param(_term_again, "holds a term twice", id="term-twice"),
    ],
)
def test_an_index_saved_in_pieces_that_do_not_hold_together_is_refused(
    monkeypatch: pytest.MonkeyPatch, damage: Any, message: str
) -> None:
    pieces = _pieces(monkeypatch)
    damage(pieces)
    with pytest.raises(ValueError, match=message):
        _read(pieces)


def test_an_index_saved_in_pieces_by_another_analysis_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    pieces = _pieces(monkeypatch)
    pieces[0]["analysis"] = "older"
    pieces[3] = {"not": "read"}  # (the rest is not looked at)
    assert _read(pieces) is None
