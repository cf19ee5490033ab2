"""Both backends answer random queries alike: a seeded differential test over HTTP.

A generated corpus (two signers, rebuilt bundles, several versions of some ids, shared
authors, cross-lists, ties) is served by the memory and the Neo4j backend; a small generator
writes random queries from ``api/schema.graphql``: root fields with arguments taken from the
corpus (every form of identifier, author names and keys, category codes, dates, licenses,
title words, typed prefixes), random ``first`` around the page cap, ``after`` cursors taken
from earlier answers (and forged or malformed ones), nested selections up to the depth limit,
aliases, literals or variables; some are invalid on purpose (over a limit, bad enum values,
bad dates, unknown ids and authors). Each answer, data and errors, must be the same JSON on
both. ``PITH_API_PARITY_SEED`` and ``PITH_API_PARITY_QUERIES`` choose another run.

The full-text index is rebuilt once the corpus is loaded, so that Lucene's statistics are
exactly the papers' (README: "How close the two backends rank") and scores compare exactly.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from apitest import Api, loaded_neo4j, memory_reader_of, served
from graphql import (
    GraphQLEnumType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    build_schema,
    get_named_type,
)

from pith_graph.api.app import create_app
from pith_graph.api.bridge import BridgeRunner
from pith_graph.api.cursors import encode_cursor
from pith_graph.api.reads.records import PaperKey
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import Keyring
from pith_graph.testing.corpus import write_corpus

SEED = int(os.environ.get("PITH_API_PARITY_SEED", "20261203"))
QUERIES = int(os.environ.get("PITH_API_PARITY_QUERIES", "300"))
SCHEMA: GraphQLSchema = build_schema(
    (Path(__file__).parents[2] / "api" / "schema.graphql").read_text("utf-8")
)
MAX_DEPTH, MAX_ALIASES, PAGE_CAP = 10, 30, 100
#: The sizes the cost counts for lists without ``first`` (README, Cost).
FIXED_SIZES = {"versions": 50, "resolve": 50, "aliases": 20, "signers": 10, "keys": 10, "signatures": 10}


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Keyring]:
    folder = tmp_path_factory.mktemp("random-parity")
    info = write_corpus(folder, 400, seed=SEED % 1000, workers=1, layout="jsonl", extra_signer_every=7)
    (path,) = info.shards
    return path, resolve_keyring(info.keyring_path)


@pytest.fixture(scope="module")
def both(
    request: pytest.FixtureRequest, bundles: tuple[Path, Keyring]
) -> Iterator[tuple[Api, Api, nx.MultiDiGraph]]:
    memory = memory_reader_of(bundles)
    with loaded_neo4j(request, bundles, timeout=30) as neo4j:
        store = request.getfixturevalue("neo4j_server").connect()
        try:  # Lucene keeps counting replaced papers until it merges: start it afresh
            with store.driver.session(database=store.database) as session:
                session.run("DROP INDEX paper_text_fulltext IF EXISTS").consume()
            store.ensure_schema()
        finally:
            store.close()
        neo4j_app = create_app(neo4j, keyring=bundles[1], run=BridgeRunner(), backend="neo4j")
        with (
            served(create_app(memory, keyring=bundles[1]), "memory", memory) as on_memory,
            served(neo4j_app, "neo4j", neo4j) as on_neo4j,
        ):
            yield on_memory, on_neo4j, memory.G


class Pools:
    """The values arguments are drawn from: the corpus's own, other spellings, unknown ones."""

    def __init__(self, G: nx.MultiDiGraph) -> None:
        nodes: dict[str, list[dict[str, Any]]] = {}
        for _, data in G.nodes(data=True):
            nodes.setdefault(data["label"], []).append(data)
        papers, aliases = nodes["Paper"], nodes["Alias"]
        values = {
            kind: [a["value"] for a in aliases if a["kind"] == kind] for kind in {a["kind"] for a in aliases}
        }
        self.papers = papers
        self.ids = [p["pithNumber"] for p in papers] + [p["shortPithNumber"] for p in papers]
        self.ids += [v for kind, found in values.items() for v in found]
        self.ids += [f"doi:{v}" for v in values.get("doi", [])] + [
            f"https://doi.org/{v.upper()}" for v in values["doi"]
        ]
        self.ids += [f"arXiv:{v}" for v in values["arxiv"]] + [
            f"https://arxiv.org/abs/{v}" for v in values["arxiv"]
        ]
        self.ids += [p["pithNumber"].removeprefix("pith:") for p in papers[:20]]
        self.ids += [f"{p['sourceId']}v9" for p in papers[:10]] + [
            p["pithNumber"].lower() for p in papers[:10]
        ]
        self.unknown_ids = ["10.9999/nothing", "9999.99999", "pith:AAAAAAAA", "", "  ", "not an id", "arXiv:"]
        authors = nodes["Author"]
        self.names = [a["name"] for a in authors] + [a["nameKey"] for a in authors]
        self.names += [a["name"].upper().replace(" ", "  ") for a in authors[:20]] + ["Nobody Here", ""]
        self.names += ["a" * 600, "é" * 2049, "ﷺ" * 228]  # since 0.9.3: a key; too long; its key too long
        self.keys = [a["nameKey"] for a in authors]
        words = sorted({w for a in authors for w in a["nameFolded"].split()})
        self.prefixes = [w[: random.Random(w).randint(1, 4)] for w in words] + ["", " ", "zz", "ERD", "a b"]
        self.codes = [c["code"] for c in nodes["Category"]] + ["cs.XX", "CS.LG", "", "c" * 601, "é" * 2049]
        self.archives = [*sorted({c["archive"] for c in nodes["Category"]}), "nope"]
        self.licenses = [*sorted({p["license"] for p in papers}), "http://x.org/none"]
        self.dates = [p["submittedAt"] for p in papers] + [p["submittedAt"][:10] for p in papers]
        self.bad_dates = ["2019-13-01", "yesterday", "0000-01-01", "2019-02-30T00:00:00Z"]
        self.words = sorted({w.strip(".,:;'()").lower() for p in papers for w in p["title"].split()} - {""})
        self.signers = [s["signerId"] for s in nodes["Signer"]] + ["nobody.example"]


