"""pith-graph's GraphQL API side by side with @neo4j/graphql 7 on Apollo Server, over one Neo4j.

    .venv/bin/python benchmarks/bench_peer.py [--n 32000] [--rounds 5] [--seconds 6]

What one run does:

1. installs the peer (``benchmarks/peer``: @neo4j/graphql, @apollo/server, graphql,
   neo4j-driver, pinned by its package-lock.json) into ``benchmarks/peer/node_modules`` with
   ``npm ci``, and checks that ``wrk`` is there (as root, installs Debian's package);
2. writes a generated corpus of ``--n`` bundles (``pith_graph.testing.write_corpus``, cached
   in ``benchmarks/results/corpus-N-seedS``, which bench_workers.py and bench_overhead.py use
   too), starts a private Neo4j with ``scripts/neo4j`` (temporary data folder, free Bolt and
   HTTP ports) and loads it with ``pith-graph load --backend neo4j``;
3. serves that database with ``pith-graph serve --backend neo4j`` (one uvicorn process) and
   with the peer (one Node process), both on 127.0.0.1;
4. picks inputs from the database (DOIs, the authors and the categories with the most papers),
   asks both servers every scenario for every input and compares the normalised answers: any
   difference stops the run (``peer_queries.py`` holds the queries, ``peer_servers.py`` the set-up);
5. counts the Cypher statements and transactions each server sends per request, through a
   counting Bolt proxy (``bolt_count.py``) in front of a second instance of each server;
6. measures, in ``--rounds`` rounds that alternate which server goes first, with ``wrk`` (one
   thread, keep-alive connections, a Lua script rotating the requests' bodies): p50/p99
   latency with 1 client and throughput/p99 with 16 concurrent clients, plus the CPU time the
   server and Neo4j spent per request;
7. prints ours ÷ peer per scenario (median and range over rounds) and writes everything to
   ``benchmarks/results/peer.json``.

``--uri`` uses a running Neo4j instead: an empty database is loaded (the corpus is generated
only then); one that holds data is served as it is, unless ``--clear`` (which deletes
everything in it) is given. ``--keep``
leaves the servers (and a private Neo4j) running at the end.

Why wrk: it is C on epoll, so its one thread costs a few microseconds per request and leaves
the two cores to the servers and Neo4j, where a Python client would take a good part of one.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import neo4j
from bolt_count import BoltCounter  # benchmarks/ is the script's folder, on sys.path
from peer_queries import OURS, PEER, SCENARIOS, end_cursor, normalise, pick_inputs, variables
from peer_servers import (
    RESULTS,
    WRK_SCRIPT,
    PrivateNeo4j,
    Server,
    corpus,
    count_papers,
    ensure_wrk,
    install_peer,
    load,
    post,
    process_cpu_seconds,
    say,
    uptime,
)

QUERIES = {"ours": OURS, "peer": PEER}
CLIENTS = (1, 16)


def ask(server: Server, scenario: str, values: dict[str, Any]) -> dict[str, Any]:
    body = {"query": QUERIES[server.kind][scenario], "variables": values}
    answer = post(server.url, body)
    if answer.get("errors") or not answer.get("data"):
        raise SystemExit(f"{server.kind} answered {scenario} {values} with errors: {answer.get('errors')}")
    return answer["data"]


# -- answers ---------------------------------------------------------------------------------


def check_answers(
    ours: Server, peer: Server, inputs: dict[str, list[str]]
) -> dict[str, dict[str, list[str]]]:
    """Ask both servers everything, compare the normalised answers (exit on a difference) and
    return each server's request bodies per scenario (scenario (c): page 1, then page 2 with
    the cursor that server gave)."""
    bodies: dict[str, dict[str, list[str]]] = {"ours": {}, "peer": {}}
    for scenario in SCENARIOS:
        for server in (ours, peer):
            bodies[server.kind][scenario] = []
        pages = 2 if scenario == "c_category_newest_50" else 1  # (c): the first page, then the next
        for value in inputs[scenario]:
            after: dict[str, str | None] = {"ours": None, "peer": None}
            for page in range(pages):
                answers = {}
                for server in (ours, peer):
                    values = variables(scenario, value, after[server.kind])
                    data = ask(server, scenario, values)
                    answers[server.kind] = normalise[server.kind](scenario, data)
                    query = QUERIES[server.kind][scenario]
                    bodies[server.kind][scenario].append(json.dumps({"query": query, "variables": values}))
                    if scenario == "c_category_newest_50":
                        after[server.kind] = end_cursor(server.kind, data)
                if answers["ours"] != answers["peer"]:
                    raise SystemExit(
                        f"ANSWERS DIFFER for {scenario} {value!r} (page {page + 1}):\n"
                        f"ours: {json.dumps(answers['ours'])[:2000]}\npeer: {json.dumps(answers['peer'])[:2000]}"
                    )
                if answers["ours"] in (None, [], 0):
                    raise SystemExit(f"{scenario} {value!r} found nothing on either server: a vacuous input")
        say(f"  {scenario}: {len(bodies['ours'][scenario])} requests answer the same on both")
    return bodies


# -- statements per request ------------------------------------------------------------------


def count_statements(
    uri: str, env: dict[str, str], bodies: dict[str, dict[str, list[str]]], log_dir: Path, repeat: int = 3
) -> dict[str, Any]:
    """Statements, transactions and database time per request, seen by a counting Bolt proxy
    in front of a second instance of each server."""
    target = urlparse(uri)
    counter = BoltCounter(target.hostname or "127.0.0.1", target.port or 7687)
    found: dict[str, Any] = {}
    try:
        for kind in ("ours", "peer"):
            server = Server(kind, counter.uri, env, log_dir)
            try:
                for scenario in SCENARIOS:
                    requests = [json.loads(body) for body in bodies[kind][scenario]]
                    for body in requests:  # warm: plans cached, connections pooled
                        post(server.url, body)
                    time.sleep(0.2)
                    counter.reset()
                    for _ in range(repeat):
                        for body in requests:
                            post(server.url, body)
                    time.sleep(0.2)
                    tally = counter.snapshot()
                    n = repeat * len(requests)
                    found.setdefault(kind, {})[scenario] = {
                        "requests": n,
                        "statements_per_request": round(tally.statements / n, 2),
                        "transactions_per_request": round(tally.transactions / n, 2),
                        "explicit_transactions_per_request": round(tally.explicit_transactions / n, 2),
                        "records_per_request": round(tally.records / n, 1),
                        "database_ms_per_request": round(1000 * tally.statement_seconds / n, 2),
                        "failures": tally.failures,
                        "statements": {
                            text: {
                                "per_request": round(count / n, 2),
                                "ms_each": round(1000 * secs / count, 3),
                            }
                            for text, (count, secs) in sorted(tally.by_text.items(), key=lambda kv: -kv[1][1])
                            if count
                        },
                    }
            finally:
                server.stop()
    finally:
        counter.close()
    return found


# -- timing ----------------------------------------------------------------------------------


def run_wrk(
    wrk: str, server: Server, bodies_file: Path, clients: int, seconds: int, neo4j_pid: int | None
) -> dict[str, Any]:
    command = [wrk, "-t1", f"-c{clients}", f"-d{seconds}s", "--timeout", "30s", "-s", str(WRK_SCRIPT)]
    command += [server.url, "--", str(bodies_file)]
    cpu_server, cpu_db = server.cpu_seconds(), process_cpu_seconds(neo4j_pid) if neo4j_pid else float("nan")
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120, check=False)
    cpu_server, cpu_db = (
        server.cpu_seconds() - cpu_server,
        (process_cpu_seconds(neo4j_pid) if neo4j_pid else float("nan")) - cpu_db,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"wrk failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    figures = json.loads(lines[-1])
    requests = figures["requests"]
    seconds_run = figures["duration_us"] / 1e6
    return {
        "requests": requests,
        "seconds": round(seconds_run, 2),
        "throughput": round(requests / seconds_run, 1),
        "p50_ms": figures["p50_us"] / 1000,
        "p90_ms": figures["p90_us"] / 1000,
        "p99_ms": figures["p99_us"] / 1000,
        "max_ms": figures["max_us"] / 1000,
        "bad_answers": figures["bad"],
        "socket_errors": figures["socket_errors"],
        "server_cpu_ms_per_request": round(1000 * cpu_server / max(requests, 1), 3),
        "neo4j_cpu_ms_per_request": round(1000 * cpu_db / max(requests, 1), 3),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


def measure(
    wrk: str,
    servers: dict[str, Server],
    bodies_files: dict[tuple[str, str], Path],
    args: argparse.Namespace,
    neo4j_pid: int | None,
) -> list[dict[str, Any]]:
    say(f"warming up ({args.warmup} s per server and scenario at 16 clients) ...")
    for scenario in SCENARIOS:
        for kind, server in servers.items():
            run_wrk(wrk, server, bodies_files[kind, scenario], 16, args.warmup, neo4j_pid)
    rows: list[dict[str, Any]] = []
    for round_ in range(1, args.rounds + 1):
        order = ("ours", "peer") if round_ % 2 else ("peer", "ours")
        say(f"round {round_}/{args.rounds} ({order[0]} first), load average {os.getloadavg()[0]:.2f}")
        for scenario in SCENARIOS:
            for clients in CLIENTS:
                for kind in order:
                    row = run_wrk(
                        wrk, servers[kind], bodies_files[kind, scenario], clients, args.seconds, neo4j_pid
                    )
                    row.update(round=round_, scenario=scenario, server=kind, clients=clients)
                    rows.append(row)
                    flag = f"  {row['bad_answers']} BAD" if row["bad_answers"] or row["socket_errors"] else ""
                    say(
                        f"  {scenario:<26} {kind:<4} {clients:>2} clients: p50 {row['p50_ms']:7.2f} ms"
                        f"  p99 {row['p99_ms']:7.2f} ms  {row['throughput']:8.1f} req/s{flag}"
                    )
    return rows


METRICS = (  # name, clients, field, unit
    ("p50@1", 1, "p50_ms", "ms"),
    ("p99@1", 1, "p99_ms", "ms"),
    ("throughput@16", 16, "throughput", "req/s"),
    ("p99@16", 16, "p99_ms", "ms"),
)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per scenario and metric: each server's median and range, and ours ÷ peer per round."""

    def value(round_: int, scenario: str, kind: str, clients: int, field: str) -> float:
        (row,) = [
            r
            for r in rows
            if (r["round"], r["scenario"], r["server"], r["clients"]) == (round_, scenario, kind, clients)
        ]
        return float(row[field])

    rounds = sorted({r["round"] for r in rows})
    summary: dict[str, Any] = {}
    for scenario in SCENARIOS:
        for name, clients, field, unit in METRICS:
            ours = [value(r, scenario, "ours", clients, field) for r in rounds]
            peer = [value(r, scenario, "peer", clients, field) for r in rounds]
            ratios = [o / p for o, p in zip(ours, peer, strict=True)]
            summary.setdefault(scenario, {})[name] = {
                "unit": unit,
                "ours": {"median": statistics.median(ours), "min": min(ours), "max": max(ours)},
                "peer": {"median": statistics.median(peer), "min": min(peer), "max": max(peer)},
                "ratio": {
                    "median": round(statistics.median(ratios), 3),
                    "min": round(min(ratios), 3),
                    "max": round(max(ratios), 3),
                },
            }
        for kind in ("ours", "peer"):
            cpu = [
                r for r in rows if r["scenario"] == scenario and r["server"] == kind and r["clients"] == 16
            ]
            summary[scenario].setdefault("cpu_ms_per_request@16", {})[kind] = {
                "server": statistics.median(r["server_cpu_ms_per_request"] for r in cpu),
                "neo4j": statistics.median(r["neo4j_cpu_ms_per_request"] for r in cpu),
            }
    return summary


