"""What one low-ranked trusted key can cost everyone else: amplification per input byte.

An attacker holding a trusted but low-ranked key signs bundles that pass every check and stay
within every input limit (``--max-bytes``, 1 MiB by default). This script builds the worst
shapes it found (many events, many authors, many categories, many aliases, long strings, many
tiny JSON containers) next to an honest baseline of the same total size (ordinary bundles,
``pith_graph.testing.corpus``-like) and measures, in the same run:

1. ``verify``: CPU to parse and verify, per KB of input (and ``load --backend memory``: verify,
   build rows and write into the in-memory store), as a ratio to the honest baseline;
2. ``neo4j``: the time to write the same input into a scratch Neo4j (``--neo4j-uri``);
3. ``api``: the API's latency over HTTP (``pith-graph serve``) for queries about honest papers
   and authors, in the honest world alone and with the attacker's supernodes (papers naming an
   honest author, an honest category, sharing authors with honest papers).

    .venv/bin/python benchmarks/bench_attacker_cost.py verify --repeat 5
    .venv/bin/python benchmarks/bench_attacker_cost.py api --backend memory
    .venv/bin/python benchmarks/bench_attacker_cost.py neo4j --neo4j-uri bolt://127.0.0.1:7831

Every figure is a range (min..max over ``--repeat`` interleaved rounds): the machine is shared.
Figures of 2 December 2026 (2 shared cores), factor per input byte against honest bundles:
verify 0.1-3.3x for every shape; load --backend memory 16-25x for the most authors (25,000
short names, ``MAX_AUTHORS``), 3-4x categories, 2x aliases, ~1x the rest; Neo4j writes 25-35x
authors, 4-9x categories. API (3,000 papers naming honest authors and cs.LG, 4 bundles of
25,000 authors naming 10 honest authors): ``coauthors`` of an honest author 1 -> 60-145 ms
(memory), 12-93 -> 96-156 ms (Neo4j); every other honest query within about 2x; nothing past
PITH_API_TIMEOUT_SECONDS (the attacker's own 25,000-author paper's ``authors(first: 100)
{ coauthors }``: 1.3-2.3 s; 6-10 s, TIMEOUT, at 89,000 authors before ``MAX_AUTHORS``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from pith_graph.loader.keyring import Keyring, PinnedKey, default_keyring
from pith_graph.loader.parse import DEFAULT_MAX_BYTES, parse_bundle
from pith_graph.loader.pipeline import run
from pith_graph.loader.rows import build_rows
from pith_graph.loader.stores.base import GraphStore
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.verify import MAX_AUTHORS, verify_bundle
from pith_graph.testing.payloads import event_shell
from pith_graph.testing.signer import PaperSpec, SignerIdentity, build_bundle, resign, seal_event

Json = dict[str, Any]

HIGH = SignerIdentity.from_seed(b"amp-high", key_id="amp-high-key", signer_id="high.invalid")
LOW = SignerIdentity.from_seed(b"amp-low", key_id="amp-low-key", signer_id="low.invalid")
# built by hand: HIGH is pinned with the type its events claim, pith_registry, which keys files and resolve_keyring keep for pith.science
KEYRING: Keyring = default_keyring().with_keys(
    [
        PinnedKey(HIGH.key_id, HIGH.public_key, HIGH.signer_id, signer_type=HIGH.signer_type),
        PinnedKey(LOW.key_id, LOW.public_key, LOW.signer_id),
    ]
)
HONEST_AUTHORS = [f"Honest Author{i:03d}" for i in range(60)]
HONEST_CATS = ["cs.LG", "stat.ML", "math.OC", "cs.AI"]
TARGET = DEFAULT_MAX_BYTES - 4096  # every attacker bundle stays under --max-bytes


# -- bundles -----------------------------------------------------------------------------------


def honest_spec(n: int) -> PaperSpec:
    authors = sorted({HONEST_AUTHORS[(n * 7 + k * 13) % len(HONEST_AUTHORS)] for k in range(3 + n % 4)})
    return PaperSpec.example(
        f"2401.{n + 1:05d}",
        title=f"Honest results on learning number {n}",
        authors=authors,
        abstract_excerpt=f"We study honest problem {n} with gradient methods and learning.",
        primary_cat=HONEST_CATS[n % 4],
        cross_cats=[HONEST_CATS[(n + 1) % 4]],
        submitted_at=f"2024-{1 + n % 12:02d}-05T10:00:00Z",
    )


def honest_bundles(total_bytes: int) -> list[bytes]:
    """Ordinary bundles by the top signer, ``total_bytes`` of them in all."""
    out: list[bytes] = []
    size = 0
    n = 0
    while size < total_bytes:
        data = orjson.dumps(build_bundle(honest_spec(n), HIGH))
        out.append(data)
        size += len(data) + 1
        n += 1
    return out


def _attacker_spec(n: int, **changes: Any) -> PaperSpec:
    fields: dict[str, Any] = {
        "title": f"Attacker paper {n} on learning",
        "authors": ["Honest Author000", "Al Tacker"],
        "primary_cat": "cs.LG",
        "submitted_at": "2025-06-05T10:00:00Z",
    }
    return PaperSpec.example(f"2501.{n + 1:05d}", **{**fields, **changes})


def _fit(make: Callable[[int], bytes], probe: int = 16) -> bytes:
    """The largest bundle ``make(count)`` under :data:`TARGET` (size linear in ``count``)."""
    small, double = len(make(probe)), len(make(2 * probe))
    count = probe + int((TARGET - small) * probe / (double - small))
    while len(data := make(count)) > TARGET:
        count -= max(1, count // 200)
    return data


def _many_events(count: int) -> bytes:
    bundle = build_bundle(_attacker_spec(1), LOW)
    for i in range(count):  # the smallest snapshot shape admits, older than the real one
        paper: Json = dict.fromkeys(
            ("title", "license", "primary_cat", "authors_text", "abstract_excerpt"), ""
        )
        paper |= {"submitted_at": "2024-01-01T00:00:00Z", "cross_cats": []}
        event = event_shell(
            "graph_snapshot",
            bundle["pith_number"],
            "graph",
            {"graph_snapshot": {"paper": paper}},
            f"2025-01-{1 + i % 28:02d}T10:00:00Z",
        )
        bundle["events"].append(seal_event(event, LOW, signed_at="2026-02-02T10:00:00.000000Z"))
    return orjson.dumps(resign(bundle, LOW, refresh_events=False))


def _names(count: int, start: int = 0) -> list[str]:
    digits = "abcdefghijklmnopqrstuvwxyz"
    out = []
    for i in range(start, start + count):
        name = ""
        while True:
            i, r = divmod(i, 26)
            name += digits[r]
            if not i:
                break
        out.append(name)
    return out


def _many_authors(count: int, paper: int = 2) -> bytes:
    """Ten honest authors (their name keys) and ``count`` others, at most :data:`MAX_AUTHORS`
    in all (verification refuses more: before that limit, 1 MiB held about 90,000)."""
    names = [*HONEST_AUTHORS[:10], *_names(min(count, MAX_AUTHORS - 10), paper * 100_000)]
    names[0] = names[0].upper()
    return orjson.dumps(build_bundle(_attacker_spec(paper, authors=names), LOW))


def _many_categories(count: int) -> bytes:
    cats = [f"c.{name}" for name in _names(count)]
    return orjson.dumps(build_bundle(_attacker_spec(3, cross_cats=cats), LOW))


def _many_aliases(count: int) -> bytes:
    bundle = build_bundle(_attacker_spec(4), LOW)
    bundle["source_aliases"] += [
        {"alias_kind": "doi", "alias_value": f"10.1/{name}", "created_at": "x"} for name in _names(count)
    ]
    return orjson.dumps(resign(bundle, LOW, refresh_canonical=False))


def _long_strings(count: int) -> bytes:
    long = "w" * count
    spec = _attacker_spec(5, title=f"learning {long}", abstract_excerpt=f"learning {long}")
    return orjson.dumps(build_bundle(spec, LOW))


def _tiny_containers(count: int) -> bytes:
    bundle = build_bundle(_attacker_spec(6), LOW)
    bundle["timestamp_proofs"] = [{} for _ in range(count)]
    return orjson.dumps(resign(bundle, LOW, refresh_canonical=False))


SHAPES: dict[str, Callable[[int], bytes]] = {
    "events": _many_events,
    "authors": _many_authors,
    "categories": _many_categories,
    "aliases": _many_aliases,
    "long_strings": _long_strings,
    "tiny_containers": _tiny_containers,
}


def attacker_bundles() -> dict[str, bytes]:
    return {name: _fit(make) for name, make in SHAPES.items()}


# -- 1. verification CPU -----------------------------------------------------------------------


def _cpu(work: Callable[[], object]) -> float:
    started = time.process_time()
    work()
    return time.process_time() - started


def _verify_all(bundles: list[bytes], rows: bool) -> None:
    for data in bundles:
        verified = verify_bundle(parse_bundle(data), KEYRING)
        if rows:
            build_rows(verified, KEYRING)


def _load_memory(folder: Path, bundles: list[bytes], store: GraphStore | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bundles.jsonl"
    path.write_bytes(b"".join(b + b"\n" for b in bundles))
    report = run([str(path)], keyring=KEYRING, store=store or MemoryStore(), workers=1)
    assert report.rejected == 0, report.rejections


def _span(values: list[float]) -> str:
    return f"{min(values):.1f}..{max(values):.1f}"


def bench_verify(repeat: int) -> None:
    honest = honest_bundles(TARGET)
    hostile = attacker_bundles()
    inputs = {"honest": honest} | {name: [data] for name, data in hostile.items()}
    sizes = {name: sum(map(len, b)) for name, b in inputs.items()}
    print(f"honest baseline: {len(honest)} bundles, {sizes['honest']} bytes")
    for name, data in hostile.items():
        print(f"  {name}: one bundle of {len(data)} bytes")
    per_kb: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(repeat):
            for name, bundles in inputs.items():  # interleaved: each round measures every shape
                kb = sizes[name] / 1024
                for stage, work in (
                    ("verify", lambda b=bundles: _verify_all(b, rows=False)),
                    ("verify+rows", lambda b=bundles: _verify_all(b, rows=True)),
                    (
                        "load memory",
                        lambda b=bundles, n=name, r=round_: _load_memory(Path(tmp) / f"{n}-{r}", b),
                    ),
                ):
                    per_kb.setdefault((name, stage), []).append(_cpu(work) * 1e6 / kb)
    print(f"\nCPU per input KB (µs/KB, min..max of {repeat} interleaved rounds) and factor vs honest")
    for stage in ("verify", "verify+rows", "load memory"):
        base = statistics.median(per_kb[("honest", stage)])
        print(f"{stage}:")
        for name in inputs:
            values = per_kb[(name, stage)]
            factor = [v / base for v in values]
            print(f"  {name:16} {_span(values):>18} µs/KB   x{min(factor):.2f}..{max(factor):.2f}")


# -- 2. Neo4j writes ---------------------------------------------------------------------------


def _server_cpu(pid: int) -> float:
    """CPU seconds (user + system) the Neo4j server process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_neo4j(uri: str, password: str, pid: int | None, repeat: int) -> None:
    """Write each input into an emptied database: wall time and server CPU per input KB."""
    from pith_graph.loader.stores.neo4j import Neo4jStore

    honest = honest_bundles(TARGET)
    hostile = attacker_bundles()
    inputs = {"honest": honest} | {name: [data] for name, data in hostile.items()}
    sizes = {name: sum(map(len, b)) for name, b in inputs.items()}
    wall: dict[str, list[float]] = {}
    server: dict[str, list[float]] = {}
    with Neo4jStore.connect(uri, password=password) as store, tempfile.TemporaryDirectory() as tmp:
        store.ensure_schema()
        for round_ in range(repeat + 1):  # the first round plans the statements: not counted
            for name, bundles in inputs.items():
                store.clear()
                before = _server_cpu(pid) if pid else 0.0
                started = time.perf_counter()
                _load_memory(Path(tmp) / f"{name}-{round_}", bundles, store)
                kb = sizes[name] / 1024
                if not round_:
                    continue
                wall.setdefault(name, []).append((time.perf_counter() - started) * 1e6 / kb)
                if pid:
                    server.setdefault(name, []).append((_server_cpu(pid) - before) * 1e6 / kb)
        store.clear()
    print(f"\nNeo4j write per input KB (µs/KB, min..max of {repeat} rounds) and factor vs honest")
    for label, table in (("wall time", wall), ("server CPU", server)):
        if not table:
            continue
        base = statistics.median(table["honest"])
        print(f"{label}:")
        for name, values in table.items():
            print(
                f"  {name:16} {_span(values):>20} µs/KB   x{min(values) / base:.2f}..{max(values) / base:.2f}"
            )


