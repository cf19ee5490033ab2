"""Passes two and three of a bulk import: decide, then write the CSV files.

Partitions are independent, so the import's processes share each pass (partition ``k`` of
``n`` to process ``k mod n``, :func:`~pith_graph.loader.workers.in_processes`); each writes
data files of its own, which the importer reads as parts of one file per label or type.

Pass two reads one spill partition at a time and decides it under the update rules, as one
batch against an empty store (:func:`~pith_graph.loader.stores.rules.plan_batch`: the same
code the stores run), so the winners are exactly the papers a load of the same bundles would
keep. The winners' Paper and edge rows are copied as they are into the CSV files; their
Author, Category, Alias and Signer rows go to a second set of partitions, by node key.

Pass three reads those one at a time and writes each node once: an Author with the smallest
of the winners' spellings of it (and its folded words), the number of winners naming it and,
when they spell it differently, the count of each spelling,
a Signer with the union of its key ids (its type is the same in all its rows: the keyring's).
Each process holds one partition at a time, whatever the input size.
"""

from __future__ import annotations

import os
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from pith_graph.errors import printable
from pith_graph.loader.bulk.csvfiles import EDGE_TARGETS, NODE_TARGETS, TARGETS, alias_id, line, with_latest
from pith_graph.loader.bulk.recovery import open_unfollowed
from pith_graph.loader.bulk.spill import read_partition
from pith_graph.loader.stores.latest import row_version_key
from pith_graph.loader.stores.names import settle
from pith_graph.loader.stores.rules import Outcome, plan_batch
from pith_graph.loader.workers import in_processes

__all__ = ["CsvFiles", "new_file", "write_csv"]

#: A record's node rows, in order (its edges of EDGE_TARGETS, in the same order, reach them).
_AUTHOR, _CATEGORY, _ALIAS, _SIGNER = 0, 1, 2, 3


def new_file(path: Path) -> BinaryIO:
    """``path`` created for writing; a file or link already there is refused, never reused or
    followed (:class:`StoreError` ``write_failed``): one planted in a ``--csv-only`` folder had
    its target overwritten, or its rows read by the importer."""
    handle = open_unfollowed(path, os.O_EXCL, 0o644, printable(str(path)))
    return os.fdopen(handle, "wb", buffering=1 << 20)


