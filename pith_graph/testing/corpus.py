"""A deterministic corpus of synthetic, validly signed bundles for tests and benchmarks.

``generate_papers`` yields ``PaperSpec``s with the shapes a loader must cope with:
heavy-tailed author overlap (preferential attachment: a few authors on hundreds of papers,
most on one to three), non-ASCII names (some written in NFD or with doubled spaces),
old-style and new-style arXiv ids, several versions of ~20% of the ids (separate bundles,
separate pith numbers) and ~5% of bundles rebuilt later in the stream (same pith number,
later ``built_at``, changed snapshot). ``generate_bundles`` signs them, optionally on several
processes; ``write_corpus`` writes shards and the ``keyring.json`` that trusts the corpus
keys, which are derived from the seed so a corpus is reproducible byte for byte.

Run ``python -m pith_graph.testing.corpus DIR -n N`` to write one.
"""

from __future__ import annotations

import argparse
import calendar
import gzip
import hashlib
import heapq
import itertools
import multiprocessing
import os
import random
import time
import unicodedata
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from multiprocessing.pool import AsyncResult
from pathlib import Path
from typing import Any, Literal

import orjson

from pith_graph.loader.identifiers import title_key
from pith_graph.testing.identity import SignerIdentity
from pith_graph.testing.signer import PaperSpec, build_bundle

__all__ = [
    "CorpusInfo",
    "Layout",
    "corpus_signers",
    "generate_bundles",
    "generate_papers",
    "write_corpus",
]

Layout = Literal["jsonl.gz", "jsonl", "files"]
CHUNK_SIZE = 200  # bundles per unit of work; fixed so output never depends on `workers`
MULTI_VERSION_RATE = 0.2
REBUILD_RATE = 0.05
NEW_AUTHOR_RATE = 0.5  # preferential attachment: lower means a heavier tail
EXCERPT_LENGTH = 600

_CATEGORIES: dict[str, tuple[str, ...]] = {
    "cs.LG": ("cs.AI", "stat.ML", "cs.CV", "cs.CL", "cs.NE", "math.OC", "cs.DC"),
    "cs.AI": ("cs.LG", "cs.CL", "cs.MA", "cs.LO"),
    "cs.CV": ("cs.LG", "cs.AI", "eess.IV", "cs.GR"),
    "cs.CL": ("cs.AI", "cs.LG", "cs.IR"),
    "cs.DC": ("cs.LG", "cs.PF", "cs.NI"),
    "cs.CR": ("cs.LG", "cs.NI", "cs.SE"),
    "stat.ML": ("cs.LG", "stat.ME", "math.ST"),
    "math.OC": ("cs.LG", "math.NA", "eess.SY"),
    "math.PR": ("math.ST", "math.CO", "math-ph"),
    "math.AG": ("math.NT", "math.CT"),
    "hep-th": ("gr-qc", "hep-ph", "math-ph"),
    "hep-ph": ("hep-ex", "hep-th", "astro-ph.CO"),
    "gr-qc": ("hep-th", "astro-ph.CO"),
    "quant-ph": ("cond-mat.str-el", "cs.IT", "math-ph"),
    "cond-mat.stat-mech": ("cond-mat.dis-nn", "physics.comp-ph", "math.PR"),
    "astro-ph.GA": ("astro-ph.CO", "astro-ph.SR"),
    "q-bio.NC": ("cs.NE", "physics.bio-ph"),
}
_CATEGORY_WEIGHTS = (30, 12, 14, 12, 4, 4, 8, 5, 3, 2, 6, 4, 3, 6, 3, 3, 2)
_LICENSES = (
    "http://arxiv.org/licenses/nonexclusive-distrib/1.0/",
    "http://creativecommons.org/licenses/by/4.0/",
    "http://creativecommons.org/licenses/by-nc-sa/4.0/",
    "http://creativecommons.org/licenses/by-sa/4.0/",
    "http://creativecommons.org/licenses/by-nc-nd/4.0/",
    "http://creativecommons.org/publicdomain/zero/1.0/",
)
_LICENSE_WEIGHTS = (60, 22, 7, 4, 4, 3)
_AUTHOR_COUNT_WEIGHTS = (10, 18, 20, 16, 11, 8, 5, 4, 3, 2, 1.5, 1.5)  # 1..12 authors
_PRIMARIES = tuple(_CATEGORIES)
_CATEGORY_CUM = tuple(itertools.accumulate(_CATEGORY_WEIGHTS))
_LICENSE_CUM = tuple(itertools.accumulate(_LICENSE_WEIGHTS))
_AUTHOR_COUNT_CUM = tuple(itertools.accumulate(_AUTHOR_COUNT_WEIGHTS))

