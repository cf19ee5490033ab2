"""Where the time of ``pith-graph import``'s schema step goes, and what other orders cost.

    .venv/bin/python benchmarks/bench_schema_step.py --csv DIR [--rounds 2]
        [--orders in-order,indexes-first,one-transaction,two-sessions] [--env NAME:VAR=VALUE]...

``DIR`` is a ``pith-graph import --csv-only`` folder. neo4j-admin builds a store from it once
(no constraints, no indexes: what the import's schema step starts from); then in each round,
for each order (and each ``--env`` setting of ``scripts/neo4j``'s environment, e.g.
``pc2g:NEO4J_PAGECACHE=2g``; ``plugins:NEO4J_PLUGINS=on`` registers APOC and GDS, which the
import's server leaves out since 0.9.15), a copy of that store is served by a private server
(``local_server``, with the import's ``NEO4J_PLUGINS``) and timed: the start until Bolt answers, the first query,
each constraint and index statement, the wait until every index is online, the rest of
``ensure_schema`` (its check of ``SHOW INDEXES``), each upgrade pass ``ensure_schema`` runs for
loads (``upgrade_authors``, ``fold_doi_aliases``, ``upgrade_latest``: the import leaves them
out since 0.9.13), ``counts()`` and the stop. Orders: ``in-order`` (``schema_statements()``
one at a time, as ``ensure_schema``), ``indexes-first`` (the indexes, which Neo4j populates in
the background, then the constraints, whose creation blocks while it populates),
``one-transaction`` (every index in one transaction, then the constraints) and
``two-sessions`` (the indexes, then the constraints from two sessions at once). Prints one
JSON line per run with the load average; writes benchmarks/results/schema-step-*.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import neo4j

from pith_graph.loader.bulk.neo4j_admin import DATABASE, IMPORT_SERVER, local_server, run_importer
from pith_graph.loader.doi_upgrade import fold_doi_aliases
from pith_graph.loader.stores import cypher_schema
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.loader.stores.neo4j_latest import upgrade_latest
from pith_graph.loader.stores.neo4j_names import upgrade_authors
from pith_graph.loader.stores.neo4j_schema import ensure_schema
from pith_graph.schema.database import constraints, indexes

RESULTS = Path(__file__).resolve().parent / "results"
ORDERS = ("in-order", "indexes-first", "one-transaction", "two-sessions")


def build_store(csv: Path, base: Path) -> float:
    """The store neo4j-admin builds from the CSV files of ``csv``; its seconds."""
    lines = (csv / "neo4j-admin.args").read_text().splitlines()
    args = [line for line in lines if line.startswith(("--nodes", "--relationships", "--read-buffer"))]
    started = time.perf_counter()
    run_importer(
        base,
        args,
        overwrite=True,
        threads=os.cpu_count() or 1,
        heap="1g",
        memory="2G",
        report_file=base / "import.report",
        log=base / "logs" / "import.log",
    )
    return time.perf_counter() - started


def _write(tx: neo4j.ManagedTransaction, statements: list[str]) -> None:
    for statement in statements:
        tx.run(statement).consume()


def _create(store: Neo4jStore, order: str, times: dict[str, float]) -> None:
    cons = [cypher_schema.constraint_statement(spec) for spec in constraints()]
    idx = [cypher_schema.index_statement(spec) for spec in indexes()]
    with store.driver.session(database=DATABASE) as session:

        def each(statements: list[str]) -> None:
            for statement in statements:
                name = statement.split(" IF ")[0].split()[-1]  # CREATE [FULLTEXT] INDEX|CONSTRAINT name
                started = time.perf_counter()
                session.execute_write(_write, [statement])
                times[name] = time.perf_counter() - started

        if order == "in-order":
            each(cons + idx)
        elif order == "one-transaction":
            started = time.perf_counter()
            session.execute_write(_write, idx)
            times["indexes"] = time.perf_counter() - started
            each(cons)
        else:
            each(idx)
            if order == "indexes-first":
                each(cons)
            else:

                def create(statements: list[str]) -> None:
                    with store.driver.session(database=DATABASE) as other:
                        other.execute_write(_write, statements)

                started = time.perf_counter()
                threads = [threading.Thread(target=create, args=(cons[i::2],)) for i in range(2)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                times["constraints"] = time.perf_counter() - started
        started = time.perf_counter()
        session.run("CALL db.awaitIndexes(3600)").consume()
        times["await"] = time.perf_counter() - started
        started = time.perf_counter()
        ensure_schema(session, 3600)
        times["ensure_schema_check"] = time.perf_counter() - started
        for name, upgrade in (
            ("upgrade_authors", upgrade_authors),
            ("fold_doi_aliases", fold_doi_aliases),
            ("upgrade_latest", upgrade_latest),
        ):
            started = time.perf_counter()
            changed = upgrade(session)
            times[name] = time.perf_counter() - started
            times[f"{name}_changed"] = changed


def one_run(base: Path, order: str, env: dict[str, str]) -> dict[str, Any]:
    """A copy of ``base`` served and its schema created in ``order``; the seconds of each part."""
    trial = Path(tempfile.mkdtemp(prefix="bench-schema-"))
    env = {"NEO4J_PLUGINS": IMPORT_SERVER["NEO4J_PLUGINS"], **env}  # as the import's server, unless told
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)  # scripts/neo4j's environment, as local_server passes it on
    try:
        shutil.rmtree(trial)
        subprocess.run(["cp", "-a", str(base), str(trial)], check=True)
        times: dict[str, float] = {}
        load = os.getloadavg()[0]
        started = time.perf_counter()
        with local_server(trial, importing=False) as (uri, password):
            times["start"] = time.perf_counter() - started
            step = time.perf_counter()
            with Neo4jStore.connect(uri, password=password, database=DATABASE) as store:
                times["connect"] = time.perf_counter() - step
                _create(store, order, times)
                step = time.perf_counter()
                store.counts()
                times["counts"] = time.perf_counter() - step
            stopping = time.perf_counter()
        times["stop"] = time.perf_counter() - stopping
        times["total"] = time.perf_counter() - started
        passes = sum(times[name] for name in ("upgrade_authors", "fold_doi_aliases", "upgrade_latest"))
        times["total_without_passes"] = times["total"] - passes
        return {"order": order, "env": env, "loadavg_1m_before": round(load, 2), **times}
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(trial, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--csv", required=True, help="a pith-graph import --csv-only folder")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--orders", default="in-order")
    parser.add_argument("--env", action="append", default=[], metavar="NAME:VAR=VALUE[;VAR=VALUE]")
    args = parser.parse_args()
    orders = [order.strip() for order in args.orders.split(",") if order.strip()]
    if not orders or any(order not in ORDERS for order in orders):
        parser.error(f"--orders: a list of {', '.join(ORDERS)}")
    settings: dict[str, dict[str, str]] = {"default": {}}
    for given in args.env:
        name, _, assignments = given.partition(":")
        pairs = [item.split("=", 1) for item in assignments.split(";") if item.strip()]
        if not name or not pairs or any(len(pair) != 2 for pair in pairs):
            parser.error(f"--env {given!r}: expected NAME:VAR=VALUE[;VAR=VALUE]")
        settings[name] = {var.strip(): value for var, value in pairs}
    base = Path(tempfile.mkdtemp(prefix="bench-schema-base-"))
    runs: list[dict[str, Any]] = []
    try:
        seconds = build_store(Path(args.csv).resolve(), base)
        print(f"neo4j-admin built the store in {seconds:.1f} s", file=sys.stderr)
        for _ in range(args.rounds):
            for order in orders:
                for name, env in settings.items():
                    run = {"setting": name, **one_run(base, order, env)}
                    runs.append(run)
                    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in run.items()}))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"schema-step-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"csv": args.csv, "runs": runs}, indent=2) + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
