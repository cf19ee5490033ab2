"""Every benchmark is a script anyone can rerun: each one with a command line answers
``--help`` with its usage (exit 0), without a server, a corpus or a traceback; the modules
the others import (no ``__main__``) import cleanly. Run in this process, as ``python
benchmarks/NAME.py --help`` would (the libraries they import are loaded once).

The benchmarks that need no server, toolchain or minutes (``SMOKE``) also run end to end at
their smallest size, each in a process of its own, its results written to a scratch folder."""

from __future__ import annotations

import json
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Neo4jServer

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))


def _runnable(script: Path) -> bool:
    return '__name__ == "__main__"' in script.read_text()


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.name for script in SCRIPTS])
def test_a_benchmark_answers_help(
    script: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(script.parent))  # as python puts a script's folder first
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    if not _runnable(script):
        runpy.run_path(str(script))
        return
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(str(script), run_name="__main__")
    assert exited.value.code in (0, None)
    assert capsys.readouterr().out.startswith("usage: ")


def test_there_are_benchmarks_to_check() -> None:
    assert sum(_runnable(script) for script in SCRIPTS) >= 15


# -- end to end, at their smallest size -------------------------------------------------------

#: Runs benchmarks/NAME.py's ``main(argv)`` with the module's ``RESULTS`` (where it writes its
#: figures) pointed at a scratch folder, so a test run never replaces a real run's results.
RUNNER = """
import importlib, sys
from pathlib import Path
benchmarks, results, name, *argv = sys.argv[1:]
sys.path.insert(0, benchmarks)
module = importlib.import_module(name)
if hasattr(module, "RESULTS"):
    module.RESULTS = Path(results)
sys.exit(module.main(argv))
"""

#: The benchmarks that run in a few seconds with no server or toolchain, and their smallest
#: arguments (CORPUS: a 300-bundle corpus). Left out: those needing Neo4j (bench_neo4j,
#: bench_facets and bench_listing_facets, bench_import and bench_export: their own tests
#: below; bench_serve_import,
#: bench_server_start, stress_torn_reads, bench_attacker_cost's neo4j), Node and wrk
#: (bench_peer, bench_workers), cargo (bench_native_floor), valgrind (bench_instructions), a
#: saved snapshot (bench_serve_memory, bench_snapshot_memory); bench_loader (its end-to-end
#: child and parallel runs take tens of seconds even on a small corpus) and bench_overhead
#: (8 s; bench_api's run executes the schema in process too), to keep these under a minute.
SMOKE = {
    "bench_rejections": ["--n", "20", "--rounds", "1"],
    "bench_respell": ["--authors", "10", "--papers", "2", "--rounds", "1", "--spellings", "20"],
    "bench_answer_size": ["--rounds", "1"],
    "bench_api": ["--corpus", "CORPUS", "--backends", "memory", "--clients", "1", "--seconds", "0.2"],
    "bench_frontend": ["--corpus", "CORPUS", "--backends", "memory", "--rounds", "1", "--requests", "2"],
}


#: What a run prints, beyond its figures: one line per pattern (re.MULTILINE).
SMOKE_PRINTS = {
    "bench_frontend": [rf"^{scenario} .* \d+\.\d\dx$" for scenario in ("papers_by_id_500", "typeahead")],
}


