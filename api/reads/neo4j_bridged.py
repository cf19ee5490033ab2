"""One request's statements over the asyncio driver, from code bridged onto the event loop.

:class:`BridgedTransaction` keeps the contract of
:class:`~pith_graph.api.reads.neo4j_session.OneTransaction` — one explicit read transaction
opened on the first statement, or the request's only statement run auto-commit
(:meth:`~BridgedTransaction.sole`), :class:`~pith_graph.api.reads.neo4j_session.SecondStatement`
for a statement after that, the same timeouts and error codes — but its I/O goes through
the asyncio driver, awaited with :func:`~pith_graph.api.bridge.wait_for`. So it must be used
inside :func:`~pith_graph.api.bridge.run_bridged` (the API's
:class:`~pith_graph.api.bridge.BridgeRunner`), one call at a time (the request's
:class:`~pith_graph.api.context.Context` serialises them).
"""

from __future__ import annotations

import logging
from typing import Any

import neo4j

from pith_graph.api.bridge import wait_for
from pith_graph.api.reads.neo4j_session import RequestStatements, pipelined_begin, read_session

__all__ = ["BridgedTransaction"]

log = logging.getLogger("pith_graph.api.reads")


async def _auto_commit(
    driver: neo4j.AsyncDriver, database: str, query: neo4j.Query, parameters: dict[str, Any]
) -> list[neo4j.Record]:
    async with driver.session(**read_session(database)) as session:
        result = await session.run(query, parameters)
        return [record async for record in result]


async def _begin(
    driver: neo4j.AsyncDriver, database: str, timeout: float | None
) -> tuple[neo4j.AsyncSession, neo4j.AsyncTransaction]:
    session = driver.session(**read_session(database))
    try:
        with pipelined_begin(session):
            return session, await session.begin_transaction(timeout=timeout)
    except BaseException:
        await session.close()
        raise


async def _run(
    transaction: neo4j.AsyncTransaction, statement: str, parameters: dict[str, Any]
) -> list[neo4j.Record]:
    result = await transaction.run(statement, parameters)
    return [record async for record in result]


async def _end(
    session: neo4j.AsyncSession | None, transaction: neo4j.AsyncTransaction | None, *, commit: bool
) -> None:
    try:
        if transaction is not None and commit:
            await transaction.commit()
    finally:
        if session is not None:
            await session.close()  # rolls back a transaction still open


class BridgedTransaction(RequestStatements):
    """Every statement of a request in one explicit read transaction, opened on the first; or
    the request's only statement as an auto-commit transaction (:meth:`sole`)."""

    def __init__(self, driver: neo4j.AsyncDriver, database: str, uri: str, timeout: float | None) -> None:
        super().__init__(uri, database, timeout)
        self.driver = driver
        self._session: neo4j.AsyncSession | None = None
        self._transaction: neo4j.AsyncTransaction | None = None

    def rows(self, statement: str, parameters: dict[str, Any]) -> list[neo4j.Record]:
        if self._alone_now():
            query = neo4j.Query(statement, timeout=self.timeout)
            with self.translated():
                return wait_for(_auto_commit(self.driver, self.database, query, parameters))
        with self.translated():
            try:
                transaction = self._transaction
                if transaction is None:
                    self._session, transaction = wait_for(_begin(self.driver, self.database, self.timeout))
                    self._transaction = transaction
                return wait_for(_run(transaction, statement, parameters))
            except BaseException:
                self._discard()
                raise

    def _end(self, *, commit: bool) -> None:
        transaction, session = self._transaction, self._session
        self._transaction = self._session = None
        if transaction is not None or session is not None:
            wait_for(_end(session, transaction, commit=commit))

    def _discard(self) -> None:
        """End the transaction a statement failed in, or was cancelled in: the server rolls
        it back, and an error on the way must not hide the statement's."""
        try:
            self._end(commit=False)
        except Exception:
            log.debug("closing a failed request's session failed", exc_info=True)
