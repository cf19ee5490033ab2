"""Neo4j's side of an author's name (:mod:`~pith_graph.loader.stores.names`): read the
spellings of the papers a batch detaches, and count the batch's spellings into the names of
the authors it touched, as the memory store does, inside the batch's transaction; and give
the authors of a database written before 0.3 their ``nameFolded`` and ``paperCount``, and
those written before 0.9.8 their key's ``nameFolded`` (:func:`refold_authors`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import neo4j

from pith_graph.loader.stores import cypher, cypher_upgrades
from pith_graph.loader.stores.names import Spellings, folded_words, stored_spellings
from pith_graph.loader.stores.neo4j_connect import read_rows, run_rows
from pith_graph.loader.stores.upgrade_batches import upgrade_batches

__all__ = [
    "REFOLD_SCAN",
    "paper_author_names",
    "refold_authors",
    "refresh_authors",
    "unfolded_authors",
    "upgrade_authors",
]

log = logging.getLogger(__name__)

_UPGRADE_BATCH = 5000
#: Authors read (in ``nameKey`` order) per statement of :func:`unfolded_authors`.
REFOLD_SCAN = 100_000


def paper_author_names(tx: neo4j.ManagedTransaction, piths: list[str]) -> Iterator[str]:
    """Every spelling of an author the papers ``piths`` hold (before they are detached)."""
    for record in read_rows(tx, cypher.PAPER_AUTHOR_NAMES, piths=piths):
        yield from record["names"]


def refresh_authors(tx: neo4j.ManagedTransaction, keys: list[str], spellings: Spellings) -> None:
    """Count the touched authors' edges, and count the batch's ``spellings`` into the names of
    those it may change (:mod:`~pith_graph.loader.stores.names`, as the memory store does)."""
    rows: list[list[Any]] = []
    for key in keys:
        net = spellings.net(key)
        only = next(iter(net)) if len(net) == 1 and next(iter(net.values())) > 0 else None
        rows.append([key, only, bool(net) and only is None])
    renamed: list[list[Any]] = []
    for record in read_rows(tx, cypher.REFRESH_AUTHORS, rows=rows):
        key = record["key"]
        stored = stored_spellings(record["name"], record["before"], record["forms"], record["counts"])
        name, forms, counts = spellings.apply(key, stored, record["name"])
        if (name, forms, counts) != (record["name"], record["forms"], record["counts"]):
            renamed.append([key, name, folded_words(key), forms, counts])
    if renamed:
        run_rows(tx, cypher.SET_AUTHOR_NAMES, rows=renamed)


def upgrade_authors(session: neo4j.Session) -> int:
    """Fill in ``Author.nameFolded`` and ``paperCount`` where a database written by an
    earlier version lacks them (a few thousand authors per transaction; nothing to do,
    one scan of the Author label, once the database is up to date); the number of authors
    given them. An analyst's stub ``(:Author)`` without ``nameKey`` or ``name`` is left as it is."""
    done = 0
    batches = upgrade_batches(
        lambda: session.execute_read(_read, cypher_upgrades.AUTHORS_TO_UPGRADE, limit=_UPGRADE_BATCH),
        lambda row: row["key"],
        "authors",
    )
    for found in batches:
        rows = [[row["key"], None, folded_words(row["key"])] for row in found]
        session.execute_write(_write, cypher_upgrades.SET_AUTHORS, rows)
        log.info("gave %d authors their nameFolded and paperCount", len(rows))
        done += len(rows)
    return done


def unfolded_authors(
    read: Callable[..., Sequence[Mapping[str, Any]]], scan: int = REFOLD_SCAN
) -> Iterator[list[list[str]]]:
    """The ``[nameKey, nameFolded]`` to write of each author whose stored ``nameFolded`` is not
    its key's folded words (:func:`~.names.folded_words`), a list per statement that found
    any: one pass over the ``nameKey`` index, ``scan`` authors a statement, of which only
    those whose two folds can differ are read back and compared
    (:data:`~.cypher_upgrades.AUTHOR_FOLDS`). ``read(statement, **parameters)`` runs a read
    statement and gives its records: ``refold_authors``' session's, or ``serve``'s reader's
    (:meth:`~pith_graph.api.reads.neo4j_upkeep.Neo4jUpkeep.unfolded_author`, which stops at
    the first list)."""
    after = ""
    while True:
        (record,) = read(
            cypher_upgrades.AUTHOR_FOLDS, after=after, scan=scan, pattern=cypher_upgrades.REFOLDED_PATTERN
        )
        rows = [[key, folded] for key, stored in record["rows"] if (folded := folded_words(key)) != stored]
        if rows:
            yield rows
        if record["last"] is None:
            return
        after = record["last"]


def refold_authors(session: neo4j.Session, scan: int = REFOLD_SCAN) -> int:
    """Give each author its key's ``nameFolded`` (:func:`~.names.folded_words`) where a
    database written before 0.9.8 holds its display name's (which a lower-ranked signer's
    spelling could choose): the authors :func:`unfolded_authors` finds, written a few
    thousand per transaction. The number of authors changed."""
    done = 0

    def read(statement: str, **parameters: Any) -> list[dict[str, Any]]:
        return session.execute_read(_read, statement, **parameters)

    for rows in unfolded_authors(read, scan):
        for at in range(0, len(rows), _UPGRADE_BATCH):
            session.execute_write(_write, cypher_upgrades.REFOLD_AUTHORS, rows[at : at + _UPGRADE_BATCH])
        log.info("gave %d authors the nameFolded of their nameKey", len(rows))
        done += len(rows)
    return done


def _read(tx: neo4j.ManagedTransaction, statement: str, /, **parameters: Any) -> list[dict[str, Any]]:
    return tx.run(statement, **parameters).data()


def _write(tx: neo4j.ManagedTransaction, statement: str, rows: list[list[Any]]) -> None:
    tx.run(statement, rows=rows).consume()
