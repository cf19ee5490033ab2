"""Pass one of a bulk import, in the verification workers: spill every accepted bundle.

Each worker verifies its bundles (the same :func:`~pith_graph.loader.pipeline.process_one`
as a load) and appends a record per accepted bundle to one of ``partitions`` files of its
own, chosen by the bundle's source id: every bundle that could compete with another (same
pith number, source version or source id) lands in the same partition, which pass two decides
alone.

A record is one JSON line — the fields the update rules read, the lengths of its CSV
segments, and its Author, Category, Alias and Signer rows — followed by the segments: its
Paper row and its edge rows, already encoded for the importer (:mod:`.csvfiles`), so pass
two only copies the winners' bytes.
"""

from __future__ import annotations

import contextlib
import errno
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import orjson

from pith_graph.errors import BundleError, Source, StoreError, StoreErrorCode
from pith_graph.loader.bulk.csvfiles import EDGE_TARGETS, PAPER_COLUMNS, alias_id, encode, line, quoted_rows
from pith_graph.loader.pipeline import Rejection, WorkerConfig, process_one
from pith_graph.loader.rows import AUTHOR_NAMES, PaperRows
from pith_graph.loader.sources import RawBundle
from pith_graph.schema.rows import PaperRow

__all__ = ["SLOTS", "SpillHandler", "SpillRecord", "no_room", "partition_of", "read_partition"]

#: What a full disk, a quota or the file size limit (``ulimit -f``) says to a write.
_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


@contextlib.contextmanager
def no_room(folder: Path, data: Path | None) -> Iterator[None]:
    """A write in the block (a worker's spill, the CSV files) that finds no room is a
    :class:`StoreError` ``write_failed`` naming ``folder`` (since 0.9.12; it was exit 70, "a
    bug"), before the database of ``data`` (``None``: ``--csv-only``) is touched."""
    try:
        yield
    except OSError as err:
        if err.errno not in _NO_ROOM:
            raise
        kept = "" if data is None else f": nothing was imported, the database of {data} is as it was"
        raise StoreError(
            StoreErrorCode.WRITE_FAILED, f"cannot write the import's files in {folder}: {err.strerror}{kept}"
        ) from err


#: CSV segments of a record: (Paper, then each edge type) x (single-line, multi-line).
SLOTS = 2 * (1 + len(EDGE_TARGETS))
_BUFFER = 1 << 16


def partition_of(source_kind: str, source_id: str, partitions: int) -> int:
    """The partition of a source id (stable across processes, unlike ``hash``)."""
    return zlib.crc32(f"{source_kind}\x00{source_id}".encode()) % partitions


class SpillRecord(NamedTuple):
    """A spilled bundle as the update rules see it, with its encoded rows."""

    pith_number: str
    source: tuple[str, str]
    source_version: int
    bundle_key_id: str
    built_at: str
    bundle_sha256: str
    segments: list[bytes]
    nodes: list[list[Any]]  # authors, categories, aliases, signers


#: A Paper row's properties in PAPER_COLUMNS are its first fields, then authorNames (checked here).
_PAPER_FIELDS = len(PAPER_COLUMNS) - 1
if (*PaperRow._make([()] * len(PaperRow._fields)).properties(), AUTHOR_NAMES) != PAPER_COLUMNS:
    raise TypeError("a spilled Paper row no longer starts with PaperRow's fields, then authorNames")


def _segments(rows: PaperRows) -> tuple[list[bytes], list[int]]:
    parts: list[list[bytes]] = [[] for _ in range(SLOTS)]
    pith = rows.pith_number
    tail = "," + encode(pith)  # what follows the key in an [key, pith] row

    def add(target: int, values: list[Any]) -> None:
        encoded, multiline = line(values)
        parts[2 * target + multiline].append(encoded)

    def add_keyed(target: int, keys: list[str]) -> None:
        """Rows ``[key, pith]``: in one piece when none needs escaping (:func:`quoted_rows`)."""
        if (encoded := quoted_rows(keys, tail)) is not None:
            parts[2 * target].append(encoded)
            return
        for key in keys:
            add(target, [key, pith])

    # The Paper row's properties (PaperRows.paper_properties, None where absent; isLatest: pass two).
    add(0, [*rows.paper[:_PAPER_FIELDS], [author.name for author in rows.authors] or None])
    add_keyed(1, [author.name_key for author in rows.authors])
    for category in rows.categories:
        add(2, [pith, category.code, category.primary])
    add_keyed(3, [alias_id(alias.kind, alias.value) for alias in rows.aliases])
    for signer in rows.signers:
        add(4, [signer.signer_id, pith, signer.key_ids, signer.stored_event_types, signer.signed_bundle])
    joined = [b"".join(part) for part in parts]
    return joined, [len(part) for part in joined]


def encode_record(rows: PaperRows) -> bytes:
    segments, lengths = _segments(rows)
    nodes = [
        list(map(list, rows.authors)),  # [name_key, name, name_folded]: orjson writes no named tuple
        [[c.code, c.archive] for c in rows.categories],
        list(map(list, rows.aliases)),  # [kind, value]
        [[s.signer_id, s.signer_type, list(s.key_ids)] for s in rows.signers],
    ]
    paper = rows.paper
    head = [
        rows.pith_number,
        paper.source_kind,
        paper.source_id,
        paper.source_version,
        paper.bundle_key_id,
        rows.built_at,
        rows.bundle_sha256,
        lengths,
        nodes,
    ]
    return orjson.dumps(head) + b"\n" + b"".join(segments)


@dataclass
class SpillHandler:
    """The workers' handler for pass one (built in each worker by :meth:`__call__`)."""

    config: WorkerConfig
    folder: Path
    partitions: int
    worker: int = -1

    def __post_init__(self) -> None:
        self._files: dict[int, BinaryIO] = {}

    def __call__(self, index: int) -> SpillHandler:
        return SpillHandler(self.config, self.folder, self.partitions, index)

    def handle(self, item: RawBundle | BundleError) -> Rejection | None:
        if isinstance(item, BundleError):
            return Rejection(item.code.value, item.message, item.source or Source("?"))
        result = process_one(item, self.config)
        if isinstance(result, PaperRows):
            part = partition_of(result.paper.source_kind, result.paper.source_id, self.partitions)
            handle = self._files.get(part)
            if handle is None:
                name = self.folder / f"p{part:04d}-w{self.worker:03d}.spill"
                handle = self._files[part] = open(name, "ab", buffering=_BUFFER)  # noqa: SIM115
            handle.write(encode_record(result))
            return None
        return result if isinstance(result, Rejection) else None

    def heavy(self, result: object) -> bool:
        return False

    def close(self) -> list[str]:
        for handle in self._files.values():
            handle.close()
        return sorted(handle.name for handle in self._files.values())


def read_partition(folder: Path, part: int) -> Iterator[SpillRecord]:
    """Every record of a partition, worker file after worker file."""
    for path in sorted(folder.glob(f"p{part:04d}-w*.spill")):
        with path.open("rb", buffering=1 << 20) as handle:
            while head := handle.readline():
                pith, kind, source_id, version, key_id, built_at, sha, lengths, nodes = orjson.loads(head)
                blob = handle.read(sum(lengths))
                segments, start = [], 0
                for length in lengths:
                    segments.append(blob[start : start + length])
                    start += length
                yield SpillRecord(pith, (kind, source_id), version, key_id, built_at, sha, segments, nodes)
