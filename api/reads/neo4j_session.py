"""How the Neo4j reader runs its statements: each in its own transaction, or all of one
request in one read transaction.

* :class:`EachInItsOwn` runs every statement with ``driver.execute_query`` (a managed read
  transaction): the reader used outside requests, whose one statement in the API is the
  health check's ping. Before a statement that may meet a server that restarted, it plans
  a few statements ahead (:meth:`~EachInItsOwn.warm`).
* :class:`OneTransaction` opens one explicit read transaction on the first statement, runs
  every later statement in it, and ends it on :meth:`~OneTransaction.close`: the reader of
  one request (:meth:`~pith_graph.api.reads.neo4j.Neo4jReader.for_request`). A failed
  statement ends the transaction (the server has rolled it back); a later statement opens
  another. It is not thread-safe: the API uses it from one thread at a time (a request's
  lane, see :mod:`pith_graph.api.context`).

  A request that will run one statement only says so with :meth:`~OneTransaction.sole`
  (see :meth:`~pith_graph.api.reads.reader.GraphReader.sole_statement`): its first statement
  then runs as an auto-commit transaction (``session.run``: RUN and PULL in one round trip,
  where an explicit transaction costs BEGIN, RUN and PULL, then a COMMIT round trip). That
  transaction is the request's one: any later statement raises :class:`SecondStatement`
  instead of opening another.

Both bound a transaction by ``timeout`` seconds on the server, and turn driver errors into
:class:`~pith_graph.errors.StoreError` (``timeout`` when the server stopped a transaction
that ran past it).
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import lru_cache
from typing import Any, Protocol

import neo4j
from neo4j.exceptions import DriverError, Neo4jError

from pith_graph.api.reads.cypher_parts import STATEMENTS_KEPT
from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.stores.neo4j_connect import translate
from pith_graph.loader.stores.neo4j_retry import OUT_OF_MEMORY

__all__ = [
    "EachInItsOwn",
    "OneTransaction",
    "RequestStatements",
    "SecondStatement",
    "Statements",
    "named_parameters",
    "pipelined_begin",
    "read_session",
]

log = logging.getLogger("pith_graph.api.reads")

_PARAMETER = re.compile(r"\$(\w+)")


@lru_cache(maxsize=4 * STATEMENTS_KEPT)
def named_parameters(statement: str) -> frozenset[str]:
    """The parameters ``statement`` names (``$name``), read once per statement."""
    return frozenset(_PARAMETER.findall(statement))


class Statements(Protocol):
    """Runs read statements and returns their records."""

    def rows(self, statement: str, parameters: dict[str, Any]) -> list[neo4j.Record]: ...

    def sole(self) -> AbstractContextManager[None]:
        """A block whose statement, if any, is the last one of its request."""
        ...

    @property
    def open(self) -> bool:
        """Whether a transaction is open (which :meth:`close` ends on the server)."""
        ...

    def close(self) -> None: ...


def read_session(database: str) -> dict[str, Any]:
    """The settings of a request's session (sync or asyncio driver): reads of ``database``,
    with no bookmarks."""
    return {"database": database, "default_access_mode": neo4j.READ_ACCESS, "bookmark_manager": None}


def pipelined_begin(session: object) -> AbstractContextManager[object]:
    """A block in which ``session`` sends BEGIN with the first RUN (one round trip less), as
    ``execute_query`` does; the flag is the driver's own (neo4j < 7), skipped if it is gone."""
    flag: AbstractContextManager[object] | None = getattr(session, "_pipelined_begin", None)
    return flag if flag is not None else nullcontext()


class SecondStatement(RuntimeError):
    """A statement after the one a request ran as its auto-commit transaction: the caller
    of :meth:`OneTransaction.sole` vouched that there would be none (a bug to fix there)."""


