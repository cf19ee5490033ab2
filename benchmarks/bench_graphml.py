"""GraphML writing: networkx's writer (0.9.5's first version, the baseline) against the
streaming writer of ``loader/graphml.py``, on generated corpora (and node-link JSON's save,
``MemoryStore.save``, for reference).

The baseline is kept here only: a sanitised copy of the graph written by ``nx.write_graphml``
into memory, then beside the path (what ``graphml_bytes`` did). For each corpus size the
corpus is generated (``pith_graph.testing.corpus.write_corpus``, seed 0) and loaded once into a
snapshot; then each round runs both writers, in alternating order, each in a fresh process
that opens the snapshot, collects, resets its peak RSS (``/proc/self/clear_refs``) and writes
the GraphML file: its seconds and its peak RSS over the RSS before it (``VmHWM``) are its own.

With ``--check``, both files of each size are then read back by ``nx.read_graphml`` and
compared: the same nodes, edges and attributes (the generated corpus has no character XML
cannot hold, so no id differs).

Usage: python benchmarks/bench_graphml.py [--bundles 3000 15000] [--rounds 5] [--work DIR] [--check]
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench_snapshot_memory import (
    _status,  # benchmarks/ is the script's folder, on sys.path
)


def _networkx_graphml(G: Any) -> bytes:
    """The baseline: 0.9.5's first ``graphml_bytes`` (a copy, ElementTree, ``getvalue``)."""
    import networkx as nx

    from pith_graph.loader.graphml import _NOT_XML
    from pith_graph.loader.stores.files import json_bytes

    def text(value: str) -> str:
        return _NOT_XML.sub("\ufffd", value) if _NOT_XML.search(value) else value

    def value_of(value: Any) -> Any:
        if isinstance(value, str):
            return text(value)
        if isinstance(value, list | tuple | dict):
            return text(json_bytes(value).decode())
        return value

    def attributes(data: dict[str, Any]) -> dict[str, Any]:
        return {text(str(name)): value_of(value) for name, value in data.items()}

    H = nx.DiGraph()
    H.graph.update(attributes(G.graph))
    ids = {node: text(str(node)) for node in G}
    H.add_nodes_from((ids[node], attributes(data)) for node, data in G.nodes(data=True))
    H.add_edges_from((ids[u], ids[v], attributes(data)) for u, v, data in G.edges(data=True))
    out = io.BytesIO()
    nx.write_graphml(H, out, encoding="utf-8")
    return out.getvalue()


def measured(snapshot: str, write: Callable[[Any], object]) -> None:
    """Open ``snapshot``, collect, reset the peak RSS and ``write(G)``: print its seconds, its
    peak RSS over the RSS before it and that RSS (MB), as JSON (a child's one line)."""
    from pith_graph.loader.stores.snapshot import read_snapshot

    G = read_snapshot(snapshot).graph
    gc.collect()
    before = _status("VmRSS")
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # the peak RSS starts again from the RSS now
    started = time.perf_counter()
    write(G)
    seconds = time.perf_counter() - started
    print(json.dumps({"s": seconds, "peak": _status("VmHWM") - before, "graph": before}))


def _child(snapshot: str, how: str, out: str) -> None:
    from pith_graph.loader.graphml import save_graphml
    from pith_graph.loader.stores.files import write_beside
    from pith_graph.loader.stores.memory import MemoryStore

    writers: dict[str, Callable[[Any], object]] = {
        "networkx": lambda G: write_beside(out, _networkx_graphml(G)),
        "node-link": lambda G: MemoryStore(G).save(out),
        "streaming": lambda G: save_graphml(G, out),
    }
    measured(snapshot, writers[how])


def _snapshot(work: Path, bundles: int) -> tuple[Path, int, int, int]:
    """The snapshot of the generated corpus of ``bundles`` (made once in ``work``), its papers, nodes, edges."""
    from pith_graph.loader.facade import load_graph
    from pith_graph.loader.stores.memory import MemoryStore
    from pith_graph.testing.corpus import write_corpus

    snapshot = work / f"corpus-{bundles}.snapshot"
    if not snapshot.exists():
        info = write_corpus(work / f"corpus-{bundles}", bundles, seed=0)
        G, _ = load_graph(info.shards, trusted_keys=info.keyring_path)
        MemoryStore(G).save_snapshot(snapshot)
    G = MemoryStore.open(snapshot).graph
    papers = sum(1 for _, label in G.nodes(data="label") if label == "Paper")
    return snapshot, papers, G.number_of_nodes(), G.number_of_edges()


def _same(work: Path) -> bool:
    """Whether the two writers' files read back (``nx.read_graphml``) as the same graph, in order."""
    import networkx as nx

    old, new = (nx.read_graphml(work / f"{how}.graphml") for how in ("networkx", "streaming"))
    return (
        list(old.nodes(data=True)) == list(new.nodes(data=True))
        and list(old.edges(data=True)) == list(new.edges(data=True))
        and old.graph == new.graph
    )


