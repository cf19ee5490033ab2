"""Crafted saved graphs, refused in one line: a node-link file must be a graph the loader
could have built (``check_structure``), a snapshot whose body was edited and re-hashed must
hold the schema's properties of their types (``check_types``), and neither may reach
``serve --graph`` or ``prune --graph`` as a traceback or as keys read wrongly."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import networkx as nx
import orjson
import pytest
from snapshot_bodies import rewritten

from pith_graph.errors import StoreError, StoreErrorCode, UsageError
from pith_graph.loader.facade import SAMPLES, load_graph
from pith_graph.loader.keyring import REGISTRY_KEY, REVOKED_ALWAYS, default_keyring
from pith_graph.loader.prune import prune_revoked
from pith_graph.loader.stores.memory import MemoryStore, open_saved
from pith_graph.loader.stores.snapshot import save_snapshot
from pith_graph.testing import run_cli

Edit = Callable[[dict[str, Any]], None]


def _first(data: dict[str, Any], label: str) -> dict[str, Any]:
    found: dict[str, Any] = next(node for node in data["nodes"] if node.get("label") == label)
    return found


def _self_loop(data: dict[str, Any]) -> None:
    paper = _first(data, "Paper")["id"]
    data["edges"].append({"source": paper, "target": paper, "type": "AUTHORED"})


def _reversed(data: dict[str, Any]) -> None:
    edge = next(edge for edge in data["edges"] if edge["type"] == "AUTHORED")
    edge["source"], edge["target"] = edge["target"], edge["source"]


def _no_signers(data: dict[str, Any]) -> None:
    data["edges"] = [edge for edge in data["edges"] if edge["type"] != "SIGNED"]
    data["nodes"] = [node for node in data["nodes"] if node["label"] != "Signer"]


def _orphan(data: dict[str, Any]) -> None:
    ghost = {"nameKey": "ghost", "name": "Ghost", "nameFolded": "ghost", "paperCount": 99}
    data["nodes"].append({"id": "Author:ghost", "label": "Author", **ghost})


def _author_twice(data: dict[str, Any]) -> None:
    """A second copy of an author under its id, renamed: networkx kept the last copy."""
    data["nodes"].append({**_first(data, "Author"), "name": "Evil Name"})


def _edge_twice(data: dict[str, Any]) -> None:
    data["edges"].append(dict(data["edges"][0]))


def _edge_to_nobody(data: dict[str, Any]) -> None:
    paper = _first(data, "Paper")["id"]
    data["edges"].append({"source": paper, "target": "Author:nobody-listed", "type": "AUTHORED"})


def _multigraph_edge_twice(data: dict[str, Any]) -> None:
    """Saved as an earlier version saved, a MultiDiGraph (edge key: the type), with a SIGNED
    edge listed again under another key: made a DiGraph, the last copy won."""
    data["multigraph"] = True
    for edge in data["edges"]:
        edge["key"] = edge["type"]
    signed = next(edge for edge in data["edges"] if edge["type"] == "SIGNED")
    data["edges"].append({**signed, "key": "again", "eventTypes": ["record_created"]})


def _author_removed(data: dict[str, Any]) -> None:
    """A paper's author removed with its edge; the paper still names it (authorNames)."""
    author = _first(data, "Author")["id"]
    data["nodes"] = [node for node in data["nodes"] if node["id"] != author]
    data["edges"] = [edge for edge in data["edges"] if author not in (edge["source"], edge["target"])]


def _author_moved(data: dict[str, Any]) -> None:
    """A paper's AUTHORED edge moved to an author of another paper: as many edges as names."""
    paper, other = [node["id"] for node in data["nodes"] if node["label"] == "Paper"][:2]
    stranger = next(e["source"] for e in data["edges"] if e["target"] == other and e["type"] == "AUTHORED")
    edge = next(e for e in data["edges"] if e["target"] == paper and e["type"] == "AUTHORED")
    edge["source"] = stranger


def _set(label: str, name: str, value: object) -> Edit:
    return lambda data: _first(data, label).__setitem__(name, value)


def _name_form_counts(*counts: int) -> Edit:
    """An author of one paper spelt two ways, counted ``counts`` (a GraphQL Int holds 2**31 - 1)."""

    def edit(data: dict[str, Any]) -> None:
        author = _first(data, "Author")
        author["nameForms"], author["nameFormCounts"] = [author["name"], author["name"] + " Jr"], list(counts)

    return edit


