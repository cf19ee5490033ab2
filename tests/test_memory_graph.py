"""The in-memory graph's compact writes: ``put`` is the only code that writes networkx's
private adjacency dicts, so these tests pin what it relies on. If networkx changes its
``DiGraph`` internals or its view cache, they fail here first. And its node ids: one per key."""

from __future__ import annotations

import ast
import copy
import json
import pickle
from pathlib import Path

import networkx as nx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_store_behaviour import bundle, load, spec

from pith_graph.errors import UsageError
from pith_graph.loader.facade import SAMPLES, load_graph
from pith_graph.loader.keyring import REGISTRY_KEY
from pith_graph.loader.shape import ALIAS_KIND
from pith_graph.loader.stores.memory import MemoryStore, open_saved
from pith_graph.loader.stores.memory_graph import EdgeData, EdgeInterner, check_structure, put
from pith_graph.schema.graph import ALIAS, node_id
from pith_graph.testing import run_cli


def _built_both_ways() -> tuple[nx.DiGraph, nx.DiGraph, EdgeData]:
    interner = EdgeInterner()
    authored = interner({"type": "AUTHORED"})
    ours = nx.DiGraph()
    _ = ours.nodes, ours.adj, ours.edges, ours.pred, ours.succ  # cached views exist before the write
    put(ours, [("a", {"label": "Author"}), ("p", {"label": "Paper"}), ("q", {"label": "Paper"})], [])
    put(ours, [], [("a", "p", authored), ("a", "q", authored)])
    theirs = nx.DiGraph()
    theirs.add_node("a", label="Author")
    theirs.add_node("p", label="Paper")
    theirs.add_node("q", label="Paper")
    theirs.add_edge("a", "p", type="AUTHORED")
    theirs.add_edge("a", "q", type="AUTHORED")
    return ours, theirs, authored


def test_put_builds_what_networkx_builds() -> None:
    ours, theirs, authored = _built_both_ways()
    assert nx.utils.graphs_equal(ours, theirs)
    assert list(ours.edges(data=True)) == list(theirs.edges(data=True))
    assert dict(ours.pred["p"]) == {"a": authored} and ours.in_degree("q") == 1
    assert ours.edges["a", "p"] is ours.edges["a", "q"] is authored  # shared, not copied
    # the cached views see the writes (put clears networkx's cache as add_edge does)
    assert set(ours.adj["a"]) == {"p", "q"} and ours.number_of_edges() == 2
    assert sorted(ours.nodes) == ["a", "p", "q"]
    ours.remove_edge("a", "p")  # public methods keep working on what put wrote
    ours.remove_node("q")
    assert list(ours.edges) == [] and sorted(ours) == ["a", "p"]


#: networkx's own structures of a ``DiGraph`` (``_adj`` is ``_succ``).
_PRIVATE = frozenset({"_node", "_succ", "_pred", "_adj"})
_MUTATORS = frozenset({"clear", "update", "setdefault", "pop", "popitem", "__setitem__", "__delitem__"})
PROJECT = Path(__file__).resolve().parents[1]


def _private(expression: ast.expr, aliases: set[str]) -> bool:
    """Whether ``expression`` is (an item, at any depth, of) networkx's structures."""
    while isinstance(expression, ast.Subscript):
        expression = expression.value
    return (isinstance(expression, ast.Attribute) and expression.attr in _PRIVATE) or (
        isinstance(expression, ast.Name) and expression.id in aliases
    )


def _private_writers(tree: ast.AST) -> set[str]:
    """Functions of ``tree`` that write into networkx's structures: store or delete an item
    of ``x._succ`` (or of a name bound to it, as ``succ = graph._succ``), at any depth
    (``succ[a][b] = ...``), or call a mutating method on one."""
    found: set[str] = set()
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        aliases = {
            target.id
            for node in ast.walk(function)
            if isinstance(node, ast.Assign | ast.AnnAssign)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr in _PRIVATE
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)
        }
        aliases |= {  # succ, pred = graph._succ, graph._pred
            target.id
            for node in ast.walk(function)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple)
            for tuple_target in node.targets
            if isinstance(tuple_target, ast.Tuple)
            for target, value in zip(tuple_target.elts, node.value.elts, strict=False)
            if isinstance(target, ast.Name) and isinstance(value, ast.Attribute) and value.attr in _PRIVATE
        }
        for node in ast.walk(function):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign | ast.Delete):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _MUTATORS
                and _private(node.func.value, aliases)
            ):
                found.add(function.name)
            flat = [
                t for target in targets for t in (target.elts if isinstance(target, ast.Tuple) else [target])
            ]
            if any(isinstance(t, ast.Subscript) and _private(t, aliases) for t in flat):
                found.add(function.name)
    return found


