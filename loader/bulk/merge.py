"""Passes two and three of a bulk import, in this process: decide, then write the CSV files.

Pass two reads one spill partition at a time and decides it under the update rules, as one
batch against an empty store (:func:`~pith_graph.loader.stores.rules.plan_batch`: the same
code the stores run), so the winners are exactly the papers a load of the same bundles would
keep. The winners' Paper and edge rows are copied as they are into the CSV files; their
Author, Category, Alias and Signer rows go to a second set of partitions, by node key.

Pass three reads those one at a time and writes each node once: an Author with the smallest
display name among the winners (and its folded words) and the number of winners naming it,
a Signer with the union of its key ids (and the smallest signer type). Memory holds one
partition at a time, whatever the input size.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from pith_graph.loader.bulk.csvfiles import EDGE_TARGETS, NODE_TARGETS, TARGETS, Target, alias_id, line
from pith_graph.loader.bulk.spill import read_partition
from pith_graph.loader.stores.rules import Outcome, plan_batch

__all__ = ["CsvFiles", "write_csv"]

#: A record's node rows, in order (its edges of EDGE_TARGETS, in the same order, reach them).
_AUTHOR, _CATEGORY, _ALIAS, _SIGNER = 0, 1, 2, 3


@dataclass
class CsvFiles:
    """The CSV files being written: a header file and two data parts per target."""

    folder: Path
    nodes: Counter[str] = field(default_factory=Counter)
    edges: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._open: dict[tuple[int, bool], BinaryIO] = {}
        for target in TARGETS:
            (self.folder / f"{target.name}.header.csv").write_text(target.header + "\n", encoding="utf-8")

    def path(self, target: Target, multiline: bool) -> Path:
        return self.folder / f"{target.name}{'.multiline' if multiline else ''}.csv"

    def write(self, index: int, multiline: bool, data: bytes) -> None:
        handle = self._open.get((index, multiline))
        if handle is None:
            handle = self._open[(index, multiline)] = open(  # noqa: SIM115
                self.path(TARGETS[index], multiline), "ab", buffering=1 << 20
            )
        handle.write(data)

    def close(self) -> None:
        for handle in self._open.values():
            handle.close()

    def importer_args(self) -> list[str]:
        """``--nodes``/``--relationships`` (and ``--multiline-fields``) for what was written."""
        args: list[str] = []
        multiline: list[str] = []
        for index, target in enumerate(TARGETS):
            header = self.folder / f"{target.name}.header.csv"
            for part in (False, True):
                if (index, part) in self._open:
                    data = self.path(target, part)
                    args.append(f"{target.option}={target.label}={header},{data}")
                    if part:
                        multiline.append(str(data))
        if multiline:
            args += [f"--multiline-fields={','.join(multiline)}", "--multiline-fields-format=v2"]
        return args


def _node_key(kind: int, row: list[Any]) -> str:
    return f"{kind}\x00{row[0]}" if kind != _ALIAS else f"{kind}\x00{alias_id(row[0], row[1])}"


def _decide(
    spill: Path,
    part: int,
    rank: Callable[[str], int],
    csv: CsvFiles,
    outcomes: Counter[Outcome],
    nodes_out: list[BinaryIO],
) -> None:
    records = list(read_partition(spill, part))
    plan = plan_batch(records, [], rank)
    outcomes.update(plan.outcomes)
    for record in plan.write:
        csv.nodes["Paper"] += 1
        for slot, segment in enumerate(record.segments):
            if segment:
                target = slot // 2
                csv.write(0 if target == 0 else len(NODE_TARGETS) + target - 1, bool(slot % 2), segment)
        for edge, rows in zip(EDGE_TARGETS, record.nodes, strict=True):
            csv.edges[edge.label] += len(rows)
        for kind, rows in enumerate(record.nodes):
            for row in rows:
                key = _node_key(kind, row)
                spilled = nodes_out[zlib.crc32(key.encode()) % len(nodes_out)]
                spilled.write(orjson.dumps([kind, *row]) + b"\n")


def _write_nodes(path: Path, csv: CsvFiles) -> None:
    authors: dict[str, list[Any]] = {}  # nameKey -> [nameKey, name, nameFolded, paperCount]
    categories: dict[str, str] = {}
    aliases: set[tuple[str, str]] = set()
    signers: dict[str, tuple[str, set[str]]] = {}
    with path.open("rb") as handle:
        for raw in handle:
            kind, *row = orjson.loads(raw)
            if kind == _AUTHOR:  # one row per winning paper naming the author
                known = authors.get(row[0])
                if known is None:
                    authors[row[0]] = [*row, 1]
                else:
                    if row[1] < known[1]:
                        known[1:3] = row[1:3]
                    known[3] += 1
            elif kind == _CATEGORY:
                categories.setdefault(row[0], row[1])
            elif kind == _ALIAS:
                aliases.add((row[0], row[1]))
            else:
                signer_type, keys = signers.get(row[0], (row[1], set()))
                signers[row[0]] = (min(signer_type, row[1]), keys | set(row[2]))
    rows: list[tuple[int, list[Any]]] = [(1, author) for author in authors.values()]
    rows += [(2, [code, archive]) for code, archive in categories.items()]
    rows += [(3, [alias_id(kind, value), kind, value]) for kind, value in aliases]
    rows += [(4, [sid, stype, sorted(keys)]) for sid, (stype, keys) in signers.items()]
    for index, values in rows:
        encoded, multiline = line(values)
        csv.write(index, multiline, encoded)
        csv.nodes[TARGETS[index].label] += 1


def write_csv(
    spill: Path, partitions: int, rank: Callable[[str], int], folder: Path
) -> tuple[CsvFiles, Counter[Outcome]]:
    """Passes two and three: the import's CSV files in ``folder``, and every bundle's outcome."""
    csv = CsvFiles(folder)
    outcomes: Counter[Outcome] = Counter()
    node_paths = [spill / f"nodes-{q:04d}.jsonl" for q in range(partitions)]
    node_files = [path.open("ab", buffering=1 << 16) for path in node_paths]
    try:
        for part in range(partitions):
            _decide(spill, part, rank, csv, outcomes, node_files)
            for used in spill.glob(f"p{part:04d}-w*.spill"):
                used.unlink()  # disk holds the spill or the CSV files, not both for long
    finally:
        for handle in node_files:
            handle.close()
    try:
        for path in node_paths:
            _write_nodes(path, csv)
            path.unlink()
    finally:
        csv.close()
    return csv, outcomes