def _range(values: list[float], digits: int = 2) -> str:
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}"


def run_rounds(
    script: str, snapshot: Path, rounds: int, pair: tuple[str, str], reference: str, out: dict[str, Path]
) -> tuple[dict[str, list[dict[str, float]]], dict[str, int]]:
    """``rounds`` rounds of ``script``'s children: the ``pair`` of writers in alternating order,
    then ``reference``, each writing to ``out[how]``; each child's figures and each file's size."""
    runs: dict[str, list[dict[str, float]]] = {how: [] for how in (*pair, reference)}
    sizes = {}
    for round in range(rounds):
        for how in [*(pair if round % 2 == 0 else pair[::-1]), reference]:
            done = subprocess.run(
                [sys.executable, script, "--child", str(snapshot), how, str(out[how])],
                capture_output=True,
                text=True,
                check=True,
            )
            runs[how].append(json.loads(done.stdout))
            sizes[how] = os.path.getsize(out[how])
    return runs, sizes


def report(
    runs: dict[str, list[dict[str, float]]], sizes: dict[str, int], papers: int, pair: tuple[str, str]
) -> None:
    """Each writer's ranges (seconds, peak, file), then the ``pair``'s ratios, old over new."""
    for how, r in runs.items():
        seconds, peaks = [x["s"] for x in r], [x["peak"] for x in r]
        print(
            f"  {how:9}: {_range(seconds)} s, peak +{_range(peaks, 1)} MB, "
            f"{sizes[how] / 1e6:.1f} MB file ({sizes[how] / papers / 1e3:.1f} KB/paper)"
        )
    old, new = runs[pair[0]], runs[pair[1]]
    time_ratios = [o["s"] / n["s"] for o, n in zip(old, new, strict=True)]
    peak_ratios = [o["peak"] / max(n["peak"], 0.1) for o, n in zip(old, new, strict=True)]
    extra = [o["peak"] / papers * 1e3 for o in old], [n["peak"] / papers * 1e3 for n in new]
    print(
        f"  {pair[0]}/{pair[1]}: time {_range(time_ratios)}x, peak {_range(peak_ratios, 1)}x; "
        f"extra peak per paper {_range(extra[0], 1)} KB vs {_range(extra[1], 1)} KB"
    )


def arguments(doc: str, flag: str, said: str) -> argparse.Namespace:
    """The command line of a benchmark of writers (``--bundles``, ``--rounds``, ``--work``, and
    ``flag``, which ``said`` explains; ``--child``: a child's run)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--bundles", type=int, nargs="+", default=[3000, 15000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", help="where corpora and snapshots are kept (default: a temporary folder)")
    parser.add_argument(flag, action="store_true", help=said)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    return parser.parse_args()


def corpora(args: argparse.Namespace) -> Iterator[tuple[Path, Path, int, int, int]]:
    """For each of ``--bundles``: the work folder and :func:`_snapshot`'s snapshot and counts."""
    with tempfile.TemporaryDirectory() as temporary:
        work = Path(args.work or temporary)
        work.mkdir(parents=True, exist_ok=True)
        for bundles in args.bundles:
            yield work, *_snapshot(work, bundles)


def compare(
    script: str,
    args: argparse.Namespace,
    pair: tuple[str, str],
    reference: str,
    names: dict[str, str],
    extra: Callable[[Path], str] | None = None,
) -> None:
    """For each corpus: :func:`run_rounds` of ``script``'s writers (each writing the file
    ``names[how]`` in the work folder), then :func:`report`, then ``extra(work)`` if given."""
    for work, snapshot, papers, nodes, edges in corpora(args):
        out = {how: work / name for how, name in names.items()}
        runs, sizes = run_rounds(script, snapshot, args.rounds, pair, reference, out)
        print(
            f"{snapshot.stem.split('-')[1]} bundles: {papers} papers, {nodes} nodes, {edges} edges; "
            f"graph RSS {runs[pair[1]][0]['graph']:.0f} MB; {args.rounds} rounds, interleaved"
        )
        report(runs, sizes, papers, pair)
        if extra is not None:
            print(f"  {extra(work)}")


def main() -> None:
    args = arguments(__doc__, "--check", "read both files back and compare them")
    if args.child:
        _child(*args.child)
        return
    names = {"networkx": "networkx.graphml", "streaming": "streaming.graphml", "node-link": "node-link.json"}
    same = (
        (lambda work: f"read back by nx.read_graphml, the same graph: {_same(work)}") if args.check else None
    )
    compare(__file__, args, ("networkx", "streaming"), "node-link", names, same)


if __name__ == "__main__":
    main()