def test_put_is_the_only_writer_of_networkx_structures() -> None:
    """Issue 10: networkx's private adjacency dicts are written in one function, ``put``,
    which the tests above check against networkx's own methods. Any other function of the
    package that writes them (a snapshot's reader did, until it went through ``put``) fails
    here, named."""
    writers = sorted(
        f"{path.relative_to(PROJECT)}:{name}"
        for folder in ("pith_graph", "loader", "schema", "api")
        for path in sorted((PROJECT / folder).rglob("*.py"))
        if "__pycache__" not in path.parts
        for name in _private_writers(ast.parse(path.read_text(encoding="utf-8")))
    )
    assert writers == ["loader/stores/memory_graph.py:put"]


def test_the_writer_finder_sees_each_way_of_writing() -> None:
    """The finder above is not blind: each kind of write it must see, it sees."""
    cases = {
        "direct": "def f(g):\n    g._succ['a'] = {}\n",
        "nested": "def f(g):\n    g._pred['a']['b'] = 1\n",
        "alias": "def f(g):\n    succ = g._succ\n    succ['a']['b'] = 1\n",
        "tuple alias": "def f(g):\n    succ, pred = g._succ, g._pred\n    pred['a'] = {}\n",
        "chained": "def f(g, s):\n    s['x'] = g._adj['a']['b'] = 1\n",
        "delete": "def f(g):\n    del g._node['a']\n",
        "method": "def f(g):\n    g._node.update({})\n",
        "annotated": "def f(g):\n    nodes: dict = g._node\n    nodes['a'] = {}\n",
    }
    for case, source in cases.items():
        assert _private_writers(ast.parse(source)) == {"f"}, case
    reads = "def f(g):\n    succ = g._succ\n    return [succ[n] for n in g._node], g._pred['a']\n"
    assert _private_writers(ast.parse(reads)) == set()


def test_edge_data_is_read_only_and_copies_are_plain() -> None:
    ours, _, authored = _built_both_ways()
    with pytest.raises(TypeError, match="read-only"):
        ours.edges["a", "p"]["weight"] = 1
    with pytest.raises(TypeError):
        ours.add_edge("a", "p", weight=1)  # would change every AUTHORED edge
    with pytest.raises(TypeError):
        nx.set_edge_attributes(ours, 1, "weight")
    mine = nx.DiGraph(ours)
    mine.edges["a", "p"]["weight"] = 1
    assert mine.edges["a", "q"] == {"type": "AUTHORED"} and authored == {"type": "AUTHORED"}
    copied = ours.copy()
    copied.edges["a", "p"]["weight"] = 2
    assert type(copied.edges["a", "p"]) is dict
    for clone in (pickle.loads(pickle.dumps(ours)), copy.deepcopy(ours)):
        assert nx.utils.graphs_equal(clone, ours)
        assert clone.edges["a", "p"] is clone.edges["a", "q"]  # still shared, so read-only:
        with pytest.raises(TypeError, match="read-only"):  # (a deepcopy's one plain dict was
            clone.edges["a", "p"]["weight"] = 1  # shared by both: one edit was on every edge)
        assert type(clone.edges["a", "p"]) is EdgeData