# -- 3. the API over honest papers, with and without the attacker's supernodes -----------------

API_QUERIES = {
    "paper_authors_papers": (
        '{ paper(id: "arXiv:2401.00001") { title authors(first: 100) { name papers(first: 10) '
        "{ edges { node { title } } } } } }"
    ),
    "author_page": (
        '{ author(name: "honest author000") { name paperCount papers(first: 20) '
        "{ edges { node { title authorCount } } } } }"
    ),
    "coauthors": '{ author(name: "Honest Author001") { coauthors(first: 10) { author { name } sharedPapers } } }',
    "related_papers": (
        '{ paper(id: "arXiv:2401.00002") { relatedPapers(first: 10) { sharedAuthors paper { title } } } }'
    ),
    "category_top_authors": '{ category(code: "cs.LG") { paperCount topAuthors(first: 10) { author { name } count } } }',
    "nested_coauthors": (
        '{ author(name: "honest author000") { papers(first: 10) { edges { node { authors(first: 10) '
        "{ coauthors(first: 10) { sharedPapers author { name } } } } } } } }"
    ),
    "nested_related": (
        '{ paper(id: "arXiv:2401.00001") { authors(first: 20) { papers(first: 10) { edges { node '
        "{ relatedPapers(first: 10) { sharedAuthors paper { title } } } } } } } }"
    ),
    "big_paper_coauthors": (
        '{ paper(id: "arXiv:2501.00003") { authorCount authors(first: 100) { coauthors(first: 10) '
        "{ sharedPapers } } } }"
    ),
    "typeahead": '{ authors(prefix: "hon") { name paperCount } }',
    "typeahead_1": '{ authors(prefix: "a") { name paperCount } }',
    "search": '{ search(text: "honest learning", first: 10) { totalCount edges { node { title } } } }',
    "papers_cs_lg": (
        '{ papers(filter: {category: "cs.LG"}, first: 20) { totalCount edges { node { title '
        "authors(first: 5) { name } } } } }"
    ),
}