class _Errors:
    def __init__(self, uri: str, database: str, timeout: float | None) -> None:
        self.uri = uri
        self.database = database
        self.timeout = timeout

    @contextmanager
    def translated(self) -> Iterator[None]:
        try:
            yield
        except (Neo4jError, DriverError) as error:
            if isinstance(error, Neo4jError) and "TransactionTimedOut" in (error.code or ""):
                raise StoreError(StoreErrorCode.TIMEOUT, f"a read ran past {self.timeout} s") from error
            if isinstance(error, Neo4jError) and error.code in OUT_OF_MEMORY:
                raise StoreError(
                    StoreErrorCode.MEMORY,
                    f"a read needed more than the transaction memory of {self.uri} ({error.message}); "
                    "raise db.memory.transaction.max, dbms.memory.transaction.total.max or the heap",
                ) from error
            raise translate(error, self.uri, self.database, "reading") from error


class EachInItsOwn(_Errors):
    """Every statement in its own managed read transaction.

    A server plans each statement the first time it runs it, and a restarted one plans them
    all anew on a cold JVM: on two shared cores its first plan of a paper lookup took 6-10 s,
    the eighth under 1 s, so the first requests after a restart spent their time limit being
    planned. So before a statement that may meet a server that has not planned ``warm_up``
    (the first, the first after one that failed, and any after ``idle`` seconds without a
    statement: time enough for a restart nobody saw) this plans them (:meth:`warm`). In the
    API that statement is the health check's ping, in every worker: ``/healthz`` answers 200
    only once the server has planned them, and its planner is warm: a request's first plan of
    a statement then takes a fraction of a second. (Neo4j caches a plan per statement and
    types of the parameters sent, so the plans made here, every parameter null, are seldom
    the ones requests reuse; what they warm is the planner.)"""

    def __init__(
        self,
        driver: neo4j.Driver,
        database: str,
        uri: str,
        timeout: float | None,
        warm_up: Sequence[str] = (),
        idle: float = 2.0,
        warm_seconds: float = 30.0,
    ) -> None:
        super().__init__(uri, database, timeout)
        self.driver = driver
        self.warm_up = tuple(warm_up)
        self.idle = idle
        self.warm_seconds = warm_seconds
        self._cold = True  # warm_up not planned yet, or a statement failed since
        self._last = -math.inf  # when the last statement succeeded (time.monotonic)

    def rows(self, statement: str, parameters: dict[str, Any]) -> list[neo4j.Record]:
        try:
            if self.warm_up and (self._cold or time.monotonic() - self._last > self.idle):
                self.warm()
            found = self._rows(statement, parameters)
        except StoreError:
            self._cold = True
            raise
        self._last = time.monotonic()
        return found

    def warm(self) -> None:
        """Plan the statements of ``warm_up`` (``EXPLAIN``: nothing runs; every parameter
        null: see the class), for ``warm_seconds`` at most in all (a server too
        slow to plan them in time gets no faster by waiting for it). One the server refuses
        or does not plan in time is logged and skipped (planning ahead only saves time); any
        other error (the server is unreachable) raises, and the next statement plans them
        again."""
        deadline = time.monotonic() + self.warm_seconds
        for statement in self.warm_up:
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning("planning statements ahead stopped after %g s", self.warm_seconds)
                break
            parameters = dict.fromkeys(named_parameters(statement))
            try:
                self._rows(f"EXPLAIN {statement}", parameters, min(left, self.timeout or left))
            except StoreError as error:
                if error.code not in (StoreErrorCode.TIMEOUT, StoreErrorCode.WRITE_FAILED):
                    raise
                log.warning("planning a statement ahead failed: %s", error)
        self._cold = False

    def _rows(
        self, statement: str, parameters: dict[str, Any], timeout: float | None = None
    ) -> list[neo4j.Record]:
        with self.translated():
            result = self.driver.execute_query(
                neo4j.Query(statement, timeout=self.timeout if timeout is None else timeout),
                parameters,
                routing_=neo4j.RoutingControl.READ,
                database_=self.database,
                bookmark_manager_=None,
            )
        return list(result.records)

    def sole(self) -> AbstractContextManager[None]:
        """Nothing to save: every statement is a transaction of its own already."""
        return nullcontext()

    @property
    def open(self) -> bool:
        """Never: each statement's transaction ends with it."""
        return False

    def close(self) -> None:
        """Nothing: the driver belongs to the reader."""