def test_a_change_that_changes_nothing_passes() -> None:
    """networkx's ``add_edge`` of an edge already there updates its dict with what was given:
    nothing, or what it holds, is no change (it raised TypeError before 0.9.10)."""
    ours, _, authored = _built_both_ways()
    ours.add_edge("a", "p")
    ours.add_edge("a", "p", type="AUTHORED")
    ours.add_edges_from([("a", "p"), ("a", "q", {"type": "AUTHORED"})])
    ours.update(edges=[("a", "p")])
    authored["type"] = "AUTHORED"
    authored |= {"type": "AUTHORED"}
    assert authored == {"type": "AUTHORED"} and ours.edges["a", "p"] is authored
    for change in ({"type": "OTHER"}, {"weight": 1}):
        with pytest.raises(TypeError, match="read-only"):
            ours.add_edge("a", "p", **change)
    interner = EdgeInterner()
    flagged = interner({"type": "IN_CATEGORY", "primary": True})
    for same_but_typed in (1, 1.0):  # equal, not the same: a change
        with pytest.raises(TypeError):
            flagged["primary"] = same_but_typed
    zero = interner({"type": "X", "w": -0.0})
    with pytest.raises(TypeError):
        zero["w"] = 0.0


def test_interner_shares_equal_attributes_and_freezes_lists() -> None:
    interner = EdgeInterner()
    one = interner({"type": "SIGNED", "keyIds": ["k"], "signedBundle": True})
    two = interner({"type": "SIGNED", "keyIds": ["k"], "signedBundle": True})
    other = interner({"type": "SIGNED", "keyIds": ["k", "j"], "signedBundle": True})
    assert one is two and one is not other
    assert one["keyIds"] == ("k",)


def test_saved_graphs_read_back_new_and_old(tmp_path: object) -> None:
    """``--save`` files stay readable by networkx and by ``MemoryStore.open``, including those
    an earlier version saved as a ``MultiDiGraph`` (edge key = type)."""
    from pathlib import Path

    import orjson

    from pith_graph.loader.facade import SAMPLES, load_graph
    from pith_graph.loader.stores.memory import MemoryStore

    folder = Path(str(tmp_path))
    G, _ = load_graph([SAMPLES])
    store = MemoryStore(G)
    store.save(folder / "new.json")
    again = nx.node_link_graph(orjson.loads((folder / "new.json").read_bytes()), edges="edges")
    assert type(again) is nx.DiGraph and sorted(again.edges) == sorted(G.edges)
    assert MemoryStore(again).export() == store.export()  # tuples in memory, lists in JSON
    old = nx.MultiDiGraph()
    old.add_nodes_from(G.nodes(data=True))
    for u, v, data in G.edges(data=True):
        old.add_edge(u, v, key=data["type"], **data)
    (folder / "old.json").write_bytes(orjson.dumps(nx.node_link_data(old, edges="edges")))
    for name in ("new.json", "old.json"):
        opened = MemoryStore.open(folder / name)
        assert type(opened.graph) is nx.DiGraph
        assert opened.export() == store.export()
        assert all(type(data) is EdgeData for _, _, data in opened.graph.edges(data=True))


_ID_TEXT = st.text(alphabet="a:_/1é", max_size=8)  # ':' often, so that a collision would show


@settings(max_examples=300, deadline=None)
@given(
    st.from_regex(ALIAS_KIND, fullmatch=True), _ID_TEXT, st.from_regex(ALIAS_KIND, fullmatch=True), _ID_TEXT
)
def test_an_alias_node_id_names_one_alias(kind: str, value: str, kind2: str, value2: str) -> None:
    """For every kind verification admits (``loader/shape.py``'s ALIAS_KIND) the id splits
    back into its (kind, value): two aliases never share an in-memory node, as two never share
    a Neo4j one."""
    label, *key = node_id(ALIAS.label, kind, value).split(":", 2)
    assert (label, *key) == (ALIAS.label, kind, value)
    same = node_id(ALIAS.label, kind, value) == node_id(ALIAS.label, kind2, value2)
    assert same == ((kind, value) == (kind2, value2))


def test_a_kind_that_would_collide_is_not_admitted() -> None:
    """The reviewer's pair: with a ':' in the kind two aliases would be one node."""
    assert node_id(ALIAS.label, "doi:10.1000/jrnl", "42") == node_id(ALIAS.label, "doi", "10.1000/jrnl:42")
    assert not ALIAS_KIND.fullmatch("doi:10.1000/jrnl")
    assert all(ALIAS_KIND.fullmatch(kind) for kind in ("arxiv", "arxiv_version", "doi", "pith_short_16"))


def _samples_node_link() -> dict[str, object]:
    graph, _ = load_graph([SAMPLES])
    data: dict[str, object] = orjson.loads(orjson.dumps(nx.node_link_data(graph, edges="edges")))
    return data


