"""GraphML files for Gephi and Cytoscape (since 0.9.5): ``--save FILE.graphml`` of ``load``,
``prune`` and ``export`` (``tests/test_export.py``), and ``save_graphml``; networkx's own
reader gives back the graph, its list-valued properties as JSON text. Before, ``--save
g.graphml`` wrote node-link JSON under that name, and ``nx.write_graphml(G, path)`` raised
on the graph's lists (``GraphML writer does not support <class 'list'> as data values``)."""

from __future__ import annotations

import gzip
import json
import os
import re
import stat
import subprocess
import sys
import tracemalloc
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import networkx as nx
import orjson
import pytest

import pith_graph
from pith_graph.errors import StoreError, StoreErrorCode, UsageError
from pith_graph.loader.facade import load_graph
from pith_graph.loader.graphml import JSON_PROPERTIES
from pith_graph.loader.stores.memory import MemoryStore, open_saved
from pith_graph.schema.graph import NODES, RELATIONSHIPS
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle, run_cli, write_corpus
from pith_graph.testing.corpus import corpus_signers

_NS = "{http://graphml.graphdrawing.org/xmlns}"


_SIGNER = SignerIdentity.from_seed(b"graphml", key_id="gm-key", signer_id="gm.invalid")


def _bundle(signer: SignerIdentity, arxiv_id: str, author: str, title: str = "A title") -> bytes:
    spec = PaperSpec(
        arxiv_id, 1, title, [author], "An abstract.", "cs.LG", [],
        "http://creativecommons.org/licenses/by/4.0/", "2024-01-01T00:00:00Z",
        "2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z",
    )  # fmt: skip
    return orjson.dumps(build_bundle(spec, signer)) + b"\n"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, nx.DiGraph]:
    """A corpus with versions and two signers, its keyring, and the graph a load builds of it."""
    folder = tmp_path_factory.mktemp("graphml")
    info = write_corpus(folder / "corpus", 240, seed=5, workers=1, layout="jsonl")
    spelt = folder / "corpus" / "spelt.jsonl"  # an author spelt two ways: nameForms, nameFormCounts
    spelt.write_bytes(
        _bundle(_SIGNER, "2412.99991", "Zoë Smith") + _bundle(_SIGNER, "2412.99992", "ZOË  smith")
    )
    keys = folder / "keys.json"
    keys.write_bytes(orjson.dumps([*orjson.loads(info.keyring_path.read_bytes()), _SIGNER.keyring_entry()]))
    G, report = load_graph([*info.shards, spelt], trusted_keys=keys, workers=1)
    assert report.rejected == 0
    assert G.nodes["Author:zoë smith"]["nameFormCounts"] == [1, 1]
    return folder, keys, G


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def decoded(H: nx.DiGraph) -> nx.DiGraph:
    """``H`` as read from GraphML, its schema's list properties decoded from their JSON text."""
    for _, data in H.nodes(data=True):
        data.update(
            (name, json.loads(data[name])) for name in JSON_PROPERTIES.get(data["label"], ()) if name in data
        )
    for _, _, data in H.edges(data=True):
        data.update(
            (name, json.loads(data[name])) for name in JSON_PROPERTIES.get(data["type"], ()) if name in data
        )
    return H


def assert_same_graph(read: nx.DiGraph, G: nx.DiGraph) -> None:
    """``read`` (from GraphML, decoded) is ``G``: its nodes in order, edges, attributes and types."""
    assert type(read) is nx.DiGraph
    assert list(read.nodes(data=True)) == [
        (node, {name: _plain(value) for name, value in data.items()}) for node, data in G.nodes(data=True)
    ]
    edges = {
        (u, v): {name: _plain(value) for name, value in data.items()} for u, v, data in G.edges(data=True)
    }
    assert {(u, v): data for u, v, data in read.edges(data=True)} == edges


def _load(corpus: tuple[Path, Path, nx.DiGraph], *saves: str) -> None:
    folder, keys, _ = corpus
    shards = sorted(str(path) for path in (folder / "corpus").glob("*.jsonl"))
    done = run_cli("load", *shards, "--trusted-keys", str(keys), *saves, timeout=300)
    assert done.returncode == 0, done.stderr