def supernode_bundles(papers: int, wide: int) -> list[bytes]:
    """The attacker's world: ``papers`` small papers, each naming honest authors (the same
    name keys in another spelling), an honest category and its own authors, plus ``wide``
    bundles of as many authors as allowed (each naming ten honest authors too)."""
    out = [_many_authors(MAX_AUTHORS, 2 + 10 * k) for k in range(wide)]
    for n in range(papers):
        names = [HONEST_AUTHORS[n % 10].upper(), HONEST_AUTHORS[(n * 3) % 60], *_names(3, 1000 + n * 3)]
        spec = _attacker_spec(100 + n, authors=names, cross_cats=HONEST_CATS[1:])
        spec = PaperSpec.example(
            f"25{2 + n // 90000:02d}.{n % 90000 + 1:05d}",  # 2501.*: the shapes' ids
            **{
                k: getattr(spec, k) for k in ("title", "authors", "primary_cat", "cross_cats", "submitted_at")
            },
        )
        out.append(orjson.dumps(build_bundle(spec, LOW)))
    return out


def _write_world(folder: Path, bundles: list[bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    keys = [HIGH.keyring_entry() | {"signer_type": HIGH.signer_type}, LOW.keyring_entry()]
    (folder / "keyring.json").write_bytes(orjson.dumps(keys))
    (folder / "bundles.jsonl").write_bytes(b"".join(b + b"\n" for b in bundles))
    return folder


def _latencies(url: str, repeat: int) -> dict[str, list[float]]:
    import httpx

    out: dict[str, list[float]] = {}
    with httpx.Client(base_url=url, timeout=120) as client:
        for round_ in range(repeat + 1):  # the first round plans the queries: not counted
            for name, query in API_QUERIES.items():
                started = time.perf_counter()
                answer = client.post("/graphql", json={"query": query})
                took = (time.perf_counter() - started) * 1000
                body = answer.json()
                if body.get("errors") and round_ < 2:
                    codes = {e.get("extensions", {}).get("code") for e in body["errors"]}
                    print(f"  {name}: HTTP {answer.status_code}, {codes} after {took:.0f} ms")
                if round_:
                    out.setdefault(name, []).append(took)
    return out


def bench_api(
    backend: str, uri: str, password: str, papers: int, wide: int, repeat: int, timeout: str
) -> None:
    from pith_graph.testing.serving import serving

    honest = honest_bundles(TARGET)
    with _timer("attacker bundles"):
        hostile = supernode_bundles(papers, wide)
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for world, bundles in (("honest", honest), ("attacked", honest + hostile)):
            folder = _write_world(Path(tmp) / world, bundles)
            env = {"PITH_API_WORKERS": "1", "NEO4J_PASSWORD": password, "PITH_API_TIMEOUT_SECONDS": timeout}
            if backend == "memory":
                args = [str(folder / "bundles.jsonl"), "--trusted-keys", str(folder / "keyring.json")]
                args += ["--load-workers", "1"]
            else:
                from pith_graph.loader.stores.neo4j import Neo4jStore

                with Neo4jStore.connect(uri, password=password) as store, _timer(f"neo4j load {world}"):
                    store.ensure_schema()
                    store.clear()
                    _load_memory(Path(tmp) / f"{world}-load", bundles, store)
                args = ["--backend", "neo4j", "--uri", uri]
            with _timer(f"serve {world}"), serving([*args, "--port", "0", "--workers", "1"], env) as url:
                results[world] = _latencies(url, repeat)
    print(f"\nAPI latency over HTTP, {backend} ({repeat} rounds, ms min..max; attacked/honest medians)")
    for name in API_QUERIES:
        h, a = results["honest"][name], results["attacked"][name]
        ratio = statistics.median(a) / statistics.median(h)
        print(f"  {name:22} honest {_span(h):>14}  attacked {_span(a):>16}  x{ratio:.1f}")


# -- main --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("what", choices=["verify", "neo4j", "api"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backend", choices=["memory", "neo4j"], default="memory")
    parser.add_argument("--neo4j-uri", default="bolt://127.0.0.1:7831")
    parser.add_argument("--papers", type=int, default=3000, help="api: the attacker's small papers")
    parser.add_argument("--wide", type=int, default=1, help="api: bundles of MAX_AUTHORS authors")
    parser.add_argument("--timeout", default="10", help="api: PITH_API_TIMEOUT_SECONDS")
    parser.add_argument("--neo4j-pid", type=int, help="the server's pid: its CPU is measured too")
    parser.add_argument("--neo4j-password", default=os.environ.get("NEO4J_PASSWORD", "helperpass123"))
    args = parser.parse_args(argv)
    if args.what == "verify":
        bench_verify(args.repeat)
    elif args.what == "neo4j":
        bench_neo4j(args.neo4j_uri, args.neo4j_password, args.neo4j_pid, args.repeat)
    else:
        bench_api(
            args.backend,
            args.neo4j_uri,
            args.neo4j_password,
            args.papers,
            args.wide,
            args.repeat,
            args.timeout,
        )
    return 0


@contextmanager
def _timer(label: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    print(f"{label}: {time.perf_counter() - started:.2f} s", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