def _first(data: dict[str, object], label: str) -> dict[str, object]:
    nodes = data["nodes"]
    assert isinstance(nodes, list)
    found: dict[str, object] = next(node for node in nodes if node.get("label") == label)
    return found


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("a list at the top", "TypeError: expected a node-link JSON object"),
        ("nodes not a list", "TypeError"),
        ("a paper without keyIds", "no keyIds"),
        ("keyIds an integer", "keyIds is not a list<string>: 5"),
        ("a count that is a boolean", "paperCount is not an integer: True"),
        ("an unknown label", "unknown label"),
    ],
)
def test_a_malformed_node_link_file_is_refused_in_one_line(tmp_path: Path, case: str, expected: str) -> None:
    """A node-link file is an interchange file anyone may have written: ``prune`` and
    ``serve --graph`` (both through ``open_saved``) refuse one the schema does not describe
    with a usage error naming what is wrong, never a traceback later."""
    data: object = _samples_node_link()
    assert isinstance(data, dict)
    if case == "a list at the top":
        data = []
    elif case == "nodes not a list":
        data["nodes"] = 5
    elif case == "a paper without keyIds":
        del _first(data, "Paper")["keyIds"]
    elif case == "keyIds an integer":
        _first(data, "Paper")["keyIds"] = 5
    elif case == "a count that is a boolean":
        _first(data, "Author")["paperCount"] = True
    else:
        _first(data, "Category")["label"] = "Journal"
    path = tmp_path / "graph.json"
    path.write_bytes(orjson.dumps(data))
    with pytest.raises(UsageError) as refused:
        open_saved(path)
    assert expected in str(refused.value) and str(path) in str(refused.value)


def test_prune_refuses_a_malformed_node_link_file_in_one_line(tmp_path: Path) -> None:
    """The command line's side of the test above, for one of its cases."""
    data = _samples_node_link()
    _first(data, "Paper")["keyIds"] = 5
    path = tmp_path / "graph.json"
    path.write_bytes(orjson.dumps(data))
    revoked = _revoking(tmp_path)
    command = [
        "prune",
        "--backend",
        "memory",
        "--graph",
        str(path),
        "--dry-run",
        "--revoked-keys",
        str(revoked),
    ]
    pruned = run_cli(*command)
    assert pruned.returncode == 2, pruned.stderr
    assert len(pruned.stderr.strip().splitlines()) == 1 and "Traceback" not in pruned.stderr
    assert "keyIds is not a list<string>: 5" in pruned.stderr


def _revoking(folder: Path) -> Path:
    """A revoked-keys file revoking the registry key (so that prune has work to do)."""
    path = Path(str(folder)) / "revoked.json"
    entry = {"key_id": REGISTRY_KEY.key_id, "public_key_hex": REGISTRY_KEY.public_key_hex}
    path.write_text(json.dumps([{**entry, "signer_id": "pith.science", "revoked": True}]))
    return path


def test_a_part_written_to_since_its_export_opens_again(tmp_path: Path) -> None:
    """An export of a part keeps the database's paperCount (above the part's edges); a load
    into it counts a new spelling from that count, so its forms count more papers than its
    edges: still a graph the loader could have written, opened again."""
    store = MemoryStore()
    first = spec("2402.00041", authors=("Ann Lee",), title="A")
    load(store, tmp_path, [bundle(first), bundle(spec("2402.00042", authors=("Ann Lee",), title="B"))])
    part = store.graph.copy()
    (dropped,) = [n for n, d in part.nodes(data=True) if d["label"] == "Paper" and d["title"] == "B"]
    part.remove_node(dropped)
    part.remove_nodes_from([n for n in list(part) if part.degree(n) == 0])
    check_structure(part)  # paperCount 2, one AUTHORED edge: the database's count
    written = MemoryStore(part)
    load(written, tmp_path, [bundle(spec("2402.00043", authors=("ANN LEE",), title="C"))])
    author = written.graph.nodes["Author:ann lee"]
    assert (author["name"], author["nameForms"], author["nameFormCounts"]) == (
        "ANN LEE",
        ["ANN LEE", "Ann Lee"],
        [1, 2],
    )
    check_structure(written.graph)