@dataclass
class CsvFiles:
    """The CSV files written for the importer: a header per target, then its data files (one
    per process that wrote rows of that target, in two parts: single-line and multi-line)."""

    folder: Path
    nodes: Counter[str] = field(default_factory=Counter)
    edges: Counter[str] = field(default_factory=Counter)
    files: dict[tuple[int, bool], list[Path]] = field(default_factory=dict)
    #: The bytes of the longest row of any file (its line break, and those inside it, counted):
    #: what neo4j-admin's read buffer must hold (:func:`~.neo4j_admin.read_buffer_size`).
    longest_row: int = 0

    def write_headers(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        for target in TARGETS:
            header = target.header.encode() + b"\n"
            with new_file(self.folder / f"{target.name}.header.csv") as out:
                out.write(header)
            self.longest_row = max(self.longest_row, len(header))

    def add(self, share: _Share) -> None:
        """Count in a process's share (its counts and data files)."""
        self.nodes.update(share.nodes)
        self.edges.update(share.edges)
        self.longest_row = max(self.longest_row, share.longest_row)
        for slot, path in sorted(share.files.items()):
            self.files.setdefault(slot, []).append(path)

    def importer_args(self) -> list[str]:
        """``--nodes``/``--relationships`` (and ``--multiline-fields``) for what was written."""
        args: list[str] = []
        multiline: list[str] = []
        for index, target in enumerate(TARGETS):
            header = self.folder / f"{target.name}.header.csv"
            for part in (False, True):
                data = [str(path) for path in self.files.get((index, part), ())]
                if data:
                    args.append(f"{target.option}={target.label}={','.join([str(header), *data])}")
                    if part:
                        multiline += data
        if multiline:
            args += [f"--multiline-fields={','.join(multiline)}", "--multiline-fields-format=v2"]
        return args


@dataclass
class _Share:
    """What one process wrote: its data files by (target, multi-line), and their counts."""

    folder: Path
    tag: str
    nodes: Counter[str] = field(default_factory=Counter)
    edges: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[Outcome] = field(default_factory=Counter)
    files: dict[tuple[int, bool], Path] = field(default_factory=dict)
    longest_row: int = 0  # at least the longest row written (see write)

    def __post_init__(self) -> None:
        self._open: dict[tuple[int, bool], BinaryIO] = {}

    def write(self, index: int, multiline: bool, data: bytes, longest: int | None = None) -> None:
        """Append ``data``, whole rows whose longest has ``longest`` bytes (``None``: taken as
        all of ``data``, an upper bound that costs nothing: a record's segment of edge rows)."""
        self.longest_row = max(self.longest_row, len(data) if longest is None else longest)
        handle = self._open.get((index, multiline))
        if handle is None:
            name = f"{TARGETS[index].name}{'.multiline' if multiline else ''}.{self.tag}.csv"
            self.files[(index, multiline)] = self.folder / name
            handle = self._open[(index, multiline)] = new_file(self.folder / name)
        handle.write(data)

    def close(self) -> None:
        """Close the data files (a closed share holds no handle, so it pickles)."""
        for handle in self._open.values():
            handle.close()
        self._open.clear()


def _node_key(kind: int, row: list[Any]) -> str:
    return f"{kind}\x00{row[0]}" if kind != _ALIAS else f"{kind}\x00{alias_id(row[0], row[1])}"


def _decide(
    spill: Path,
    part: int,
    rank: Callable[[str], int],
    csv: _Share,
    nodes_out: list[BinaryIO],
) -> None:
    records = list(read_partition(spill, part))
    plan = plan_batch(records, [], rank)
    csv.outcomes.update(plan.outcomes)
    newest: dict[tuple[str, str], tuple[int, str, str]] = {}  # a partition holds whole sources
    for record in plan.write:
        place = row_version_key(record)
        newest[record.source] = max(place, newest.get(record.source, place))
    for record in plan.write:
        csv.nodes["Paper"] += 1
        latest = newest[record.source][2] == record.pith_number
        for slot, segment in enumerate(record.segments):
            if segment:
                target = slot // 2
                if target == 0:
                    segment = with_latest(segment, latest)
                csv.write(0 if target == 0 else len(NODE_TARGETS) + target - 1, bool(slot % 2), segment)
        for edge, rows in zip(EDGE_TARGETS, record.nodes, strict=True):
            csv.edges[edge.label] += len(rows)
        for kind, rows in enumerate(record.nodes):
            for row in rows:
                key = _node_key(kind, row)
                spilled = nodes_out[zlib.crc32(key.encode()) % len(nodes_out)]
                spilled.write(orjson.dumps([kind, *row], option=orjson.OPT_APPEND_NEWLINE))


def _write_nodes(paths: list[Path], csv: _Share) -> None:
    """Write the nodes of one node partition (its spill files ``paths``, one per process)."""
    authors: dict[str, Counter[str]] = {}  # nameKey -> its winners' spellings, counted
    folded: dict[str, str] = {}  # spelling -> its folded words
    categories: dict[str, str] = {}
    aliases: set[tuple[str, str]] = set()
    signers: dict[str, tuple[str, set[str]]] = {}
    for path in paths:
        with path.open("rb") as handle:
            for raw in handle:
                kind, *row = orjson.loads(raw)
                if kind == _AUTHOR:  # one row per winning paper naming the author
                    if (spellings := authors.get(row[0])) is None:
                        spellings = authors[row[0]] = Counter()
                    spellings[row[1]] += 1
                    folded.setdefault(row[1], row[2])
                elif kind == _CATEGORY:
                    categories.setdefault(row[0], row[1])
                elif kind == _ALIAS:
                    aliases.add((row[0], row[1]))
                elif (signer := signers.get(row[0])) is not None:
                    signer[1].update(row[2])
                else:  # every row of a signer has its type: the keyring's (loader.rows)
                    signers[row[0]] = (row[1], set(row[2]))
        path.unlink()
    rows: list[tuple[int, list[Any]]] = []
    for key, spellings in authors.items():
        name, forms, counts = settle(spellings)  # as every store names it (stores.names)
        rows.append((1, [key, name, folded[name], spellings.total(), forms, counts]))
    rows += [(2, [code, archive]) for code, archive in categories.items()]
    rows += [(3, [alias_id(kind, value), kind, value]) for kind, value in aliases]
    rows += [(4, [sid, stype, sorted(keys)]) for sid, (stype, keys) in signers.items()]
    written: dict[tuple[int, bool], list[bytes]] = {}  # each file's rows, in order, written at once
    longest = 0  # an Author's row grows with its spellings (nameForms), past any bundle's size
    for index, values in rows:
        encoded, multiline = line(values)
        written.setdefault((index, multiline), []).append(encoded)
        longest = max(longest, len(encoded))
    for (index, multiline), encoded_rows in written.items():
        csv.write(index, multiline, b"".join(encoded_rows), longest)
        csv.nodes[TARGETS[index].label] += len(encoded_rows)


def _decide_share(
    spill: Path, parts: range, rank: Callable[[str], int], folder: Path, tag: str, node_partitions: int
) -> _Share:
    """Pass two over the partitions ``parts``: this process's CSV files and node spill files."""
    share = _Share(folder, f"d{tag}")
    node_files = [
        (spill / f"nodes-{q:04d}-{tag}.jsonl").open("ab", buffering=1 << 16) for q in range(node_partitions)
    ]
    try:
        for part in parts:
            _decide(spill, part, rank, share, node_files)
            for used in spill.glob(f"p{part:04d}-w*.spill"):
                used.unlink()  # disk holds the spill or the CSV files, not both for long
    finally:
        for handle in node_files:
            handle.close()
        share.close()
    return share


def _nodes_share(spill: Path, parts: range, folder: Path, tag: str) -> _Share:
    """Pass three over the node partitions ``parts``."""
    share = _Share(folder, f"n{tag}")
    try:
        for q in parts:
            _write_nodes(sorted(spill.glob(f"nodes-{q:04d}-*.jsonl")), share)
    finally:
        share.close()
    return share


def write_csv(
    spill: Path, partitions: int, rank: Callable[[str], int], folder: Path, workers: int = 1
) -> tuple[CsvFiles, Counter[Outcome]]:
    """Passes two and three: the import's CSV files in ``folder``, and every bundle's outcome.

    Partitions are independent, so ``workers`` processes share each pass (partitions
    ``k, k + workers, ...`` to process ``k``); each writes data files of its own, which the
    importer reads as parts of one file."""
    csv = CsvFiles(folder)
    csv.write_headers()
    count = max(1, min(workers, partitions))
    decided = in_processes(
        count, lambda k: _decide_share(spill, range(k, partitions, count), rank, folder, str(k), partitions)
    )
    outcomes: Counter[Outcome] = Counter()
    for share in decided:
        csv.add(share)
        outcomes.update(share.outcomes)
    for share in in_processes(
        count, lambda k: _nodes_share(spill, range(k, partitions, count), folder, str(k))
    ):
        csv.add(share)
    return csv, outcomes
