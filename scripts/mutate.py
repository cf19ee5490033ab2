"""A small mutation tester: does the test suite notice when the code is subtly wrong?

For each module given, every mutation below is applied in turn to a copy of its syntax tree,
written over the module (the original is always restored), and the module's tests run in a
fresh process; a mutant whose tests still pass *survived*. Mutations, one at a time:

* comparisons: ``<``/``<=``, ``>``/``>=``, ``==``/``!=``, ``in``/``not in``, ``is``/``is not``;
* ``and``/``or``; ``not x`` → ``x``; ``+``/``-``; ``min``/``max``;
* integer constants ``n`` → ``n + 1``; ``True``/``False``;
* ``return x`` → ``return None``; ``raise …`` → ``pass``; ``continue``/``break``.

Docstrings, ``__all__``, decorators and type annotations are never mutated. ``--only NAMES``
(comma-separated) mutates only the top-level functions and classes so named (e.g. one function
of a large module). ``--again RESULTS`` runs only the mutants that survived in an earlier run's
``--out`` file (the module unchanged since): after tests are added, the new score in the time of
the survivors. Run through ``scripts/mutation`` (not part of CI: it takes minutes per module)::

    .venv/bin/python scripts/mutate.py loader/stores/rules.py -- tests/test_store_behaviour.py
    .venv/bin/python scripts/mutate.py api/connection.py --only paging -- tests/api/test_api_backward.py
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

SWAPS: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.And: ast.Or,
    ast.Or: ast.And,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
}


@dataclass(frozen=True)
class Mutant:
    index: int
    line: int
    description: str


def _skipped(tree: ast.Module) -> set[int]:
    """ids of nodes never mutated: docstrings, ``__all__``, annotations."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            skip.update(id(n) for n in ast.walk(first))
        for decorator in getattr(node, "decorator_list", ()):  # frozen=True, slots=True: not behaviour
            skip.update(id(n) for n in ast.walk(decorator))
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            skip.update(id(n) for n in ast.walk(node))
        for annotation in (getattr(node, "annotation", None), getattr(node, "returns", None)):
            if annotation is not None:
                skip.update(id(n) for n in ast.walk(annotation))
    return skip