NODE_LINK = [
    pytest.param(_self_loop, "AUTHORED goes from an Author to a Paper", id="self-loop"),
    pytest.param(_reversed, "AUTHORED goes from an Author to a Paper", id="reversed-edge"),
    pytest.param(_no_signers, "0 SIGNED edges with signedBundle", id="no-signers"),
    pytest.param(_set("Author", "nameKey", "someone else"), "its id is not 'Author:someone else'", id="id"),
    pytest.param(_orphan, "'Author:ghost': no paper uses it", id="orphan-author"),
    pytest.param(_author_twice, "two nodes share an id: 'Author:", id="node-twice"),
    pytest.param(lambda data: data.update(directed=False), "its graph is not directed", id="undirected"),
    pytest.param(
        lambda data: data.update(links=data.pop("edges")),
        'its edges a list under "edges" (it has "links"',
        id="links-not-edges",
    ),
    pytest.param(_edge_twice, "two edges join the same two nodes", id="edge-twice"),
    pytest.param(_multigraph_edge_twice, "two edges join the same two nodes", id="multigraph-edge-twice"),
    pytest.param(
        _edge_to_nobody,
        "an edge names node 'Author:nobody-listed', which the nodes do not list",
        id="edge-to-nobody",
    ),
    pytest.param(
        _set("Paper", "sourceVersion", 2**40), "sourceVersion is not from 0 to 2147483647", id="version"
    ),
    pytest.param(_set("Author", "paperCount", 2**31), "paperCount is not from 0 to", id="paper-count-huge"),
    pytest.param(_name_form_counts(2**31, 1), "nameFormCounts is not from 0 to", id="name-form-count-huge"),
    pytest.param(_name_form_counts(0, 1), "nameFormCounts are not counts", id="name-form-count-zero"),
    pytest.param(_set("Author", "paperCount", 0), "paperCount 0 is below its", id="paper-count"),
    pytest.param(_set("Paper", "keyIds", ["k"]), "keyIds and bundleKeyId are not", id="paper-keys"),
    pytest.param(_set("Paper", "primaryCategory", "math.CO"), "not to its primaryCategory", id="primary"),
    pytest.param(_set("Paper", "builtAt", "garbage"), "builtAt 'garbage' is not", id="built-at"),
    pytest.param(_author_removed, "are not the Authors of its AUTHORED edges", id="author-removed"),
    pytest.param(_author_moved, "are not the Authors of its AUTHORED edges", id="author-moved"),
    pytest.param(
        _set("Paper", "authorNames", ["Someone Else"]), "its authorNames ['Someone Else'] are", id="names"
    ),
]


def _samples() -> nx.DiGraph:
    graph, _ = load_graph([SAMPLES])
    return graph


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The samples' graph as node-link JSON and as a snapshot."""
    folder = tmp_path_factory.mktemp("saved")
    store = MemoryStore(_samples())
    store.save(folder / "graph.json")
    store.save_snapshot(folder / "graph.snapshot")
    return {name: (folder / name).read_bytes() for name in ("graph.json", "graph.snapshot")}


def _node_link(saved: dict[str, bytes], edit: Edit, path: Path) -> Path:
    data = orjson.loads(saved["graph.json"])
    edit(data)
    path.write_bytes(orjson.dumps(data))
    return path


def _column(label: str, name: str, value: object = None, drop: bool = False) -> Edit:
    """An edit of a snapshot body: every ``label`` row's ``name`` set to ``value`` (or dropped)."""

    def edit(body: dict[str, Any]) -> None:
        group = body["nodes"][label] if label in body["nodes"] else body["edges"][label]
        at = group["properties"].index(name)
        if drop:
            group["properties"].pop(at)
        for row in group["rows"]:
            offset = 0 if label in body["nodes"] else 2
            if drop:
                row.pop(at + offset)
            else:
                row[at + offset] = value

    return edit


def _irregular_paper(body: dict[str, Any]) -> None:
    group = body["nodes"]["Paper"]
    data = {"label": "Paper", **dict(zip(group["properties"], group["rows"].pop(), strict=True))}
    total = sum(len(g["rows"]) + len(g["other"]) for g in body["nodes"].values())
    group["other"].append([total, "Paper:x", {**data, "pithNumber": 12345}])


def _misnamed_paper(body: dict[str, Any]) -> None:
    """A Paper stored as it is (not as a row, whose id its key makes) under another id: every
    listing of papers, served, answered "Internal server error"."""
    group = body["nodes"]["Paper"]
    data = {"label": "Paper", **dict(zip(group["properties"], group["rows"].pop(), strict=True))}
    total = sum(len(g["rows"]) + len(g["other"]) for g in body["nodes"].values())
    group["other"].append([total, "Paper:pith:2019:FAKEFAKE", data])


