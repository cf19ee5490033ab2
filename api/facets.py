"""Facets: how a whole listing's papers spread over years, categories, archives, licenses, authors.

``facets(first:)`` on a connection hands out a :class:`Facets` object; nothing is counted
until a facet field is asked for, and the facets asked for together are one reader call (one
Cypher statement on Neo4j, which finds the listing's papers once for all of them).
"""

from __future__ import annotations

import strawberry
from strawberry.dataloader import DataLoader

from pith_graph.api.context import Context
from pith_graph.api.fields import resolver
from pith_graph.api.limits import page_size
from pith_graph.api.reads.discovery import Facet, FacetCount, Listing

__all__ = ["FACETS_FIRST", "FacetValue", "Facets", "facets_of"]

#: Values per facet when ``first`` is not given.
FACETS_FIRST = 10
FACETS_DOC = (
    "Counts over the whole listing (not only this page), per facet: the `first` most frequent "
    "values (default 10), most papers first, then by value. Counted only for the facets asked for."
)


@strawberry.type(description="A value of a facet and how many papers of the listing have it.")
class FacetValue:
    value: str = strawberry.field(description="The value, e.g. 2019 or cs.LG.")
    count: int = strawberry.field(description="How many papers of the listing have it.")


@strawberry.type(description=FACETS_DOC)
class Facets:
    listing: strawberry.Private[Listing]
    first: strawberry.Private[int]
    loader: strawberry.Private[DataLoader[Facet, list[FacetCount]] | None] = None

    async def _counts(self, info: strawberry.Info[Context, None], facet: Facet) -> list[FacetValue]:
        if self.loader is None:  # sibling facet fields resolve together: one batch
            self.loader = info.context.facets(self.listing, self.first)
        return [FacetValue(value=c.value, count=c.count) for c in await self.loader.load(facet)]

    @resolver("Years of submission, e.g. 2019.")
    async def years(self, info: strawberry.Info[Context, None]) -> list[FacetValue]:
        return await self._counts(info, "years")

    @resolver("Category codes (primary or cross-list), e.g. cs.LG.")
    async def categories(self, info: strawberry.Info[Context, None]) -> list[FacetValue]:
        return await self._counts(info, "categories")

    @resolver("Archives of the categories, e.g. cs; a paper counts once per archive.")
    async def archives(self, info: strawberry.Info[Context, None]) -> list[FacetValue]:
        return await self._counts(info, "archives")

    @resolver("License URLs.")
    async def licenses(self, info: strawberry.Info[Context, None]) -> list[FacetValue]:
        return await self._counts(info, "licenses")

    @resolver("Authors by display name (filter on one with filter.author).")
    async def authors(self, info: strawberry.Info[Context, None]) -> list[FacetValue]:
        return await self._counts(info, "authors")


def facets_of(listing: Listing, first: int | None, context: Context) -> Facets:
    """The facets of ``listing``, ``first`` values each (checked like a page size)."""
    return Facets(listing=listing, first=page_size(first, context.limits, FACETS_FIRST))
