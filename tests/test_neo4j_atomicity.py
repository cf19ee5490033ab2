"""A batch is wholly written or not at all, inspected on a real Neo4j: a statement that fails
after others wrote leaves nothing of its batch, and after a SIGKILL the database is exactly
the state after some whole number of batches, paper for paper and edge for edge."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import neo4j
import orjson
import pytest

from pith_graph.errors import StoreError
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.prune import prune_revoked
from pith_graph.loader.stores import cypher, neo4j_retry
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.testing.corpus import corpus_signers, write_corpus
from pith_graph.testing.signer import PaperSpec, build_bundle

pytestmark = pytest.mark.neo4j

BATCH = 25
#: A transaction memory (Neo4j takes 1 MiB or more) that holds a batch of one or two papers of
#: ``WIDE`` authors, not of four, nor one paper of ``TOO_WIDE`` (measured on Neo4j 5.26: in
#: 4 MiB one paper of 600 authors fits, of 750 does not; in 40 MiB two of 2,500 fit, four not).
WIDE_BATCH_LIMIT = "4m"
WIDE, TOO_WIDE = 250, 2000
#: Changes to ``PaperSpec.example`` that make a newer record of the same version with another
#: pith number: it displaces the paper of the old record.
REVISED = {"abstract_excerpt": "A revised abstract.", "built_at": "2026-03-02T10:00:00Z"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[bytes], Path]:
    info = write_corpus(
        tmp_path_factory.mktemp("atomic"), 1200, seed=11, workers=2, layout="jsonl", shard_size=1200
    )
    (shard,) = info.shards
    return shard.read_bytes().splitlines(), info.keyring_path


@pytest.fixture
def db(neo4j_server: Any) -> Any:
    store: Neo4jStore = neo4j_server.connect()
    store.clear()
    yield store
    store.close()


def _write(folder: Path, name: str, lines: list[bytes]) -> str:
    path = folder / name
    path.write_bytes(b"\n".join(lines) + b"\n")
    return str(path)


def test_a_statement_failing_mid_batch_leaves_nothing_of_the_batch(
    db: Neo4jStore, corpus: tuple[list[bytes], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines, keys = corpus
    keyring = resolve_keyring(keys)
    run(
        [_write(tmp_path, "first.jsonl", lines[:BATCH])],
        keyring=keyring,
        store=db,
        workers=1,
        batch_size=BATCH,
    )
    before = db.export()
    # The papers of the next batch, their authors, categories, aliases and every edge are
    # written by earlier statements of the same transaction; refreshing Signer.keyIds, among
    # the last statements, then fails.
    failing = "UNWIND $rows AS row WITH row WHERE 1 / (size(row.keyIds) - size(row.keyIds)) = 1 RETURN row"
    monkeypatch.setattr(cypher, "REFRESH_SIGNER_KEYS", failing)
    with pytest.raises(StoreError) as caught:
        run(
            [_write(tmp_path, "second.jsonl", lines[BATCH : 2 * BATCH])],
            keyring=keyring,
            store=db,
            workers=1,
            batch_size=BATCH,
        )
    assert caught.value.code.value == "write_failed"
    assert db.export() == before


def test_after_sigkill_the_database_is_a_whole_number_of_batches(
    neo4j_server: Any, db: Neo4jStore, corpus: tuple[list[bytes], Path], tmp_path: Path
) -> None:
    lines, keys = corpus
    path = _write(tmp_path, "all.jsonl", lines)
    env = {**os.environ, **({"NEO4J_PASSWORD": neo4j_server.password} if neo4j_server.password else {})}
    args = [
        sys.executable,
        "-m",
        "pith_graph",
        "load",
        path,
        "--backend",
        "neo4j",
        "--trusted-keys",
        str(keys),
    ]
    args += ["--batch-size", str(BATCH), *neo4j_server.cli_args()]
    process = subprocess.Popen(
        args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 300
    while db.counts().nodes.get("Paper", 0) < 4 * BATCH:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no batch was committed in time"
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate()
    killed = db.export()
    papers = sum(1 for node in killed.nodes.values() if node["label"] == "Paper")

    # Replay the same input batch by batch in memory: some prefix must match exactly.
    keyring = resolve_keyring(keys)
    memory = MemoryStore()
    matched = None
    for start in range(0, len(lines), BATCH):
        batch = _write(tmp_path, f"batch-{start:05d}.jsonl", lines[start : start + BATCH])
        run([batch], keyring=keyring, store=memory, workers=1, batch_size=BATCH)
        state = memory.export()
        if state == killed:
            matched = start // BATCH + 1
            break
        if sum(1 for node in state.nodes.values() if node["label"] == "Paper") > papers:
            break
    assert matched is not None, f"the killed database ({papers} papers) is no whole number of batches"
    assert 4 <= matched < len(lines) // BATCH


def _wide(folder: Path, name: str, papers: dict[int, int], **changes: Any) -> tuple[str, Any]:
    """Papers ``2603.<number>`` of as many authors as ``papers`` maps each number to, one
    signer's, as one JSON Lines file ``name`` in ``folder`` (``changes`` to each spec)."""
    signer, _ = corpus_signers(7)
    keys = folder / "keyring.json"
    keys.write_bytes(orjson.dumps([signer.keyring_entry()]))
    specs = [
        PaperSpec.example(
            f"2603.{number}", authors=[f"W{number} Person {i:05d}" for i in range(authors)], **changes
        )
        for number, authors in papers.items()
    ]
    path = folder / name
    path.write_bytes(b"".join(orjson.dumps(build_bundle(spec, signer)) + b"\n" for spec in specs))
    return str(path), resolve_keyring(keys)


