"""Graph files named ``*.gz`` are written gzip-compressed, and gzip-compressed graph files are
read inflated (since 0.8.9: ``--save g.json.gz`` wrote plain JSON under that name, and a
graph gzipped by hand was refused, "decompress it first")."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import networkx as nx
import pytest

from pith_graph.errors import UsageError
from pith_graph.loader.facade import SAMPLES, load_graph
from pith_graph.loader.keyring import REGISTRY_KEY
from pith_graph.loader.stores.memory import MemoryStore, open_saved
from pith_graph.testing import run_cli

GZIP_MAGIC = b"\x1f\x8b"


def _samples() -> nx.DiGraph:
    graph, report = load_graph([SAMPLES])
    assert report.rejected == 0
    return graph


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One load saved four ways: node-link and snapshot, plain and ``.gz``."""
    folder = tmp_path_factory.mktemp("saved")
    names = ("g.json", "g.json.gz", "g.snapshot", "g.snapshot.gz")
    done = run_cli(
        "load", SAMPLES, "--save", str(folder / names[0]), "--snapshot", str(folder / names[2]), timeout=60
    )
    assert done.returncode == 0, done.stderr
    done = run_cli(
        "load", SAMPLES, "--save", str(folder / names[1]), "--snapshot", str(folder / names[3]), timeout=60
    )
    assert done.returncode == 0, done.stderr
    return folder


@pytest.mark.parametrize("kind", ["json", "snapshot"])
def test_a_gz_name_is_written_as_gzip_of_the_same_file(saved: Path, kind: str) -> None:
    packed = (saved / f"g.{kind}.gz").read_bytes()
    assert packed[:2] == GZIP_MAGIC
    assert gzip.decompress(packed) == (saved / f"g.{kind}").read_bytes()


@pytest.mark.parametrize("name", ["g.json.gz", "g.snapshot.gz"])
def test_a_gzipped_graph_opens_as_the_graph_it_holds(saved: Path, name: str) -> None:
    opened = open_saved(saved / name)
    assert nx.utils.graphs_equal(opened.graph, _samples())
    assert bool(opened.indexes) == name.startswith("g.snapshot")  # a snapshot's search index comes too
    assert nx.utils.graphs_equal(MemoryStore.open(saved / name).graph, _samples())


def test_a_graph_gzipped_by_hand_opens(saved: Path, tmp_path: Path) -> None:
    """``gzip g.json`` (a name gzip(1) gives, a member with the file's name and time in it)."""
    path = tmp_path / "g.json.gz"
    with path.open("wb") as file, gzip.GzipFile("g.json", "wb", fileobj=file, mtime=1) as packed:
        packed.write((saved / "g.json").read_bytes())
    assert nx.utils.graphs_equal(open_saved(path).graph, _samples())


def test_the_store_saves_gzip_by_name(tmp_path: Path) -> None:
    store = MemoryStore(_samples())
    store.save(tmp_path / "a.json.gz")
    store.save_snapshot(tmp_path / "a.snapshot.gz")
    for name in ("a.json.gz", "a.snapshot.gz"):
        assert (tmp_path / name).read_bytes()[:2] == GZIP_MAGIC
        assert nx.utils.graphs_equal(open_saved(tmp_path / name).graph, store.graph)


def test_prune_writes_back_a_gzipped_graph_gzipped(saved: Path, tmp_path: Path) -> None:
    revoked = tmp_path / "revoked.json"
    entry = {"key_id": REGISTRY_KEY.key_id, "public_key_hex": REGISTRY_KEY.public_key_hex}
    revoked.write_text(json.dumps([{**entry, "signer_id": "pith.science", "revoked": True}]))
    out = tmp_path / "pruned.json.gz"
    done = run_cli(
        "prune", "--backend", "memory", "--graph", str(saved / "g.snapshot.gz"),
        "--revoked-keys", str(revoked), "--save", str(out), "--json", timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["removed"]) == 3  # the samples' papers, all the registry's
    assert out.read_bytes()[:2] == GZIP_MAGIC
    assert open_saved(out).graph.number_of_nodes() == 0


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        pytest.param(
            lambda _: gzip.compress(b"\0" * 2_000_000),
            "it inflates more than 100 times its size, which no graph's JSON does",
            id="bomb",
        ),
        pytest.param(
            lambda data: gzip.compress(data)[:-100],
            "a broken gzip file (compressed file ended before the end-of-stream marker was reached)",
            id="truncated",
        ),
        pytest.param(
            lambda data: gzip.compress(data)[:-8] + b"\0" * 8,
            "a broken gzip file (Error -3 while decompressing data: incorrect data check)",
            id="bad-checksum",
        ),
    ],
)
@pytest.mark.parametrize("kind", ["json", "snapshot"])
def test_a_broken_or_bombing_gzip_is_refused_in_one_line(
    saved: Path, tmp_path: Path, kind: str, made: object, expected: str
) -> None:
    assert callable(made)
    path = tmp_path / f"bad.{kind}.gz"
    path.write_bytes(made((saved / f"g.{kind}").read_bytes()))
    for opened in (open_saved, MemoryStore.open):
        with pytest.raises(UsageError) as refused:
            opened(path)
        assert str(refused.value) == f"cannot open saved graph {path}: {expected}"
    done = run_cli("serve", "--graph", str(path), "--port", "0", "--workers", "1", timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"pith-graph: error: cannot open saved graph {path}: {expected}\n"