_FIRST = (
    "Anna Arslan Ben Chen Clara David Eiman Elena Fatima Hugo Ines Jaewon John Kai Laura "
    "Louis Maria Mohammed Nadia Omar Priya Puneet Rahul Sara Victor Wei Yuki Zhongyi Amir "
    "Grace Ivan Julia Karim Lena Marco Nina Oscar Paula Ravi Sofia Tom Uma Yara Adam Beatriz"
).split()
_FIRST_NON_ASCII = (
    "Zoë Łukasz Søren José François Jürgen Ayşe Jiří Renée Ólafur Thảo Ангелина Đức Björn "
    "Chloé Małgorzata Nikolaï Raphaël Siân Ümit Tomás Håkon"
).split()
_LAST = (
    "Smith Zhang Wang Li Kim Lee Nguyen Garcia Schmidt Rossi Novak Kowalski Ivanov Tanaka "
    "Sato Patel Singh Gupta Ebrahimi Nellans Owens Fu Pal Migacz Lundell Feng Lin Okonkwo "
    "Adeyemi Haddad Cohen O'Brien van_der_Berg de_la_Cruz"
).split()
_LAST_NON_ASCII = (
    "Müller Ørsted Gödel Erdős Dvořák Wójcik Ångström Çelik Šimić Nuñez Fernández Lefèvre "
    "Brontë Nguyễn Sørensen Łoś Häkkinen"
).split()
# Synthetic surnames (onset + middle + ending) make homonyms rare in a large corpus.
_ONSETS = "Ka Ber Vel Mor Tan Sil Dra Hol Fen Gar Lun Pra Ros Ste Vor Zan Mel Kir Bal Nor".split()
_MIDDLES = "la ri no va de mi sa to ke ra lo ne".split()
_ENDINGS = "ov ski son ez ini ard berg ani escu ović ström ier".split()
_CJK_FAMILY = "李王张刘陈杨黄赵吴周"
_CJK_GIVEN = "伟芳娜敏静丽强磊军洋勇艳杰涛明超秀霞平刚桂英华玉萍红娥玲"
_KOREAN_FAMILY = "김이박최정"
_KOREAN_GIVEN = "민수서연지현도윤하은준우"
_ADJECTIVES = (
    "scalable robust efficient adaptive sparse stochastic distributed bayesian neural "
    "variational causal federated contrastive quantum topological nonconvex equivariant "
    "hierarchical self-supervised differentiable interpretable asymptotic holographic"
).split()
_NOUNS = (
    "optimization inference transformers embeddings kernels graphs attention estimators "
    "sampling regularization representations dynamics symmetries flows operators lattices "
    "manifolds networks policies gradients entanglement anomalies solitons invariants"
).split()
_TASKS = (
    "image segmentation|language modeling|reinforcement learning|link prediction|"
    "anomaly detection|protein folding|black hole thermodynamics|dark matter searches|"
    "portfolio selection|machine translation|the Schrödinger equation|Lévy processes|"
    "Poincaré inequalities|Kähler manifolds|Erdős–Rényi graphs|recommendation systems|"
    "multi-GPU training|speech recognition|galaxy formation|spin glasses"
).split("|")
_TEMPLATES = (
    "{A} {N} for {T}",
    "On the {N} of {T}",
    "Towards {A} {T} with {A2} {N}",
    "A {A} approach to {T}",
    "{A} {N} and {N2} in {T}",
    "Learning {A} {N} for {T}",
    "{N}: {A} {N2} via {A2} {T}",
)
_SENTENCES = (
    "We study {A} {N} in the context of {T}.",
    "Existing methods for {T} rely on {A} {N}, which scale poorly.",
    "We propose a new {A} framework that combines {N} with {A2} {N2}.",
    "Our analysis shows that {N} converge under mild assumptions on {N2}.",
    "Experiments on benchmarks for {T} show consistent improvements over strong baselines.",
    "We prove matching upper and lower bounds for {A} {N}.",
    "The approach extends naturally to {T} and to {A2} settings.",
    "Code and data are released to support further work on {T}.",
)

