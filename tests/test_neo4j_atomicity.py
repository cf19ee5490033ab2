"""A batch is wholly written or not at all, inspected on a real Neo4j: a statement that fails
after others wrote leaves nothing of its batch, and after a SIGKILL the database is exactly
the state after some whole number of batches, paper for paper and edge for edge."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pith_graph.errors import StoreError
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores import cypher
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.testing.corpus import write_corpus

pytestmark = pytest.mark.neo4j

BATCH = 25


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
    # written by earlier statements of the same transaction; refreshing Signer.keyIds, the
    # last statement, then fails.
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
