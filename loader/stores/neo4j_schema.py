"""The graph's constraints and indexes in a Neo4j database that may hold an analyst's own.

``CREATE … IF NOT EXISTS`` does nothing when an index of the same label and properties
exists under another name (or one of that name indexes something else), so after the
statements run, :func:`ensure_schema` reads ``SHOW INDEXES`` and holds each of the graph's
names to its definition (:func:`schema_problems`):

* a full-text index the API queries by name, missing or not as declared, is refused: the
  API's searches would fail (an analyst's ``my_title_ft`` on ``Paper.title`` in its place
  made every ``title`` filter an internal error);
* a uniqueness constraint missing, with no other uniqueness constraint on its key, is
  refused: loads MERGE on it;
* otherwise a range index or constraint served by an equivalent one of another name is
  logged as a warning: the planner uses it all the same.

It then waits for the graph's own indexes only (an analyst's FAILED index blocked every
load when it waited for all of them), and drops an index earlier versions made only where
it is still that index (a user's index of the same name stays).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import neo4j
from neo4j.exceptions import Neo4jError

from pith_graph.errors import StoreError, StoreErrorCode, with_article
from pith_graph.loader.stores import cypher_schema as cypher
from pith_graph.schema.database import RETIRED_INDEXES, IndexSpec, constraints, indexes

__all__ = ["SCHEMA_RACE_CODES", "ensure_schema", "schema_problems"]

log = logging.getLogger(__name__)

#: Errors of a schema statement that another loader, creating the same rule at the same
#: moment, can cause: the rule exists, which is all that was asked.
SCHEMA_RACE_CODES = frozenset(
    {
        "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
        "Neo.ClientError.Schema.ConstraintAlreadyExists",
        "Neo.ClientError.Schema.IndexAlreadyExists",
    }
)

#: name -> (type, label, properties, analyzer, owned by a constraint): as SHOW INDEXES shows them.
_Declared = tuple[str, str, tuple[str, ...], str | None, bool]


def _declared() -> dict[str, _Declared]:
    found: dict[str, _Declared] = {
        c.name: ("RANGE", c.label, c.properties, None, True) for c in constraints()
    }
    for spec in indexes():
        found[spec.name] = (spec.kind.upper(), spec.label, spec.properties, spec.analyzer, False)
    return found


def _shown(row: Mapping[str, Any]) -> _Declared:
    labels, props = row.get("labelsOrTypes") or [], row.get("properties") or []
    config = (row.get("options") or {}).get("indexConfig") or {}
    return (
        str(row.get("type")),
        str(labels[0]) if len(labels) == 1 else "",
        tuple(str(p) for p in props),
        config.get("fulltext.analyzer"),
        row.get("owningConstraint") is not None,
    )


def _drop(name: str, shown: _Declared) -> str:
    return f"DROP {'CONSTRAINT' if shown[4] else 'INDEX'} {name}"  # a constraint's index has its name


def _described(shown: _Declared) -> str:
    kind, label, props, analyzer, owned = shown
    what = "uniqueness constraint" if owned else f"{kind.lower()} index"
    return f"{what} on {label}({', '.join(props)})" + (f" with analyzer {analyzer}" if analyzer else "")


def schema_problems(rows: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """What is wrong with the graph's indexes, given the rows of ``SHOW INDEXES`` (``name``,
    ``type``, ``labelsOrTypes``, ``properties``, ``options``, ``owningConstraint``): the
    problems that stop a load, and the ones worth a warning.

    >>> rows = [{"name": "my_license", "type": "RANGE", "labelsOrTypes": ["Paper"],
    ...          "properties": ["license"]}, {"name": "my_title", "type": "FULLTEXT",
    ...          "labelsOrTypes": ["Paper"], "properties": ["title"]}]
    >>> errors, warnings = schema_problems(rows)
    >>> [e for e in errors if "paper_title_fulltext" in e][0]
    'paper_title_fulltext is missing: my_title stands in its place: DROP INDEX my_title, then run pith-graph schema'
    >>> [w for w in warnings if "license" in w]
    ['paper_license_index is missing: my_license (range index on Paper(license)) serves in its place']
    """
    shown = {str(row["name"]): _shown(row) for row in rows}
    errors: list[str] = []
    warnings: list[str] = []
    for name, want in _declared().items():
        kind, label, props, _, unique = want
        have = shown.get(name)
        if have == want:
            continue
        if have is not None:
            errors.append(
                f"{name} is not the graph's {_described(want)} but {with_article(_described(have))}: "
                f"{_drop(name, have)}, then run pith-graph schema"
            )
            continue
        # What CREATE … IF NOT EXISTS took for it: the same kind on the same label and properties.
        blockers = sorted(
            other for other, (k, lab, ps, _, _) in shown.items() if (k, lab, ps) == (kind, label, props)
        )
        serving = [other for other in blockers if shown[other][4] or not unique]
        if serving and kind != "FULLTEXT":  # the planner uses it as it would the graph's
            warnings.append(
                f"{name} is missing: {serving[0]} ({_described(shown[serving[0]])}) serves in its place"
            )
        elif blockers:
            drops = ", ".join(_drop(other, shown[other]) for other in blockers)
            errors.append(
                f"{name} is missing: {', '.join(blockers)} stands in its place: {drops}, then run pith-graph schema"
            )
        else:
            errors.append(f"{name} is missing: run pith-graph schema")
    return errors, warnings


def _retired_in_place(rows: Iterable[Mapping[str, Any]], spec: IndexSpec) -> bool:
    want = (spec.kind.upper(), spec.label, spec.properties)
    return any(str(row["name"]) == spec.name and _shown(row)[:3] == want for row in rows)


def ensure_schema(session: neo4j.Session, wait_seconds: float) -> None:
    """Create the graph's constraints and indexes (idempotent), check them, wait until they
    are online and drop retired ones; StoreError (``write_failed``) naming what to do when an
    index of someone else's stands where the graph's must be."""
    for statement in cypher.schema_statements():
        try:
            session.execute_write(_run, statement)
        except Neo4jError as error:  # another loader created it at the same moment
            if error.code not in SCHEMA_RACE_CODES:
                raise
    rows = session.run(cypher.SHOW_INDEXES).data()
    errors, warnings = schema_problems(rows)
    if errors:
        raise StoreError(StoreErrorCode.WRITE_FAILED, "; ".join(errors))
    for warning in warnings:
        log.warning("%s", warning)
    names = sorted(set(_declared()) & {str(row["name"]) for row in rows})
    session.run(cypher.AWAIT_OWN_INDEXES, names=names, seconds=wait_seconds).consume()
    for spec in RETIRED_INDEXES:
        if _retired_in_place(rows, spec):
            session.execute_write(_run, cypher.drop_index(spec.name))


def _run(tx: neo4j.ManagedTransaction, statement: str, /) -> None:
    tx.run(statement).consume()