def test_a_batch_too_large_for_the_transaction_memory_is_written_in_halves(  # in the Java half
    start_neo4j: Callable[..., Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Papers of hundreds of authors (one signer may publish them; thousands need no more than a
    larger transaction memory): a batch the server cannot hold in one transaction is written
    in halves, each a transaction, down to one bundle, and the graph is the one a smaller batch
    size makes. A bundle too large alone stops the load with write_failed, naming the bundle
    and the settings to raise; nothing of it is written, and the batches before it stay written."""
    path, keyring = _wide(tmp_path, "wide.jsonl", {30000 + k: WIDE for k in range(4)})
    before, _ = _wide(tmp_path, "before.jsonl", {31000: WIDE})
    too_wide, _ = _wide(tmp_path, "too-wide.jsonl", {31001: TOO_WIDE})
    server = start_neo4j(NEO4J_TX_MEMORY=WIDE_BATCH_LIMIT)
    db: Neo4jStore = server.connect()
    try:
        db.ensure_schema()  # as `pith-graph load` does: authors merge through their index
        with caplog.at_level(logging.INFO, "pith_graph"):
            report = run([path], keyring=keyring, store=db, workers=1, batch_size=4)
        assert (report.inserted, report.rejected) == (4, 0)
        assert "outgrew the transaction memory; applying it in halves" in caplog.text
        # Newer, revised records of the same versions (other pith numbers), in halves too: each
        # displaces its old paper, and the report counts all four (both halves' removed papers).
        rebuilt, _ = _wide(tmp_path, "rebuilt.jsonl", {30000 + k: WIDE for k in range(4)}, **REVISED)
        caplog.clear()
        with caplog.at_level(logging.INFO, "pith_graph"):
            report = run([rebuilt], keyring=keyring, store=db, workers=1, batch_size=4)
        assert "outgrew the transaction memory; applying it in halves" in caplog.text
        assert (report.inserted, report.displaced, report.rejected) == (4, 4, 0)
        memory = MemoryStore()
        run([path], keyring=keyring, store=memory, workers=1)
        run([rebuilt], keyring=keyring, store=memory, workers=1)
        assert db.export() == memory.export()
        # One load: a batch of one paper, then the bundle too large alone.
        with pytest.raises(StoreError) as caught:
            run([before, too_wide], keyring=keyring, store=db, workers=1, batch_size=1)
        pith = orjson.loads(Path(too_wide).read_bytes())["pith_number"]
        assert caught.value.code.value == "write_failed"
        assert (
            f"writing the bundle of 2603.31001v1 ({pith}) alone (raise the server's transaction memory: "
            "db.memory.transaction.max, dbms.memory.transaction.total.max, or its heap)"
            in caught.value.message
        )
        assert "MemoryPoolOutOfMemoryError" in caught.value.message
        run([before], keyring=keyring, store=memory, workers=1)
        assert db.export() == memory.export()
    finally:
        db.close()
        server.script("stop", timeout=180)


@pytest.mark.own_server  # scripts/test runs it beside the Java tests (since 0.9.12: that half was the longer)
def test_a_removal_too_large_for_the_transaction_memory_goes_in_halves(
    start_neo4j: Callable[..., Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Papers a load wrote in halves, a prune removes in halves too: it tried its whole batch
    in one transaction, failed on every run (``write_failed``), and removed nothing; a revoked
    key's many-author papers could never be pruned. Then the graph is as a memory prune's."""
    path, keyring = _wide(tmp_path, "wide.jsonl", {32000 + k: WIDE for k in range(8)})
    signer, _ = corpus_signers(7)
    revoked = tmp_path / "revoked.json"
    revoked.write_bytes(orjson.dumps([{**signer.keyring_entry(), "revoked": True}]))
    revoking = resolve_keyring(revoked)
    server = start_neo4j(NEO4J_TX_MEMORY=WIDE_BATCH_LIMIT)
    db: Neo4jStore = server.connect()
    try:
        db.ensure_schema()
        assert run([path], keyring=keyring, store=db, workers=1, batch_size=1).inserted == 8
        with caplog.at_level(logging.INFO, "pith_graph"):
            report = prune_revoked(db, revoking, batch_size=8)
        assert len(report.removed) == 8
        assert "outgrew the transaction memory; removing them in halves" in caplog.text
        memory = MemoryStore()
        run([path], keyring=keyring, store=memory, workers=1)
        prune_revoked(memory, revoking)
        assert db.export() == memory.export()
    finally:
        db.close()
        server.script("stop", timeout=180)


def test_a_batch_waits_for_locks_no_longer_than_its_timeout(
    db: Neo4jStore,
    corpus: tuple[list[bytes], Path],
    tmp_path: Path,
    neo4j_server: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every write transaction carries a timeout (``WRITE_TIMEOUT_SECONDS``): a loader
    suspended with a batch open (here: another session holding its sources' locks) held the
    others for as long as the server let its transaction live, silently (10 minutes, or for
    ever on a server without ``db.transaction.timeout``). Past it, the waiting batch ends, not
    written, and the load says so."""
    lines, keys = corpus
    keyring = resolve_keyring(keys)
    first = _write(tmp_path, "first.jsonl", lines[:BATCH])
    run([first], keyring=keyring, store=db, workers=1, batch_size=BATCH)
    before = db.export()
    monkeypatch.setattr(neo4j_retry, "WRITE_TIMEOUT_SECONDS", 2.0)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # another loader's open batch: it holds every source's lock (LOCK_SOURCES)
        auth = ("neo4j", neo4j_server.password)
        with (
            neo4j.GraphDatabase.driver(neo4j_server.uri, auth=auth) as driver,
            driver.session() as session,
            session.begin_transaction(timeout=60) as holding,
        ):
            holding.run("MATCH (a:Alias) SET a._held = true").consume()
            held.set()
            release.wait(30)  # a regression waits this long, then loads: no error, and the test fails
            holding.rollback()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(30)
        started = time.monotonic()
        with pytest.raises(StoreError):  # the same bundles: the batch locks the same sources
            run([first], keyring=keyring, store=db, workers=1, batch_size=BATCH, skip_known=False)
        waited = time.monotonic() - started
    finally:
        release.set()
        holder.join()
    assert waited < 20, f"waited {waited:.1f} s for a lock held by another transaction"
    assert db.export() == before


def _blocked(driver: neo4j.Driver, timeout: float = 30) -> bool:
    """Whether a transaction of the server waits for a lock within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    with driver.session() as session:
        while time.monotonic() < deadline:
            found = session.run("SHOW TRANSACTIONS YIELD status RETURN collect(status) AS all").single()
            if found is not None and any(status.startswith("Blocked") for status in found["all"]):
                return True
            time.sleep(0.05)
    return False


def test_a_removal_locks_its_papers_sources_before_the_papers(
    db: Neo4jStore, corpus: tuple[list[bytes], Path], tmp_path: Path, neo4j_server: Any
) -> None:
    """A removal (prune) takes its locks in a load's order: the papers' sources (their lock
    aliases, LOCK_SOURCES), then the papers. It took the papers' first and their sources' at
    the end (REFRESH_LATEST), the reverse of a load, which holds its sources and then writes
    their papers: a prune and a load of one source deadlocked, and one of them ran again.
    Here a load's batch holds a source; a removal of its paper must wait for it before it
    locks the paper, which another transaction can then still lock."""
    lines, keys = corpus
    path = _write(tmp_path, "first.jsonl", lines[:BATCH])
    run([path], keyring=resolve_keyring(keys), store=db, workers=1, batch_size=BATCH)
    auth = ("neo4j", neo4j_server.password)
    with neo4j.GraphDatabase.driver(neo4j_server.uri, auth=auth) as driver:
        found = driver.execute_query(
            "MATCH (p:Paper) RETURN p.pithNumber AS pith, p.sourceKind AS kind, p.sourceId AS id LIMIT 1"
        ).records[0]
        with driver.session() as holding_session, holding_session.begin_transaction(timeout=60) as holding:
            lock = "MATCH (a:Alias {kind: $kind, value: $id}) SET a._lock = true REMOVE a._lock"
            holding.run(lock, kind=found["kind"], id=found["id"]).consume()  # a load's batch, open
            removed: list[list[str]] = []
            remover = threading.Thread(target=lambda: removed.append(db.remove_papers([found["pith"]])))
            remover.start()
            try:
                assert _blocked(driver), "the removal never waited for the source's lock"
                with driver.session() as session:  # the paper is not locked yet: the probe does not wait
                    probe = session.begin_transaction(timeout=3)
                    try:
                        probe_lock = "MATCH (p:Paper {pithNumber: $pith}) SET p._probe = true"
                        probe.run(probe_lock, pith=found["pith"]).consume()
                    except neo4j.exceptions.Neo4jError as error:
                        pytest.fail(f"the removal locked the paper before its source: {error.code}")
                    finally:
                        probe.close()
            finally:
                holding.rollback()
                remover.join(60)
    assert removed == [[found["pith"]]]