def print_table(summary: dict[str, Any], statements: dict[str, Any]) -> None:
    def span(stats: dict[str, float], digits: int) -> str:
        return f"{stats['median']:.{digits}f} ({stats['min']:.{digits}f}–{stats['max']:.{digits}f})"

    header = f"{'scenario':<26} {'metric':<14} {'ours':>24} {'peer':>24} {'ours ÷ peer':>22}"
    say("\n" + header + "\n" + "-" * len(header))
    for scenario, metrics in summary.items():
        for name, _, _, unit in METRICS:
            m = metrics[name]
            digits = 0 if unit == "req/s" else 2
            label = f"{name} {unit}"
            say(
                f"{scenario:<26} {label:<14} {span(m['ours'], digits):>24} {span(m['peer'], digits):>24}"
                f" {span(m['ratio'], 2):>22}"
            )
        cpu = metrics["cpu_ms_per_request@16"]
        cells = [
            f"{cpu[kind]['server']:.2f} + {cpu[kind]['neo4j']:.2f}".replace("nan", "n/a")
            for kind in ("ours", "peer")
        ]
        say(f"{scenario:<26} {'CPU ms/req':<14} {cells[0]:>24} {cells[1]:>24}")
        if statements:
            cells = []
            for kind in ("ours", "peer"):
                s = statements[kind][scenario]
                cells.append(
                    f"{s['statements_per_request']:g} stmt, {s['transactions_per_request']:g} tx, {s['database_ms_per_request']:.1f} ms"
                )
            say(f"{scenario:<26} {'Cypher/req':<14} {cells[0]:>24} {cells[1]:>24}")
    say(
        "\nratios: below 1 is ours faster for latency (p50, p99); above 1 is ours faster for throughput."
        "\nCPU ms/req: CPU time of the server process + of Neo4j per request at 16 clients (median over rounds)."
        "\nCypher/req: statements, transactions, and ms from each RUN to its last result, per request, seen by"
        "\n  the counting Bolt proxy with 1 client (a busy machine's scheduling delays count too)."
    )


