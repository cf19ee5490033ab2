"""The stream of synthetic papers behind a corpus: :func:`generate_papers`.

Heavy-tailed author overlap (preferential attachment: a few authors on hundreds of papers,
most on one to three), non-ASCII names (some written in NFD or with doubled spaces),
old-style and new-style arXiv ids, several versions of ~20% of the ids and ~5% of bundles
rebuilt later in the stream (same pith number, later ``built_at``, changed snapshot). Every
time lies between the registry's opening (2026-05-17) and mid-October 2026, so no bundle is
dated in the future of a loader's clock (``future_dated``).
"""

from __future__ import annotations

import calendar
import hashlib
import heapq
import itertools
import random
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from pith_graph.loader.identifiers import title_key
from pith_graph.testing import vocabulary
from pith_graph.testing.signer import PaperSpec

__all__ = ["EXCERPT_LENGTH", "MULTI_VERSION_RATE", "NEW_AUTHOR_RATE", "REBUILD_RATE", "generate_papers"]

MULTI_VERSION_RATE = 0.2
REBUILD_RATE = 0.05
NEW_AUTHOR_RATE = 0.5  # preferential attachment: lower means a heavier tail
EXCERPT_LENGTH = 600


def _iso(seconds: int, micros: int | None = None) -> str:
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{base}Z" if micros is None else f"{base}.{micros:06d}Z"