def _twice(kind: str) -> Edit:
    """An edit of a snapshot body: the first ``kind`` row (a label's or a type's) twice."""

    def edit(body: dict[str, Any]) -> None:
        group = body["nodes"][kind] if kind in body["nodes"] else body["edges"][kind]
        group["rows"].append(list(group["rows"][0]))

    return edit


def _ends_swapped(kind: str) -> Edit:
    """An edit of a snapshot body: the first ``kind`` row's ends swapped (indexes into the
    nodes, which ``serve`` opened unchecked: a reader then failed, "Internal server error")."""

    def edit(body: dict[str, Any]) -> None:
        row = body["edges"][kind]["rows"][0]
        row[0], row[1] = row[1], row[0]

    return edit


SNAPSHOT = [
    pytest.param(_ends_swapped("AUTHORED"), "AUTHORED goes from an Author to a Paper", id="edge-reversed"),
    pytest.param(_ends_swapped("SIGNED"), "SIGNED goes from a Signer to a Paper", id="signed-reversed"),
    pytest.param(_twice("Category"), "two nodes share an id: 'Category:", id="node-twice"),
    pytest.param(_twice("AUTHORED"), "two edges join the same two nodes", id="edge-twice"),
    pytest.param(_column("Paper", "bundleSha256", drop=True), "no bundleSha256", id="no-bundle-sha"),
    pytest.param(_column("Paper", "keyIds", drop=True), "no keyIds", id="no-key-ids"),
    pytest.param(_column("Paper", "title", drop=True), "no title", id="no-title"),
    pytest.param(_column("Paper", "title", 5), "title is not a string: 5", id="title-int"),
    pytest.param(
        _column("Paper", "keyIds", REGISTRY_KEY.key_id), "keyIds is not a list<string>", id="keys-str"
    ),
    pytest.param(_irregular_paper, "pithNumber is not a string: 12345", id="irregular-paper"),
    pytest.param(_misnamed_paper, "'Paper:pith:2019:FAKEFAKE': its id is not 'Paper:", id="misnamed-paper"),
    pytest.param(_column("SIGNED", "keyIds", drop=True), "no keyIds", id="signed-no-keys"),
    pytest.param(
        _column("Paper", "sourceVersion", 2**62), "sourceVersion is not from 0 to", id="version-huge"
    ),
    pytest.param(_column("Paper", "submittedYear", -1), "submittedYear is not from 0 to", id="year-negative"),
    pytest.param(
        _column("Author", "paperCount", 2**31), "paperCount is not from 0 to", id="paper-count-huge"
    ),
]


def _snapshot(saved: dict[str, bytes], edit: Edit, path: Path) -> Path:
    """The samples' snapshot with its body (as one map) edited and its header made to match."""
    path.write_bytes(rewritten(saved["graph.snapshot"], edit, 4))
    return path


def _saved_file(saved: dict[str, bytes], kind: str, edit: Edit, folder: Path) -> Path:
    """The saved graph, edited, as a node-link file (``json``) or a snapshot, in ``folder``."""
    make = _node_link if kind == "json" else _snapshot
    return make(saved, edit, folder / f"graph.{kind}")


@pytest.mark.parametrize(("edit", "expected"), NODE_LINK)
def test_a_node_link_file_the_loader_could_not_have_written_is_refused(
    saved: dict[str, bytes], tmp_path: Path, edit: Edit, expected: str
) -> None:
    path = _node_link(saved, edit, tmp_path / "graph.json")
    with pytest.raises(UsageError) as refused:
        open_saved(path)
    assert expected in str(refused.value) and str(path) in str(refused.value)


@pytest.mark.parametrize(("edit", "expected"), SNAPSHOT)
def test_a_re_hashed_snapshot_of_wrong_types_is_refused(
    saved: dict[str, bytes], tmp_path: Path, edit: Edit, expected: str
) -> None:
    path = _snapshot(saved, edit, tmp_path / "graph.snapshot")
    for opened in (open_saved, MemoryStore.open):
        with pytest.raises(UsageError) as refused:
            opened(path)
        assert expected in str(refused.value) and str(path) in str(refused.value)


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        pytest.param(lambda data: b"\xff" + data, "not UTF-8 text (byte 0 is 0xff)", id="not-utf-8"),
    ],
)
def test_a_saved_graph_that_is_not_json_text_is_refused_saying_what_it_is(
    saved: dict[str, bytes], tmp_path: Path, made: Callable[[bytes], bytes], expected: str
) -> None:
    """A file that is not UTF-8 said "JSONDecodeError: str is not valid UTF-8: surrogates not
    allowed"; so did a keys file (tests/test_keyring.py). (A gzipped one opens since 0.8.9:
    tests/test_gzip_graph_files.py.)"""
    path = tmp_path / "graph.json.gz"
    path.write_bytes(made(saved["graph.json"]))
    for opened in (open_saved, MemoryStore.open):
        with pytest.raises(UsageError) as refused:
            opened(path)
        assert str(refused.value) == f"cannot open saved graph {path}: {expected}"