# -- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--n", type=int, default=32_000, help="bundles in the generated corpus (default 32000)"
    )
    parser.add_argument("--seed", type=int, default=7, help="corpus seed")
    parser.add_argument("--corpus", help="an existing `python -m pith_graph.testing.corpus` folder")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=6, help="per measurement (whole seconds)")
    parser.add_argument(
        "--warmup", type=int, default=3, help="seconds per server and scenario before round 1"
    )
    parser.add_argument("--inputs", type=int, default=8, help="distinct inputs per scenario")
    parser.add_argument("--uri", help="a running Neo4j to use instead of a private one (see --clear)")
    parser.add_argument("--clear", action="store_true", help="with --uri: DELETE everything in it, then load")
    parser.add_argument("--user", default=os.environ.get("NEO4J_USER", "neo4j"))
    parser.add_argument("--password", default=os.environ.get("NEO4J_PASSWORD"))
    parser.add_argument("--database", default=os.environ.get("NEO4J_DATABASE", "neo4j"))
    parser.add_argument("--no-count", action="store_true", help="skip counting statements per request")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="our serving processes (default 1: like the peer's one Node process; serve's own default is one per core)",
    )
    parser.add_argument("--keep", action="store_true", help="leave the servers (and a private Neo4j) running")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.seconds < 1 or args.inputs < 1:
        parser.error("--rounds, --seconds and --inputs must be at least 1")

    started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    before = {"uptime": uptime(), "loadavg": os.getloadavg()}
    say(f"before: {before['uptime']}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    versions = install_peer()
    wrk = ensure_wrk()
    # A private Neo4j starts empty, so it always needs the corpus; with --uri it is made (or
    # read) only when the database is to be loaded.
    folder = None if args.uri else corpus(args.n, args.seed, args.corpus)

    private = None if args.uri else PrivateNeo4j()
    uri = private.uri if private else args.uri
    password = args.password if private is None else private.password
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEO4J_", "PITH_API_"))}
    env.update(NEO4J_USER=args.user, NEO4J_DATABASE=args.database)
    if password:
        env["NEO4J_PASSWORD"] = password
    auth = (args.user, password) if password else None
    log_dir = Path(tempfile.mkdtemp(prefix="bench-peer-logs-"))
    servers: dict[str, Server] = {}
    try:
        with neo4j.GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF") as driver:
            held = count_papers(driver, args.database)
            if held and args.clear:
                say(f"--clear: deleting the {held} papers (and everything else) in {uri} ...")
                with driver.session(database=args.database) as session:  # IN TRANSACTIONS: auto-commit only
                    session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS").consume()
                held = 0
            if held:
                say(f"{uri} holds {held} papers: serving them as they are (--clear to reload)")
            else:
                folder = folder or corpus(args.n, args.seed, args.corpus)
                say(f"loading {folder} into {uri} ...")
                load(folder, uri, env)
            papers = count_papers(driver, args.database)
            inputs = pick_inputs(driver, args.database, args.inputs)
            server_agent = driver.get_server_info().agent
        say(f"{papers} papers in Neo4j ({server_agent}); peer: @neo4j/graphql {versions['@neo4j/graphql']}")

        say("starting both servers ...")
        servers = {kind: Server(kind, uri, env, log_dir, args.workers) for kind in ("ours", "peer")}
        say(f"  ours {servers['ours'].url}   peer {servers['peer'].url}")
        say("comparing answers ...")
        bodies = check_answers(servers["ours"], servers["peer"], inputs)
        bodies_files = {}
        for kind, per_scenario in bodies.items():
            for scenario, lines in per_scenario.items():
                path = log_dir / f"{kind}-{scenario}.jsonl"
                path.write_text("\n".join(lines) + "\n")
                bodies_files[kind, scenario] = path

        statements: dict[str, Any] = {}
        if not args.no_count:
            say("counting Cypher statements per request (counting Bolt proxy) ...")
            statements = count_statements(uri, env, bodies, log_dir)

        neo4j_pid = private.pid if private else None
        rows = measure(wrk, servers, bodies_files, args, neo4j_pid)
        summary = summarise(rows)
        after = {"uptime": uptime(), "loadavg": os.getloadavg()}
        print_table(summary, statements)
        say(f"\nbefore: {before['uptime']}\nafter:  {after['uptime']}")
        out = RESULTS / ("peer.json" if args.workers == 1 else f"peer-workers{args.workers}.json")
        out.write_text(
            json.dumps(
                {
                    "when": started_at,
                    "machine": {"cpus": os.cpu_count(), "before": before, "after": after},
                    "versions": {
                        **versions,
                        "python": platform.python_version(),
                        "neo4j (python driver)": neo4j.__version__,
                        "server": server_agent,
                    },
                    "corpus": {
                        "folder": str(folder) if folder else None,  # None: --uri's data as it was
                        "n": args.n,
                        "seed": args.seed,
                        "papers": papers,
                    },
                    "settings": {k: v for k, v in vars(args).items() if k != "password"},
                    "inputs": inputs,
                    "queries": QUERIES,
                    "statements": statements,
                    "summary": summary,
                    "rows": rows,
                },
                indent=2,
                ensure_ascii=False,
            )
            + "\n"
        )
        say(f"wrote {out}")
    finally:
        if args.keep:
            for kind, server in servers.items():
                say(f"kept {kind}: {server.url} (pid {server.process.pid}, log {server.log})")
            if private:
                say(f"kept Neo4j: {private.uri}; stop it with NEO4J_DATA={private.data} scripts/neo4j stop")
        else:
            for server in servers.values():
                server.stop()
            if private:
                private.stop()
            shutil.rmtree(log_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
