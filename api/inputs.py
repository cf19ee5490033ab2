"""The inputs of the schema's fields, validated: texts, instants, search words, filters.

Every function raises :class:`~pith_graph.errors.BadUserInput` (``BAD_USER_INPUT``) with what
to change when an argument cannot be used.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import strawberry

from pith_graph.api.reads.records import PaperFilter
from pith_graph.api.reads.words import search_terms
from pith_graph.errors import BadUserInput
from pith_graph.loader.identifiers import author_name_key

__all__ = ["MAX_TEXT_LENGTH", "PaperFilterInput", "required_text", "search_words", "to_filter"]

MAX_TEXT_LENGTH = 500
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@strawberry.input(name="PaperFilter", description="Which papers to list; every field given must match.")
class PaperFilterInput:
    category: str | None = strawberry.field(
        default=None, description="Listed in the category with this code (primary or cross-list), e.g. cs.LG."
    )
    archive: str | None = strawberry.field(
        default=None, description="Listed in a category of this archive, e.g. cs."
    )
    author: str | None = strawberry.field(
        default=None, description="By this author (matched by name key: case and spacing ignored)."
    )
    submitted_from: str | None = strawberry.field(
        default=None, description="Submitted at or after this ISO 8601 date or UTC date-time."
    )
    submitted_before: str | None = strawberry.field(
        default=None, description="Submitted before this ISO 8601 date or UTC date-time."
    )
    license: str | None = strawberry.field(default=None, description="Exactly this license URL.")
    title: str | None = strawberry.field(
        default=None, description="Title holds every word of this text (as search does)."
    )


def required_text(value: str, what: str) -> str:
    value = value.strip()
    if not value:
        raise BadUserInput(f"{what} is empty.")
    if len(value) > MAX_TEXT_LENGTH:
        raise BadUserInput(f"{what} is longer than {MAX_TEXT_LENGTH} characters.")
    return value


def _instant(value: str, what: str) -> str:
    """An ISO 8601 date or date-time as the UTC text ``YYYY-MM-DDTHH:MM:SSZ``."""
    text = required_text(value, what)
    try:
        if _DATE.fullmatch(text):
            moment = datetime.fromisoformat(text + "T00:00:00+00:00")
        else:
            moment = datetime.fromisoformat(text)
    except ValueError as err:
        raise BadUserInput(
            f"{what} is not an ISO 8601 date or date-time: {text!r}.",
            "Write e.g. 2020-01-31 or 2020-01-31T12:00:00Z.",
        ) from err
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def search_words(text: str, what: str) -> tuple[str, ...]:
    terms = search_terms(required_text(text, what))
    if not terms:
        raise BadUserInput(f"{what} has no words to search for.")
    return terms


def to_filter(given: PaperFilterInput | None) -> PaperFilter:
    """The reader's filter for the GraphQL input, validated."""
    if given is None:
        return PaperFilter()
    author = None
    if given.author is not None:
        author = author_name_key(required_text(given.author, "filter.author"))
    return PaperFilter(
        category=required_text(given.category, "filter.category") if given.category is not None else None,
        archive=required_text(given.archive, "filter.archive") if given.archive is not None else None,
        author=author,
        submitted_from=_instant(given.submitted_from, "filter.submittedFrom")
        if given.submitted_from is not None
        else None,
        submitted_before=_instant(given.submitted_before, "filter.submittedBefore")
        if given.submitted_before is not None
        else None,
        license=required_text(given.license, "filter.license") if given.license is not None else None,
        title_terms=search_words(given.title, "filter.title") if given.title is not None else (),
    )