_EPOCH_2007 = 1167609600  # 2007-01-01T00:00:00Z
_EPOCH_2026_07 = 1782864000  # 2026-07-01T00:00:00Z
_NEW_STYLE_FROM = 1175385600  # 2007-04-01: arXiv ids become YYMM.NNNN
_FIVE_DIGITS_FROM = 1420070400  # 2015-01-01: YYMM.NNNNN
_REGISTRY_OPENS = 1778976000  # 2026-05-17
_DAY = 86400


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
        months = range((_EPOCH_2026_07 - _EPOCH_2007) // (30 * _DAY))
        self.month_cum = list(itertools.accumulate(1.12 ** (m / 12) for m in months))

    def _mint_author(self) -> int:
        """A new author identity, about a quarter of them with a non-ASCII name."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.04:
            given = "".join(rng.choices(_CJK_GIVEN, k=rng.choice((1, 2))))
            name = rng.choice(_CJK_FAMILY) + given
        elif roll < 0.06:
            name = rng.choice(_KOREAN_FAMILY) + "".join(rng.choices(_KOREAN_GIVEN, k=2))
        else:
            first = rng.choice(_FIRST_NON_ASCII if rng.random() < 0.12 else _FIRST)
            initial = f" {rng.choice('ABCDEFGHJKLMNPRSTW')}." if rng.random() < 0.3 else ""
            roll = rng.random()
            if roll < 0.1:
                last = rng.choice(_LAST_NON_ASCII)
            elif roll < 0.4:
                last = rng.choice(_LAST).replace("_", " ")
            else:
                middle = rng.choice(_MIDDLES) if rng.random() < 0.6 else ""
                last = rng.choice(_ONSETS) + middle + rng.choice(_ENDINGS)
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
        count = self.rng.choices(range(1, 13), cum_weights=_AUTHOR_COUNT_CUM)[0]
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
            "A": rng.choice(_ADJECTIVES),
            "A2": rng.choice(_ADJECTIVES),
            "N": rng.choice(_NOUNS),
            "N2": rng.choice(_NOUNS),
            "T": rng.choice(_TASKS),
        }

    def title(self) -> str:
        text = self.rng.choice(_TEMPLATES).format(**self._words())
        text = text[0].upper() + text[1:]
        if self.rng.random() < 0.05:  # a sloppy title a rebuild may fix
            text = text.replace(" ", "  ", 1).lower()
        return text

    def abstract(self) -> str:
        count = self.rng.randint(6, 11)
        return " ".join(self.rng.choice(_SENTENCES).format(**self._words()) for _ in range(count))

    def arxiv_id(self, submitted: int, primary: str) -> tuple[str, int]:
        """A fresh id for a submission time (moved into April 2007 if a 3-digit month is full)."""
        yymm = time.strftime("%y%m", time.gmtime(submitted))
        if submitted < _NEW_STYLE_FROM:
            key = f"{primary.split('.')[0]}/{yymm}"
            if self.numbers.get(key, 0) < 999:
                number = self.numbers[key] = self.numbers.get(key, 0) + 1
                return f"{key}{number:03d}", submitted
            submitted = _NEW_STYLE_FROM + self.rng.randrange(29 * _DAY)
            yymm = time.strftime("%y%m", time.gmtime(submitted))
        number = self.numbers[yymm] = self.numbers.get(yymm, 0) + self.rng.randint(1, 3)
        width = 5 if submitted >= _FIVE_DIGITS_FROM else 4
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
        submitted = _EPOCH_2007 + month * 30 * _DAY + rng.randrange(30 * _DAY)
        primary = rng.choices(_PRIMARIES, cum_weights=_CATEGORY_CUM)[0]
        arxiv_id, submitted = self.arxiv_id(submitted, primary)
        related = _CATEGORIES[primary]
        crosses = rng.sample(related, min(len(related), rng.choice((0, 0, 1, 1, 2, 3))))
        abstract = self.abstract()
        created = max(_REGISTRY_OPENS + rng.randrange(60 * _DAY), submitted + _DAY)
        built = created + rng.randrange(40 * _DAY)
        spec = PaperSpec(
            arxiv_id=arxiv_id,
            version=1,
            title=self.title(),
            authors=self.pick_authors(),
            abstract_excerpt=abstract[:EXCERPT_LENGTH],
            primary_cat=primary,
            cross_cats=sorted(crosses),
            license=rng.choices(_LICENSES, cum_weights=_LICENSE_CUM)[0],
            submitted_at=_iso(submitted),
            abstract_canon_sha256=_abstract_sha(abstract),
            **self.timestamps(created, built),
        )
        specs = [spec]
        if rng.random() < MULTI_VERSION_RATE:
            for version in range(2, rng.choice((3, 3, 4)) + 1):
                abstract += " " + rng.choice(_SENTENCES).format(**self._words())
                created = built + rng.randrange(1, 30 * _DAY)
                built = created + rng.randrange(20 * _DAY)
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
        built = _parse(spec.built_at) + rng.randint(_DAY, 60 * _DAY)
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
    lower = [
        i for i, word in enumerate(words) if word.isascii() and word.isalpha() and word.islower()
    ]
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


def corpus_signers(seed: int = 0) -> tuple[SignerIdentity, SignerIdentity]:
    """The corpus keys for ``seed``: the registry-like signer and a second (builder) one.

    >>> [signer.key_id for signer in corpus_signers(3)]
    ['pith-graph-corpus-3-registry', 'pith-graph-corpus-3-builder']
    """
    base = f"pith-graph-corpus-{seed}"
    primary = SignerIdentity.from_seed(
        base.encode(), key_id=f"{base}-registry", signer_id="corpus.pith-graph.invalid"
    )
    builder = SignerIdentity.from_seed(
        f"{base}-builder".encode(),
        key_id=f"{base}-builder",
        signer_id="builder.pith-graph.invalid",
        signer_type="pith_builder",
    )
    return primary, builder


_Chunk = list[tuple[int, PaperSpec]]
_Pack = Literal["each", "jsonl", "jsonl.gz"]


def _sign_chunk(
    signer: SignerIdentity,
    extra_signer: SignerIdentity | None,
    extra_signer_every: int,
    pack: _Pack,
    chunk: _Chunk,
) -> list[bytes]:
    """Sign a chunk: one JSON document per bundle, or (``pack``) one JSON-lines blob."""
    out = []
    for index, spec in chunk:
        use_extra = extra_signer_every and index % extra_signer_every == extra_signer_every - 1
        extra = extra_signer if use_extra else None
        out.append(orjson.dumps(build_bundle(spec, signer, extra_event_signer=extra)))
    if pack == "each":
        return out
    lines = b"".join(bundle + b"\n" for bundle in out)
    return [gzip.compress(lines, compresslevel=6, mtime=0) if pack == "jsonl.gz" else lines]


def _chunks(n: int, seed: int, shard_size: int) -> Iterator[_Chunk]:
    """Chunks of ``CHUNK_SIZE`` (index, spec), never straddling a shard boundary."""
    chunk: _Chunk = []
    for index, spec in enumerate(generate_papers(n, seed=seed)):
        chunk.append((index, spec))
        if len(chunk) == CHUNK_SIZE or (index + 1) % shard_size == 0:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _signed_chunks(
    chunks: Iterator[_Chunk],
    signer: SignerIdentity,
    extra_signer: SignerIdentity | None,
    extra_signer_every: int,
    workers: int,
    pack: _Pack = "each",
) -> Iterator[tuple[_Chunk, list[bytes]]]:
    """Sign chunks in order on ``workers`` processes, a bounded number in flight."""
    task = partial(_sign_chunk, signer, extra_signer, extra_signer_every, pack)
    if workers <= 1:
        for chunk in chunks:
            yield chunk, task(chunk)
        return
    with multiprocessing.get_context().Pool(workers) as pool:
        in_flight: deque[tuple[_Chunk, AsyncResult[list[bytes]]]] = deque()
        for chunk in chunks:
            in_flight.append((chunk, pool.apply_async(task, (chunk,))))
            if len(in_flight) >= workers * 4:
                done, result = in_flight.popleft()
                yield done, result.get()
        while in_flight:
            done, result = in_flight.popleft()
            yield done, result.get()


def generate_bundles(
    n: int,
    *,
    signer: SignerIdentity,
    seed: int = 0,
    workers: int = 1,
    extra_signer: SignerIdentity | None = None,
    extra_signer_every: int = 0,
) -> Iterator[bytes]:
    """Compact JSON of ``n`` signed bundles for ``generate_papers(n, seed=seed)``, in order.

    With ``extra_signer`` and ``extra_signer_every`` = k, every k-th bundle's graph snapshot
    is signed by ``extra_signer``.
    """
    chunks = _chunks(n, seed, CHUNK_SIZE)
    for _, bundles in _signed_chunks(chunks, signer, extra_signer, extra_signer_every, workers):
        yield from bundles


@dataclass(frozen=True)
class CorpusInfo:
    """What ``write_corpus`` wrote."""

    directory: Path
    bundle_count: int
    seed: int
    layout: Layout
    shards: tuple[Path, ...]
    keyring_path: Path
    total_bytes: int
    elapsed_seconds: float

    @property
    def bundles_per_second(self) -> float:
        return self.bundle_count / self.elapsed_seconds if self.elapsed_seconds else 0.0


def _file_name(index: int, spec: PaperSpec) -> str:
    return f"{index:07d}-{spec.arxiv_id.replace('/', '_')}v{spec.version}.json"


def write_corpus(
    directory: Path,
    n: int,
    *,
    seed: int = 0,
    workers: int | None = None,
    layout: Layout = "jsonl.gz",
    shard_size: int = 10000,
    extra_signer_every: int = 50,
) -> CorpusInfo:
    """Write ``n`` bundles under ``directory`` in shards of ``shard_size``, plus keyring.json.

    ``jsonl.gz``/``jsonl``: ``bundles-00000.jsonl[.gz]``, one bundle per line (the gzip file
    is a series of members, one per chunk). ``files``: ``bundles-00000/<index>-<id>v<N>.json``.
    ``workers`` defaults to the CPU count. The output depends only on ``n``, ``seed``,
    ``layout``, ``shard_size`` and ``extra_signer_every``.
    """
    workers = workers or os.cpu_count() or 1
    if layout not in ("jsonl.gz", "jsonl", "files"):
        raise ValueError(f"unknown layout {layout!r}: use 'jsonl.gz', 'jsonl' or 'files'")
    started = time.perf_counter()
    directory.mkdir(parents=True, exist_ok=True)
    signer, builder = corpus_signers(seed)
    extra = builder if extra_signer_every else None
    keys = [signer.keyring_entry()] + ([builder.keyring_entry()] if extra else [])
    keyring_path = directory / "keyring.json"
    keyring_path.write_bytes(orjson.dumps(keys, option=orjson.OPT_INDENT_2))
    shards: list[Path] = []
    total = 0
    chunks = _chunks(n, seed, shard_size)
    pack: _Pack = "each" if layout == "files" else layout
    signed = _signed_chunks(chunks, signer, extra, extra_signer_every, workers, pack)
    for chunk, bundles in signed:
        shard_number = chunk[0][0] // shard_size
        stem = directory / f"bundles-{shard_number:05d}"
        if layout == "files":
            stem.mkdir(exist_ok=True)
            for (index, spec), data in zip(chunk, bundles, strict=True):
                (stem / _file_name(index, spec)).write_bytes(data)
                total += len(data)
            if not shards or shards[-1] != stem:
                shards.append(stem)
            continue
        path = stem.with_suffix(".jsonl.gz" if layout == "jsonl.gz" else ".jsonl")
        if not shards or shards[-1] != path:
            shards.append(path)
            path.write_bytes(b"")
        with path.open("ab") as handle:
            handle.write(bundles[0])
        total += len(bundles[0])
    return CorpusInfo(
        directory=directory,
        bundle_count=n,
        seed=seed,
        layout=layout,
        shards=tuple(shards),
        keyring_path=keyring_path,
        total_bytes=total,
        elapsed_seconds=time.perf_counter() - started,
    )


def _main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pith_graph.testing.corpus", description=__doc__)
    parser.add_argument("directory", type=Path)
    parser.add_argument("-n", type=int, required=True, help="number of bundles")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layout", choices=("jsonl.gz", "jsonl", "files"), default="jsonl.gz")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--shard-size", type=int, default=10000)
    args = parser.parse_args(argv)
    info = write_corpus(
        args.directory,
        args.n,
        seed=args.seed,
        workers=args.workers,
        layout=args.layout,
        shard_size=args.shard_size,
    )
    print(f"wrote {info.bundle_count} bundles ({info.layout}) to {info.directory}")
    for shard in info.shards:
        print(f"  {shard}")
    print(f"  keyring: {info.keyring_path}")
    print(
        f"{info.total_bytes / 1e6:.1f} MB of bundle data in {info.elapsed_seconds:.1f} s "
        f"({info.bundles_per_second:.0f} bundles/s, {args.workers} workers)"
    )


if __name__ == "__main__":
    _main()
