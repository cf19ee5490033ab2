"""The benchmark scripts' guards, checked without a server: bench_api.py never clears a
database that holds papers unless told to, and stops at once (one line) when Neo4j cannot
be reached."""

from __future__ import annotations

import importlib
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
