"""What respelling the authors of a large collaboration costs the in-memory store.

An author's name is kept by counting its papers' spellings (``loader/stores/names.py``), so
a write touches each author of its paper once, however many other papers those authors
have. This measures it: ``--authors`` authors each with N other papers (N from ``--papers``),
then one paper naming all of them, rewritten by a newer bundle spelling every name in upper
case, and back, timed (best of ``--rounds``). The baseline, in the same run on the same
graph, is what a store that recomputes names instead would do for that write: for each
author, read every paper of it and find its spelling there (the smallest of them is the
name). Reported: ours per N, ours against ours at the smallest N (about 1.0: independent of
N), and the baseline against ours.

``--spellings K,…`` measures the other growth: K papers, each spelling its 10 authors a way
no other paper does (their letters' cases; one signer can do this), loaded in batches of
1,000 (the in-memory default), against the same papers in batches of one. A batch counts an
author's spellings into its name once (``PendingNames``), so batches of one pay what every
write paid before 0.8.1: sorting all the author's spellings again, quadratic in them.
Reported per K: both times (best of ``--rounds``) and their ratio, and the check that both
give the same graph.

Run:  .venv/bin/python benchmarks/bench_respell.py [--authors 1000] [--papers 10,200] [--rounds 5]
      .venv/bin/python benchmarks/bench_respell.py --papers '' --spellings 1000,4000 [--rounds 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from pith_graph.api.reads.folding import folded_name
from pith_graph.loader.identifiers import author_name_key
from pith_graph.loader.rows import PaperRows
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.schema.graph import AUTHOR, PAPER, node_id
from pith_graph.schema.rows import AliasRow, AuthorRow, CategoryLinkRow, PaperRow, SignatureRow

_BY_AUTHOR = 10  # authors per ordinary paper


def paper(number: int, names: Sequence[str], built_at: str = "2026-01-01T00:00:00Z") -> PaperRows:
    """A paper's rows (no bundle behind them: the store is what is measured)."""
    source = f"2401.{number:05d}"
    row = PaperRow(
        f"pith:2026:{number:026d}",
        f"pith:{number:08d}",
        f"Paper {number}",
        "",
        "http://creativecommons.org/licenses/by/4.0/",
        "2024-01-01T00:00:00Z",
        2024,
        "cs.LG",
        "arxiv",
        source,
        1,
        "c" * 64,
        f"{number:032d}{built_at}",
        "s" * 64,
        built_at,
        ("key",),
        "key",
    )
    authors = tuple(AuthorRow(author_name_key(name), name, folded_name(name)) for name in names)
    return PaperRows(
        row,
        authors,
        (CategoryLinkRow("cs.LG", "cs", True),),
        (AliasRow("arxiv", source),),
        (SignatureRow("signer", "unknown", ("key",), (), True),),
    )


def world(authors: int, papers_each: int) -> tuple[MemoryStore, list[str], int]:
    """The store, the authors' names, and the number of the big paper (not yet written)."""
    names = [f"Author {i:05d}" for i in range(authors)]
    store = MemoryStore()
    batch: list[PaperRows] = []
    number = 0
    for _ in range(papers_each):
        for start in range(0, authors, _BY_AUTHOR):
            number += 1
            batch.append(paper(number, names[start : start + _BY_AUTHOR]))
            if len(batch) == 1000:
                store.apply(batch, lambda key: 0)
                batch = []
    store.apply(batch, lambda key: 0)
    big = number + 1
    store.apply([paper(big, names)], lambda key: 0)
    return store, names, big


def recompute(store: MemoryStore, names: Sequence[str]) -> list[str]:
    """The baseline: each author's name from all its papers' spellings, read again."""
    graph = store.graph
    found = []
    for name in names:
        key = author_name_key(name)
        spellings = []
        for paper_id in graph.succ[node_id(AUTHOR.label, key)]:
            for spelling in graph.nodes[paper_id][PAPER.prop("authorNames")]:
                if author_name_key(spelling) == key:
                    spellings.append(spelling)
                    break
        found.append(min(spellings))
    return found


def _spelt(i: int, name: str) -> str:
    """The ``i``-th spelling of ``name`` by its letters' cases (ASCII letters: 2^letters)."""
    letters = [c for c in name if c.isalpha()]
    bits = iter(range(len(letters)))
    return "".join(c.upper() if c.isalpha() and i >> next(bits) & 1 else c for c in name)


def spellings(count: int, rounds: int) -> None:
    """``count`` papers each spelling its 10 authors its own way, in batches of 1,000 and of one."""
    names = [f"author number {i}" for i in range(_BY_AUTHOR)]
    papers = [paper(n + 1, [_spelt(n + 1, name) for name in names]) for n in range(count)]
    best: dict[int, float] = {}
    graphs = {}
    for _ in range(rounds):
        for batch in (1000, 1):  # interleaved
            store = MemoryStore()
            started = time.perf_counter()
            for start in range(0, count, batch):
                store.apply(papers[start : start + batch], lambda key: 0)
            elapsed = time.perf_counter() - started
            best[batch] = min(best.get(batch, elapsed), elapsed)
            graphs[batch] = store.export()
    assert graphs[1000] == graphs[1], "batches of 1,000 and of one give different graphs"
    print(
        f"{count:>6} papers, {_BY_AUTHOR} authors each spelt {count} ways: batches of 1,000 "
        f"{best[1000]:6.2f} s, of one {best[1]:6.2f} s (x{best[1] / best[1000]:.1f})",
        flush=True,
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--authors", type=int, default=1000, help="authors of the big paper")
    parser.add_argument("--papers", default="10,200", help="other papers of each author, comma-separated")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--spellings", default="", help="papers spelling their authors anew, comma-separated")
    args = parser.parse_args(argv)
    ours: dict[int, float] = {}
    for count in [int(n) for n in args.spellings.split(",") if n]:
        spellings(count, args.rounds)
    for papers_each in [int(n) for n in args.papers.split(",") if n]:
        store, names, big = world(args.authors, papers_each)
        upper = [name.upper() for name in names]
        times, naive = [], []
        for round_ in range(args.rounds):
            for spelt in (upper, names):  # respelt, then back: each a newer bundle of the paper
                built = f"2026-02-{1 + round_:02d}T00:00:{0 if spelt is upper else 30:02d}Z"
                started = time.perf_counter()
                store.apply([paper(big, spelt, built)], lambda key: 0)
                times.append(time.perf_counter() - started)
                started = time.perf_counter()
                expected = recompute(store, names)
                naive.append(time.perf_counter() - started)
                named = [store.graph.nodes[node_id(AUTHOR.label, author_name_key(n))]["name"] for n in names]
                assert named == expected, "the counted names are not the recomputed ones"
        ours[papers_each] = min(times)
        first = ours[min(ours)]
        print(
            f"{args.authors} authors x {papers_each:>4} papers each: respell {min(times) * 1000:7.1f} ms"
            f" (x{min(times) / first:.2f} the smallest N); recomputing {min(naive) * 1000:8.1f} ms"
            f" (x{min(naive) / min(times):.1f} ours)",
            flush=True,
        )


if __name__ == "__main__":
    main()
