"""The per-request context: the reader, the limits, and one DataLoader per reader method.

Each DataLoader gathers the keys every resolver of one level asks for and calls its reader
method once for all of them, so a nested query costs one reader call (one Cypher statement
on Neo4j) per level and relation, whatever the number of papers. Methods that take
``first``/``after`` get one loader per distinct value. (Requests whose document has an
execution plan, :mod:`pith_graph.api.plan`, batch the same way without DataLoaders.)

Reader calls run through a :class:`Runner`: inline for the in-memory reader (no I/O; its
long reads see the request's deadline, :mod:`~pith_graph.api.reads.deadline`); for Neo4j,
bridged onto the event loop (:class:`~pith_graph.api.bridge.BridgeRunner`, what ``serve``
uses: a request waiting on the database holds no thread) or on a
:class:`ThreadRunner`, where a request holds one of its threads (a *lane*) from its first
read to its end. Either way the request reads through the reader's
:meth:`~GraphReader.for_request`: its statements run one at a time, in one read
transaction, which :meth:`Context.close` ends.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from graphql.pyutils import AbortController
from strawberry.dataloader import DataLoader

from pith_graph.api.bridge import BridgeRunner, run_bridged
from pith_graph.api.closing import end_in_background
from pith_graph.api.cost import READ_SIZES
from pith_graph.api.lanes import Lane, Runner, ThreadRunner, run_inline
from pith_graph.api.limits import RequestLimits, out_of_time, over_budget
from pith_graph.api.reads.deadline import CURRENT as READS_UNTIL
from pith_graph.api.reads.discovery import Facet, FacetCount, Listing
from pith_graph.api.reads.reader import GraphReader
from pith_graph.api.reads.records import (
    EVERYTHING,
    AliasRecord,
    AuthorPage,
    AuthorRecord,
    CategoryCount,
    CategoryLink,
    CategoryRecord,
    IdentifierKey,
    NameFormRecord,
    Page,
    PaperKey,
    SignatureRecord,
    SignerRanks,
    SignerRecord,
    ranks_of,
)
from pith_graph.api.reads.torn import TornRead
from pith_graph.api.request_loader import RequestLoader
from pith_graph.errors import QueryTimeout, StoreError
from pith_graph.schema.rows import PaperRow

__all__ = ["Context", "KeyInfo"]

log = logging.getLogger("pith_graph.api.context")

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """What the server's keyring says about a key id."""

    fingerprint: str
    signer_id: str  # the signer the key speaks for: its signer_id, or its own id
    rank: int = 0  # the signer's precedence (0 is the highest), see Keyring.rank