def test_the_unedited_files_open(saved: dict[str, bytes], tmp_path: Path) -> None:
    """The checks refuse the crafted files, not the loader's own."""
    for name in ("graph.json", "graph.snapshot"):
        (tmp_path / name).write_bytes(saved[name])
        assert nx.utils.graphs_equal(open_saved(tmp_path / name).graph, _samples())


def test_a_graph_saved_before_0_8_2_with_a_time_no_clock_gives_opens(
    saved: dict[str, bytes], tmp_path: Path
) -> None:
    """0.8.1 verified times by their shape: its graphs may hold 2019-02-29, which new bundles
    may not (``shape.is_utc_time``), and still open."""
    data = orjson.loads(saved["graph.json"])
    paper = _first(data, "Paper")
    year = paper["submittedAt"][:4]
    paper["submittedAt"], paper["builtAt"] = f"{year}-02-30T10:00:00Z", "2026-02-29T24:00:00.5Z"
    (tmp_path / "old.json").write_bytes(orjson.dumps(data))
    opened = open_saved(tmp_path / "old.json", checked=True).graph
    assert opened.nodes[paper["id"]]["submittedAt"] == f"{year}-02-30T10:00:00Z"


def test_a_part_as_export_writes_it_opens(saved: dict[str, bytes], tmp_path: Path) -> None:
    """``export`` of a part keeps the database's ``paperCount`` and signers' ``keyIds``, which
    count papers outside the part: more than the part's edges say is fine, fewer is not."""
    data = orjson.loads(saved["graph.json"])
    author, signer = _first(data, "Author"), _first(data, "Signer")
    author["paperCount"] += 5
    signer["keyIds"] = sorted([*signer["keyIds"], "a-key-of-a-paper-outside-the-part"])
    path = tmp_path / "part.json"
    path.write_bytes(orjson.dumps(data))
    graph = open_saved(path).graph
    assert graph.nodes[author["id"]]["paperCount"] == len(graph.succ[author["id"]]) + 5


def _one_line(done: Any, expected: str, path: Path) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert expected in done.stderr and str(path) in done.stderr


CLI = [
    pytest.param("json", _self_loop, "AUTHORED goes from", id="node-link-self-loop"),
    pytest.param("json", _set("Paper", "sourceVersion", 2**40), "sourceVersion", id="node-link-version"),
    pytest.param("snapshot", _column("Paper", "title", drop=True), "no title", id="snapshot-no-title"),
    pytest.param("snapshot", _irregular_paper, "pithNumber is not a string", id="snapshot-irregular"),
    pytest.param("snapshot", _ends_swapped("AUTHORED"), "AUTHORED goes from", id="snapshot-edge-reversed"),
    pytest.param(
        "snapshot", _column("Paper", "sourceVersion", 2**62), "sourceVersion", id="snapshot-version"
    ),
    pytest.param("snapshot", _misnamed_paper, "its id is not", id="snapshot-misnamed"),
]


@pytest.mark.parametrize(("kind", "edit", "expected"), CLI)
def test_serve_refuses_it_in_one_line_before_listening(
    saved: dict[str, bytes], tmp_path: Path, kind: str, edit: Edit, expected: str
) -> None:
    path = _saved_file(saved, kind, edit, tmp_path)
    done = run_cli("serve", "--graph", str(path), "--port", "0", "--workers", "1", timeout=60)
    _one_line(done, expected, path)
    assert "Uvicorn running" not in done.stderr + done.stdout


PRUNE = [
    pytest.param("json", _no_signers, "0 SIGNED edges", id="node-link-no-signers"),
    pytest.param(
        "snapshot", _column("Paper", "bundleSha256", drop=True), "no bundleSha256", id="snapshot-no-sha"
    ),
    pytest.param(
        "snapshot", _column("Paper", "keyIds", REGISTRY_KEY.key_id), "keyIds is not", id="snapshot-keys-str"
    ),
    pytest.param(
        "snapshot", _column("SIGNED", "keyIds", drop=True), "no keyIds", id="snapshot-signed-no-keys"
    ),
]


