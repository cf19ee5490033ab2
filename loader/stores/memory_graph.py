"""The in-memory graph: its compact representation (shared, read-only edge attributes) and
the shape a saved graph must have to be opened (:func:`check_types`, :func:`check_structure`).

A networkx ``DiGraph`` holds one attribute dict per edge. In this schema most edges carry
the same few attribute sets, so they are interned and shared between edges
(:mod:`.edge_data`: read-only dicts, list-valued properties as tuples).

networkx's ``add_edge`` always makes a new dict per edge, so :func:`put` writes the
adjacency dicts itself (``_node``, ``_succ``, ``_pred``: the documented ``DiGraph``
structure) and then clears networkx's cached views, as ``add_edge`` does. It is the only
code that writes networkx's private structures; ``tests/test_memory_graph.py`` checks it
against networkx's own methods, so a change in networkx fails there first.

A node-link file is an interchange file anyone may write: it is opened only if
:func:`check_structure` finds it is a graph the loader could have built. A snapshot is
pith-graph's own and trusted as to its structure, but still passes :func:`check_types`
(cheap: one pass, shared edge attributes checked once), so that no file makes a reader or
``prune`` fail later with a traceback, or read a string as a list of keys.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import networkx as nx

from pith_graph.loader.identifiers import author_name_key
from pith_graph.loader.shape import ALIAS_KIND, SOURCE_VERSIONS
from pith_graph.loader.stores.edge_data import EdgeData, EdgeInterner
from pith_graph.loader.stores.latest import bad_latest
from pith_graph.loader.stores.names import bad_forms
from pith_graph.schema.graph import (
    ALIAS,
    AUTHOR,
    CATEGORY,
    IN_CATEGORY,
    LABEL_ATTRIBUTE,
    NODES,
    PAPER,
    RELATIONSHIPS,
    SIGNED,
    SIGNER,
    TYPE_ATTRIBUTE,
    PropertySpec,
    node_id,
)

__all__ = [
    "INTERNED",
    "EdgeData",
    "EdgeInterner",
    "check_structure",
    "check_types",
    "put",
]

#: Node properties with few distinct values (a list's items, for ``keyIds``): one string
#: object per value (``sys.intern``), in a graph loaded (MemoryStore) or opened (a snapshot)
#: alike. Six aliases a paper each holding its own ``"arxiv"`` cost 84 MB at 238k papers.
INTERNED = {
    PAPER.label: tuple(
        PAPER.prop(name) for name in ("license", "primaryCategory", "sourceKind", "bundleKeyId", "keyIds")
    ),
    ALIAS.label: (ALIAS.prop("kind"),),
}

_VERSION = PAPER.prop("sourceVersion")
_SUBMITTED = PAPER.prop("submittedAt")
_YEAR = PAPER.prop("submittedYear")
_BUILT = PAPER.prop("builtAt")
_BUNDLE_KEY_ID = PAPER.prop("bundleKeyId")
_PRIMARY_CATEGORY = PAPER.prop("primaryCategory")
_KEY_IDS = SIGNER.prop(PAPER.prop("keyIds"))  # both labels' name
_AUTHOR_NAMES = PAPER.prop("authorNames")
_PAPER_COUNT = AUTHOR.prop("paperCount")
_NAME_FORMS = AUTHOR.prop("nameForms")
_NAME_FORM_COUNTS = AUTHOR.prop("nameFormCounts")
_CODE = CATEGORY.prop("code")
_ARCHIVE = CATEGORY.prop("archive")
_KIND = ALIAS.prop("kind")
_EDGE_KEY_IDS = SIGNED.prop("keyIds")
_SIGNED_BUNDLE = SIGNED.prop("signedBundle")
_PRIMARY = IN_CATEGORY.prop("primary")


def put(
    graph: nx.DiGraph,
    nodes: Iterable[tuple[str, dict[str, Any]]],
    edges: Iterable[tuple[str, str, dict[str, Any]]],
) -> None:
    """Add ``nodes`` (ids not yet in ``graph``, each with its own attribute dict, kept as
    given) and ``edges`` (between nodes of ``graph``, their attributes kept as given)."""
    node, succ, pred = graph._node, graph._succ, graph._pred
    for name, attributes in nodes:
        node[name] = attributes
        succ[name] = {}
        pred[name] = {}
    for start, end, data in edges:
        succ[start][end] = data
        pred[end][start] = data
    nx._clear_cache(graph)


# -- what a saved graph must fit ---------------------------------------------------------

_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
    "list<string>": (list, tuple),
    "list<integer>": (list, tuple),
}
#: The type of a list property's items (exactly: a bool is no integer here).
_ITEMS: dict[str, type] = {"list<string>": str, "list<integer>": int}
#: Every integer property, and item, counts something (papers, a version, a year): from 0 to
#: the largest GraphQL ``Int``, which the API answers them as (past it, a read failed: INTERNAL).
_WHOLE = range(2**31)
_WHOLES = frozenset(("integer", "list<integer>"))


def _out_of_range(value: Any) -> bool:
    """Whether an integer, or a list of them, holds one outside :data:`_WHOLE`."""
    if isinstance(value, int):
        return value not in _WHOLE
    return bool(value) and (min(value) < 0 or max(value) >= _WHOLE.stop)


#: ``submittedAt`` as rows store it (whole seconds), ``builtAt`` as verification admitted it
#: before 0.8.2 (by shape): a graph saved then may hold 2019-02-29, which ``shape.is_utc_time``
#: now refuses in new bundles, and still opens.
_SUBMITTED_AT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
_BUILT_AT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z")


def _bad_property(data: Mapping[str, Any], specs: Sequence[PropertySpec]) -> str | None:
    """What is wrong with ``data``'s properties for ``specs`` (``None``: nothing)."""
    for spec in specs:
        if spec.name not in data:
            if spec.required:
                return f"no {spec.name}"
            continue
        value = data[spec.name]
        wrong = not isinstance(value, _PYTHON_TYPES[spec.type]) or (
            spec.type == "integer" and isinstance(value, bool)
        )
        item = _ITEMS.get(spec.type)
        if wrong or (item is not None and not all(type(each) is item for each in value)):
            return f"{spec.name} is not {_a(spec.type)}: {value!r:.60}"
        if spec.type in _WHOLES and _out_of_range(value):
            return f"{spec.name} is not from 0 to {_WHOLE.stop - 1}: {value!r:.60}"
    return None