class _World:
    """The random state behind a stream of papers: authors, arXiv numbering, word choice."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.authors: list[str] = []
        self.slots: list[int] = []  # one entry per authorship: uniform pick = preferential
        self.numbers: dict[str, int] = {}
        months = range((vocabulary.EPOCH_2026_07 - vocabulary.EPOCH_2007) // (30 * vocabulary.DAY))
        self.month_cum = list(itertools.accumulate(1.12 ** (m / 12) for m in months))

    def _mint_author(self) -> int:
        """A new author identity, about a quarter of them with a non-ASCII name."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.04:
            given = "".join(rng.choices(vocabulary.CJK_GIVEN, k=rng.choice((1, 2))))
            name = rng.choice(vocabulary.CJK_FAMILY) + given
        elif roll < 0.06:
            name = rng.choice(vocabulary.KOREAN_FAMILY) + "".join(rng.choices(vocabulary.KOREAN_GIVEN, k=2))
        else:
            first = rng.choice(vocabulary.FIRST_NON_ASCII if rng.random() < 0.12 else vocabulary.FIRST)
            initial = f" {rng.choice('ABCDEFGHJKLMNPRSTW')}." if rng.random() < 0.3 else ""
            roll = rng.random()
            if roll < 0.1:
                last = rng.choice(vocabulary.LAST_NON_ASCII)
            elif roll < 0.4:
                last = rng.choice(vocabulary.LAST).replace("_", " ")
            else:
                middle = rng.choice(vocabulary.MIDDLES) if rng.random() < 0.6 else ""
                last = rng.choice(vocabulary.ONSETS) + middle + rng.choice(vocabulary.ENDINGS)
            name = f"{first}{initial} {last}"
        self.authors.append(name)
        return len(self.authors) - 1

    def _appearance(self, name: str) -> str:
        """How one paper writes a name: mostly as is, sometimes NFD or with doubled spaces."""
        roll = self.rng.random()
        if roll < 0.04:
            return unicodedata.normalize("NFD", name)
        if roll < 0.06 and " " in name:
            return name.replace(" ", "  ", 1)
        return name

    def pick_authors(self) -> list[str]:
        count = self.rng.choices(range(1, 13), cum_weights=vocabulary.AUTHOR_COUNT_CUM)[0]
        chosen: list[int] = []
        while len(chosen) < count:
            if not self.slots or self.rng.random() < NEW_AUTHOR_RATE:
                author = self._mint_author()
            else:
                author = self.rng.choice(self.slots)
                if author in chosen:
                    continue
            chosen.append(author)
        self.slots.extend(chosen)
        return sorted(self._appearance(self.authors[a]) for a in chosen)

    def _words(self) -> dict[str, str]:
        rng = self.rng
        return {
            "A": rng.choice(vocabulary.ADJECTIVES),
            "A2": rng.choice(vocabulary.ADJECTIVES),
            "N": rng.choice(vocabulary.NOUNS),
            "N2": rng.choice(vocabulary.NOUNS),
            "T": rng.choice(vocabulary.TASKS),
        }

    def title(self) -> str:
        text = self.rng.choice(vocabulary.TEMPLATES).format(**self._words())
        text = text[0].upper() + text[1:]
        if self.rng.random() < 0.05:  # a sloppy title a rebuild may fix
            text = text.replace(" ", "  ", 1).lower()
        return text

    def abstract(self) -> str:
        count = self.rng.randint(6, 11)
        return " ".join(self.rng.choice(vocabulary.SENTENCES).format(**self._words()) for _ in range(count))

    def arxiv_id(self, submitted: int, primary: str) -> tuple[str, int]:
        """A fresh id for a submission time (moved into April 2007 if a 3-digit month is full)."""
        yymm = time.strftime("%y%m", time.gmtime(submitted))
        if submitted < vocabulary.NEW_STYLE_FROM:
            key = f"{primary.split('.')[0]}/{yymm}"
            if self.numbers.get(key, 0) < 999:
                number = self.numbers[key] = self.numbers.get(key, 0) + 1
                return f"{key}{number:03d}", submitted
            submitted = vocabulary.NEW_STYLE_FROM + self.rng.randrange(29 * vocabulary.DAY)
            yymm = time.strftime("%y%m", time.gmtime(submitted))
        number = self.numbers[yymm] = self.numbers.get(yymm, 0) + self.rng.randint(1, 3)
        width = 5 if submitted >= vocabulary.FIVE_DIGITS_FROM else 4
        return f"{yymm}.{number:0{width}d}", submitted

    def timestamps(self, created: int, built: int) -> dict[str, Any]:
        """The second- and microsecond-precision times of one build."""
        micros = self.rng.randrange(1_000_000 - 2000)
        signed = self.rng.randrange(1_000_000 - 2000)
        return {
            "created_at": _iso(created),
            "built_at": _iso(built),
            "receipt_computed_at": _iso(created, micros),
            "receipt_signed_at": _iso(created, micros + self.rng.randint(100, 900)),
            "event_signed_at": (_iso(built, signed), _iso(built, signed + 600)),
            "bundle_signed_at": _iso(built, signed + 1500),
        }

    def new_paper(self) -> list[PaperSpec]:
        """A new arXiv id: its first version and any later ones."""
        rng = self.rng
        month = rng.choices(range(len(self.month_cum)), cum_weights=self.month_cum)[0]
        submitted = vocabulary.EPOCH_2007 + month * 30 * vocabulary.DAY + rng.randrange(30 * vocabulary.DAY)
        primary = rng.choices(vocabulary.PRIMARIES, cum_weights=vocabulary.CATEGORY_CUM)[0]
        arxiv_id, submitted = self.arxiv_id(submitted, primary)
        related = vocabulary.CATEGORIES[primary]
        crosses = rng.sample(related, min(len(related), rng.choice((0, 0, 1, 1, 2, 3))))
        abstract = self.abstract()
        created = max(
            vocabulary.REGISTRY_OPENS + rng.randrange(60 * vocabulary.DAY), submitted + vocabulary.DAY
        )
        built = created + rng.randrange(20 * vocabulary.DAY)
        spec = PaperSpec(
            arxiv_id=arxiv_id,
            version=1,
            title=self.title(),
            authors=self.pick_authors(),
            abstract_excerpt=abstract[:EXCERPT_LENGTH],
            primary_cat=primary,
            cross_cats=sorted(crosses),
            license=rng.choices(vocabulary.LICENSES, cum_weights=vocabulary.LICENSE_CUM)[0],
            submitted_at=_iso(submitted),
            abstract_canon_sha256=_abstract_sha(abstract),
            **self.timestamps(created, built),
        )
        specs = [spec]
        if rng.random() < MULTI_VERSION_RATE:
            for version in range(2, rng.choice((3, 3, 4)) + 1):
                abstract += " " + rng.choice(vocabulary.SENTENCES).format(**self._words())
                created = built + rng.randrange(1, 10 * vocabulary.DAY)
                built = created + rng.randrange(5 * vocabulary.DAY)
                specs.append(
                    replace(
                        spec,
                        version=version,
                        abstract_excerpt=abstract[:EXCERPT_LENGTH],
                        abstract_canon_sha256=_abstract_sha(abstract),
                        **self.timestamps(created, built),
                    )
                )
        return specs

    def rebuild(self, spec: PaperSpec) -> PaperSpec:
        """The same record rebuilt later: same pith number, new snapshot."""
        rng = self.rng
        built = _parse(spec.built_at) + rng.randint(vocabulary.DAY, 20 * vocabulary.DAY)
        times = self.timestamps(_parse(spec.created_at), built)
        times["snapshot_created_at"] = _iso(built - rng.randrange(3600))
        for name in ("created_at", "receipt_computed_at", "receipt_signed_at"):
            del times[name]  # the record_created event is unchanged
        fixed = _fixed_title(spec.title, recase=rng.random() < 0.25)
        if fixed != spec.title and title_key(fixed) == title_key(spec.title):
            return replace(spec, title=fixed, **times)
        if len(spec.authors) >= 12 or (len(spec.authors) > 1 and rng.random() < 0.7):
            authors = list(spec.authors)
            del authors[rng.randrange(len(authors))]
        else:
            extra = self.authors[self._mint_author()]
            authors = sorted([*spec.authors, extra])
        return replace(spec, authors=authors, **times)