def _benchmark(name: str, results: Path, argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """benchmarks/NAME.py run by :data:`RUNNER`, writing its figures into ``results``."""
    command = [sys.executable, "-c", RUNNER, str(ROOT / "benchmarks"), str(results), name, *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pith_graph.testing.corpus import write_corpus

    folder = tmp_path_factory.mktemp("corpus")
    write_corpus(folder, 300, seed=1, workers=1)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("name", SMOKE)
def test_a_benchmark_runs_end_to_end(name: str, small_corpus: Path, tmp_path: Path) -> None:
    argv = [str(small_corpus) if arg == "CORPUS" else arg for arg in SMOKE[name]]
    done = _benchmark(name, tmp_path, argv, timeout=120)
    assert done.returncode == 0, (
        f"{name} ended {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    )
    assert done.stdout.strip()
    for pattern in SMOKE_PRINTS.get(name, []):
        assert re.search(pattern, done.stdout, re.MULTILINE), f"{name}: no line {pattern}:\n{done.stdout}"


@pytest.mark.slow
@pytest.mark.own_server  # neo4j-admin and two private servers
@pytest.mark.java_half  # scripts/test runs it in the Java tests' process, the shorter half
def test_the_import_benchmark_runs_end_to_end(tmp_path: Path) -> None:
    """``bench_import.py`` (issue 10's figures) at its smallest: an import of 100 bundles and a
    transactional load of them, each into a fresh data folder, on a corpus of shards of 100.
    Its loads once failed at their server's start, unseen by any test (0.9.12); a size that
    is no whole number of shards was measured as every bundle of the shards it began and
    labelled with the size asked for (a 600-bundle shard as 300 and as 600 bundles, then a
    division by zero in the projection); such sizes, and a wrong ``--shard-size``, are refused
    before anything runs."""
    from pith_graph.testing.corpus import write_corpus

    corpus, results = tmp_path / "corpus", tmp_path / "results"
    write_corpus(corpus, 200, seed=1, workers=1, shard_size=100)

    def bench(*argv: str) -> subprocess.CompletedProcess[str]:
        return _benchmark(
            "bench_import", results, ["--corpus", str(corpus), "--shard-size", "100", *argv], 600
        )

    done = bench("--sizes", "100", "--load-n", "100")
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert re.search(r"^import +100: .* bundles/s .*neo4j-admin [\d.]+s, schema [\d.]+s", done.stdout, re.M)
    assert re.search(r"^transactional 100 \(parallel\): [\d.]+ bundles/s", done.stdout, re.M), done.stdout
    (written,) = results.glob("import-*.json")
    figures = json.loads(written.read_text())
    imported = figures["imports"]["100"]
    assert imported["bundles"] == figures["transactional"]["bundles"] == 100
    assert (imported["rejected"], imported["accepted"] + imported["stale"]) == (0, 100)
    for argv, why in [
        (["--sizes", "100,150"], "not a whole number of the corpus's shards of 100"),
        (["--sizes", "300"], "fewer than 300"),
        (
            ["--sizes", "100", "--shard-size", "50"],
            "bundles-00000.jsonl.gz holds 100 bundles, not --shard-size 50",
        ),
    ]:
        refused = bench(*argv, "--load-n", "0")
        assert refused.returncode == 1 and why in refused.stderr, refused.stderr
        assert not refused.stdout  # no import ran (each prints its line)
    assert len(list(results.glob("import-*.json"))) == 1


def test_the_import_benchmark_counts_a_shard_that_is_a_folder_of_files(tmp_path: Path) -> None:
    """``write_corpus(layout="files")`` writes each shard as a folder of bundle files, which
    the benchmark imports as it imports ``.jsonl.gz`` shards: its check of ``--shard-size``
    counts them too, before anything runs (it looked for ``.jsonl`` files only and let a
    wrong size through to the first import)."""
    from pith_graph.testing.corpus import write_corpus

    corpus = tmp_path / "corpus"
    write_corpus(corpus, 100, seed=1, workers=1, layout="files", shard_size=100)
    argv = ["--corpus", str(corpus), "--shard-size", "50", "--sizes", "50", "--load-n", "0"]
    refused = _benchmark("bench_import", tmp_path / "results", argv, 60)
    assert refused.returncode == 1, refused.stderr
    assert "bundles-00000 holds 100 bundles, not --shard-size 50" in refused.stderr
    assert not refused.stdout


@pytest.mark.slow
@pytest.mark.own_server  # a private server
@pytest.mark.java_half
def test_the_export_benchmark_runs_end_to_end(small_corpus: Path, tmp_path: Path) -> None:
    """``bench_export.py`` at its smallest: one round of each export and baseline. Its months'
    baselines swap in the export's statements of 0.9.16: each must hold as many items as its
    export (the benchmark exits 1 otherwise), and the statements swapped must be those the
    export runs (a renamed attribute would be an ``AttributeError``, not a no-op)."""
    done = _benchmark("bench_export", tmp_path, ["--corpus", str(small_corpus), "--rounds", "1"], 300)
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    for label in ("the month", "the category's month"):
        ratio = rf"^{label}: 0\.9\.16's statement ÷ now [\d.]+–[\d.]+×$"
        assert re.search(ratio, done.stdout, re.M), done.stdout
    rows = {row["case"]: row for row in json.loads((tmp_path / "export.json").read_text())["rows"]}
    whole = rows["export: whole graph"]["nodes+edges"]
    for new, old in [
        ("export: one month (dates alone)", "baseline: the month, 0.9.16's statement"),
        ("export: the category's month", "baseline: the category's month, 0.9.16's statement"),
    ]:
        assert 0 < rows[new]["nodes+edges"] == rows[old]["nodes+edges"] < whole


@pytest.mark.slow
def test_the_neo4j_benchmarks_run_end_to_end_on_the_session_server(
    neo4j_server: Neo4jServer, small_corpus: Path, tmp_path: Path
) -> None:
    """``bench_neo4j.py`` (its batch-size sweep, first load, re-load and naive baseline),
    then ``bench_facets.py neo4j`` and ``bench_listing_facets.py`` on the corpus it loaded, at
    their smallest, against the session's server (``--uri``: its database is cleared, as every
    test's store is): no private server to start (12–27 s here, most of it the loads). The two
    facet benchmarks compare their baseline's answers with today's in every round and fail on
    a difference."""
    from pith_graph.loader.facade import resolve_keyring
    from pith_graph.loader.pipeline import run

    server = ["--uri", neo4j_server.uri, "--user", neo4j_server.user, "--database", neo4j_server.database]
    argv = ["--n", "300", "--corpus", str(small_corpus), "--batch-sizes", "50,100", "--sweep-n", "100"]
    argv += ["--naive-n", "20", *server, "--password", neo4j_server.password or ""]
    done = _benchmark("bench_neo4j", tmp_path, argv, 300)
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    (written,) = tmp_path.glob("neo4j-*.json")
    summary = json.loads(written.read_text())["summary"]
    assert summary["best_batch_size"] in (50, 100), summary
    for figure in ("first_load_bundles_per_s", "reload_bundles_per_s", "naive_bundles_per_s"):
        assert summary[figure] > 0, summary
    # the naive baseline wrote last, in its own shape: the facets are measured on a real load
    store = neo4j_server.connect()
    try:
        store.clear()
        keyring = resolve_keyring(small_corpus / "keyring.json")
        loaded = run(
            sorted(map(str, small_corpus.glob("bundles-*"))), keyring=keyring, store=store, workers=1
        )
        assert loaded.accepted > 0 and not loaded.rejected, loaded
    finally:
        store.close()
    password = tmp_path / "password"
    password.write_text(neo4j_server.password or "", encoding="utf-8")
    facets = _benchmark(
        "bench_facets", tmp_path, ["neo4j", neo4j_server.uri, str(password), "--rounds", "1"], 120
    )
    assert facets.returncode == 0, f"{facets.stdout[-2000:]}\n{facets.stderr[-3000:]}"
    for case in ("all five", "years", "categories", "archives", "licenses", "authors"):
        assert re.search(rf"^{case} +[\d.]+ \(.*\) +[\d.]+ \(.*\) +[\d.]+$", facets.stdout, re.M), (
            facets.stdout
        )
    listings = ["category=cs.LG", "archive=cs"]
    argv = [neo4j_server.uri, str(password), "--rounds", "1", *listings]
    listed = _benchmark("bench_listing_facets", tmp_path, argv, 120)
    assert listed.returncode == 0, f"{listed.stdout[-2000:]}\n{listed.stderr[-3000:]}"
    for listing in listings:
        assert re.search(rf"^{listing} \([1-9]\d*\) +[\d.]+ .* MiB / [\d.]+ MiB$", listed.stdout, re.M), (
            listed.stdout
        )


def test_the_smoke_runs_name_benchmarks_that_exist() -> None:
    assert {script.stem for script in SCRIPTS} >= set(SMOKE)