class Generator:
    """Random queries over the schema, seeded; ``cursors`` grows with the answers seen."""

    def __init__(self, rng: random.Random, pools: Pools) -> None:
        self.rng, self.pools = rng, pools
        self.cursors: list[str] = []
        self.variables: dict[str, Any] = {}
        self.declared: list[str] = []
        self.use_variables = False
        self.aliases = 0

    def pick(self, options: list[Any]) -> Any:
        return self.rng.choice(options)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # -- argument values ------------------------------------------------------------------

    def first(self) -> int | None:
        return self.pick(
            [None, 0, 1, 1, 2, 3, 3, 5, 5, 10, 20, PAGE_CAP, PAGE_CAP + 1, -1] if self.chance(0.9) else [None]
        )

    def cursor(self) -> str | None:
        if not self.cursors or self.chance(0.3):
            paper = self.pick(self.pools.papers)
            real, none = paper["pithNumber"], paper["pithNumber"][:-1] + "A"  # a position, and none
            forged = [encode_cursor(PaperKey(paper["submittedAt"], pith)) for pith in (real, none)]
            return self.pick([*forged, "not a cursor", "", None])
        found: str = self.pick(self.cursors)
        return self.pick([found, found, found, found[:-2], found + "A"])

    def filter(self) -> dict[str, Any] | None:
        if self.chance(0.3):
            return None
        p = self.pools
        makers: dict[str, Callable[[], Any]] = {
            "category": lambda: self.pick(p.codes),
            "archive": lambda: self.pick(p.archives),
            "author": lambda: self.pick(p.names),
            "submittedFrom": lambda: self.pick(p.dates if self.chance(0.95) else p.bad_dates),
            "submittedBefore": lambda: self.pick(p.dates if self.chance(0.95) else p.bad_dates),
            "license": lambda: self.pick(p.licenses),
            "title": lambda: " ".join(self.rng.sample(p.words, self.rng.randint(1, 2))),
            "latestVersions": lambda: self.pick([True, False, None]),
            "categories": lambda: self.rng.sample(
                p.codes, self.rng.randint(0 if self.chance(0.05) else 1, 3)
            ),
            "excludeCategories": lambda: self.rng.sample(p.codes, self.rng.randint(0, 3)),
        }
        chosen = self.rng.sample(sorted(makers), self.rng.randint(1, 2))
        return {name: makers[name]() for name in chosen}

    def argument(self, owner: str, field: str, name: str) -> Any:
        p = self.pools
        if name == "first":
            return self.first()
        if name in ("last", "before"):  # papers' backward paging (since 0.9.2): now and then
            return None if self.chance(0.7) else self.first() if name == "last" else self.cursor()
        if name == "after" and (owner, field) in (
            ("Paper", "authors"),
            ("Author", "coauthors"),
            ("Category", "topAuthors"),
        ):
            return self.pick([*p.keys, "", "Upper Case", "zzz", "a" * 501, "a" * 4097, None, None])
        if name == "after" and field == "relatedPapers":  # ranked lists page on (since 0.9.2)
            return self.pick([*p.ids[:40], "pith:AAAAAAAA", "", None, None, None])
        if name == "after" and field in ("categories", "coListed"):
            return self.pick([*p.codes, "a" * 501, "a" * 4097, None, None, None])
        if name == "after":
            return self.cursor()
        if name == "id":
            return self.pick(p.ids if self.chance(0.85) else p.unknown_ids)
        if name == "ids":
            count = 501 if self.chance(0.02) else self.rng.randint(0, 8)
            return [self.pick(p.ids + p.unknown_ids) for _ in range(count)]
        if name in ("name", "from", "to"):
            return self.pick(p.names)
        if name == "prefix":
            return self.pick(p.prefixes) + (" " + self.pick(p.prefixes) if self.chance(0.2) else "")
        if name == "code":
            return self.pick(p.codes)
        if name == "text":
            return " ".join(self.rng.sample(p.words, self.rng.randint(1, 3)))
        if name == "filter":
            return self.filter()
        if name == "orderBy" and field == "search":
            return self.pick(["RELEVANCE", "NEWEST", None, "SIDEWAYS"] if self.chance(0.97) else ['"NEWEST"'])
        if name == "orderBy":  # PaperOrder: Query.papers (0.9.1) and the nested papers (0.9.3)
            return self.pick(
                ["NEWEST", "OLDEST", None, None] if self.chance(0.9) else ["RELEVANCE", "SIDEWAYS"]
            )
        if name == "maxHops":
            return self.pick([None, 1, 2, 3, 6, 0, 7])
        if name == "signedBundle":
            return self.pick([True, False, None])
        raise AssertionError(f"no values for {owner}.{field}({name}:)")

    def literal(self, value: Any, enum: bool) -> str:
        if value is None:
            return "null"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k}: {self.literal(v, False)}" for k, v in value.items()) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(self.literal(v, False) for v in value) + "]"
        if enum or isinstance(value, int):
            return str(value)
        return json.dumps(value, ensure_ascii=False)

    def arguments(self, owner: str, field: str, values: dict[str, Any]) -> str:
        args = SCHEMA.type_map[owner].fields[field].args  # type: ignore[union-attr]
        written = []
        for name, value in values.items():
            kind = args[name].type
            enum = isinstance(get_named_type(kind), GraphQLEnumType)
            if self.use_variables and not (enum and str(value).startswith('"')):
                variable = f"v{len(self.variables)}"
                self.variables[variable] = value
                self.declared.append(f"${variable}: {kind}")
                written.append(f"{name}: ${variable}")
            else:
                written.append(f"{name}: {self.literal(value, enum)}")
        return f"({', '.join(written)})" if written else ""

    # -- selections -----------------------------------------------------------------------

    def values_of(self, owner: str, field: str) -> dict[str, Any]:
        args = SCHEMA.type_map[owner].fields[field].args  # type: ignore[union-attr]
        values: dict[str, Any] = {}
        for name, arg in args.items():
            if isinstance(arg.type, GraphQLNonNull) or self.chance(0.6):
                if name == "id" and field == "signer":
                    values[name] = self.pick(self.pools.signers)
                else:
                    values[name] = self.argument(owner, field, name)
        return values

    def size(self, field: str, values: dict[str, Any]) -> int:
        """The size the cost counts for a list field (roughly, where the limits would refuse)."""
        first = values.get("first") if values.get("last") is None else values.get("last")
        if isinstance(first, int) and first >= 0:
            return first
        if field == "papersById":
            return len(values.get("ids", []))
        return {"authors": PAGE_CAP, "categories": 200}.get(field, FIXED_SIZES.get(field, 20))

    def selection(self, owner: GraphQLObjectType, level: int, depth: int, weight: int) -> str:
        """A selection set of ``owner`` at ``level`` (0 for the root), at most ``depth`` deep;
        ``weight``: the product of the sizes of the lists above."""
        fields = list(owner.fields.items())
        self.rng.shuffle(fields)
        chosen: list[str] = []
        for name, definition in fields[: self.rng.randint(1, 4 if level else 2)]:
            target = get_named_type(definition.type)
            if not isinstance(target, GraphQLObjectType):
                chosen.append(self.aliased(name))
                continue
            if level + 1 + _min_depth(target) > depth:
                continue
            values = self.values_of(owner.name, name)
            listed = _listed(definition.type) or name in ("edges", "nodes")
            inner = weight * (self.size(name, values) if listed else 1)
            if inner > 3000 and self.chance(0.95):
                continue
            subselection = self.selection(target, level + 1, depth, inner)
            chosen.append(
                f"{self.aliased(name)}{self.arguments(owner.name, name, values)} {{ {subselection} }}"
            )
        scalars = [
            n for n, d in owner.fields.items() if not isinstance(get_named_type(d.type), GraphQLObjectType)
        ]
        if not chosen:
            chosen.append(self.pick(scalars) if scalars else "__typename")
        return " ".join(chosen)

    def aliased(self, name: str) -> str:
        if self.chance(0.15):
            self.aliases += 1
            return f"a{self.aliases}: {name}"
        return name

    def query(self) -> tuple[str, dict[str, Any]]:
        self.variables, self.declared, self.aliases = {}, [], 0
        self.use_variables = self.chance(0.3)
        depth = self.rng.randint(2, MAX_DEPTH) if self.chance(0.97) else MAX_DEPTH + 1
        roots = []
        for _ in range(self.rng.randint(1, 3)):
            field = self.pick(list(SCHEMA.query_type.fields))  # type: ignore[union-attr]
            definition = SCHEMA.query_type.fields[field]  # type: ignore[union-attr]
            values = self.values_of("Query", field)
            target = get_named_type(definition.type)
            size = self.size(field, values) if _listed(definition.type) else 1
            if isinstance(target, GraphQLObjectType):
                inner = self.selection(target, 1, depth, size)
            else:  # node, nodes: the Node interface (an empty selection would be refused)
                inner = "__typename id" + (" ... on Paper { title }" if self.chance(0.5) else "")
            self.aliases += 1
            roots.append(f"r{self.aliases}: {field}{self.arguments('Query', field, values)} {{ {inner} }}")
        if self.chance(0.02):  # over the alias limit
            roots += [f"x{n}: categories {{ code }}" for n in range(MAX_ALIASES + 1)]
        header = f"query({', '.join(self.declared)})" if self.declared else "query"
        return f"{header} {{ {' '.join(roots)} }}", self.variables

    def paging(self) -> tuple[str, dict[str, Any]]:
        """A connection paged with ``$after`` (the same document again and again: planned)."""
        self.variables, self.declared, self.aliases, self.use_variables = {}, [], 0, False
        owner, field = self.pick([("Query", "papers"), ("Query", "search"), ("Author", "papers")])
        values = self.values_of(owner, field)
        values["first"] = self.rng.randint(1, 4)
        values.pop("after", None)
        connection = get_named_type(SCHEMA.type_map[owner].fields[field].type)  # type: ignore[union-attr]
        inner = self.selection(connection, 2, self.rng.randint(3, MAX_DEPTH), values["first"])  # type: ignore[arg-type]
        listing = f"{field}{self.arguments(owner, field, values)[:-1]}, after: $after) {{ {inner} pageInfo {{ endCursor hasNextPage }} }}"
        if owner == "Author":
            listing = f"author(name: {self.literal(self.pick(self.pools.names), False)}) {{ {listing} }}"
        return f"query($after: String) {{ {listing} }}", {"after": None}


