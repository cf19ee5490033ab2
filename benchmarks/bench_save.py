"""Node-link JSON's save (``--save``, ``MemoryStore.save``): the whole-document encoder of 0.9.4
(the baseline: ``nx.node_link_data``'s dict of the whole graph, one ``orjson.dumps``, then
written) against the streaming writer (``loader/stores/files.node_link_chunks``), on generated
corpora; a snapshot's save (``MemoryStore.save_snapshot``) for reference.

For each corpus size the corpus is generated (``pith_graph.testing.corpus.write_corpus``, seed 0)
and loaded once into a snapshot (``bench_graphml``'s, shared with it); then each round runs
both writers, in alternating order, each in a fresh process that opens the snapshot, collects,
resets its peak RSS (``/proc/self/clear_refs``) and saves: its seconds and its peak RSS over the
RSS before it (``VmHWM``) are its own. Both writers' files are compared byte for byte.

Usage: python benchmarks/bench_save.py [--bundles 3000 15000] [--rounds 5] [--work DIR] [--gzip]
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_graphml import arguments, compare, measured  # benchmarks/ is on sys.path


def _child(snapshot: str, how: str, out: str) -> None:
    import networkx as nx

    from pith_graph.loader.stores.files import json_bytes, write_beside
    from pith_graph.loader.stores.memory import MemoryStore
    from pith_graph.loader.stores.memory_guard import check_built

    writers: dict[str, Callable[[Any], object]] = {  # "whole": 0.9.4's MemoryStore.save
        "whole": lambda G: write_beside(out, json_bytes(nx.node_link_data(check_built(G), edges="edges"))),
        "streaming": lambda G: MemoryStore(G).save(out),
        "snapshot": lambda G: MemoryStore(G).save_snapshot(out),
    }
    measured(snapshot, writers[how])


def main() -> None:
    args = arguments(__doc__, "--gzip", "write FILE.json.gz (and .snapshot.gz)")
    if args.child:
        _child(*args.child)
        return
    gz = ".gz" if args.gzip else ""
    names = {"whole": f"save-whole.json{gz}", "streaming": f"save-streaming.json{gz}"}

    def identical(work: Path) -> str:
        files = [(work / name).read_bytes() for name in names.values()]
        return f"the two node-link files identical: {files[0] == files[1]}"

    compare(
        __file__,
        args,
        ("whole", "streaming"),
        "snapshot",
        {**names, "snapshot": f"save.snapshot{gz}"},
        identical,
    )


if __name__ == "__main__":
    main()
