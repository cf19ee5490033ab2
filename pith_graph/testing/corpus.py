"""A deterministic corpus of synthetic, validly signed bundles for tests and benchmarks.

``generate_papers`` yields ``PaperSpec``s with the shapes a loader must cope with:
heavy-tailed author overlap (preferential attachment: a few authors on hundreds of papers,
most on one to three), non-ASCII names (some written in NFD or with doubled spaces),
old-style and new-style arXiv ids, several versions of ~20% of the ids (separate bundles,
separate pith numbers) and ~5% of bundles rebuilt later in the stream (same pith number,
later ``built_at``, changed snapshot). ``generate_bundles`` signs them, optionally on several
processes; ``write_corpus`` writes shards and the ``keyring.json`` that trusts the corpus
keys, which are derived from the seed so a corpus is reproducible byte for byte.
``cached_corpus`` keeps one in a folder (the benchmarks' cache): written elsewhere, renamed
into place when whole.

Run ``python -m pith_graph.testing.corpus DIR -n N`` to write one.
"""

from __future__ import annotations

import argparse
import gzip
import multiprocessing
import os
import shutil
import signal
import tempfile
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from multiprocessing.pool import AsyncResult
from pathlib import Path
from typing import Literal

import orjson

from pith_graph.testing.identity import SignerIdentity
from pith_graph.testing.papers import generate_papers
from pith_graph.testing.signer import PaperSpec, build_bundle

__all__ = [
    "COMPLETE",
    "CorpusInfo",
    "Layout",
    "cached_corpus",
    "corpus_signers",
    "generate_bundles",
    "generate_papers",
    "write_corpus",
]

Layout = Literal["jsonl.gz", "jsonl", "files"]
CHUNK_SIZE = 200  # bundles per unit of work; fixed so output never depends on `workers`


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


def _ignore_interrupts() -> None:
    """A pool worker's start: Ctrl-C (SIGINT, sent to the whole process group) is the parent's
    to handle, which stops the pool. A worker that died of it could leave half a result in the
    pool's pipe, on which the pool's result thread then waited for ever (seen once: a
    generation interrupted hung ~10 minutes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _signed_chunks(
    chunks: Iterator[_Chunk],
    signer: SignerIdentity,
    extra_signer: SignerIdentity | None,
    extra_signer_every: int,
    workers: int,
    pack: _Pack = "each",
) -> Generator[tuple[_Chunk, list[bytes]], None, None]:
    """Sign chunks in order on ``workers`` processes, a bounded number in flight."""
    task = partial(_sign_chunk, signer, extra_signer, extra_signer_every, pack)
    if workers <= 1:
        for chunk in chunks:
            yield chunk, task(chunk)
        return
    pool = multiprocessing.get_context().Pool(workers, initializer=_ignore_interrupts)
    try:
        in_flight: deque[tuple[_Chunk, AsyncResult[list[bytes]]]] = deque()
        for chunk in chunks:
            in_flight.append((chunk, pool.apply_async(task, (chunk,))))
            if len(in_flight) >= workers * 4:
                done, result = in_flight.popleft()
                yield done, result.get()
        while in_flight:
            done, result = in_flight.popleft()
            yield done, result.get()
    finally:
        # Closed, never terminated, even when interrupted: Pool.terminate() kills the workers
        # while its task thread may still be writing them a task (a chunk's specs, more than
        # a pipe holds), and that thread then waits for ever on the full pipe (seen under load:
        # 1 Ctrl-C in 80 hung). Closing lets the tasks in flight finish (4 a worker: ~1 s).
        pool.close()
        pool.join()


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
    signed = _signed_chunks(_chunks(n, seed, CHUNK_SIZE), signer, extra_signer, extra_signer_every, workers)
    try:
        for _, bundles in signed:
            yield from bundles
    finally:
        signed.close()  # a consumer that stops reading stops the pool now


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
    try:
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
    finally:
        signed.close()  # an interrupted write stops the pool now, not when collected
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


#: The file :func:`cached_corpus` writes last into a corpus: without it, a folder is unfinished.
COMPLETE = "corpus-complete.txt"


def cached_corpus(
    path: Path, n: int, *, seed: int, layout: Layout = "jsonl.gz", say: Callable[[str], None] = print
) -> Path:
    """``path``, holding the corpus of ``n`` bundles for ``seed``: generated first unless it is
    there whole (``COMPLETE`` in it). For a cache folder only: one left unfinished (an
    interrupted run, or one made when a folder with ``keyring.json`` counted as done) is
    removed.

    It is written into a scratch folder beside ``path`` and renamed into place once whole, so
    an interrupted run leaves no folder at ``path`` (a hidden scratch one at most).
    """
    if (path / COMPLETE).is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    say(f"generating {n} bundles into {path} ...")
    scratch = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    try:
        info = write_corpus(scratch, n, seed=seed, layout=layout)
        (scratch / COMPLETE).write_text(f"{n} bundles, seed {seed}, {layout}\n")
        if (path / COMPLETE).is_file():  # another run finished it meanwhile
            return path
        if path.exists():
            say(f"  replacing {path}: not marked whole (an interrupted run, or an older cache)")
            shutil.rmtree(path)
        scratch.rename(path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    say(f"  {info.bundles_per_second:.0f} bundles/s, {info.total_bytes / 1e6:.0f} MB")
    return path


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