def _listed(kind: Any) -> bool:
    return isinstance(kind.of_type if isinstance(kind, GraphQLNonNull) else kind, GraphQLList)


def _min_depth(kind: GraphQLObjectType) -> int:
    """The fewest levels a selection of ``kind`` takes (0: it has a scalar field)."""
    inner = [get_named_type(d.type) for d in kind.fields.values()]
    if any(not isinstance(t, GraphQLObjectType) for t in inner):
        return 0
    return 1 + min(_min_depth(t) for t in inner if isinstance(t, GraphQLObjectType))


def _strings(answer: Any, key: str) -> Iterator[str]:
    """Every string under ``key`` anywhere in ``answer``."""
    if isinstance(answer, dict):
        for name, value in answer.items():
            if name == key and isinstance(value, str):
                yield value
            else:
                yield from _strings(value, key)
    elif isinstance(answer, list):
        for value in answer:
            yield from _strings(value, key)


def _end_cursor(answer: dict[str, Any]) -> str | None:
    page = (answer.get("data") or {}).get("papers") or (answer.get("data") or {}).get("search")
    page = page or ((answer.get("data") or {}).get("author") or {}).get("papers")
    if page and page["pageInfo"]["hasNextPage"]:
        found: str = page["pageInfo"]["endCursor"]
        return found
    return None


