"""What measuring an answer's bytes before it is encoded costs (``api/answer_size.py``,
``PITH_API_MAX_ANSWER_BYTES``): the Rust extension's measure (``api/json_size``, what the
server runs when the install built it) and the Python one, against encoding the answer
(``orjson.dumps``, which every answer pays), in the same run, interleaved, on answers of the API's shapes built in memory: a paper
with its authors and categories, a page of 100 papers with 100 authors each, ``papersById``
of 500 identifiers with title and abstract excerpt; and the hostile answer the limit is for
(8 aliases of ``papersById`` over 500 repeats of a paper with a 510 KB title: 2 GB
encoded), which the measure refuses without encoding.

Run:  .venv/bin/python benchmarks/bench_answer_size.py [--rounds 20]

Prints per answer its size, the best time of each (ms) and each measure ÷ encode.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from pith_graph.api import answer_size
from pith_graph.api.answer_size import python_answer_bytes
from pith_graph.api.limits import RequestLimits


def _paper(i: int, authors: int, title: str | None = None) -> dict[str, Any]:
    return {
        "pithNumber": f"pith:2026:{i:026d}",
        "title": title or f"A title about sparse attention for graphs, number {i}",
        "abstractExcerpt": "We study how sparse attention behaves on large graphs. " * 4,
        "authors": [{"name": f"Author {i}-{j}", "nameKey": f"author {i}-{j}"} for j in range(authors)],
        "categories": [{"code": "cs.LG"}, {"code": "stat.ML"}],
    }


def answers() -> dict[str, Any]:
    big = _paper(0, 3, title="T" * 510_000)
    return {
        "a paper with authors and categories": {"paper": _paper(1, 5)},
        "a page of 100 papers, 100 authors each": {"papers": {"nodes": [_paper(i, 100) for i in range(100)]}},
        "papersById, 500 identifiers": {"papersById": [_paper(i, 0) for i in range(500)]},
        "hostile: 8 aliases x 500 repeats of a 510 KB title": {f"a{k}": [big] * 500 for k in range(8)},
    }


def best(f: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        f()
        times.append(time.perf_counter() - started)
    return min(times)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    limit = RequestLimits().max_answer_bytes
    if not answer_size.NATIVE:
        print("the Rust measure is not built (no Rust toolchain at install): Python only")
    measures = (
        {"rust": answer_size.answer_bytes, "python": python_answer_bytes}
        if answer_size.NATIVE
        else {"python": python_answer_bytes}
    )
    for name, data in answers().items():
        times: dict[str, list[float]] = {key: [] for key in [*measures, "encode"]}
        hostile = name.startswith("hostile")
        for _ in range(3):  # interleaved
            for key, measure in measures.items():
                times[key].append(best(lambda data=data, measure=measure: measure(data, limit), args.rounds))
            if not hostile:
                times["encode"].append(best(lambda data=data: orjson.dumps(data), args.rounds))
        sizes = {measure(data, limit) for measure in measures.values()}
        if hostile:
            assert min(sizes) > limit, name
            took = ", ".join(f"{key} {min(times[key]) * 1000:.2f} ms" for key in measures)
            print(f"{name}: refused (not encoded): {took}")
            continue
        assert sizes == {len(orjson.dumps(data))}, name
        encode = min(times["encode"])
        took = "; ".join(
            f"{key} {min(times[key]) * 1000:.3f} ms (x{min(times[key]) / encode:.1f})" for key in measures
        )
        print(f"{name}: {sizes.pop():,} bytes; encode {encode * 1000:.3f} ms; {took}", flush=True)


if __name__ == "__main__":
    main()
