"""An author's display name: a function of its papers' spellings, kept by counting them.

Each paper keeps its own spelling of each of its authors (``Paper.authorNames``). An
Author's ``name`` is the smallest of its papers' spellings (by code point), and when they
do not all agree it carries them with their counts (``nameForms``, smallest first, and
``nameFormCounts``); absent, every one of its ``paperCount`` papers spells it ``name``.

So the name depends only on the papers the store holds, not on the order they came in, and
a write never reads an author's other papers (a paper of a thousand-author collaboration
would otherwise read every paper of each of its authors): it counts the spellings it adds
and removes (:class:`Spellings`), and each batch counts them into the stored counts
(:func:`stored_spellings`, :func:`settle`) once per author it changed (:class:`PendingNames`
in memory). Every store applies these same functions.

>>> counts = stored_spellings("Zoë Smith", 2, None, None)
>>> counts.update({"ZOË SMITH": 1})
>>> settle(counts)
Settled(name='ZOË SMITH', forms=['ZOË SMITH', 'Zoë Smith'], counts=[1, 2])
>>> counts.subtract({"ZOË SMITH": 1})
>>> settle(counts)
Settled(name='Zoë Smith', forms=None, counts=None)
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import networkx as nx

from pith_graph.api.reads.folding import folded_name
from pith_graph.loader.identifiers import author_name_key
from pith_graph.schema.graph import AUTHOR, LABEL_ATTRIBUTE

__all__ = [
    "PendingNames",
    "Settled",
    "Spellings",
    "bad_forms",
    "fill_authors",
    "folded_words",
    "settle",
    "stored_spellings",
]

_NAME, _NAME_KEY, _FOLDED = AUTHOR.prop("name"), AUTHOR.prop("nameKey"), AUTHOR.prop("nameFolded")
_COUNT, _FORMS, _FORM_COUNTS = (
    AUTHOR.prop("paperCount"),
    AUTHOR.prop("nameForms"),
    AUTHOR.prop("nameFormCounts"),
)


class Settled(NamedTuple):
    """An author's ``name``, ``nameForms`` and ``nameFormCounts`` (``None``: absent)."""

    name: str
    forms: list[str] | None
    counts: list[int] | None


def stored_spellings(
    name: str, paper_count: int, forms: Sequence[str] | None, counts: Sequence[int] | None
) -> Counter[str]:
    """The spellings an author's stored properties count (what the store held before a write)."""
    if forms is None or counts is None:
        return Counter({name: paper_count}) if paper_count > 0 else Counter()
    return Counter(dict(zip(forms, counts, strict=False)))


def settle(spellings: Counter[str], fallback: str | None = None) -> Settled:
    """The properties that count ``spellings`` (an author with at least one paper).

    A count below one is no spelling: a write never removes a spelling it has not counted in,
    but a graph saved by an earlier version, or a snapshot edited by hand, may lack what it
    counted; an author left with none is named ``fallback`` (its stored name), uncounted."""
    forms = sorted(spelling for spelling, count in spellings.items() if count > 0)
    if not forms:
        if fallback is None:
            raise ValueError("an author without a spelling has no paper: it is removed, not named")
        return Settled(fallback, None, None)
    if len(forms) == 1:
        return Settled(forms[0], None, None)
    return Settled(forms[0], forms, [spellings[form] for form in forms])


class Spellings:
    """What one write adds and removes: per author (``nameKey``), a count per spelling."""

    def __init__(self) -> None:
        self.changes: defaultdict[str, Counter[str]] = defaultdict(Counter)

    def add(self, key: str, spelling: str) -> None:
        self.changes[key][spelling] += 1

    def remove(self, names: Iterable[str]) -> None:
        """Count out a removed paper's ``authorNames`` (each spelling names its author's key)."""
        for spelling in names:
            self.changes[author_name_key(spelling)][spelling] -= 1

    def forget(self, key: str) -> None:
        """Drop ``key``'s changes (an author removed with all its papers: nothing to count into)."""
        self.changes.pop(key, None)

    def apply(self, key: str, stored: Counter[str], name: str) -> Settled:
        """``stored`` (:func:`stored_spellings` of an author named ``name``) with this write's
        changes of ``key``, settled."""
        stored.update(self.changes.get(key, {}))
        return settle(stored, name)

    def net(self, key: str) -> dict[str, int]:
        """The write's changes of ``key``'s spellings, those it adds and removes alike left out
        (a paper replaced by one that spells its authors the same changes no author's name)."""
        return {spelling: count for spelling, count in self.changes.get(key, {}).items() if count}