_LISTS = frozenset((list, tuple))


def _a(noun: str) -> str:
    """``noun`` after its indefinite article ("an Author", "a Paper", "an integer")."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


#: Per label and per type: (name, the Python types it may have, its items' type (lists),
#: required, whether its integers are bounded), for the fast pass.
def _fast(
    properties: Sequence[PropertySpec],
) -> tuple[tuple[str, frozenset[type], type | None, bool, bool], ...]:
    return tuple(
        (
            p.name,
            _LISTS if p.type in _ITEMS else frozenset(_PYTHON_TYPES[p.type]),
            _ITEMS.get(p.type),
            p.required,
            p.type in _WHOLES,
        )
        for p in properties
    )


_FAST = {
    **{spec.label: _fast(spec.properties) for spec in NODES.values()},
    **{spec.type: _fast(spec.properties) for spec in RELATIONSHIPS.values()},
}


def _fast_problem(
    data: Mapping[str, Any], kind: Any, specs: Mapping[str, Sequence[PropertySpec]], unknown: str
) -> str | None:
    """:func:`_bad_property` for ``data`` of label or type ``kind``, in one quick look when
    nothing is wrong (exact types, as JSON gives them)."""
    fast = _FAST.get(kind) if isinstance(kind, str) else None
    if fast is None or kind not in specs:
        return unknown
    for name, types, items, required, whole in fast:
        value = data.get(name, _FAST)
        if type(value) not in types:
            if value is _FAST and not required:
                continue
            return _bad_property(data, specs[kind])
        if items is not None and not all(type(item) is items for item in value):
            return _bad_property(data, specs[kind])
        if whole and _out_of_range(value):
            return _bad_property(data, specs[kind])
    return None


def check_types(graph: nx.DiGraph) -> None:
    """Each node and edge of ``graph`` is one the schema knows, under the id its label and key
    make, its properties there and of their types (integers from 0 to 2**31 - 1), each edge between the labels its type joins: what a reader may index
    without a second look. One pass; an edge's shared attributes are checked once. Raises
    :class:`ValueError` naming the first that is not."""
    node_specs = {label: spec.properties for label, spec in NODES.items()}
    edge_specs = {kind: spec.properties for kind, spec in RELATIONSHIPS.items()}
    # label -> (its ids' prefix, its key when one property, else None): the id's other part
    keys = {
        label: (label + ":", spec.key[0] if len(spec.key) == 1 else None) for label, spec in NODES.items()
    }
    nodes: dict[str, dict[str, Any]] = graph._node
    for node, data in nodes.items():
        label: Any = data.get(LABEL_ATTRIBUTE)
        problem = _fast_problem(data, label, node_specs, "unknown label")
        if problem is None:
            prefix, key = keys[label]
            made = prefix + data[key] if key is not None else _id_of(label, data)
            if node != made:  # (a reader finds a node by the id its key makes: a listing failed)
                problem = f"its id is not {made!r:.80}, as its label and key make it"
        if problem is not None:
            raise ValueError(f"node {node!r:.80}: {problem}")
    # each edge's attributes (shared: checked once) -> the labels its ends must have
    checked: dict[int, tuple[str, str]] = {}
    for start, out in graph._succ.items():
        start_label = nodes[start][LABEL_ATTRIBUTE]
        for end, data in out.items():
            labels = checked.get(id(data))
            if labels is None:
                kind = data.get(TYPE_ATTRIBUTE)
                problem = _fast_problem(data, kind, edge_specs, "unknown type")
                if problem is not None:
                    raise ValueError(f"edge {start!r:.60} -> {end!r:.60}: {problem}")
                labels = checked[id(data)] = (RELATIONSHIPS[kind].start, RELATIONSHIPS[kind].end)
            if start_label != labels[0] or nodes[end][LABEL_ATTRIBUTE] != labels[1]:
                kind = data[TYPE_ATTRIBUTE]
                raise ValueError(
                    f"edge {start!r:.60} -> {end!r:.60}: {kind} goes from {_a(labels[0])} to {_a(labels[1])}"
                )


def _id_of(label: str, data: Mapping[str, Any]) -> str:
    return node_id(label, *(data[key] for key in NODES[label].key))


def _bad_node(label: str, data: Mapping[str, Any]) -> str | None:
    """What the loader would never have written in this node itself (``None``: nothing)."""
    if label == PAPER.label:
        if data[_VERSION] not in SOURCE_VERSIONS:
            return f"sourceVersion {data[_VERSION]} is not from 1 to {SOURCE_VERSIONS.stop - 1}"
        submitted = data[_SUBMITTED]
        if not _SUBMITTED_AT.fullmatch(submitted) or int(submitted[:4]) != data[_YEAR]:
            return f"submittedAt {submitted!r:.40} is not a UTC time of year submittedYear"
        if not _BUILT_AT.fullmatch(data[_BUILT]):
            return f"builtAt {data[_BUILT]!r:.40} is not an ISO 8601 UTC time"
    elif label == ALIAS.label and not ALIAS_KIND.fullmatch(data[_KIND]):
        return f"alias kind {data[_KIND]!r:.40} is not made of a-z, 0-9 and _"
    elif label == CATEGORY.label and data[_ARCHIVE] != data[_CODE].split(".", 1)[0]:
        return f"archive {data[_ARCHIVE]!r:.40} is not the archive of its code"
    return None


def check_structure(graph: nx.DiGraph) -> None:
    """``graph`` is one the loader could have built: :func:`check_types` (node ids made from
    label and key among its checks), then values in the ranges verification admits, each edge's type between
    its labels (so no self-loop; checked by :func:`check_types`), and what readers rely on: every Paper signed by the signer
    of its bundle (one SIGNED edge marked ``signedBundle``), its ``keyIds`` its signers' keys,
    its ``bundleKeyId`` one of them, one primary IN_CATEGORY edge to its ``primaryCategory``;
    its ``authorNames`` (when it has them) one per Author of its AUTHORED edges;
    no Author, Category, Alias or Signer without a paper; an Author's ``paperCount`` at least
    its AUTHORED edges, its ``nameForms`` counting its ``paperCount`` papers, a Signer's ``keyIds`` at least the keys of its SIGNED edges (an
    export of a part keeps the database's); no Paper marked ``isLatest`` with a newer version of
    its source beside it (:mod:`.latest`). Linear: three passes
    over the nodes, one over the edges. Raises :class:`ValueError` naming the first problem."""
    check_types(graph)
    nodes: dict[str, dict[str, Any]] = graph._node
    for node, data in nodes.items():
        problem = _bad_node(data[LABEL_ATTRIBUTE], data)
        if problem is not None:
            raise ValueError(f"node {node!r:.80}: {problem}")
    keys: defaultdict[str, set[str]] = defaultdict(set)  # paper or signer -> keys of its SIGNED edges
    bundle_signers: Counter[str] = Counter()
    primary: defaultdict[str, list[str]] = defaultdict(list)
    for start, out in graph._succ.items():  # (each between its labels: check_types)
        for end, data in out.items():
            kind = data[TYPE_ATTRIBUTE]
            if kind == SIGNED.type:
                if not data[_EDGE_KEY_IDS]:
                    raise ValueError(f"edge {start!r:.60} -> {end!r:.60}: a SIGNED edge without keyIds")
                keys[start].update(data[_EDGE_KEY_IDS])
                keys[end].update(data[_EDGE_KEY_IDS])
                bundle_signers[end] += data[_SIGNED_BUNDLE]
            elif kind == IN_CATEGORY.type and data[_PRIMARY]:
                primary[start].append(nodes[end][_CODE])
    succ, pred = graph._succ, graph._pred
    authors = _Authors()
    for node, data in nodes.items():
        label = data[LABEL_ATTRIBUTE]
        if label == PAPER.label:
            problem = _bad_paper_links(data, keys[node], bundle_signers[node], primary[node])
            if problem is None and _AUTHOR_NAMES in data:  # (absent: no author, or written before 0.8)
                problem = authors.bad(data[_AUTHOR_NAMES], pred[node], nodes)
        elif not succ[node] and not pred[node]:
            problem = "no paper uses it"
        # An export of a part keeps the database's counts and keys: at least the part's.
        elif label == AUTHOR.label and data[_PAPER_COUNT] < len(succ[node]):
            problem = f"paperCount {data[_PAPER_COUNT]} is below its {len(succ[node])} AUTHORED edges"
        elif label == AUTHOR.label and (_NAME_FORMS in data or _NAME_FORM_COUNTS in data):
            problem = bad_forms(data)
        elif label == SIGNER.label and not keys[node] <= set(data[_KEY_IDS]):
            problem = f"keyIds {data[_KEY_IDS]!r:.60} lack keys of its SIGNED edges"
        else:
            continue
        if problem is not None:
            raise ValueError(f"node {node!r:.80}: {problem}")
    if (latest := bad_latest(graph)) is not None:
        raise ValueError(f"node {latest[0]!r:.80}: {latest[1]}")


class _Authors(dict[str, str]):
    """A Paper's ``authorNames`` against its AUTHORED edges: one per name, to the Author
    whose key the name makes (as the loader writes them, ``rows.paper_properties``). A
    spelling's key is computed once (most are their author's name, on many papers)."""

    def __missing__(self, spelling: str) -> str:
        made = self[spelling] = AUTHOR.label + ":" + author_name_key(spelling)
        return made

    def bad(self, names: Sequence[str], pred: Mapping[str, Any], nodes: Mapping[str, Any]) -> str | None:
        edges = [start for start in pred if nodes[start][LABEL_ATTRIBUTE] == AUTHOR.label]
        if len(edges) != len(names) or set(edges) != {self[name] for name in names}:
            return f"its authorNames {names!r:.60} are not the Authors of its AUTHORED edges"
        return None


def _bad_paper_links(
    data: Mapping[str, Any], keys: set[str], bundle_signers: int, primary: list[str]
) -> str | None:
    """What is wrong with a Paper's SIGNED and IN_CATEGORY edges."""
    if bundle_signers != 1:
        return f"{bundle_signers} SIGNED edges with signedBundle, not one (its bundle's signer)"
    if list(data[_KEY_IDS]) != sorted(keys) or data[_BUNDLE_KEY_ID] not in keys:
        return "keyIds and bundleKeyId are not the keys of its SIGNED edges"
    if primary != [data[_PRIMARY_CATEGORY]]:
        return f"its primary IN_CATEGORY edges go to {primary!r:.60}, not to its primaryCategory"
    return None
