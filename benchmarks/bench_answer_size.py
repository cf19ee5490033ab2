"""What measuring an answer's bytes before it is encoded costs (``api/answer_size.py``,
``PITH_API_MAX_ANSWER_BYTES``): the Rust extension's measure (``api/json_size``, what the
server runs when the install built it) and the Python one, against encoding the answer
(``orjson.dumps``, which every answer pays), in the same run, interleaved, on answers of the API's shapes built in memory: a paper
with its authors and categories, a page of 100 papers with 100 authors each, ``papersById``
of 500 identifiers with title and abstract excerpt; and the hostile answer the limit is for
(8 aliases of ``papersById`` over 500 repeats of a paper with a 510 KB title: 2 GB
encoded), which the measure refuses without encoding.

With ``--corpus N`` it also serves N generated bundles from memory (the app over ASGI, in
this process: no sockets) and times whole requests, the plan's answers as a server gives them
once a query is seen, with each measure in place and with none (the baseline), interleaved:
what the measure adds to a request.

Run:  .venv/bin/python benchmarks/bench_answer_size.py [--rounds 20] [--corpus 3000]

Prints per answer its size, the best time of each (ms) and each measure ÷ encode; with
--corpus, per query the median request time with each measure and without.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import orjson

from pith_graph.api import answer_size, planned
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


#: Queries a frontend sends, their answers from 10 KB to a few hundred.
REQUESTS = {
    "50 papers' titles and author names": "{ papers(first: 50) { nodes { title authors { name } } } }",
    "100 papers, every field shown": (
        "{ papers(first: 100) { nodes { pithNumber title abstractExcerpt license submittedAt "
        "authorNames authors { name nameKey paperCount } categories { code } } } }"
    ),
}


def _requests(n: int, rounds: int) -> None:
    from pith_graph.api.app import create_app
    from pith_graph.api.reads.memory import MemoryReader
    from pith_graph.loader.facade import resolve_keyring
    from pith_graph.loader.pipeline import run
    from pith_graph.loader.stores.memory import MemoryStore
    from pith_graph.testing.corpus import write_corpus

    with tempfile.TemporaryDirectory() as folder:
        write_corpus(Path(folder), n, seed=5)
        store = MemoryStore()
        run([folder], keyring=resolve_keyring(Path(folder) / "keyring.json"), store=store)
    app = create_app(MemoryReader(store.graph))
    measures: dict[str, Callable[[object, int], int]] = {"none": lambda data, limit: 0}
    if answer_size.NATIVE:
        measures["rust"] = answer_size.answer_bytes
    measures["python"] = python_answer_bytes

    async def timed(client: httpx.AsyncClient, query: str) -> float:
        started = time.perf_counter()
        response = await client.post("/graphql", json={"query": query})
        took = time.perf_counter() - started
        assert response.status_code == 200, response.text[:300]
        assert "errors" not in response.json(), response.text[:300]
        return took

    async def main() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            for name, query in REQUESTS.items():
                times: dict[str, list[float]] = {key: [] for key in measures}
                for _ in range(3):
                    await timed(client, query)  # seen: the plan answers from now on
                for _ in range(3):  # interleaved
                    for key, measure in measures.items():
                        answer_size.answer_bytes = planned.answer_bytes = measure  # what both executions call
                        times[key].extend([await timed(client, query) for _ in range(rounds)])
                base = statistics.median(times["none"])
                took = "; ".join(
                    f"{key} {statistics.median(times[key]) * 1000:.2f} ms"
                    + ("" if key == "none" else f" (+{(statistics.median(times[key]) - base) / base:.0%})")
                    for key in measures
                )
                print(f"request, {name}: {took}", flush=True)

    real = answer_size.answer_bytes
    try:
        asyncio.run(main())
    finally:
        answer_size.answer_bytes = planned.answer_bytes = real


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--corpus", type=int, default=0, help="also time requests over N generated bundles")
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
    if args.corpus:
        _requests(args.corpus, args.rounds)


if __name__ == "__main__":
    main()
