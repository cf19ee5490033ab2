"""Benchmark the GraphQL API on a generated corpus: latency and throughput per backend.

For each backend (memory, neo4j) and scenario — (a) ``paper(id:)`` by DOI, (b) an author with
coauthors and papers, (c) a category page of 50 papers with their authors — it measures,
with 1 and 32 concurrent clients, p50/p99 latency and throughput of real HTTP requests to a
uvicorn serving the app (in a forked child process, so the server has its own core), and,
as the baseline, the same answers fetched by calling the GraphReader directly (and by
executing the schema in-process, to split HTTP from GraphQL). Every measurement is bounded
by time and by request count.

    python benchmarks/bench_api.py                     # writes benchmarks/results/corpus-100000-seed1 once
    python benchmarks/bench_api.py --corpus DIR --backends memory --seconds 5

Neo4j: the database at ``--neo4j-uri`` (default ``$NEO4J_URI`` or bolt://127.0.0.1:7687) must
hold the same corpus. ``--load-neo4j`` loads it first, into an empty database only: one that
holds papers is refused unless ``--clear`` is given too (which DELETES everything in it). The
script checks that Neo4j answers before it measures anything (``--backends memory`` needs none).

Results: a table on stdout and JSON in ``benchmarks/results/``, written again after each
backend (a later backend's failure keeps the earlier one's figures). "HTTP p50 / direct p50"
divides each HTTP p50 by the direct reader calls' p50 at the same number of clients, except
for memory, whose direct calls run with one client only (in process, threads would only
contend for the GIL): memory's ratio at 32 clients is 32-client HTTP over 1-client direct.
The direct baseline makes the reader calls a resolver would (a paper by DOI: identifiers,
papers, authors; on Neo4j each a round trip), so it is a baseline, not a floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import socket
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from pith_graph.api.app import create_app
from pith_graph.api.bridge import BridgeRunner
from pith_graph.api.context import Context
from pith_graph.api.lanes import ThreadRunner, run_inline
from pith_graph.api.limits import RequestLimits
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.reader import GraphReader
from pith_graph.api.reads.records import PaperFilter
from pith_graph.api.schema import build_schema
from pith_graph.api.serve import freeze_loaded_objects
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j_auth import resolve_password

ROOT = Path(__file__).resolve().parents[1]

RESULTS = ROOT / "benchmarks" / "results"

QUERIES = {
    "a_paper_by_doi": (
        "query($id: String!) { paper(id: $id) { pithNumber title submittedAt sourceVersion "
        "authors { name } } }"
    ),
    "b_author_coauthors_papers": (
        "query($name: String!) { author(name: $name) { name paperCount "
        "coauthors(first: 10) { sharedPapers author { name } } "
        "papers(first: 10) { nodes { title submittedAt } } } }"
    ),
    "c_category_page_50": (
        "query($code: String!) { category(code: $code) { code paperCount "
        "papers(first: 50) { nodes { title authors { name } } } } }"
    ),
}


@dataclass
class Measurement:
    backend: str
    scenario: str
    mode: str  # http | graphql-in-process | direct
    clients: int
    requests: int
    errors: int
    seconds: float
    p50_ms: float
    p99_ms: float
    throughput: float


def _measure(
    backend: str, scenario: str, mode: str, clients: int, latencies: list[float], errors: int, seconds: float
) -> Measurement:
    ordered = sorted(latencies)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000 if ordered else float("nan")

    return Measurement(
        backend,
        scenario,
        mode,
        clients,
        len(latencies),
        errors,
        round(seconds, 2),
        round(pct(0.50), 3),
        round(pct(0.99), 3),
        round(len(latencies) / seconds, 1) if seconds else 0.0,
    )


# -- inputs ---------------------------------------------------------------------------------


@dataclass
class Inputs:
    dois: list[str]
    authors: list[str]  # name keys with 3+ papers
    categories: list[str]

    def variables(self, scenario: str, rng: random.Random) -> dict[str, str]:
        if scenario == "a_paper_by_doi":
            return {"id": rng.choice(self.dois)}
        if scenario == "b_author_coauthors_papers":
            return {"name": rng.choice(self.authors)}
        return {"code": rng.choice(self.categories)}


def pick_inputs(reader: MemoryReader, rng: random.Random) -> Inputs:
    G = reader.G
    dois, authors, categories = [], [], []
    for node, data in G.nodes(data=True):
        label = data["label"]
        if label == "Alias" and data["kind"] == "doi":
            dois.append(data["value"])
        elif label == "Author" and G.out_degree(node) >= 3:
            authors.append(data["nameKey"])
        elif label == "Category":
            categories.append(data["code"])
    rng.shuffle(dois)
    rng.shuffle(authors)
    return Inputs(sorted(dois[:5000]), sorted(authors[:5000]), sorted(categories))


def direct_call(reader: GraphReader, scenario: str, variables: dict[str, str]) -> Any:
    """The same answer as the scenario's query, from the reader's methods."""
    if scenario == "a_paper_by_doi":
        value = variables["id"]
        keys = [("doi", v) for v in dict.fromkeys((value, value.lower(), value.upper()))]
        named = reader.resolve_identifiers(keys)
        piths = sorted({p for found in named.values() for p in found})
        papers = reader.papers_by_ids(piths)
        newest = max(papers.values(), key=lambda p: (p.source_version, p.built_at, p.pith_number))
        return newest, reader.author_pages([newest.pith_number], 100)
    if scenario == "b_author_coauthors_papers":
        key = variables["name"]
        return (
            reader.authors_by_keys([key]),
            reader.coauthors([key], 10),
            reader.papers_of_authors([key], 10, None),
        )
    code = variables["code"]
    page = reader.papers_of_categories([code], 50, None)[code]
    return reader.categories_by_codes([code]), reader.author_pages([p.pith_number for p in page.items], 100)


# -- the server -----------------------------------------------------------------------------


def _serve_child(
    sock: socket.socket, backend: str, reader: MemoryReader | None, uri: str, keyring: Keyring
) -> None:
    import uvicorn

    from pith_graph.api.reads.neo4j import Neo4jReader

    active: GraphReader
    if backend == "memory":
        assert reader is not None
        active, runner = reader, run_inline
    else:
        active = Neo4jReader.connect(uri, password=resolve_password(uri), timeout=30)
        runner = BridgeRunner()  # type: ignore[assignment]  # as serve does
    app = create_app(active, keyring=keyring, run=runner, backend=backend)
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on", backlog=256)
    uvicorn.Server(config).run(sockets=[sock])


class ServerProcess:
    def __init__(self, backend: str, reader: MemoryReader | None, uri: str, keyring: Keyring) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        context = multiprocessing.get_context("fork")
        self.process = context.Process(target=_serve_child, args=(self.sock, backend, reader, uri, keyring))

    def __enter__(self) -> ServerProcess:
        self.process.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as probe:
                    probe.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    if b"200 OK" in probe.recv(200):
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("server did not start")

    def __exit__(self, *_: object) -> None:
        self.process.terminate()
        self.process.join(30)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(10)
        self.sock.close()


# -- load generation ------------------------------------------------------------------------


async def _client(
    port: int,
    scenario: str,
    inputs: Inputs,
    seed: int,
    deadline: float,
    budget: list[int],
    latencies: list[float],
    errors: list[int],
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    rng = random.Random(seed)
    query = QUERIES[scenario]
    try:
        while time.perf_counter() < deadline and budget[0] > 0:
            budget[0] -= 1
            body = orjson.dumps({"query": query, "variables": inputs.variables(scenario, rng)})
            request = (
                b"POST /graphql HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
            )
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            data = await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
            if not head.startswith(b"HTTP/1.1 200") or b'"errors"' in data:
                errors[0] += 1
    finally:
        writer.close()


def http_load(
    port: int, scenario: str, inputs: Inputs, clients: int, seconds: float, max_requests: int
) -> tuple[list[float], int, float]:
    async def main() -> tuple[list[float], int, float]:
        warm_latencies: list[float] = []
        warm_deadline = time.perf_counter() + min(1.0, seconds / 4)
        await asyncio.gather(
            *(
                _client(port, scenario, inputs, 1000 + i, warm_deadline, [10**9], warm_latencies, [0])
                for i in range(clients)
            )
        )
        latencies: list[float] = []
        errors = [0]
        budget = [max_requests]
        started = time.perf_counter()
        deadline = started + seconds
        await asyncio.gather(
            *(_client(port, scenario, inputs, i, deadline, budget, latencies, errors) for i in range(clients))
        )
        return latencies, errors[0], time.perf_counter() - started

    return asyncio.run(main())


def direct_load(
    reader: GraphReader, scenario: str, inputs: Inputs, clients: int, seconds: float, max_requests: int
) -> tuple[list[float], int, float]:
    rng = random.Random(7)
    variables = [inputs.variables(scenario, rng) for _ in range(min(max_requests, 50000))]
    latencies: list[float] = []
    deadline_holder = [0.0]

    def one(index: int) -> None:
        if time.perf_counter() > deadline_holder[0]:
            return
        started = time.perf_counter()
        direct_call(reader, scenario, variables[index % len(variables)])
        latencies.append(time.perf_counter() - started)

    for index in range(min(200, len(variables))):  # warm up
        direct_call(reader, scenario, variables[index])
    started = time.perf_counter()
    deadline_holder[0] = started + seconds
    if clients == 1:
        for index in range(max_requests):
            if time.perf_counter() > deadline_holder[0]:
                break
            one(index)
    else:
        with ThreadPoolExecutor(clients) as pool:
            list(pool.map(one, range(max_requests)))
    return latencies, 0, time.perf_counter() - started


def in_process_load(
    reader: GraphReader,
    scenario: str,
    inputs: Inputs,
    seconds: float,
    max_requests: int,
    keyring: Keyring,
    threaded: bool,
) -> tuple[list[float], int, float]:
    """One client, executing the schema in this process (no HTTP)."""
    from pith_graph.api.app import key_infos

    schema = build_schema()
    keys = key_infos(keyring)
    rng = random.Random(11)

    async def main() -> tuple[list[float], int, float]:
        runner = ThreadRunner(4) if threaded else None

        async def execute() -> Any:
            context = Context(reader, RequestLimits(), keys, runner or run_inline)
            try:
                return await schema.execute(
                    QUERIES[scenario], inputs.variables(scenario, rng), context_value=context
                )
            finally:
                closing = context.close()  # ends the request's transaction and frees its lane
                if closing is not None:
                    await closing

        latencies: list[float] = []
        errors = 0
        for _ in range(100):  # warm up (the first request compiles the document's plan)
            await execute()
        started = time.perf_counter()
        deadline = started + seconds
        while time.perf_counter() < deadline and len(latencies) < max_requests:
            t0 = time.perf_counter()
            result = await execute()
            latencies.append(time.perf_counter() - t0)
            errors += bool(result.errors)
        if runner is not None:
            runner.close()
        return latencies, errors, time.perf_counter() - started

    return asyncio.run(main())


# -- main -----------------------------------------------------------------------------------


def _print_table(rows: Sequence[Measurement]) -> None:
    header = f"{'backend':8} {'scenario':28} {'mode':20} {'clients':>7} {'requests':>8} {'err':>4} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>9}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r.backend:8} {r.scenario:28} {r.mode:20} {r.clients:>7} {r.requests:>8} {r.errors:>4} {r.p50_ms:>8.2f} {r.p99_ms:>8.2f} {r.throughput:>9.1f}"
        )


def neo4j_papers(uri: str) -> int:
    """The papers the Neo4j at ``uri`` holds; a one-line SystemExit when it cannot be used
    (checked before anything is measured)."""
    from pith_graph.api.reads.neo4j import Neo4jReader

    try:
        reader = Neo4jReader.connect(uri, password=resolve_password(uri), timeout=30)
        try:
            return reader.count_papers(PaperFilter())
        finally:
            reader.close()
    except Exception as error:  # StoreError, UsageError, a driver error: all end the run
        first = (str(error).strip().splitlines() or [""])[0]
        raise SystemExit(
            f"bench_api: cannot use Neo4j at {uri} ({type(error).__name__}: {first}); "
            "--backends memory needs none"
        ) from None


def write_results(
    out: Path, args: argparse.Namespace, papers: int, backends: Sequence[str], found: Sequence[Measurement]
) -> list[Measurement]:
    """The rows so far, without duplicates, sorted; written to ``out`` with their ratios."""
    # drop duplicate memory direct rows (the in-process reader has no concurrency)
    unique: dict[tuple[str, str, str, int], Measurement] = {}
    for row in found:
        unique.setdefault((row.backend, row.scenario, row.mode, row.clients), row)
    rows = sorted(unique.values(), key=lambda r: (r.backend, r.scenario, r.clients, r.mode))
    ratios = {}
    for row in rows:
        if row.mode == "http":
            base = unique.get((row.backend, row.scenario, "direct reader", row.clients)) or unique.get(
                (row.backend, row.scenario, "direct reader", 1)
            )
            if base and base.p50_ms:
                key = f"{row.backend}/{row.scenario}/{row.clients} (direct: {base.clients} clients)"
                ratios[key] = round(row.p50_ms / base.p50_ms, 1)
    done = sorted({r.backend for r in rows})
    RESULTS.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "corpus": str(args.corpus),
                "papers": papers,
                "cpus": os.cpu_count(),
                "backends": list(backends),
                "backends_done": done,
                "seconds_per_measurement": args.seconds,
                "max_requests": args.max_requests,
                "rows": [asdict(r) for r in rows],
                "http_over_direct_p50": ratios,
                "median_ms": {k: statistics.median([r.p50_ms for r in rows if r.backend == k]) for k in done},
            },
            indent=2,
        )
    )
    return rows


def corpus(given: Path | None, n: int, seed: int) -> Path:
    """``--corpus``: a folder that exists is used as it is; else the corpus is written there
    (by default, benchmarks/results/corpus-N-seedS), whole before it is used
    (:func:`~pith_graph.testing.corpus.cached_corpus`)."""
    from pith_graph.testing.corpus import cached_corpus

    if given is not None and given.exists():
        return given
    path = given or RESULTS / f"corpus-{n}-seed{seed}"
    return cached_corpus(path, n, seed=seed, say=lambda line: print(line, flush=True))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--corpus", type=Path, help="a corpus folder (default: benchmarks/results/corpus-N-seedS, made once)"
    )
    parser.add_argument("-n", type=int, default=100_000, help="bundles, when the corpus is written")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backends", default="memory,neo4j")
    parser.add_argument("--clients", default="1,32")
    parser.add_argument("--seconds", type=float, default=6.0, help="per measurement")
    parser.add_argument("--max-requests", type=int, default=20_000, help="per measurement")
    parser.add_argument("--neo4j-uri", default=os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"))
    parser.add_argument(
        "--load-neo4j", action="store_true", help="load the corpus into Neo4j first (an empty one)"
    )
    parser.add_argument(
        "--clear", action="store_true", help="with --load-neo4j: DELETE everything in the database first"
    )
    args = parser.parse_args(argv)
    backends = args.backends.split(",")
    held = neo4j_papers(args.neo4j_uri) if "neo4j" in backends else 0
    if args.load_neo4j and held and not args.clear:
        print(
            f"bench_api: {args.neo4j_uri} holds {held} papers: --load-neo4j loads an empty "
            "database only (add --clear to DELETE everything in it first)",
            file=sys.stderr,
        )
        return 2

    args.corpus = corpus(args.corpus, args.n, args.seed)
    keyring = resolve_keyring(args.corpus / "keyring.json")
    client_counts = [int(c) for c in args.clients.split(",")]

    print("loading the corpus into memory ...", flush=True)
    started = time.perf_counter()
    store = MemoryStore()
    run([str(args.corpus)], keyring=keyring, store=store)
    freeze_loaded_objects()  # as `pith-graph serve` does after loading
    memory = MemoryReader(store.graph)
    memory.list_papers(PaperFilter(), 1, None)
    codes = [c.code for c in memory.all_categories()]
    memory.papers_of_categories(codes, 1, None)
    papers = memory.count_papers(PaperFilter())
    print(f"  {papers} papers in {time.perf_counter() - started:.0f} s", flush=True)
    inputs = pick_inputs(memory, random.Random(args.seed))
    if "neo4j" in backends and not args.load_neo4j and held != papers:
        print(f"bench_api: neo4j holds {held} papers, not {papers}: use --load-neo4j", file=sys.stderr)
        return 2
    out = RESULTS / f"bench_api-{time.strftime('%Y%m%d-%H%M%S')}.json"
    rows: list[Measurement] = []
    for backend in backends:
        reader: GraphReader
        if backend == "memory":
            reader = memory
        else:
            from pith_graph.api.reads.neo4j import Neo4jReader
            from pith_graph.loader.stores.neo4j import Neo4jStore

            if args.load_neo4j:
                neo4j_store = Neo4jStore.connect(args.neo4j_uri, password=resolve_password(args.neo4j_uri))
                if args.clear:  # main refused a database holding papers without it
                    neo4j_store.clear()
                neo4j_store.ensure_schema()
                run([str(args.corpus)], keyring=keyring, store=neo4j_store)
                neo4j_store.close()
            reader = Neo4jReader.connect(
                args.neo4j_uri, password=resolve_password(args.neo4j_uri), timeout=30
            )
            held = reader.count_papers(PaperFilter())
            if held != papers:
                reader.close()
                print(f"bench_api: neo4j holds {held} papers, not {papers}", file=sys.stderr)
                return 2
        for scenario in QUERIES:
            for clients in client_counts:
                print(f"{backend} {scenario} {clients} clients ...", flush=True)
                lat, err, secs = direct_load(
                    reader,
                    scenario,
                    inputs,
                    clients if backend != "memory" else 1,
                    args.seconds,
                    args.max_requests,
                )
                rows.append(
                    _measure(
                        backend,
                        scenario,
                        "direct reader",
                        clients if backend != "memory" else 1,
                        lat,
                        err,
                        secs,
                    )
                )
                if clients == 1:
                    lat, err, secs = in_process_load(
                        reader,
                        scenario,
                        inputs,
                        args.seconds,
                        args.max_requests,
                        keyring,
                        backend != "memory",
                    )
                    rows.append(_measure(backend, scenario, "graphql in-process", 1, lat, err, secs))
        with ServerProcess(
            backend, memory if backend == "memory" else None, args.neo4j_uri, keyring
        ) as server:
            for scenario in QUERIES:
                for clients in client_counts:
                    lat, err, secs = http_load(
                        server.port, scenario, inputs, clients, args.seconds, args.max_requests
                    )
                    rows.append(_measure(backend, scenario, "http", clients, lat, err, secs))
        if backend != "memory":
            reader.close()
        write_results(out, args, papers, backends, rows)  # kept should a later backend fail

    rows = write_results(out, args, papers, backends, rows)
    print()
    _print_table(rows)
    ratios = json.loads(out.read_text())["http_over_direct_p50"]
    print("\nHTTP p50 / direct p50 (memory's direct calls: 1 client):", json.dumps(ratios, indent=1))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