@pytest.mark.neo4j
def test_random_queries_answer_alike_on_both_backends(both: tuple[Api, Api, nx.MultiDiGraph]) -> None:
    memory, neo4j, G = both
    rng = random.Random(SEED)
    generator = Generator(rng, Pools(G))
    different: list[str] = []
    sent = errors = 0
    started = time.perf_counter()
    while sent < QUERIES:
        paged = rng.random() < 0.2
        query, variables = generator.paging() if paged else generator.query()
        for _ in range(4 if paged else 1):
            answers = [api.post(query, variables) for api in (memory, neo4j)]
            sent += 1
            errors += "errors" in answers[0]
            if answers[0] != answers[1]:
                different.append(
                    f"seed {SEED}, query {sent}: {query}\nvariables: {json.dumps(variables, ensure_ascii=False)}\n"
                    f"memory: {json.dumps(answers[0], ensure_ascii=False)}\nneo4j:  {json.dumps(answers[1], ensure_ascii=False)}"
                )
            found = [c for key in ("cursor", "endCursor") for c in _strings(answers[0], key)]
            generator.cursors = (generator.cursors + found[:20])[-300:]
            after = _end_cursor(answers[0]) if paged else None
            if after is None:
                break
            variables = {**variables, "after": after}
    elapsed = time.perf_counter() - started
    print(
        f"seed {SEED}: {sent} queries ({errors} answered errors) in {elapsed:.1f} s, {len(different)} different"
    )
    assert different == [], "\n\n".join(different[:5])
    assert sent - errors >= sent // 2, "most queries must answer data, not only errors"


