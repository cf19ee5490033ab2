"""The benchmark scripts' guards, checked without a server: bench_api.py never clears a
database that holds papers unless told to, and stops at once (one line) when Neo4j cannot
be reached; a private Neo4j of bench_peer.py takes free Bolt and HTTP ports and leaves no
folder behind when it fails to start; bench_workers.py keys its cached snapshot on the
corpus, not its folder name; bench_listing_facets.py reads the listings its help names; a
corpus generation that was interrupted is never taken for a whole one; bench_api.py keeps its
corpus in benchmarks/results/."""

from __future__ import annotations

import gzip
import importlib
import os
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pith_graph.errors import StoreError

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # as python puts a script's folder first

    def load(name: str) -> ModuleType:
        return importlib.import_module(name)

    return load


class _FakeReader:
    def __init__(self, papers: int) -> None:
        self.papers = papers

    def count_papers(self, _filter: Any) -> int:
        return self.papers

    def close(self) -> None:
        pass


def test_bench_api_refuses_to_load_into_a_database_holding_papers(
    bench: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pith_graph.api.reads.neo4j import Neo4jReader
    from pith_graph.loader.stores.neo4j import Neo4jStore

    bench_api = bench("bench_api")
    cleared: list[bool] = []

    class FakeStore:
        def clear(self) -> None:
            cleared.append(True)

    monkeypatch.setattr(bench_api, "resolve_password", lambda uri: None)
    monkeypatch.setattr(Neo4jReader, "connect", classmethod(lambda cls, *a, **k: _FakeReader(7)))
    monkeypatch.setattr(Neo4jStore, "connect", classmethod(lambda cls, *a, **k: FakeStore()))
    argv = ["--corpus", str(tmp_path / "corpus"), "-n", "20", "--backends", "neo4j"]
    code = bench_api.main([*argv, "--neo4j-uri", "bolt://127.0.0.1:1", "--load-neo4j"])
    assert code == 2 and not cleared
    message = capsys.readouterr().err.strip()
    assert "holds 7 papers" in message and "--clear" in message and "\n" not in message
    assert not (tmp_path / "corpus").exists()  # refused before anything was made or measured


def test_bench_api_stops_first_when_neo4j_is_unreachable(
    bench: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from pith_graph.api.reads.neo4j import Neo4jReader

    bench_api = bench("bench_api")

    def unreachable(cls: Any, *args: Any, **kwargs: Any) -> Any:
        raise StoreError("unavailable", "Neo4j at bolt://127.0.0.1:1 is unreachable\nsecond line")

    monkeypatch.setattr(bench_api, "resolve_password", lambda uri: None)
    monkeypatch.setattr(Neo4jReader, "connect", classmethod(unreachable))
    with pytest.raises(SystemExit) as exited:
        bench_api.main(
            ["--corpus", str(tmp_path / "corpus"), "-n", "20", "--neo4j-uri", "bolt://127.0.0.1:1"]
        )
    message = str(exited.value.code)
    assert message.startswith("bench_api: cannot use Neo4j at bolt://127.0.0.1:1") and "\n" not in message
    assert not (tmp_path / "corpus").exists()


def test_private_neo4j_takes_free_ports_and_cleans_up_a_failed_start(
    bench: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    peer_servers = bench("peer_servers")
    seen: list[dict[str, str]] = []

    def failing(command: list[str], env: dict[str, str], **_: Any) -> subprocess.CompletedProcess[str]:
        seen.append(env)
        assert Path(env["NEO4J_DATA"]).is_dir()
        return subprocess.CompletedProcess(command, 1, "", "neo4j: cannot start\n")

    monkeypatch.setattr(peer_servers.subprocess, "run", failing)
    with pytest.raises(SystemExit, match="cannot start"):
        peer_servers.PrivateNeo4j()
    env = seen[0]
    bolt, http = int(env["NEO4J_BOLT_PORT"]), int(env["NEO4J_HTTP_PORT"])
    assert bolt != http and not {bolt, http} & {7687, 7474}
    assert not Path(env["NEO4J_DATA"]).exists()


def test_bench_workers_snapshot_is_keyed_on_the_corpus(bench: Any, tmp_path: Path) -> None:
    bench_workers = bench("bench_workers")
    first, second = tmp_path / "a" / "corpus", tmp_path / "b" / "corpus"
    for folder, text in ((first, "one"), (second, "two")):
        folder.mkdir(parents=True)
        (folder / "keyring.json").write_text("{}")
        (folder / "bundles-0000.jsonl").write_text(text)
    path = bench_workers.snapshot_path(first, 3)
    assert path == bench_workers.snapshot_path(first, 3)
    assert path != bench_workers.snapshot_path(second, 3)  # same folder name, another corpus
    assert path != bench_workers.snapshot_path(first, 4)
    (first / "bundles-0000.jsonl").write_text("changed")
    os.utime(first / "bundles-0000.jsonl", ns=(1, 1))
    assert path != bench_workers.snapshot_path(first, 3)


def test_bench_listing_facets_reads_the_documented_listings(
    bench: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    facets = bench("bench_listing_facets")
    assert facets._listing("category=math.NT").where.category == "math.NT"
    assert facets._listing("archive=cs").where.archive == "cs"
    assert all(facets.listing_spec(spec) == spec for spec in facets.DEFAULT_LISTINGS)
    with pytest.raises(SystemExit) as exited:  # a usage error, before any connection
        facets.main(["bolt://127.0.0.1:1", "/nonexistent/password", "--rounds", "1", "category:math.NT"])
    assert exited.value.code == 2
    assert "expected category=CODE or archive=NAME" in capsys.readouterr().err


#: Each script's corpus cache: the module global naming the folder it sits in, and the call.
CORPUS_CACHES = {
    "bench_loader": ("ROOT", lambda module, top, n: module.corpus(n, None)),
    "bench_neo4j": ("RESULTS", lambda module, top, n: module.corpus(n, None)),
    "peer_servers": ("RESULTS", lambda module, top, n: module.corpus(n, 7, None)),
    "bench_api": (None, lambda module, top, n: module.corpus(top / "corpus", n, 7)),
}


def _bundles(folder: Path) -> int:
    return sum(len(gzip.decompress(shard.read_bytes()).splitlines()) for shard in folder.glob("bundles-*"))


@pytest.mark.parametrize("name", CORPUS_CACHES)
def test_an_interrupted_corpus_is_never_reused_as_whole(
    name: str, bench: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from pith_graph.testing import corpus as corpus_module

    module = bench(name)
    where, cached = CORPUS_CACHES[name]
    if where:
        monkeypatch.setattr(module, where, tmp_path)
    real = corpus_module._signed_chunks

    def one_core(*args: Any) -> Any:
        return real(*args[:4], 1, *args[5:])

    def interrupted(*args: Any) -> Any:  # Ctrl-C after the first chunk of 200 bundles
        for number, item in enumerate(one_core(*args)):
            if number == 1:
                raise KeyboardInterrupt
            yield item

    monkeypatch.setattr(corpus_module, "_signed_chunks", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cached(module, tmp_path, 450)
    monkeypatch.setattr(corpus_module, "_signed_chunks", one_core)
    folder = cached(module, tmp_path, 450)
    assert _bundles(folder) == 450
    assert [path.name for path in folder.parent.iterdir()] == [folder.name]  # no scratch left
    if name != "bench_api":  # an unfinished folder (keyring.json, no shard) is made again
        for path in folder.iterdir():
            path.unlink()
        (folder / "keyring.json").write_text("[]")
        assert _bundles(cached(module, tmp_path, 450)) == 450


def test_bench_api_caches_its_corpus_in_the_results_folder(
    bench: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bench_api = bench("bench_api")
    monkeypatch.setattr(bench_api, "RESULTS", tmp_path)
    loaded: list[list[str]] = []

    class Loaded(Exception):
        pass

    def load(paths: list[str], **_: Any) -> None:
        loaded.append(paths)
        raise Loaded

    monkeypatch.setattr(bench_api, "run", load)
    with pytest.raises(Loaded):
        bench_api.main(["-n", "30", "--backends", "memory"])
    assert loaded == [[str(tmp_path / "corpus-30-seed1")]]
    assert _bundles(tmp_path / "corpus-30-seed1") == 30


def test_bench_native_floor_names_the_range_of_its_ratios(bench: Any) -> None:
    floor = bench("bench_native_floor")
    phases = {"parse_us": 2.0, "canon_us": 1.0, "hash_us": 1.0, "signatures_us": 4.0, "total_us": 10.0}
    native = [{**phases, "bundles": 3}, {**phases, "total_us": 8.0, "bundles": 3}]
    ours = [
        {"parse_us": 4.0, "digests_us": 3.0, "signatures_us": 4.0, "total_us": 15.0},
        {"parse_us": 5.0, "digests_us": 2.0, "signatures_us": 5.0, "total_us": 16.0},
    ]
    assert floor.ours_vs_native(ours, native) == {
        "parse": 2.0,
        "digests": 1.0,
        "signatures": 1.0,
        "total": 15.0 / 8.0,
        "total_range_over_rounds": [1.5, 2.0],  # 15/10 and 16/8, round by round
    }
