"""Identifiers to papers (one or many at once) and author typeahead.

An identifier answers only with its highest-ranked signer's papers (a lower-ranked signer
may claim an alias, such as a journal DOI, that a higher-ranked one's paper carries), newest
version first; ``paper`` and ``papersById`` share that rule
(:func:`~pith_graph.api.inputs.named_by_keys`). Global ids (``node``, ``nodes``) name one
object each, looked up by its key (:mod:`pith_graph.api.node_ids`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from strawberry.dataloader import DataLoader

from pith_graph.api.context import Context
from pith_graph.api.ids import ParsedId, parse_identifier
from pith_graph.api.inputs import MAX_TEXT_LENGTH, named_by_keys
from pith_graph.api.limits import page_size
from pith_graph.api.node_ids import parse_node_id
from pith_graph.api.reads.folding import typed_keys
from pith_graph.api.reads.records import EVERYTHING, AuthorRecord, IdentifierKey
from pith_graph.errors import BadUserInput, LimitExceeded
from pith_graph.schema.rows import PaperRow

__all__ = ["TYPEAHEAD_FIRST", "authors_by_prefix", "nodes_by_ids", "papers_by_ids"]

#: Authors a typeahead answers with when ``first`` is not given.
TYPEAHEAD_FIRST = 10


def _parsed(identifier: str) -> ParsedId | None:
    """What an identifier names; None for one that names nothing, blank ones included."""
    try:
        return parse_identifier(identifier)
    except BadUserInput:
        return None


def _at_most(context: Context, ids: list[str]) -> None:
    """``LIMIT_EXCEEDED`` for more ids than one call looks up (``max_batch_ids``)."""
    limit = context.limits.max_batch_ids
    if len(ids) > limit:
        raise LimitExceeded(
            f"ids holds {len(ids)} identifiers; at most {limit} are looked up at once.",
            f"Split the list into calls of {limit} or fewer.",
            argument="ids",
        )


async def nodes_by_ids(context: Context, ids: list[str]) -> list[tuple[str, Any] | None]:
    """The type and record each global id names, aligned with ``ids``: None where it names
    nothing (not an id, or an object this graph does not hold). The request's DataLoaders
    look them up: one reader call per type, however many ids (and other fields) ask."""
    _at_most(context, ids)
    loaders: dict[str, DataLoader[str, Any]] = {
        "Paper": context.paper,
        "Author": context.author,
        "Category": context.category,
        "Signer": context.signer,
    }
    parsed = [parse_node_id(text) for text in ids]
    found = await asyncio.gather(*(loaders[kind].load(key) for kind, key in filter(None, parsed)))
    records = iter(found)
    answers: list[tuple[str, Any] | None] = []
    for named in parsed:
        record = next(records) if named is not None else None
        answers.append((named[0], record) if named is not None and record is not None else None)
    return answers


async def papers_by_ids(context: Context, ids: list[str]) -> list[PaperRow | None]:
    """The paper each identifier names (as ``paper(id:)``), aligned with ``ids``: None where
    it names none. One reader call for the whole list; each key's paper is chosen once,
    however many identifiers name it, the request's time checked between keys; an
    identifier's paper is then the best of its keys'."""
    _at_most(context, ids)
    parsed = [_parsed(identifier) for identifier in ids]
    keys: list[IdentifierKey] = list(dict.fromkeys(key for found in parsed if found for key in found.keys))
    read = context.reader.papers_by_identifiers
    named = await context.run(read, keys, EVERYTHING, context.ranks) if keys else {}
    rank = context.rank
    best: dict[IdentifierKey, list[PaperRow]] = {}
    for key, papers in named.items():
        context.check_time()
        best[key] = named_by_keys([papers], rank)[:1]
    answers: list[PaperRow | None] = []
    for found in parsed:
        chosen = named_by_keys([best.get(key, []) for key in found.keys], rank) if found else []
        answers.append(chosen[0] if chosen else None)
    return answers


async def authors_by_prefix(context: Context, prefix: str, first: int | None) -> list[AuthorRecord]:
    """Authors with, for every word typed, a name word starting with it (case, accents and
    spacing ignored): most papers first, then by name key. ``[]`` when nothing is typed.
    ``prefix`` keeps :data:`~pith_graph.api.inputs.MAX_TEXT_LENGTH` characters (not a key's
    4,096 bytes, as ``author(name:)`` since 0.9.3): it is the start of words typed, each
    matched against the start of a name word, not a key looked up."""
    size = page_size(first, context.limits, TYPEAHEAD_FIRST)
    if len(prefix) > MAX_TEXT_LENGTH:
        raise BadUserInput(
            f"prefix is longer than {MAX_TEXT_LENGTH} characters.",
            f"Shorten it to {MAX_TEXT_LENGTH} characters.",
            argument="prefix",
        )
    keys = typed_keys(prefix)
    if not keys or size == 0:
        return []
    return await context.run(context.reader.authors_by_prefix, keys, size)