#: Differences found, reduced: (query, the paths of the errors both must answer). NAME is an
#: author of the corpus, FORGED a cursor of a well-formed position no paper has.
FOUND = [
    # Two root fields fail: the first in the document answers, not the first to fail in time
    # (memory failed `a` first, Neo4j `b`, whose reads of `a` wait for the database).
    (
        "{ a: papers(first: 1) { facets(first: -1) { years { count } } } b: papers(after: FORGED) { totalCount } }",
        [["a", "facets"]],
    ),
    # A nullable field fails after a read, a non-null one at once: Neo4j cancelled the first
    # (its read still under way) and answered only the second's error.
    (
        '{ a: author(name: NAME) { papers(after: "x") { totalCount } } b: papers(after: "x") { totalCount } }',
        [["a", "papers"], ["b"]],
    ),
]


@pytest.mark.neo4j
@pytest.mark.parametrize(("query", "paths"), FOUND)
def test_found_differences(
    both: tuple[Api, Api, nx.MultiDiGraph], query: str, paths: list[list[Any]]
) -> None:
    memory, neo4j, G = both
    name = min(data["nameKey"] for _, data in G.nodes(data=True) if data["label"] == "Author")
    forged = encode_cursor(PaperKey("2023-03-06T22:57:44Z", "pith:2023:" + "A" * 26))
    query = query.replace("NAME", json.dumps(name)).replace("FORGED", json.dumps(forged))
    answers = [memory.post(query), neo4j.post(query)]
    assert [[error["path"] for error in answer["errors"]] for answer in answers] == [paths, paths], query
    assert answers[0] == answers[1], query