@pytest.mark.parametrize(("kind", "edit", "expected"), PRUNE)
def test_prune_refuses_it_in_one_line(
    saved: dict[str, bytes], tmp_path: Path, kind: str, edit: Edit, expected: str
) -> None:
    path = _saved_file(saved, kind, edit, tmp_path)
    revoked = tmp_path / "revoked.json"
    entry = {"key_id": REGISTRY_KEY.key_id, "public_key_hex": REGISTRY_KEY.public_key_hex}
    revoked.write_text(json.dumps([{**entry, "signer_id": "pith.science", "revoked": True}]))
    done = run_cli(
        "prune", "--backend", "memory", "--graph", str(path), "--revoked-keys", str(revoked), "--dry-run"
    )
    _one_line(done, expected, path)


def _misnamed() -> nx.DiGraph:
    """The samples with a Paper under an id its key does not make: a store over it lists the
    paper by its pithNumber and finds it by its id (prune removed nothing, and tried again,
    for ever; a load on top of it failed, KeyError, exit 70)."""
    graph = _samples()
    paper = next(node for node, label in graph.nodes(data="label") if label == "Paper")
    return nx.relabel_nodes(graph, {paper: paper + "X"})


def test_a_misnamed_snapshot_is_refused_where_it_is_written_to(tmp_path: Path) -> None:
    """Pruned, or loaded on top of, a snapshot is written to, and is checked as a node-link
    file is (served as it is, its ids are checked too, since 0.8.6: ``snapshot-misnamed``)."""
    path = tmp_path / "graph.snapshot"
    save_snapshot(_misnamed(), path)  # (MemoryStore.save_snapshot refuses it: hand_edited)
    revoked = tmp_path / "revoked.json"
    entry = {"key_id": REGISTRY_KEY.key_id, "public_key_hex": REGISTRY_KEY.public_key_hex}
    revoked.write_text(json.dumps([{**entry, "signer_id": "pith.science", "revoked": True}]))
    prune = ("prune", "--backend", "memory", "--graph", str(path), "--revoked-keys", str(revoked))
    _one_line(run_cli(*prune, "--save", str(tmp_path / "out.json"), timeout=60), "its id is not", path)
    serve = ("serve", "--graph", str(path), SAMPLES, "--port", "0", "--workers", "1")
    _one_line(run_cli(*serve, timeout=60), "its id is not", path)


def test_prune_never_loops_on_papers_it_cannot_remove() -> None:
    """A graph a script edited (a store over it, not opened from a file): prune lists papers it
    cannot find to remove, and says so, rather than listing them again for ever."""
    keyring = default_keyring().with_keys([replace(REGISTRY_KEY, revoked_at=REVOKED_ALWAYS)])
    with pytest.raises(StoreError, match="could not be removed") as refused:
        prune_revoked(MemoryStore(_misnamed()), keyring)
    assert refused.value.code == StoreErrorCode.WRITE_FAILED


def test_a_graph_holding_a_value_too_deep_to_write_fails_to_save_in_one_line(
    saved: dict[str, bytes], tmp_path: Path
) -> None:
    """A graph attribute nested 500 levels deep, added to a node-link file by hand, opens (orjson
    reads 1,024 levels) but cannot be written (254): ``prune --save`` ends ``write_failed``,
    exit 3, and writes nothing (it ended exit 70, "internal error", a traceback in a file);
    so does a snapshot of a node holding it."""
    deep: Any = []
    for _ in range(500):
        deep = [deep]
    data = orjson.loads(saved["graph.json"])
    data["graph"]["note"] = deep  # (a node's would go with the papers pruned)
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(data))  # (orjson would refuse to write it)
    revoked = tmp_path / "revoked.json"
    entry = {"key_id": REGISTRY_KEY.key_id, "public_key_hex": REGISTRY_KEY.public_key_hex}
    revoked.write_text(json.dumps([{**entry, "signer_id": "pith.science", "revoked": True}]))
    out = tmp_path / "out.json"
    prune = ("prune", "--backend", "memory", "--graph", str(path), "--revoked-keys", str(revoked))
    done = run_cli(*prune, "--save", str(out))
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith(
        "pith-graph: store error: write_failed: the graph cannot be written as JSON"
    )
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.json", "revoked.json"]
    store = MemoryStore.open(path)
    store.graph.nodes[next(iter(store.graph))]["note"] = deep  # (a snapshot keeps no graph attributes)
    with pytest.raises(StoreError) as failed:
        store.save_snapshot(tmp_path / "graph.snapshot")
    assert failed.value.code is StoreErrorCode.WRITE_FAILED
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.json", "revoked.json"]