def test_load_save_graphml_is_the_graph_networkx_reads_back(
    corpus: tuple[Path, Path, nx.DiGraph], tmp_path: Path
) -> None:
    _, _, G = corpus
    assert any(not latest for _, latest in G.nodes(data="isLatest") if latest is not None)  # versions
    out = tmp_path / "g.graphml"
    _load(corpus, "--save", str(out), "--snapshot", str(tmp_path / "g.snapshot"))
    assert_same_graph(decoded(nx.read_graphml(out)), G)
    keys = {key.get("attr.name"): key.get("attr.type") for key in ET.parse(out).getroot().iter(f"{_NS}key")}
    assert keys["submittedYear"] == keys["paperCount"] == "long"
    assert keys["isLatest"] == keys["primary"] == keys["signedBundle"] == "boolean"
    listed = {name for names in JSON_PROPERTIES.values() for name in names}
    assert listed == {"keyIds", "authorNames", "nameForms", "nameFormCounts", "eventTypes"}
    assert {keys[name] for name in listed} == {"string"}  # JSON text, every one in the file
    assert nx.utils.graphs_equal(open_saved(tmp_path / "g.snapshot").graph, G)  # saved together


def test_keys_are_the_schemas_and_none_is_named_like_gephis_label(
    corpus: tuple[Path, Path, nx.DiGraph], tmp_path: Path
) -> None:
    """One key per property name of the schema's nodes and edges, typed as it says, with ids
    of their names: Gephi takes a key ``d3`` as the node label and drops that column (networkx
    named keys d0, d1… as it met them: d3 was ``title`` in a load's file)."""
    pith_graph.save_graphml(corpus[2], tmp_path / "g.graphml")
    declared = {
        (key.get("for"), key.get("attr.name")): (key.get("id"), key.get("attr.type"))
        for key in ET.parse(tmp_path / "g.graphml").getroot().iter(f"{_NS}key")
    }
    types = {"string": "string", "integer": "long", "boolean": "boolean"}
    expected = {("node", "label"): ("n_label", "string"), ("edge", "type"): ("e_type", "string")}
    for scope, specs in (("node", NODES.values()), ("edge", RELATIONSHIPS.values())):
        for spec in specs:
            for prop in spec.properties:
                expected[scope, prop.name] = (f"{scope[0]}_{prop.name}", types.get(prop.type, "string"))
    assert declared == expected
    assert ("node", "title") in declared and ("edge", "keyIds") in declared
    assert not any(re.fullmatch(r"d\d+", key_id) for key_id, _ in declared.values())


def test_a_graphml_gz_name_is_gzip_of_the_same_file(
    corpus: tuple[Path, Path, nx.DiGraph], tmp_path: Path
) -> None:
    _load(corpus, "--save", str(tmp_path / "g.graphml.gz"))
    _load(corpus, "--save", str(tmp_path / "g.graphml"))
    packed = (tmp_path / "g.graphml.gz").read_bytes()
    assert packed[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed) == (tmp_path / "g.graphml").read_bytes()
    assert_same_graph(decoded(nx.read_graphml(tmp_path / "g.graphml.gz")), corpus[2])


def test_save_graphml_writes_what_the_command_line_does(
    corpus: tuple[Path, Path, nx.DiGraph], tmp_path: Path
) -> None:
    _, _, G = corpus
    pith_graph.save_graphml(G, tmp_path / "api.graphml")
    _load(corpus, "--save", str(tmp_path / "cli.graphml"))
    assert (tmp_path / "api.graphml").read_bytes() == (tmp_path / "cli.graphml").read_bytes()
    H = G.copy()
    H.add_edge("Author:nobody", next(iter(G)), type="AUTHORED")  # not one a load builds
    with pytest.raises(StoreError) as raised:
        pith_graph.save_graphml(H, tmp_path / "edited.graphml")
    assert raised.value.code is StoreErrorCode.HAND_EDITED
    assert not (tmp_path / "edited.graphml").exists()


