"""Opening a Neo4j driver and turning driver errors into :class:`~pith_graph.errors.StoreError`.

``StoreError.code`` tells what to fix: ``unavailable`` (nothing answers at the URI, or the
connection was lost and retries ran out), ``auth`` (credentials refused), ``database``
(no such database), ``write_failed`` (the server refused a statement). A write given up
(:func:`write_failed`: a batch, or a removal) says how many attempts it had, over how long,
and whether it may have been written.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import neo4j
from neo4j.exceptions import (
    AuthError,
    ConfigurationError,
    DriverError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
)

from pith_graph.errors import StoreError, StoreErrorCode, UsageError
from pith_graph.loader.stores import cypher
from pith_graph.loader.stores.neo4j_auth import URI_SCHEMES

__all__ = [
    "BATCH",
    "LOAD_TIMEOUTS",
    "READ_TIMEOUTS",
    "REMOVAL",
    "URI_SCHEMES",
    "Attempts",
    "DriverTimeouts",
    "Quiet",
    "Work",
    "check_uri",
    "driver_config",
    "open_driver",
    "read_rows",
    "run_rows",
    "translated",
    "write_failed",
]


# The driver logs each retried transaction at WARNING ("... will be retried ..."); without a
# handler Python would print those on stderr. Applications that configure logging still get
# them; the CLI's users do not see retried deadlocks.
logging.getLogger("neo4j").addHandler(logging.NullHandler())

#: How long a managed transaction keeps retrying transient failures (deadlocks, a restart).
MAX_RETRY_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class DriverTimeouts:
    """How long a driver waits, in seconds: ``connect`` (TCP and Bolt handshake),
    ``acquire`` (a connection from the pool, connecting included), ``retry`` (managed
    transactions retry transient errors this long; 0: never), and ``liveness_check`` (a
    pooled connection idle longer is tested before use; ``None``: never)."""

    connect: float
    acquire: float
    retry: float
    liveness_check: float | None = None


#: The loader: a batch rides out deadlocks and a restarting server.
LOAD_TIMEOUTS = DriverTimeouts(connect=10.0, acquire=60.0, retry=MAX_RETRY_SECONDS)
#: The API: a request (and the health check) fails fast while the server is down, and the
#: client asks again; a connection left idle across a restart is tested, not tried and failed.
READ_TIMEOUTS = DriverTimeouts(connect=2.0, acquire=3.0, retry=0.0, liveness_check=2.0)

_DATABASE_CODES = ("Neo.ClientError.Database.DatabaseNotFound", "Neo.ClientError.Database.")
_UNAVAILABLE_CODES = ("Neo.TransientError.General.DatabaseUnavailable",)


def _describe(uri: str, database: str) -> str:
    return f"Neo4j at {uri} (database {database!r})"


def _one_line(error: Exception, limit: int = 240) -> str:
    text = " ".join(str(getattr(error, "message", None) or error).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def translate(error: Exception, uri: str, database: str, action: str, hint: str = "") -> StoreError:
    """The :class:`StoreError` for a driver error raised while ``action`` (e.g. "connecting");
    ``hint`` replaces the advice given when the server cannot be reached."""
    where = _describe(uri, database)
    if isinstance(error, AuthError):
        return StoreError(
            StoreErrorCode.AUTH,
            f"{where} refused the credentials ({_one_line(error)}); check --user and "
            "--password/--password-file, or NEO4J_USER and NEO4J_PASSWORD/NEO4J_PASSWORD_FILE "
            "(scripts/neo4j keeps its server's password in $NEO4J_DATA/password)",
        )
    if isinstance(error, Neo4jError) and (error.code or "").startswith(_DATABASE_CODES):
        return StoreError(
            StoreErrorCode.DATABASE, f"{where}: {_one_line(error)}; check --database or NEO4J_DATABASE"
        )
    if isinstance(error, (ServiceUnavailable, SessionExpired)) or (
        isinstance(error, Neo4jError) and error.code in _UNAVAILABLE_CODES
    ):
        hint = hint or "is the server running and answering? (scripts/neo4j start)"
        return StoreError(
            StoreErrorCode.UNAVAILABLE, f"cannot reach {where} while {action}: {_one_line(error)}; {hint}"
        )
    if isinstance(error, Neo4jError):
        return StoreError(
            StoreErrorCode.WRITE_FAILED, f"{where} failed while {action}: {error.code}: {_one_line(error)}"
        )
    return StoreError(StoreErrorCode.UNAVAILABLE, f"{where} failed while {action}: {_one_line(error)}")


@dataclass(frozen=True, slots=True)
class Attempts:
    """How a write transaction's attempts went: how many, and when (``time.monotonic``) the
    first began, the first failed and the last failed."""

    number: int
    started: float
    failed: float
    ended: float

    def __str__(self) -> str:
        plural = "s" if self.number > 1 else ""
        tried = f"{self.number} attempt{plural} over {self.ended - self.started:.0f} s"
        if self.number == 1:
            return tried
        first, retried = self.failed - self.started, self.ended - self.failed
        return f"{tried}: the first failed after {first:.0f} s, then retried for {retried:.0f} s"


@dataclass(frozen=True, slots=True)
class Work:
    """What a write transaction does, as its messages name it: ``noun`` (what was or was not
    written), ``action`` (what failed) and ``again`` (what is safe to do next)."""

    noun: str
    action: str
    again: str


#: A load's batch, and a removal (``pith-graph prune``).
BATCH = Work("batch", "writing a batch", "loading again")
REMOVAL = Work("removal", "removing papers", "pruning again")


def write_failed(
    error: Neo4jError | DriverError,
    uri: str,
    database: str,
    tried: Attempts,
    work: Work,
    *,
    maybe_written: bool = False,
) -> StoreError:
    """The :class:`StoreError` for a write transaction (``work``) given up after ``tried``:
    what failed, how long was waited, and whether it may have been written: ``maybe_written``
    when an attempt's connection was lost after its COMMIT was sent (``IncompleteCommit``; the
    store retries such an attempt, so a write given up after one always says so)."""
    if maybe_written:
        hint = (
            f"gave up after {tried}; the connection was lost while an attempt committed, so whether "
            f"the {work.noun} was written is unknown; {work.again} is safe (it converges either way)"
        )
    elif error.is_retryable():
        hint = f"gave up after {tried}; the {work.noun} was not written: {work.again} is safe"
    else:
        hint = f"not retried ({tried}); the {work.noun} was not written: {work.again} is safe"
    found = translate(error, uri, database, work.action, hint)
    if hint in found.message:  # the connection was lost, or the database is unavailable
        return found
    if found.code is StoreErrorCode.UNAVAILABLE or maybe_written:  # e.g. no connection from the pool in time
        return StoreError(found.code, f"{found.message}; {hint}")
    return found if tried.number == 1 else StoreError(found.code, f"{found.message} ({tried})")


@contextmanager
def translated(uri: str, database: str, action: str) -> Iterator[None]:
    """Re-raise driver errors inside the block as :class:`StoreError`."""
    try:
        yield
    except (Neo4jError, DriverError) as error:
        raise translate(error, uri, database, action) from error


def check_uri(uri: str) -> None:
    """Raise :class:`UsageError` unless ``uri`` is a Bolt URI the driver can use: a scheme of
    :data:`URI_SCHEMES`, a host, and a port (if any) from 1 to 65535.

    The driver also takes ``http://`` and ``https://`` (its Query API, which needs packages
    pith-graph does not install, and which pith-graph does not speak).
    """
    schemes = ", ".join(f"{scheme}://" for scheme in URI_SCHEMES)
    bad = f"bad Neo4j URI {uri!r}"
    try:
        parts = urlsplit(uri)
        host = parts.hostname  # (a malformed IPv6 literal raises, from Python 3.11.4)
    except ValueError as err:
        raise UsageError(f"{bad}: {err}") from err
    if "://" not in uri or parts.scheme not in URI_SCHEMES:
        found = f"{parts.scheme}:// is not a Bolt scheme" if "://" in uri else "no scheme"
        raise UsageError(f"{bad}: {found}; use {schemes}, e.g. bolt://127.0.0.1:7687")
    if not host:
        raise UsageError(f"{bad}: no host, e.g. bolt://127.0.0.1:7687")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise UsageError(f"{bad}: the port must be a number from 1 to 65535")


def driver_config(user: str, password: str | None, timeouts: DriverTimeouts) -> dict[str, Any]:
    """The settings of every driver pith-graph opens, synchronous or asyncio (no password:
    no authentication).

    The server sends notifications of WARNING and above only, and none about labels,
    relationship types or properties it does not know yet (``UNRECOGNIZED``: any statement
    on an empty database): the driver logs each one it gets, and ``serve`` prints the log,
    so the planner's hints (INFORMATION: e.g. ``collaborationPath``'s "cartesian product"
    of two one-row lookups) would be a 2 KB line per request; a deprecation still reaches it."""
    return {
        "auth": (user, password) if password else None,
        "max_transaction_retry_time": timeouts.retry,
        "connection_timeout": timeouts.connect,
        "connection_acquisition_timeout": timeouts.acquire,
        "liveness_check_timeout": timeouts.liveness_check,
        "warn_notification_severity": "OFF",
        "notifications_min_severity": "WARNING",
        "notifications_disabled_classifications": ["UNRECOGNIZED"],
        "user_agent": "pith-graph",
    }


def open_driver(
    uri: str,
    user: str,
    password: str | None,
    database: str,
    timeouts: DriverTimeouts = LOAD_TIMEOUTS,
) -> neo4j.Driver:
    """A driver that has reached ``database`` with these credentials, or a StoreError.

    No password means no authentication (a server started with ``NEO4J_AUTH=none``);
    :func:`~pith_graph.loader.stores.neo4j_auth.resolve_password` finds the password to pass.
    A URI the driver cannot use is a :class:`UsageError` (:func:`check_uri`).
    """
    check_uri(uri)
    try:
        driver = neo4j.GraphDatabase.driver(uri, **driver_config(user, password, timeouts))
    except (ConfigurationError, ValueError) as error:
        raise UsageError(f"bad Neo4j URI {uri!r}: {error}") from error
    try:
        with translated(uri, database, "connecting"):
            driver.verify_connectivity()
            driver.execute_query(cypher.PING, database_=database)
    except BaseException:
        driver.close()
        raise
    return driver


class Quiet(list[Any]):
    """A list parameter (a batch's rows) that the driver encodes as any list, but whose
    ``repr`` is short: the driver formats every statement's parameters for its debug log
    before the logger is asked whether it logs (``" ".join(map(repr, fields))``), about
    40 ms of the writer's CPU per batch of 2,000 papers, the server waiting meanwhile."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<{len(self)} row{'' if len(self) == 1 else 's'}>"


def _quiet(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with each list a :class:`Quiet` one (the driver's debug formatting skips it)."""
    return {name: Quiet(value) if type(value) is list else value for name, value in params.items()}


def run_rows(tx: neo4j.ManagedTransaction, statement: str, /, **params: Any) -> None:
    """Run a write statement in ``tx``, its list parameters :class:`Quiet`."""
    tx.run(statement, _quiet(params)).consume()


def read_rows(tx: neo4j.ManagedTransaction, statement: str, /, **params: Any) -> list[dict[str, Any]]:
    """The records of a statement run in ``tx``, as dicts, its list parameters :class:`Quiet`."""
    return tx.run(statement, _quiet(params)).data()