class _Mutator(ast.NodeTransformer):
    """Counts mutation sites; applies the one numbered ``target`` (``None``: just count)."""

    def __init__(self, skip: set[int], target: int | None = None) -> None:
        self.skip = skip
        self.target = target
        self.sites: list[Mutant] = []

    def _site(self, node: ast.AST, description: str) -> bool:
        index = len(self.sites)
        self.sites.append(Mutant(index, getattr(node, "lineno", 0), description))
        return index == self.target

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if id(node) in self.skip:
            return node
        return super().generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        for position, op in enumerate(node.ops):
            if type(op) in SWAPS and self._site(node, f"{type(op).__name__} -> {SWAPS[type(op)].__name__}"):
                node.ops[position] = SWAPS[type(op)]()
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        if self._site(node, f"{type(node.op).__name__} -> {SWAPS[type(node.op)].__name__}"):
            node.op = SWAPS[type(node.op)]()
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if type(node.op) in SWAPS and self._site(
            node, f"{type(node.op).__name__} -> {SWAPS[type(node.op)].__name__}"
        ):
            node.op = SWAPS[type(node.op)]()
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not) and self._site(node, "not x -> x"):
            return node.operand
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if id(node) in self.skip:
            return node
        if isinstance(node.value, bool):
            if self._site(node, f"{node.value} -> {not node.value}"):
                return ast.copy_location(ast.Constant(not node.value), node)
        elif isinstance(node.value, int) and self._site(node, f"{node.value} -> {node.value + 1}"):
            return ast.copy_location(ast.Constant(node.value + 1), node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if id(node) not in self.skip and node.id in ("min", "max"):
            other = "max" if node.id == "min" else "min"
            if self._site(node, f"{node.id} -> {other}"):
                return ast.copy_location(ast.Name(other, node.ctx), node)
        return node

    def visit_Return(self, node: ast.Return) -> ast.AST:
        self.generic_visit(node)
        returns_none = node.value is None or (
            isinstance(node.value, ast.Constant) and node.value.value is None
        )
        if not returns_none and self._site(node, "return x -> return None"):
            return ast.copy_location(ast.Return(ast.Constant(None)), node)
        return node

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        self.generic_visit(node)
        if self._site(node, "raise -> pass"):
            return ast.copy_location(ast.Pass(), node)
        return node

    def visit_Continue(self, node: ast.Continue) -> ast.AST:
        if self._site(node, "continue -> break"):
            return ast.copy_location(ast.Break(), node)
        return node

    def visit_Break(self, node: ast.Break) -> ast.AST:
        if self._site(node, "break -> continue"):
            return ast.copy_location(ast.Continue(), node)
        return node


def _lines_of(tree: ast.Module, names: set[str]) -> set[int]:
    """The lines of the top-level functions and classes named ``names`` (all of them named)."""
    found: dict[str, range] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name in names:
            found[node.name] = range(node.lineno, (node.end_lineno or node.lineno) + 1)
    if missing := names - found.keys():
        raise SystemExit(
            f"mutate.py: --only names no top-level function or class: {', '.join(sorted(missing))}"
        )
    return {line for lines in found.values() for line in lines}


def mutants(source: str, only: set[str] | None = None) -> tuple[list[Mutant], Iterator[tuple[Mutant, str]]]:
    """The mutation sites of ``source`` (those in the functions and classes ``only``, when
    given) and each mutant's source."""
    tree = ast.parse(source)
    counter = _Mutator(_skipped(tree))
    counter.visit(tree)
    sites = counter.sites
    if only is not None:
        lines = _lines_of(tree, only)
        sites = [site for site in sites if site.line in lines]

    def each() -> Iterator[tuple[Mutant, str]]:
        for site in sites:
            fresh = ast.parse(source)
            mutator = _Mutator(_skipped(fresh), site.index)
            mutated = ast.fix_missing_locations(mutator.visit(fresh))
            yield site, ast.unparse(mutated)

    return sites, each()


def _run(tests: list[str], timeout: float) -> tuple[bool, float]:
    """True when the tests pass; their duration."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        "not neo4j and not slow",
    ]
    started = time.monotonic()
    try:
        done = subprocess.run([*command, *tests], env=env, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return False, timeout  # a hang counts as caught
    return done.returncode == 0, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("module", help="the source file to mutate")
    parser.add_argument("tests", nargs="+", help="the tests that cover it (after --)")
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--only", help="mutate only these top-level functions or classes (comma-separated)")
    parser.add_argument("--again", help="run only the survivors of this earlier --out file")
    args = parser.parse_args(argv)

    path = Path(args.module)
    original = path.read_text(encoding="utf-8")
    cache = path.parent / "__pycache__"
    ok, baseline = _run(args.tests, 3600)
    if not ok:
        print(f"{path}: the tests fail before any mutation", file=sys.stderr)
        return 2
    only = None if args.only is None else {name.strip() for name in args.only.split(",") if name.strip()}
    sites, each = mutants(original, only)
    if args.again:  # those killed then are still killed: the tests were only added to
        earlier = json.loads(Path(args.again).read_text(encoding="utf-8"))
        if earlier["module"] != str(path) or earlier["mutants"] != len(sites):
            raise SystemExit(f"mutate.py: {args.again} is not a run of this {path} (changed since?)")
        again = {Mutant(**survivor) for survivor in earlier["survivors"]}
        each = ((site, source) for site, source in each if site in again)
    survivors: list[Mutant] = []
    try:
        for site, source in each:
            path.write_text(source, encoding="utf-8")
            for stale in cache.glob(f"{path.stem}.*.pyc"):
                stale.unlink()
            passed, _ = _run(args.tests, max(60.0, 5 * baseline))
            if passed:
                survivors.append(site)
                print(f"  survived: line {site.line}: {site.description}", flush=True)
    finally:
        path.write_text(original, encoding="utf-8")
        for stale in cache.glob(f"{path.stem}.*.pyc"):
            stale.unlink()
    killed = len(sites) - len(survivors)
    score = 100 * killed / max(len(sites), 1)
    print(f"{path}: {killed}/{len(sites)} mutants killed ({score:.0f}%)", flush=True)
    if args.out:
        result: dict[str, object] = {"module": str(path), "mutants": len(sites), "killed": killed}
        result |= {"score": round(score, 1), "only": sorted(only) if only else None}
        result["survivors"] = [asdict(s) for s in survivors]
        Path(args.out).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
