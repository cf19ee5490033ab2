"""Admission under a flood: /healthz and light queries alone against during N heavy ones.

Starts ``pith-graph serve`` (one worker, over real HTTP) on the memory backend, and on Neo4j
when ``--uri`` is given, and measures in interleaved rounds, each flood against a baseline
measured in the same round just before it:

==========  ===================================================================
probe       request
==========  ===================================================================
healthz     ``GET /healthz``
light       ``{ papers(first: 1) { totalCount } }`` (planned after its first one)
new search  a small search document sent for the first time (cost 5, no plan)
==========  ===================================================================

``alone``: the probes one after another on an idle server (``--settle`` seconds after the
last flood, and ``/healthz`` answering 200). ``during``: the same probes, one
after another, while ``--flood`` heavy requests (``--introspections``) sent at once are under
way (from 0.3 s after they were sent until the last is answered). Floods:

- ``search``: distinct heavy search documents (``--aliases``, on Neo4j ``--neo4j-aliases``,
  filtered searches with their facets each, a new filter date per request: no plan, no
  cache), both backends;
- ``introspection`` (Neo4j only): the review's 1 MB introspection (30 aliases of the whole
  schema), distinct by trailing spaces; the server's cost limit is lifted to admit it.

Reported per backend and flood: p50 and max of each probe alone and during, the ratios
during/alone (p50 and max), each round's range, one heavy request's time alone, and how many
flood requests answered, were answered ``TIMEOUT`` (``PITH_API_TIMEOUT_SECONDS``,
``--limit``) or anything else, with the last answer's time. ``--env NAME=VALUE`` sets the
server's environment, e.g. ``PITH_API_NEO4J_EXECUTIONS=4`` to compare admission slots.

    .venv/bin/python benchmarks/bench_admission.py --n 2000 --rounds 3
    .venv/bin/python benchmarks/bench_admission.py --uri bolt://127.0.0.1:7881 --backends neo4j

The corpus is generated once into ``benchmarks/results/corpus-N`` (``bench_neo4j.corpus``).
On Neo4j an empty database is loaded with it first; one that holds papers is served as it
is (``--reload`` clears it and loads the corpus). The password: ``--password`` or
NEO4J_PASSWORD. Results: a table on stdout, JSON in ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import orjson
from bench_neo4j import RESULTS, corpus, shards  # benchmarks/ is on sys.path

from pith_graph.testing.serving import serving

LIGHT = "{ papers(first: 1) { totalCount } }"
NEW_SEARCH = '{{ search(text: "paper {}", first: 5) {{ totalCount edges {{ node {{ title }} }} }} }}'
FACETS = "facets(first: 100) { years { value count } categories { value count } authors { value count } }"
TYPE_REF = "type { name kind ofType { name kind ofType { name } } }"
EVERY_FIELD = (
    "__schema { types { name description fields(includeDeprecated: true) { name description"
    f" args {{ name description {TYPE_REF} }} {TYPE_REF} }} }} }}"
)
INTROSPECTION = "{ " + " ".join(f"s{i}: {EVERY_FIELD}" for i in range(30)) + " }"
WORDS = ("learning", "graph", "model", "paper", "network", "theory", "data", "method")


def heavy_search(k: int, aliases: int) -> str:
    """A document of its own for each ``k``: ``aliases`` filtered searches with facets."""
    parts = []
    for i in range(aliases):
        day = f"{1990 + k % 30}-{1 + (k // 30) % 12:02d}-{1 + (i + k) % 28:02d}"
        text = WORDS[(i + k) % len(WORDS)]
        parts.append(
            f'x{i}: search(text: "{text}", filter: {{submittedFrom: "{day}"}}, first: 20) '
            f"{{ totalCount {FACETS} edges {{ node {{ title }} }} }}"
        )
    return "{ " + " ".join(parts) + " }"


def introspection(k: int) -> str:
    return INTROSPECTION + " " * k


def _code(body: bytes) -> str:
    answer = orjson.loads(body)
    if "errors" not in answer:
        return "answered"
    return str(answer["errors"][0].get("extensions", {}).get("code", "error"))


def _probe(client: httpx.Client, name: str, serial: int) -> tuple[float, bool]:
    """Seconds until the answer, and whether it was a 200 without errors (``/healthz``
    answers 503 when Neo4j's ping takes over 2 s)."""
    started = time.perf_counter()
    if name == "healthz":
        response = client.get("/healthz")
    else:
        query = LIGHT if name == "light" else NEW_SEARCH.format(serial)
        response = client.post("/graphql", json={"query": query})
    seconds = time.perf_counter() - started
    return seconds, response.status_code == 200 and (name == "healthz" or "errors" not in response.json())


PROBES = ("healthz", "light", "new search")


class Prober:
    """The probes, one after another, from this process's main thread."""

    def __init__(self, client: httpx.Client) -> None:
        self.client, self.serial = client, 0

    def once(self, found: dict[str, list[float]], failed: dict[str, int] | None = None) -> None:
        for name in PROBES:
            self.serial += 1
            seconds, ok = _probe(self.client, name, self.serial)
            found.setdefault(name, []).append(seconds)
            if failed is not None and not ok:
                failed[name] = failed.get(name, 0) + 1

    def settle(self, seconds: float) -> None:
        """Wait ``seconds``, then until ``/healthz`` answers 200: work of the last flood that
        timed out may still run (its slot held until it stops, on Neo4j its transaction)."""
        time.sleep(seconds)
        for _ in range(600):
            if _probe(self.client, "healthz", 0)[1]:
                return
            time.sleep(0.1)
        raise RuntimeError("/healthz did not answer 200 within a minute of the flood")


async def _flood(url: str, documents: list[str]) -> list[tuple[float, str]]:
    limits = httpx.Limits(max_connections=len(documents) + 4)
    async with httpx.AsyncClient(base_url=url, timeout=180, limits=limits) as client:
        started = time.perf_counter()

        async def one(document: str) -> tuple[float, str]:
            response = await client.post("/graphql", json={"query": document})
            seconds = time.perf_counter() - started
            if response.status_code != 200:
                return seconds, f"HTTP {response.status_code}"
            return seconds, _code(response.content)

        return await asyncio.gather(*(one(d) for d in documents))


def flood_round(
    url: str, prober: Prober, documents: list[str], probes: int, failed: dict[str, int]
) -> tuple[dict[str, list[float]], dict[str, list[float]], list[tuple[float, str]]]:
    """The probes alone, then during the flood of ``documents``; its answers. Probes that
    did not answer 200 without errors are counted in ``failed`` (alone, none may)."""
    alone: dict[str, list[float]] = {}
    alone_failed: dict[str, int] = {}
    for _ in range(probes):
        prober.once(alone, alone_failed)
    if alone_failed:
        raise RuntimeError(f"probes failed on an idle server: {alone_failed}")
    answers: list[tuple[float, str]] = []
    flood = threading.Thread(target=lambda: answers.extend(asyncio.run(_flood(url, documents))))
    flood.start()
    time.sleep(0.3)  # the flood's requests are all sent and under way
    during: dict[str, list[float]] = {}
    while flood.is_alive():
        prober.once(during, failed)
        time.sleep(0.05)
    flood.join()
    if not during:
        raise RuntimeError("the flood was over before a probe: raise --flood or --aliases")
    return alone, during, answers


def _ms(values: list[float]) -> float:
    return round(1000 * values[0], 1) if len(values) == 1 else round(1000 * statistics.median(values), 1)


def bench_backend(args: argparse.Namespace, backend: str, folder: Path) -> dict[str, Any]:
    env = {
        "PITH_API_WORKERS": "1",
        "PITH_API_TIMEOUT_SECONDS": str(args.limit),
        "PITH_API_MAX_COST": str(10**6),  # the review's introspection, as before it had a cost
    }
    env.update(item.split("=", 1) for item in args.env)
    if backend == "memory":
        serve = [*map(str, shards(folder)), "--trusted-keys", str(folder / "keyring.json")]
        serve += ["--load-workers", "1"]
    else:
        env["NEO4J_PASSWORD"] = args.password or ""
        serve = ["--backend", "neo4j", "--uri", args.uri]
    kinds = ["search"] + (["introspection"] if backend == "neo4j" else [])
    rounds: list[dict[str, Any]] = []
    command = [*serve, "--port", str(args.port), "--workers", "1"]
    with serving(command, env) as url, httpx.Client(base_url=url, timeout=180) as client:
        prober = Prober(client)
        for _ in range(3):  # warm up: plans, caches, the driver's pool
            prober.once({})
        made = iter(range(1, 10**6))  # each document new: no plan, no cache
        aliases = args.aliases if backend == "memory" else args.neo4j_aliases
        for number in range(args.rounds):
            for kind in kinds:  # interleaved: each flood after its own baseline
                if kind == "search":
                    make, count = (lambda k: heavy_search(k, aliases)), args.flood
                else:
                    make, count = introspection, args.introspections
                started = time.perf_counter()
                code = _code(client.post("/graphql", json={"query": make(next(made))}).content)
                heavy_alone = time.perf_counter() - started
                documents = [make(next(made)) for _ in range(count)]
                prober.settle(args.settle)
                load = os.getloadavg()[0]
                failed: dict[str, int] = {}
                alone, during, answers = flood_round(url, prober, documents, args.probes, failed)
                rounds.append(
                    {
                        "round": number,
                        "flood": kind,
                        "load_average_1m": round(load, 2),
                        "heavy_alone_s": round(heavy_alone, 3),
                        "heavy_alone_answer": code,
                        "alone": alone,
                        "during": during,
                        "answers": answers,
                        "probes_failed_during": failed,
                    }
                )
                print(
                    f"  {backend} round {number} {kind}: heavy alone {heavy_alone:.2f} s ({code}), "
                    f"{sum(c == 'answered' for _, c in answers)}/{len(answers)} answered, "
                    f"last at {max(s for s, _ in answers):.2f} s, load {load:.2f}"
                    + (f", probes not 200 during it: {failed}" if failed else ""),
                    flush=True,
                )
    return {
        "floods": {kind: summarise([r for r in rounds if r["flood"] == kind], args.limit) for kind in kinds}
    }


def summarise(rounds: list[dict[str, Any]], limit: float) -> dict[str, Any]:
    probes: dict[str, Any] = {}
    for name in PROBES:
        alone = [v for r in rounds for v in r["alone"][name]]
        during = [v for r in rounds for v in r["during"][name]]
        round_ratios = [
            statistics.median(r["during"][name]) / statistics.median(r["alone"][name]) for r in rounds
        ]
        probes[name] = {
            "alone_p50_ms": _ms(alone),
            "alone_max_ms": round(1000 * max(alone), 1),
            "during_p50_ms": _ms(during),
            "during_max_ms": round(1000 * max(during), 1),
            "during_requests": len(during),
            "ratio_p50": round(statistics.median(during) / statistics.median(alone), 2),
            "ratio_max": round(max(during) / max(alone), 2),
            "round_p50_ratio_range": [round(min(round_ratios), 2), round(max(round_ratios), 2)],
            "round_during_max_range_ms": [
                round(1000 * min(max(r["during"][name]) for r in rounds), 1),
                round(1000 * max(max(r["during"][name]) for r in rounds), 1),
            ],
        }
    counts = [
        {code: sum(c == code for _, c in r["answers"]) for code in {c for _, c in r["answers"]}}
        for r in rounds
    ]
    answered = [c.get("answered", 0) for c in counts]
    timeouts = [c.get("TIMEOUT", 0) for c in counts]
    return {
        "rounds": len(rounds),
        "flood_requests": len(rounds[0]["answers"]),
        "heavy_alone_s_range": [
            min(r["heavy_alone_s"] for r in rounds),
            max(r["heavy_alone_s"] for r in rounds),
        ],
        "answered_range": [min(answered), max(answered)],
        "timeout_range": [min(timeouts), max(timeouts)],
        "other_answers": [{k: v for k, v in c.items() if k not in ("answered", "TIMEOUT")} for c in counts],
        "last_answer_past_limit_s_range": [
            round(min(max(s for s, _ in r["answers"]) for r in rounds) - limit, 2),
            round(max(max(s for s, _ in r["answers"]) for r in rounds) - limit, 2),
        ],
        "load_average_1m_range": [
            min(r["load_average_1m"] for r in rounds),
            max(r["load_average_1m"] for r in rounds),
        ],
        "probes_failed_during": [r["probes_failed_during"] for r in rounds],
        "probes": probes,
    }


def _load_neo4j(args: argparse.Namespace, folder: Path) -> int:
    """The papers the database holds, after loading the corpus into it if it was empty."""
    from pith_graph.loader.facade import resolve_keyring
    from pith_graph.loader.pipeline import run
    from pith_graph.loader.stores.neo4j import Neo4jStore

    with Neo4jStore.connect(args.uri, password=args.password) as store:
        with store.driver.session(database=store.database) as session:
            papers = session.run("MATCH (p:Paper) RETURN count(p) AS n").single(strict=True)["n"]
        if papers and not args.reload:
            print(f"neo4j holds {papers} papers: served as they are (--reload to load the corpus)")
            return int(papers)
        store.ensure_schema()
        store.clear()
        report = run(
            [str(p) for p in shards(folder)],
            keyring=resolve_keyring(folder / "keyring.json"),
            store=store,
            batch_size=1000,
        )
        print(f"loaded {report.accepted} papers into neo4j in {report.seconds:.0f} s", flush=True)
        return int(report.accepted)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=2000, help="bundles in the generated corpus")
    parser.add_argument("--corpus", help="an existing corpus folder (shards + keyring.json)")
    parser.add_argument("--backends", default="memory,neo4j", help="neo4j only with --uri")
    parser.add_argument("--uri", help="Neo4j's Bolt URI (a server of your own: it may be loaded)")
    parser.add_argument("--password", default=os.environ.get("NEO4J_PASSWORD"))
    parser.add_argument("--reload", action="store_true", help="neo4j: clear it and load the corpus")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--flood", type=int, default=30, help="heavy requests sent at once")
    parser.add_argument("--introspections", type=int, default=20, help="neo4j: introspections at once")
    parser.add_argument("--aliases", type=int, default=30, help="memory: searches in a heavy document")
    parser.add_argument("--neo4j-aliases", type=int, default=20, help="neo4j: searches in a heavy document")
    parser.add_argument("--probes", type=int, default=6, help="of each probe alone, per round")
    parser.add_argument("--limit", type=float, default=4.0, help="PITH_API_TIMEOUT_SECONDS")
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="for the server (repeatable)"
    )
    parser.add_argument("--settle", type=float, default=2.0, help="seconds idle before each baseline")
    parser.add_argument("--port", type=int, default=0, help="serve's port (0: any free one)")
    args = parser.parse_args(argv)
    folder = corpus(args.n, args.corpus)
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "n": args.n,
        "cores": os.cpu_count(),
        "settings": {k: v for k, v in vars(args).items() if k != "password"},
        "backends": {},
    }
    out: Path | None = None
    for backend in args.backends.split(","):
        if backend == "neo4j":
            if not args.uri:
                print("neo4j skipped: no --uri")
                continue
            results["neo4j_papers"] = _load_neo4j(args, folder)
        results["backends"][backend] = found = bench_backend(args, backend, folder)
        for kind, flood in found["floods"].items():
            print(
                f"\n{backend}, {flood['flood_requests']} {kind} requests at once ({flood['rounds']} rounds, "
                f"each {flood['heavy_alone_s_range'][0]:.2f}-{flood['heavy_alone_s_range'][1]:.2f} s alone, "
                f"load {flood['load_average_1m_range'][0]:.1f}-{flood['load_average_1m_range'][1]:.1f}): "
                f"answered {flood['answered_range'][0]}-{flood['answered_range'][1]}, "
                f"TIMEOUT {flood['timeout_range'][0]}-{flood['timeout_range'][1]}, last answer "
                f"{flood['last_answer_past_limit_s_range'][0]:+.2f}..{flood['last_answer_past_limit_s_range'][1]:+.2f} s "
                f"past the {args.limit:g} s limit"
            )
            if any(flood["probes_failed_during"]):
                print(f"probes not answered 200 during the flood, per round: {flood['probes_failed_during']}")
            print(
                f"{'probe':12s} {'alone p50':>10s} {'max':>8s} {'during p50':>11s} {'max':>8s} "
                f"{'x p50':>7s} {'x max':>7s}  round x p50"
            )
            for name, row in flood["probes"].items():
                low, high = row["round_p50_ratio_range"]
                print(
                    f"{name:12s} {row['alone_p50_ms']:8.1f}ms {row['alone_max_ms']:6.1f}ms "
                    f"{row['during_p50_ms']:9.1f}ms {row['during_max_ms']:6.1f}ms "
                    f"{row['ratio_p50']:7.2f} {row['ratio_max']:7.2f}  {low:.2f}-{high:.2f}"
                )
        RESULTS.mkdir(parents=True, exist_ok=True)
        out = RESULTS / f"bench_admission-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.write_text(json.dumps(results, indent=2))  # again after each backend
    print(f"\nresults: {out}" if out else "nothing measured")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