class RequestStatements(_Errors):
    """What both ways of running one request's statements share: the choice, made at its
    first statement, between one explicit transaction and an auto-commit one (:meth:`sole`)."""

    def __init__(self, uri: str, database: str, timeout: float | None) -> None:
        super().__init__(uri, database, timeout)
        self._ran = False  # a statement was run (or tried)
        self._sole = False  # the next statement is the request's only one
        self._spent = False  # the request's one transaction was an auto-commit statement
        #: The server could not be reached (a statement failed ``unavailable``): every later
        #: statement of the request fails so at once, instead of waiting for a connection again.
        self.unreachable: StoreError | None = None

    @contextmanager
    def translated(self) -> Iterator[None]:
        try:
            with super().translated():
                yield
        except StoreError as error:
            if error.code is StoreErrorCode.UNAVAILABLE:
                self.unreachable = error
            raise

    @contextmanager
    def sole(self) -> Iterator[None]:
        """Run the block's statement, if it is the request's first, as an auto-commit
        transaction: the caller vouches that the request runs no other. A later statement
        raises :class:`SecondStatement`. After earlier statements the block's joins their
        transaction, as any."""
        if self._ran:
            yield
            return
        self._sole = True
        try:
            yield
        finally:
            self._sole = False

    _transaction: object | None  # the explicit transaction, once opened

    def _end(self, *, commit: bool) -> None:
        """End the explicit transaction, if any, and its session."""
        raise NotImplementedError

    def close(self) -> None:
        """End the transaction (a read: committing only releases it)."""
        with self.translated():
            self._end(commit=True)

    @property
    def open(self) -> bool:
        """Whether a transaction is open."""
        return self._transaction is not None

    def _alone_now(self) -> bool:
        """Whether the statement about to run is the request's auto-commit one (raises
        :class:`SecondStatement` after it); counts it as run. Raises the request's
        :attr:`unreachable` error, if any."""
        if self.unreachable is not None:
            raise StoreError(self.unreachable.code, self.unreachable.message)
        if self._spent:
            raise SecondStatement("the request ran its one statement as an auto-commit transaction")
        first, self._ran = not self._ran, True
        self._spent = first and self._sole
        return self._spent


class OneTransaction(RequestStatements):
    """Every statement in one explicit read transaction, opened on the first; or a request's
    only statement as an auto-commit transaction (:meth:`sole`)."""

    def __init__(self, driver: neo4j.Driver, database: str, uri: str, timeout: float | None) -> None:
        super().__init__(uri, database, timeout)
        self.driver = driver
        self._session: neo4j.Session | None = None
        self._transaction: neo4j.Transaction | None = None

    def _alone(self, statement: str, parameters: dict[str, Any]) -> list[neo4j.Record]:
        with self.translated(), self.driver.session(**read_session(self.database)) as session:
            return list(session.run(neo4j.Query(statement, timeout=self.timeout), parameters))

    def _begin(self) -> neo4j.Transaction:
        session = self._session = self.driver.session(**read_session(self.database))
        with pipelined_begin(session):
            return session.begin_transaction(timeout=self.timeout)

    def rows(self, statement: str, parameters: dict[str, Any]) -> list[neo4j.Record]:
        if self._alone_now():
            return self._alone(statement, parameters)
        with self.translated():
            try:
                transaction = self._transaction
                if transaction is None:
                    transaction = self._transaction = self._begin()
                return list(transaction.run(statement, parameters))
            except BaseException:
                self._end(commit=False)
                raise

    def _end(self, *, commit: bool) -> None:
        transaction, session = self._transaction, self._session
        self._transaction = self._session = None
        try:
            if transaction is not None and commit:
                transaction.commit()
        finally:
            if session is not None:
                session.close()  # rolls back a transaction still open