def _fixed_title(title: str, *, recase: bool) -> str:
    """A corrected title with the same ``title_key``: whitespace tidied, a word capitalised."""
    words = title.split()
    lower = [i for i, word in enumerate(words) if word.isascii() and word.isalpha() and word.islower()]
    if lower and (recase or words[0] == words[0].lower()):
        first = lower[0]
        words[first] = words[first].capitalize()
    return " ".join(words)


def _abstract_sha(abstract: str) -> str:
    return hashlib.sha256(title_key(abstract).encode("utf-8")).hexdigest()


def _parse(timestamp: str) -> int:
    """Seconds since the epoch of ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``."""
    return calendar.timegm(time.strptime(timestamp[:19], "%Y-%m-%dT%H:%M:%S"))


def generate_papers(n: int, *, seed: int = 0) -> Iterator[PaperSpec]:
    """``n`` paper specs, deterministic for a ``seed``.

    Later versions and rebuilds are scheduled a random distance ahead in the stream; those
    that would fall past ``n`` are dropped.

    >>> specs = list(generate_papers(3, seed=1))
    >>> [spec.version for spec in specs]
    [1, 1, 1]
    >>> specs == list(generate_papers(3, seed=1))
    True
    """
    rng = random.Random(seed)
    world = _World(rng)
    pending: list[tuple[int, int, bool, PaperSpec]] = []  # (position, serial, rebuilt, spec)
    serial = 0
    horizon = max(2, min(5000, n // 10))

    def schedule(position: int, rebuilt: bool, spec: PaperSpec) -> None:
        nonlocal serial
        if position < n:
            serial += 1
            heapq.heappush(pending, (position, serial, rebuilt, spec))

    for position in range(n):
        if pending and pending[0][0] <= position:
            _, _, rebuilt, spec = heapq.heappop(pending)
        else:
            rebuilt = False
            spec, *later = world.new_paper()
            at = position
            for version in later:  # each version after the previous one
                at += rng.randint(1, horizon)
                schedule(at, False, version)
        if not rebuilt and rng.random() < REBUILD_RATE:
            schedule(position + rng.randint(1, horizon), True, world.rebuild(spec))
        yield spec
