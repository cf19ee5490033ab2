"""How often a Neo4j page shows a paper torn between two states while loads replace it.

    .venv/bin/python benchmarks/stress_torn_reads.py [--runs 8] [--papers 120] [--readers 2]
        [--batch-size 1]

A stress run, not a timing: it counts wrong answers, so it has no baseline in the same run
(the code before a fix is not in the tree; run this script from that commit to compare).

Each run, on a private Neo4j (``scripts/neo4j``, temporary data folder, free port), cleared
first: ``--papers`` papers of one category in 3 successive states (each bundle newer, with
other authors; odd papers also retitled in each state, even ones not) are generated; the
first state is loaded; then the others load ``--batch-size`` papers per write transaction
(default one) while
``--readers`` request readers list the category, 100 papers a page with their authors
embedded (one statement), and check every paper's title and build time, then its authors,
against those of the bundle whose digest it shows (as the memory backend reads that state).
A page refused (TornRead: the reader saw two states of a paper, or one without all its
properties, and would read again) is counted apart.

Measured with ``JAVA_TOOL_OPTIONS=-XX:TieredStopAtLevel=1`` (as the tests run Neo4j; README,
"How a request runs"). Titles unchanged, authors checked: before the two stamp reads per
statement (b9a438b), 6 torn papers in 5,371 pages over 9 runs; after, 3 in 8,011 over 15
runs, with 0 to 3 pages refused per run, each torn paper showing its new stamps with the
authors of the state before. Every paper retitled in each state: the readers of a33b5ac
stopped in every one of 8 runs, 3 to 23 pages in, on a paper read without its ``keyIds``
(a TypeError); with such a paper refused, 0 torn in 4,688 pages over 8 runs, 1,154 refused
(25%). Half retitled, as now: 1 torn in 9,409 pages over 16 runs (e540daa and e76f7a4), 1,213
refused (13%); the torn one a paper not retitled, with its new build time and the authors
of the state before. By batch size (2026-12-04, 3 to 8 runs each, interleaved): one paper a
transaction, 0 torn in 5,980 pages (626 refused); 10, 1 in 1,969 (314 refused); 40, 0 in 527;
120 (a state in one transaction), 0 in 358. Larger batches write the states sooner, so fewer
pages are read while they load; too few torn papers to tell the rates apart.
Prints each run and the totals; writes
``benchmarks/results/torn-reads.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import orjson
from bench_neo4j import RESULTS, PrivateServer  # benchmarks/ is the script's folder, on sys.path

from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.records import PaperFilter, PaperSelection
from pith_graph.api.reads.torn import TornRead
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.testing.corpus import corpus_signers
from pith_graph.testing.signer import PaperSpec, build_bundle

STATES = 3
PAGE = 100
CATEGORY = "math.OC"
AUTHORS = tuple(f"Author {chr(ord('A') + n)} Stress" for n in range(16))
State = tuple[str, str, list[str]]  # a paper's title, build time and author names


def states(papers: int, seed: int, folder: Path) -> tuple[list[Path], Keyring]:
    """One folder of bundles per state, and the keyring that trusts them."""
    signer, _ = corpus_signers(seed)
    rng = random.Random(seed)
    (folder / "keyring.json").write_bytes(orjson.dumps([signer.keyring_entry()]))
    folders = []
    for state in range(STATES):
        lines = []
        for index in range(papers):
            paper = PaperSpec.example(
                f"2403.{index + 1:05d}",
                # odd papers change their title with each state, even ones keep it
                title=f"Torn reads under stress, paper {index}" + (f", state {state}" if index % 2 else ""),
                primary_cat=CATEGORY,
                cross_cats=[],
                submitted_at=f"2024-03-{index % 28 + 1:02d}T{index % 24:02d}:00:00Z",
            )
            paper = dataclasses.replace(
                paper,
                authors=rng.sample(AUTHORS, rng.randint(3, 6)),
                built_at=f"2026-08-{state + 1:02d}T00:00:00Z",
            )
            lines.append(orjson.dumps(build_bundle(paper, signer)) + b"\n")
        (folder / f"state-{state}").mkdir()
        (folder / f"state-{state}" / "bundles.jsonl").write_bytes(b"".join(lines))
        folders.append(folder / f"state-{state}")
    return folders, resolve_keyring(folder / "keyring.json")


def states_by_digest(folders: list[Path], keyring: Keyring, papers: int) -> dict[str, State]:
    """Bundle digest -> the paper's title, build time and author names, as the memory backend
    reads its state."""
    found: dict[str, State] = {}
    for folder in folders:
        store = MemoryStore()
        run([str(folder)], keyring=keyring, store=store, workers=1)
        reader = MemoryReader(store.graph)
        page = reader.list_papers(PaperFilter(category=CATEGORY), papers, None)
        pages = reader.author_pages([paper.pith_number for paper in page.items], 100, None)
        found.update(
            {
                p.bundle_sha256: (p.title, p.built_at, [a.name for a in pages[p.pith_number].authors])
                for p in page.items
            }
        )
    return found


def one_run(
    server: PrivateServer,
    folders: list[Path],
    keyring: Keyring,
    expected: dict[str, State],
    readers: int,
    batch_size: int = 1,
) -> dict[str, Any]:
    store = Neo4jStore.connect(server.uri, "neo4j", None)
    reader = Neo4jReader.connect(server.uri, "neo4j", None)
    try:
        store.ensure_schema()
        store.clear()
        run([str(folders[0])], keyring=keyring, store=store, workers=1)
        done = threading.Event()
        pages, refused, torn, torn_properties = [0] * readers, [0] * readers, [], []
        want = PaperSelection(authors=False)

        def ask(number: int) -> None:
            while not done.is_set():
                request = reader.for_request()
                try:
                    page = request.list_papers(PaperFilter(category=CATEGORY), PAGE, None, want)
                    keys = [paper.pith_number for paper in page.items]
                    found = request.author_pages(keys, 100, None, counts=False)  # embedded: no statement
                    for paper in page.items:
                        names = [author.name for author in found[paper.pith_number].authors]
                        title, built_at, authors = expected[paper.bundle_sha256]
                        if (paper.title, paper.built_at) != (title, built_at):
                            torn_properties.append(
                                f"{paper.source_id} built {paper.built_at}: {paper.title!r}"
                            )
                        elif names != authors:
                            torn.append(f"{paper.source_id} built {paper.built_at}: authors {names}")
                    pages[number] += 1
                except TornRead:
                    refused[number] += 1
                finally:
                    request.close()

        threads = [threading.Thread(target=ask, args=(n,)) for n in range(readers)]
        for thread in threads:
            thread.start()
        try:
            for folder in folders[1:]:
                run([str(folder)], keyring=keyring, store=store, workers=1, batch_size=batch_size)
        finally:
            done.set()
            for thread in threads:
                thread.join()
        return {
            "pages": sum(pages),
            "torn_papers": len(torn) + len(torn_properties),
            "torn_properties": len(torn_properties),
            "refused_pages": sum(refused),
            "torn": (torn_properties + torn)[:5],
        }
    finally:
        reader.close()
        store.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--papers", type=int, default=120)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--batch-size", type=int, default=1, help="papers per write transaction")
    args = parser.parse_args(argv)
    if args.papers < PAGE:
        sys.exit(f"--papers must be at least {PAGE}: a page of {PAGE} is listed")
    with tempfile.TemporaryDirectory(prefix="stress-torn-") as scratch:
        folders, keyring = states(args.papers, args.seed, Path(scratch))
        expected = states_by_digest(folders, keyring, args.papers)
        server = PrivateServer()
        try:
            runs = []
            for number in range(args.runs):
                found = one_run(server, folders, keyring, expected, args.readers, args.batch_size)
                runs.append(found)
                print(
                    f"run {number + 1}: {found['pages']} pages, {found['torn_papers']} torn papers "
                    f"({found['torn_properties']} in their properties), {found['refused_pages']} refused",
                    flush=True,
                )
        finally:
            server.stop()
    total = {
        key: sum(r[key] for r in runs) for key in ("pages", "torn_papers", "torn_properties", "refused_pages")
    }
    print(
        f"all {args.runs} runs: {total['pages']} pages, {total['torn_papers']} torn papers "
        f"({total['torn_properties']} in their properties), "
        f"{total['refused_pages']} refused; runs with a torn paper: {sum(1 for r in runs if r['torn_papers'])}"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "torn-reads.json").write_text(
        json.dumps({"args": vars(args), "runs": runs, "total": total}, indent=1)
    )


if __name__ == "__main__":
    main()