def test_prune_save_graphml_is_the_pruned_graph(
    corpus: tuple[Path, Path, nx.DiGraph], tmp_path: Path
) -> None:
    _, keys, _ = corpus
    _load(corpus, "--snapshot", str(tmp_path / "g.snapshot"))
    _, builder = corpus_signers(5)
    revoked = tmp_path / "revoked.json"
    revoked.write_bytes(orjson.dumps([{**builder.keyring_entry(), "revoked": True}]))
    pruned = {}
    for name in ("pruned.json", "pruned.graphml"):
        done = run_cli(
            "prune", "--backend", "memory", "--graph", str(tmp_path / "g.snapshot"), "--trusted-keys", str(keys),
            "--revoked-keys", str(revoked), "--save", str(tmp_path / name), "--json", timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        pruned[name] = json.loads(done.stdout)["removed"]
    assert pruned["pruned.json"] == pruned["pruned.graphml"] != []
    expected = MemoryStore.open(tmp_path / "pruned.json").graph
    assert_same_graph(decoded(nx.read_graphml(tmp_path / "pruned.graphml")), expected)


@pytest.mark.parametrize(
    "command",
    [
        ["serve", "--graph", "{d}/g.graphml"],
        ["serve", "--graph", "{d}/g.graphml.gz"],
        ["prune", "--backend", "memory", "--graph", "{d}/g.graphml", "--revoked-keys", "{d}/keys.json"],
        ["load", "{d}/keys.json", "--snapshot", "{d}/s.graphml"],
        ["serve", "--graph", "{d}/G.GraphML"],
        ["load", "{d}/keys.json", "--snapshot", "{d}/S.GRAPHML.GZ"],
    ],
    ids=["serve", "serve-gz", "prune", "load-snapshot", "serve-case", "load-snapshot-case"],
)
def test_a_graphml_file_is_never_read_back(command: list[str], tmp_path: Path) -> None:
    (tmp_path / "keys.json").write_text("[]")
    for name in ("g.graphml", "g.graphml.gz", "G.GraphML"):
        (tmp_path / name).write_bytes(b"<?xml version='1.0'?><graphml/>")
    done = run_cli(*(part.format(d=tmp_path) for part in command), timeout=60)
    assert done.returncode == 2, done.stderr
    option = "--snapshot" if "--snapshot" in command else "--graph"
    assert done.stderr.startswith(f"pith-graph: error: {option} ")
    assert "GraphML is written for Gephi and Cytoscape, not read back" in done.stderr
    assert done.stdout == ""


def test_the_python_api_refuses_graphml_where_it_reads_back(
    corpus: tuple[Path, Path, nx.DiGraph], tmp_path: Path
) -> None:
    _, _, G = corpus
    pith_graph.save_graphml(G, tmp_path / "g.graphml")
    os.replace(tmp_path / "g.graphml", tmp_path / "renamed.json")  # a GraphML file under another name
    with pytest.raises(
        UsageError, match="GraphML, which pith-graph writes for Gephi and Cytoscape and does not"
    ):
        MemoryStore.open(tmp_path / "renamed.json")
    with pytest.raises(UsageError, match=r"MemoryStore\.save '.*g\.graphml': GraphML is written for Gephi"):
        MemoryStore(G).save(tmp_path / "g.graphml")
    with pytest.raises(UsageError, match=r"MemoryStore\.save_snapshot"):
        MemoryStore(G).save_snapshot(tmp_path / "g.graphml.gz")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["renamed.json"]


def test_save_graphml_refuses_a_file_the_command_reads(
    corpus: tuple[Path, Path, nx.DiGraph], tmp_path: Path
) -> None:
    _, keys, _ = corpus
    copy = tmp_path / "keys.graphml"
    copy.write_bytes(keys.read_bytes())
    done = run_cli("load", str(keys), "--trusted-keys", str(copy), "--save", str(copy), timeout=60)
    assert done.returncode == 2
    assert "names a file this command reads (--trusted-keys" in done.stderr
    assert copy.read_bytes() == keys.read_bytes()


def test_characters_xml_cannot_hold_are_replaced_in_values_and_escaped_in_ids(tmp_path: Path) -> None:
    """A control character is U+FFFD in a GraphML value (XML 1.0 has no way to write it), a
    JSON escape in a list's JSON text (U+FFFE and U+FFFF too), and U+FFFD and its code in a
    node id, so that ids only such characters tell apart stay apart: every corpus is written
    (the save failed, exit 3, for two authors ``Zoë \\x01Smith`` and ``Zoë \\x02Smith``)."""
    signer = _SIGNER
    keys = tmp_path / "keys.json"
    keys.write_bytes(orjson.dumps([signer.keyring_entry()]))
    one = tmp_path / "one.jsonl"
    one.write_bytes(_bundle(signer, "2401.00001", "Zoë \x01Smith", "A \x0btitle\r\nin two lines"))
    done = run_cli("load", str(one), "--trusted-keys", str(keys), "--save", str(tmp_path / "one.graphml"))
    assert done.returncode == 0, done.stderr
    read = nx.read_graphml(tmp_path / "one.graphml")
    assert read.nodes["Author:zoë \ufffd0001smith"]["name"] == "Zoë \ufffdSmith"
    paper = next(data for _, data in read.nodes(data=True) if data["label"] == "Paper")
    assert paper["title"] == "A \ufffdtitle\r\nin two lines"  # a carriage return read back as one
    assert json.loads(paper["authorNames"]) == ["Zoë \x01Smith"]  # a JSON escape in a list: kept

    names = [
        "Zoë \x01Smith",
        "Zoë \x02Smith",
        "Bob \ufffeX",
        "Bob \ufffdX",
        "Bob \uffffX",
        "Bob \ufffdFFFEX",
        "Bob \\X",
    ]
    two = tmp_path / "two.jsonl"
    two.write_bytes(b"".join(_bundle(signer, f"2401.0001{i}", name) for i, name in enumerate(names)))
    target = tmp_path / "two.graphml"
    target.write_bytes(b"the file that was there")
    done = run_cli(
        "load",
        str(two),
        "--trusted-keys",
        str(keys),
        "--save",
        str(target),
        "--snapshot",
        str(tmp_path / "two.snapshot"),
    )
    assert done.returncode == 0, done.stderr
    G = open_saved(tmp_path / "two.snapshot").graph
    read = nx.read_graphml(target)
    authors = sorted(node for node, label in read.nodes(data="label") if label == "Author")
    assert (
        len(authors)
        == len(names)
        == len({node for node, label in G.nodes(data="label") if label == "Author"})
    )
    assert {"Author:bob \ufffdFFFDx", "Author:bob \ufffdFFFEx", "Author:bob \ufffdFFFDfffex"} < set(authors)
    assert "Author:bob \\x" in authors  # a backslash is no escape: kept
    assert read.number_of_edges() == G.number_of_edges()
    listed = sorted(
        json.loads(data["authorNames"])[0] for _, data in read.nodes(data=True) if data["label"] == "Paper"
    )
    assert listed == sorted(names)  # U+FFFE and U+FFFF in a list's JSON text: JSON escapes, kept
    assert sorted(path.name for path in tmp_path.iterdir() if path.name.startswith(".")) == []


def test_an_attribute_graphml_has_no_type_for_is_write_failed(
    corpus: tuple[Path, Path, nx.DiGraph], tmp_path: Path
) -> None:
    _, _, G = corpus
    H = G.copy()
    paper = next(n for n, label in H.nodes(data="label") if label == "Paper")
    H.nodes[paper]["myScores"] = {"a": [1, 2]}  # a script's own attribute: JSON text too
    pith_graph.save_graphml(H, tmp_path / "ok.graphml")
    assert json.loads(nx.read_graphml(tmp_path / "ok.graphml").nodes[paper]["myScores"]) == {"a": [1, 2]}
    H.nodes[paper]["myNote"] = None
    with pytest.raises(StoreError) as raised:
        pith_graph.save_graphml(H, tmp_path / "none.graphml")
    assert raised.value.code is StoreErrorCode.WRITE_FAILED
    assert (
        f"node {paper!r} has 'myNote' = None, of a type GraphML has none for (NoneType)"
        in raised.value.message
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["ok.graphml"]


def test_a_scripts_float_is_a_double_and_a_node_id_not_a_string_is_its_text(
    corpus: tuple[Path, Path, nx.DiGraph], tmp_path: Path
) -> None:
    """A script's own attribute gets a key of its type: a float (a PageRank score) is a
    ``double`` that reads back as the same float, beside the schema's keys; a graph a script
    built (``graphml_bytes``: any node ids) writes each id as its text."""
    _, _, G = corpus
    H = G.copy()
    paper = next(n for n, label in H.nodes(data="label") if label == "Paper")
    H.nodes[paper]["pagerank"] = 0.125
    pith_graph.save_graphml(H, tmp_path / "scores.graphml")
    assert nx.read_graphml(tmp_path / "scores.graphml").nodes[paper]["pagerank"] == 0.125
    assert '<key id="n_pagerank" for="node" attr.name="pagerank" attr.type="double"/>' in (
        tmp_path / "scores.graphml"
    ).read_text(encoding="utf-8")

    from pith_graph.loader.graphml import graphml_bytes

    (tmp_path / "ints.graphml").write_bytes(graphml_bytes(nx.DiGraph([(1, 2)])))
    assert list(nx.read_graphml(tmp_path / "ints.graphml").edges) == [("1", "2")]


def test_one_name_of_two_types_is_two_keys(corpus: tuple[Path, Path, nx.DiGraph], tmp_path: Path) -> None:
    """One key per (name, type): a script's score an int on one node and a float on another
    is ``n_myScore`` (long) and ``n_myScore.double``, each node's value read back as it was;
    graph attributes alike, even when the names only ``str`` makes one (``1`` and ``"1"``)."""
    _, _, G = corpus
    H = G.copy()
    first, second = [n for n, label in H.nodes(data="label") if label == "Paper"][:2]
    H.nodes[first]["myScore"] = 3
    H.nodes[second]["myScore"] = 0.5
    pith_graph.save_graphml(H, tmp_path / "two.graphml")
    text = (tmp_path / "two.graphml").read_text(encoding="utf-8")
    assert '<key id="n_myScore" for="node" attr.name="myScore" attr.type="long"/>' in text
    assert '<key id="n_myScore.double" for="node" attr.name="myScore" attr.type="double"/>' in text
    read = nx.read_graphml(tmp_path / "two.graphml")
    assert (read.nodes[first]["myScore"], read.nodes[second]["myScore"]) == (3, 0.5)

    from pith_graph.loader.graphml import graphml_bytes

    scripts = nx.DiGraph()
    scripts.graph.update({1: "one", "1": 1})
    document = ET.fromstring(graphml_bytes(scripts))
    keys = document.iter("{http://graphml.graphdrawing.org/xmlns}key")
    assert sorted(key.get("id", "") for key in keys if key.get("for") == "graph") == ["g_1", "g_1.long"]


def test_an_attribute_added_while_the_graph_is_written_is_write_failed(
    corpus: tuple[Path, Path, nx.DiGraph],
) -> None:
    """Every key is declared before the graph: an attribute of a new name that appears once the
    keys are written (another thread changing the graph) fails the write, never a ``<data>``
    of an undeclared key."""
    from pith_graph.loader.graphml import graphml_chunks

    _, _, G = corpus
    H = G.copy()
    pieces = graphml_chunks(H)
    next(pieces)  # the header and keys
    H.nodes[next(iter(H))]["addedLater"] = "x"
    with pytest.raises(StoreError) as raised:
        list(pieces)
    assert raised.value.code is StoreErrorCode.WRITE_FAILED
    assert "the graph changed while it was written as GraphML" in raised.value.message


def test_a_name_the_schema_gives_two_types_is_refused() -> None:
    """One key per (node or edge, name): the schema's labels (or types) must agree on a
    name's type, checked as the module is imported."""
    from pith_graph.loader.graphml import _declared
    from pith_graph.schema.graph import PropertySpec

    same = [PropertySpec("keyIds", "list<string>", "a"), PropertySpec("keyIds", "list<string>", "b")]
    assert _declared("label", same) == {"label": "string", "keyIds": "string"}
    with pytest.raises(TypeError, match="schema: keyIds is both list<string> and string"):
        _declared("label", [*same, PropertySpec("keyIds", "string", "c")])


def test_a_graphml_name_in_capitals_is_graphml(corpus: tuple[Path, Path, nx.DiGraph], tmp_path: Path) -> None:
    """``--save UP.GRAPHML`` wrote node-link JSON (the name's case counted), as ``--graph``
    refused it not: every command now takes the name in any case, as ``.GZ`` for gzip."""
    _load(corpus, "--save", str(tmp_path / "UP.GRAPHML"))
    pith_graph.save_graphml(corpus[2], tmp_path / "g.graphml")
    pith_graph.save_graphml(corpus[2], tmp_path / "Up.GraphML.GZ")
    assert (tmp_path / "UP.GRAPHML").read_bytes() == (tmp_path / "g.graphml").read_bytes()
    assert gzip.decompress((tmp_path / "Up.GraphML.GZ").read_bytes()) == (tmp_path / "g.graphml").read_bytes()
    assert_same_graph(decoded(nx.read_graphml(tmp_path / "UP.GRAPHML")), corpus[2])


def test_a_fifo_is_never_replaced_by_a_file_from_python(
    corpus: tuple[Path, Path, nx.DiGraph], tmp_path: Path
) -> None:
    """The command line refused a ``--save`` that is a FIFO or a device; ``save_graphml``,
    ``MemoryStore.save`` and ``.save_snapshot`` replaced it by a regular file (``root`` could so
    replace ``/dev/null``): now every write beside a path refuses it (``write_failed``)."""
    fifo = tmp_path / "pipe.graphml"
    os.mkfifo(fifo)
    store = MemoryStore(corpus[2])
    for save, path in (
        (pith_graph.save_graphml, fifo),
        (lambda G, path: MemoryStore(G).save(path), tmp_path / "pipe.json"),
        (lambda G, path: MemoryStore(G).save_snapshot(path), tmp_path / "pipe.snapshot"),
    ):
        if not path.exists():
            os.mkfifo(path)
        with pytest.raises(StoreError) as raised:
            save(store.graph, path)
        assert raised.value.code is StoreErrorCode.WRITE_FAILED
        assert (
            raised.value.message
            == f"cannot write the graph to {path}: not a regular file (a device, FIFO or socket)"
        )
        assert stat.S_ISFIFO(os.stat(path).st_mode)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["pipe.graphml", "pipe.json", "pipe.snapshot"]


_WITHOUT_LXML = """
import sys, networkx as nx
sys.modules["lxml"] = sys.modules["lxml.etree"] = None  # import lxml: ImportError
def refused(*args, **kwargs):
    raise AssertionError("networkx's GraphML writer called")
nx.write_graphml = nx.write_graphml_xml = nx.write_graphml_lxml = nx.generate_graphml = refused
nx.readwrite.graphml.GraphMLWriter = nx.readwrite.graphml.GraphMLWriterLxml = refused
from pith_graph import SAMPLES, load_graph, save_graphml
G, _ = load_graph([SAMPLES], workers=1)
save_graphml(G, sys.argv[1])
assert not any(name == "lxml" or name.startswith("lxml.") for name in sys.modules if sys.modules[name])
"""


def test_the_bytes_do_not_depend_on_what_is_installed(tmp_path: Path) -> None:
    """networkx's writer used lxml when installed (other bytes, a carriage return kept as
    ``&#13;``): the writer is pith-graph's own, standard library only, so a run where lxml
    cannot be imported and networkx's writer refuses to run writes the same bytes."""
    from pith_graph.loader import SAMPLES

    G, _ = load_graph([SAMPLES], workers=1)
    pith_graph.save_graphml(G, tmp_path / "here.graphml")
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_LXML, str(tmp_path / "bare.graphml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "bare.graphml").read_bytes() == (tmp_path / "here.graphml").read_bytes()
    assert_same_graph(decoded(nx.read_graphml(tmp_path / "here.graphml")), G)


def test_the_file_is_streamed_in_pieces_of_bounded_memory(
    corpus: tuple[Path, Path, nx.DiGraph], tmp_path: Path
) -> None:
    """The document is written about 64k characters at a time: what a save allocates stays
    below the file's size whatever the graph's (networkx's writer built a copy of the graph,
    an ElementTree of it and the whole text: about ten times the file's size)."""
    from pith_graph.loader.graphml import graphml_chunks  # (here: 0.9.5's first writer had none)

    _, _, G = corpus
    pieces = list(graphml_chunks(G))
    assert len(pieces) > 10 and max(map(len, pieces)) < 4 * 65536
    tracemalloc.start()
    try:
        pith_graph.save_graphml(G, tmp_path / "g.graphml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    written = (tmp_path / "g.graphml").read_bytes()
    assert written == b"".join(pieces)
    assert peak < len(written), (peak, len(written))
    pith_graph.save_graphml(G, tmp_path / "g.graphml.gz")
    assert gzip.decompress((tmp_path / "g.graphml.gz").read_bytes()) == written