def folded_words(key: str) -> str:
    """``nameFolded`` of the author ``key``, as every writer stores it: the folded words of its
    ``nameKey``, not of its display name (since 0.9.8: every spelling that makes the key folds
    alike, so no signer's spelling changes what typeahead finds), the key itself when they
    agree (one string object for both, in memory).

    >>> folded_words("zoë smith"), folded_words("ann lee")
    ('zoe smith', 'ann lee')
    """
    folded = folded_name(key)
    return key if folded == key else folded


def fill_authors(graph: nx.DiGraph) -> None:
    """Give a saved graph's Authors their key's ``nameFolded`` (:func:`folded_words`) where it
    may differ (saved before 0.9.8, it was their display name's, which a lower-ranked signer's
    spelling could choose; an ASCII name folds as its key does, so only the others are folded
    again) and their ``paperCount`` (saved before 0.3). A key of another type is left to the
    structure checks."""
    for node, data in graph.nodes(data=True):
        if data.get(LABEL_ATTRIBUTE) == AUTHOR.label:
            key, name = data.get(_NAME_KEY), data.get(_NAME)
            stale = _FOLDED not in data or not (type(name) is str and name.isascii())
            if stale and type(key) is str and data.get(_FOLDED) is not (folded := folded_words(key)):
                data[_FOLDED] = folded  # (the key itself, when equal: one string for both)
            if _COUNT not in data:
                data[_COUNT] = len(graph.succ[node])


class PendingNames:
    """The spellings a batch of in-memory writes changes, counted into each author's name
    once, at the batch's end (:meth:`settle_into`): settling at every write sorted all an
    author's spellings again for each of its papers, quadratic in them, and one signer can
    give an author thousands. An author's properties are not renamed before then; what it
    was before the batch's first change of it is kept here."""

    def __init__(self) -> None:
        self.spellings = Spellings()
        self._before: dict[str, tuple[str, int, list[str] | None, list[int] | None]] = {}

    def __contains__(self, key: object) -> bool:
        return key in self._before

    def count(self, data: dict[str, Any], write: Spellings) -> None:
        """Count one write's ``write`` spellings of the in-memory Author ``data`` (its
        ``paperCount`` still the count before that write) into the batch's."""
        key = data[_NAME_KEY]
        changes = write.changes.get(key)
        if not changes:
            return
        if key not in self._before:
            net = write.net(key)
            if not net or (_FORMS not in data and net.keys() == {data[_NAME]} and net[data[_NAME]] > 0):
                return  # no change, or more papers spelling it as all its papers do
            self._before[key] = (data[_NAME], data[_COUNT], data.get(_FORMS), data.get(_FORM_COUNTS))
        self.spellings.changes[key].update(changes)

    def forget(self, key: str) -> None:
        """``key``'s author was removed with all its papers: one made again starts afresh."""
        self._before.pop(key, None)
        self.spellings.forget(key)

    def settle_into(self, authors: Callable[[str], dict[str, Any] | None]) -> None:
        """Name each author the batch changed (``authors``: its properties by key, ``None``
        once removed) from what it was before and the batch's changes; start a new batch."""
        for key, (name, paper_count, forms, counts) in self._before.items():
            data = authors(key)
            if data is not None:
                stored = stored_spellings(name, paper_count, forms, counts)
                _rename(data, key, self.spellings.apply(key, stored, name))
        self._before.clear()
        self.spellings = Spellings()


def _rename(data: dict[str, Any], key: str, settled: Settled) -> None:
    name, forms, counts = settled
    if name != data[_NAME]:  # (nameFolded, the key's, written again: one saved stale mends)
        data[_NAME], data[_FOLDED] = name, folded_words(key)
    if forms is None:
        data.pop(_FORMS, None)
        data.pop(_FORM_COUNTS, None)
    else:
        data[_FORMS], data[_FORM_COUNTS] = forms, counts


def bad_forms(data: Mapping[str, Any]) -> str | None:
    """What is wrong with an Author's ``nameForms`` and ``nameFormCounts`` (``None``: nothing)."""
    forms, counts = data.get(_FORMS), data.get(_FORM_COUNTS)
    if forms is None or counts is None or len(forms) != len(counts) or len(forms) < 2:
        return "nameForms and nameFormCounts are not two lists of one length, at least 2"
    if list(forms) != sorted(set(forms)) or forms[0] != data[_NAME]:
        return "nameForms are not distinct and in order, name the first"
    # An export of a part keeps the database's counts; one written to since, its forms.
    if min(counts) < 1 or sum(counts) < data[_COUNT]:
        return "nameFormCounts are not counts of its paperCount papers"
    return None