class Context:
    """Everything a resolver needs for one request.

    With a :class:`ThreadRunner` as ``run``, the request reads through
    ``reader.for_request()`` on one lane; with a :class:`~pith_graph.api.bridge.BridgeRunner`,
    through ``reader.for_request(bridged=True)`` on the event loop, one call at a time. Call
    :meth:`close` when the request ends (the API's view does): it ends the transaction (and
    frees the lane).
    """

    def __init__(
        self,
        reader: GraphReader,
        limits: RequestLimits,
        keys: Mapping[str, KeyInfo],
        run: Runner | ThreadRunner | BridgeRunner = run_inline,
        *,
        deadline: float | None = None,
        planned: bool = False,
        unreachable: StoreError | None = None,
    ) -> None:
        self.limits = limits
        #: Whether the request's plan ran already and gave way: the resolvers answer it.
        self.planned = planned
        self.keys = keys
        #: Their ranks (:meth:`rank`): a reader reads whole only the best signer's papers.
        self.ranks: SignerRanks = ranks_of(keys)  # once per keyring
        self._lanes = run if isinstance(run, ThreadRunner) else None
        self._lane: asyncio.Future[Lane] | None = None
        self._calls: list[Future[Any]] = []  # what was sent to the lane
        self._closed = False
        #: Bridged: one reader call at a time (the request's transaction is not shared).
        self._turn = asyncio.Lock() if isinstance(run, BridgeRunner) else None
        #: Aborting it stops the request's execution at the next field (the time limit).
        self.abort = AbortController()
        #: When the request's time is up (``time.monotonic()``), for work that cannot be aborted.
        #: (``deadline``: the request's own, when it began before this context.)
        self.deadline = time.monotonic() + limits.timeout_seconds if deadline is None else deadline
        self._given: Runner | None = None  # the runner given, unless it is one of ours (run)
        if self._lanes is not None:  # (unreachable: what the request's plan met)
            self.reader = reader.for_request(unreachable=unreachable)
        elif self._turn is not None:
            self.reader = reader.for_request(bridged=True, unreachable=unreachable)
        else:
            self.reader, self._given = reader, None if run is run_inline else run
        #: Objects in lists the answer holds so far (see :meth:`produced`).
        self.objects = 0
        #: Whether a reader call raised TornRead: the answer, coded without its cause, is
        #: run again in a new context (``pith_graph.api.app``).
        self.torn = False
        self._loaders: dict[Hashable, RequestLoader[Any, Any]] = {}

    @property
    def run(self) -> Runner:
        """How reader calls run (a property: a bound method kept would make each context a cycle)."""
        if self._given is not None:
            return self._given
        if self._lanes is not None:
            return self._on_lane
        return self._bridged if self._turn is not None else self._inline

    async def _inline(self, fn: Callable[..., T], /, *args: Any) -> T:
        """A call run here, under the request's deadline (:mod:`~pith_graph.api.reads.deadline`:
        the memory reader's long loops stop soon after it with the time-out error, which then
        aborts the request, as the timer would have: the loop running it was too busy)."""
        token = READS_UNTIL.set(self)  # a Due: its check_time
        try:
            return fn(*args)
        except TornRead:
            self.torn = True
            raise
        except QueryTimeout as late:
            self.abort.abort(late)
            raise
        finally:
            READS_UNTIL.reset(token)

    async def _on_lane(self, fn: Callable[..., T], /, *args: Any) -> T:
        assert self._lanes is not None
        if self._closed:
            # A resolver still pending when execution ended (a sibling failed, or the time
            # ran out): its answer is dropped, and a read now would open a transaction
            # that nothing closes.
            raise asyncio.CancelledError("the request has ended")
        if self._lane is None:
            self._lane = asyncio.ensure_future(self._lanes.acquire())
        lane = await asyncio.shield(self._lane)
        if self._closed:  # closed while this waited for the lane: its close is queued first
            raise asyncio.CancelledError("the request has ended")
        call = lane.submit(fn, *args)
        self._calls.append(call)
        try:
            return await asyncio.wrap_future(call)
        except TornRead:
            self.torn = True
            raise

    async def _bridged(self, fn: Callable[..., T], /, *args: Any) -> T:
        assert self._turn is not None
        if self._closed:  # as in _on_lane
            raise asyncio.CancelledError("the request has ended")
        async with self._turn:
            if self._closed:  # closed while this waited: its close comes after
                raise asyncio.CancelledError("the request has ended")
            try:
                return await run_bridged(fn, *args)
            except TornRead:
                self.torn = True
                raise

    async def _close_bridged(self) -> None:
        assert self._turn is not None
        async with self._turn:
            try:
                await run_bridged(self.reader.close)
            except Exception:  # the request has been answered: nobody to tell
                log.debug("ending a request's transaction failed", exc_info=True)

    def close(self) -> asyncio.Future[None] | None:
        """End the request's reads: its transaction is closed on its lane, then the lane is
        freed. Needs no waiting (safe from a cancelled request, and more than once); the
        future returned, if any, is done when the lane is free. When the lane is idle and
        no transaction is open (a planned request ends its own, see
        :func:`~pith_graph.api.plan.run.run_plan`), the lane is freed at once: no trip to
        its thread. Bridged, an open transaction is committed by a task, after the call in
        flight (if any), and the task is returned."""
        for loader in self._loaders.values():  # aborted (time, budget): fields still wait
            loader.cancel_waiting()
        lanes, claim = self._lanes, self._lane
        self._lane = None
        if self._turn is not None and not self._closed:
            self._closed = True
            if not self._turn.locked() and not self.reader.holds_transaction():
                self.reader.close()  # no I/O: nothing is open, nothing is running
                return None
            return end_in_background(self._close_bridged())  # awaited before the driver closes
        self._closed = True
        if lanes is None:
            return None
        if claim is None:
            self.reader.close()  # never read: nothing is open
            return None
        if (
            claim.done()
            and not claim.cancelled()
            and claim.exception() is None
            and all(call.done() for call in self._calls)
            and not self.reader.holds_transaction()
        ):
            self.reader.close()  # no I/O: nothing is open, and the lane's thread is idle
            lanes.release(claim.result())
            return None
        loop = asyncio.get_running_loop()
        released: asyncio.Future[None] = loop.create_future()

        def claimed(done: asyncio.Future[Lane]) -> None:
            if done.cancelled() or done.exception() is not None:
                released.set_result(None)
                return
            lane = done.result()

            def free(_: object) -> None:
                lanes.release(lane)
                released.set_result(None)

            loop.run_in_executor(lane, self.reader.close).add_done_callback(free)

        claim.add_done_callback(claimed)
        return released

    def produced(self, count: int) -> None:
        """Count ``count`` more objects in lists of the answer (both executions call it for
        every list of objects they complete), and check the request's time: over
        ``max_cost`` objects, :class:`~pith_graph.errors.LimitExceeded` (the cost, checked
        before execution, bounds them: this holds should a list answer more than its size);
        past the deadline, :class:`~pith_graph.errors.QueryTimeout`."""
        self.objects += count
        if self.objects > self.limits.max_cost:
            raise over_budget(self.limits)
        self.check_time()

    def hang_up(self) -> None:
        """Stop the request as at its time limit: its client went away (``api.guard``)."""
        self.abort.abort(out_of_time(self.limits))

    def stopped(self) -> bool:
        """Whether the request was aborted, or is now, its time being up."""
        if self.abort.signal.aborted:
            return True
        if time.monotonic() > self.deadline:
            self.abort.abort(out_of_time(self.limits))
            return True
        return False

    def check_time(self) -> None:
        """:class:`~pith_graph.errors.QueryTimeout` once the request's time is up."""
        if time.monotonic() > self.deadline:
            raise out_of_time(self.limits)

    def rank(self, key_id: str) -> int:
        """The precedence of the signer of ``key_id`` in the server's keyring."""
        return self.ranks.rank_of(key_id)

    def batch(
        self,
        name: Hashable,
        fetch: Callable[[list[K]], Mapping[K, V]],
        default: Callable[[], V],
    ) -> DataLoader[K, V]:
        loader = self._loaders.get(name)
        if loader is None:

            async def load(keys: Sequence[K]) -> list[V]:
                if self.stopped():
                    return [default() for _ in keys]
                found = await self.run(fetch, list(keys))
                return [found[key] if key in found else default() for key in keys]

            loader = self._loaders[name] = RequestLoader(self.stopped, default, load_fn=load)
        return loader

    # -- papers --------------------------------------------------------------------------

    @property
    def paper(self) -> DataLoader[str, PaperRow | None]:
        return self.batch("paper", self.reader.papers_by_ids, lambda: None)

    @property
    def identifier(self) -> DataLoader[IdentifierKey, list[PaperRow]]:
        named = partial(self.reader.papers_by_identifiers, want=EVERYTHING, ranks=self.ranks)
        return self.batch("identifier", named, list)

    def author_pages(self, first: int, after: str | None) -> DataLoader[str, AuthorPage]:
        """Pages of papers' authors (``first`` 0: their number only)."""
        return self.batch(
            ("author_pages", first, after),
            lambda keys: self.reader.author_pages(keys, first, after),
            lambda: AuthorPage((), 0),
        )

    # A paper's lists: the first READ_SIZES of each (what its fields show, at most).

    @property
    def categories_of(self) -> DataLoader[str, list[CategoryLink]]:
        first = READ_SIZES["categories_of_papers"]
        return self.batch("categories_of", lambda keys: self.reader.categories_of_papers(keys, first), list)

    @property
    def aliases_of(self) -> DataLoader[str, list[AliasRecord]]:
        first = READ_SIZES["aliases_of_papers"]
        return self.batch("aliases_of", lambda keys: self.reader.aliases_of_papers(keys, first), list)

    @property
    def author_names_of(self) -> DataLoader[str, list[str]]:
        first = READ_SIZES["author_names_of_papers"]
        return self.batch(
            "author_names_of", lambda keys: self.reader.author_names_of_papers(keys, first), list
        )

    @property
    def signatures_of(self) -> DataLoader[str, list[SignatureRecord]]:
        first = READ_SIZES["signatures_of_papers"]
        return self.batch("signatures_of", lambda keys: self.reader.signatures_of_papers(keys, first), list)

    @property
    def versions_of(self) -> DataLoader[str, list[PaperRow]]:
        first = READ_SIZES["versions_of_papers"]
        return self.batch("versions_of", lambda keys: self.reader.versions_of_papers(keys, first), list)

    def ranked(self, method: str, first: int, after: str | None) -> DataLoader[str, list[Any]]:
        """A page of a ranked list: ``reader.<method>`` (``related_papers``, ``coauthors``,
        ``top_authors``, ``co_listed``), the first ``first`` after ``after`` (since 0.9.2)."""
        read = getattr(self.reader, method)
        return self.batch((method, first, after), lambda keys: read(keys, first, after=after), list)

    # -- authors -------------------------------------------------------------------------

    @property
    def author(self) -> DataLoader[str, AuthorRecord | None]:
        return self.batch("author", self.reader.authors_by_keys, lambda: None)

    @property
    def author_categories(self) -> DataLoader[str, list[CategoryCount]]:
        return self.batch("author_categories", self.reader.author_categories, list)

    @property
    def name_forms_of(self) -> DataLoader[str, list[NameFormRecord]]:
        first = READ_SIZES["name_forms_of_authors"]
        return self.batch("name_forms_of", lambda keys: self.reader.name_forms_of_authors(keys, first), list)

    # -- categories ----------------------------------------------------------------------

    @property
    def category(self) -> DataLoader[str, CategoryRecord | None]:
        return self.batch("category", self.reader.categories_by_codes, lambda: None)

    # -- signers -------------------------------------------------------------------------

    @property
    def signer(self) -> DataLoader[str, SignerRecord | None]:
        return self.batch("signer", self.reader.signers_by_ids, lambda: None)

    def owned(self, method: str, args: tuple[Hashable, ...]) -> DataLoader[str, Page]:
        """Owners' papers (since 0.9.4 one loader for them all): ``reader.<method>``
        (``papers_of_authors``, ``papers_of_categories``, ``papers_of_signers``) with ``args``
        after the owner keys, a page or a listing's end; the owners asking for it, in one call."""
        read = getattr(self.reader, method)
        return self.batch((method, args), lambda keys: read(keys, *args), _empty_page)

    def owned_page(
        self, method: str, first: int, after: PaperKey | None, rest: tuple[Hashable, ...]
    ) -> DataLoader[str, Page]:
        """A page of :meth:`owned` with every field of its papers (``rest``: the arguments after them)."""
        return self.owned(method, (first, after, EVERYTHING, *rest))

    def facets(self, listing: Listing, first: int) -> DataLoader[Facet, list[FacetCount]]:
        return self.batch(
            ("facets", listing, first), lambda keys: self.reader.facet_counts(listing, keys, first), list
        )


def _empty_page() -> Page:
    return Page((), False)
