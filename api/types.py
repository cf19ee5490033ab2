"""The GraphQL object types, each built from a reader record by ``from_record``.

Scalar fields are copied from the record; relations are resolvers that go through the
request's DataLoaders (:mod:`pith_graph.api.context`), so sibling objects share one reader call.
"""

from __future__ import annotations

from typing import Annotated

import strawberry

from pith_graph.api.author_pages import AUTHORS_ON, after_key
from pith_graph.api.bylines import BYLINE, Byline, byline_of
from pith_graph.api.connection import OrderBy, Owned, PaperConnection, PaperOrder, known_count, owned_papers
from pith_graph.api.cost import LIST_SIZES, capped, first_default
from pith_graph.api.fields import After, Before, First, GraphInfo, Last, argument, counted, resolver
from pith_graph.api.limits import page_size
from pith_graph.api.node_ids import Node
from pith_graph.api.plain_types import Alias, NameForm, TrustedKey
from pith_graph.api.rank_pages import (
    AfterCode,
    AfterKey,
    AfterPith,
    after_code,
    after_pith_number,
    categories_after,
    coauthor_after,
)
from pith_graph.api.reads.discovery import Listing
from pith_graph.api.reads.records import AuthorRecord, CategoryRecord, PaperFilter
from pith_graph.api.signer_types import Signature, Signer, Verification
from pith_graph.schema.rows import PaperRow

__all__ = [
    "Alias",
    "Author",
    "AuthorCount",
    "Category",
    "CategoryCount",
    "Coauthor",
    "GraphInfo",
    "Paper",
    "PathStep",
    "RelatedPaper",
    "Signature",
    "Signer",
    "TrustedKey",
    "Verification",
]

_AUTHORS_FIRST = "How many authors: null or left out is the page cap (100 unless the server says otherwise), also the most."
_AUTHORS_AFTER = "The nameKey of the last author you have: the page starts after it; null: from the first."


@strawberry.type(description="One arXiv version of a paper, as recorded by a verified bundle.")
class Paper(Node):
    pith_number: str = strawberry.field(description="Full pith number, pith:YYYY:<26 base32 characters>.")
    short_pith_number: str = strawberry.field(description="pith:<first 8 base32 characters>.")
    title: str = strawberry.field(description="The title (from the bundle's newest graph snapshot).")
    abstract_excerpt: str = strawberry.field(description="The abstract's excerpt (from the same snapshot).")
    license: str = strawberry.field(description="License URL.")
    submitted_at: str = strawberry.field(description="Submission time, ISO 8601 UTC.")
    source_kind: str = strawberry.field(description="Source registry, e.g. arxiv.")
    source_id: str = strawberry.field(description="Source identifier without version, e.g. 1907.13257.")
    source_version: int = strawberry.field(description="Source version number (arXiv vN).")
    is_latest: bool = strawberry.field(
        description="Whether this is the newest version of its arXiv id in the graph (greatest"
        " sourceVersion, then builtAt, then pithNumber: the paper paper(id:) answers for the id"
        " without a version): exactly the papers latestVersions: true lists (since 0.9.4)."
    )
    record: strawberry.Private[PaperRow]

    @classmethod
    def from_record(cls, record: PaperRow) -> Paper:
        return cls(
            pith_number=record.pith_number,
            short_pith_number=record.short_pith_number,
            title=record.title,
            abstract_excerpt=record.abstract_excerpt,
            license=record.license,
            submitted_at=record.submitted_at,
            source_kind=record.source_kind,
            source_id=record.source_id,
            source_version=record.source_version,
            is_latest=record.is_latest,
            record=record,
        )

    @resolver("The primary arXiv category.")
    async def primary_category(self, info: GraphInfo) -> Category:
        for link in await info.context.categories_of.load(self.pith_number):
            if link.primary:
                return Category.from_record(link.category)
        code = self.record.primary_category
        return Category.from_record(CategoryRecord(code, code.split(".", 1)[0], 0))

    @resolver(
        "Every category the paper is listed in, primary first, then by code "
        f"(at most {LIST_SIZES['Paper.categories']})."
    )
    async def categories(self, info: GraphInfo) -> list[Category]:
        links = await info.context.categories_of.load(self.pith_number)
        return [Category.from_record(link.category) for link in capped("Paper.categories", links)]

    @resolver(
        "The authors by name, then name key: the first `first` (default and at most the page "
        "cap, 100 unless the server says otherwise) after the author whose nameKey is `after` "
        "(page on with the last nameKey you have; one that is no author of this paper is still a "
        "position: where that author, or one named as the key, would stand); authorCount tells "
        "how many there are."
    )
    async def authors(
        self,
        info: GraphInfo,
        first: Annotated[int | None, argument(_AUTHORS_FIRST)] = None,
        after: Annotated[str | None, argument(_AUTHORS_AFTER)] = None,
    ) -> list[Author]:
        limits = info.context.limits
        size = page_size(first, limits, first_default("Paper.authors", limits), AUTHORS_ON)
        key = None if after is None else after_key(after)
        found = await info.context.author_pages(size, key).load(self.pith_number)
        return [Author.from_record(a) for a in found.authors]

    @resolver(
        "The authors as the paper lists them, in its order, each spelt as this paper spells it"
        f" (the first {LIST_SIZES['Paper.authorNames']}; authors pages through them all, by name)."
    )
    async def author_names(self, info: GraphInfo) -> list[str]:
        return capped("Paper.authorNames", await info.context.author_names_of.load(self.pith_number))

    byline: list[Byline] = strawberry.field(resolver=byline_of, description=BYLINE)

    @resolver("How many authors the paper has (a page of authors may list fewer).")
    async def author_count(self, info: GraphInfo) -> int:
        return (await info.context.author_pages(0, None).load(self.pith_number)).total

    @resolver(f"Every identifier of the paper, by kind and value (at most {LIST_SIZES['Paper.aliases']}).")
    async def aliases(self, info: GraphInfo) -> list[Alias]:
        found = await info.context.aliases_of.load(self.pith_number)
        return [Alias.from_record(a) for a in capped("Paper.aliases", found)]

    @resolver(f"Who signed the paper's events or bundle, by id (at most {LIST_SIZES['Paper.signers']}).")
    async def signers(self, info: GraphInfo) -> list[Signer]:
        found = await info.context.signatures_of.load(self.pith_number)
        return [Signer.from_record(record.signer) for record in capped("Paper.signers", found)]

    @resolver(
        f"The other arXiv versions of the paper, oldest first (the first {LIST_SIZES['Paper.versions']})."
    )
    async def versions(self, info: GraphInfo) -> list[Paper]:
        found = await info.context.versions_of.load(self.pith_number)
        return [Paper.from_record(p) for p in capped("Paper.versions", found)]

    @resolver(
        "Other papers (not versions of this one) ranked by how many authors they share, then newest first."
    )
    async def related_papers(
        self, info: GraphInfo, first: First = None, after: AfterPith = None
    ) -> list[RelatedPaper]:
        size = page_size(first, info.context.limits)
        found = await info.context.ranked("related_papers", size, after_pith_number(after)).load(
            self.pith_number
        )
        return [
            RelatedPaper(paper=Paper.from_record(r.paper), shared_authors=r.shared_authors) for r in found
        ]

    @resolver("The verified bundle behind this record and the keys that signed it.")
    def verification(self, info: GraphInfo) -> Verification:
        keys = info.context.keys
        record = self.record
        return Verification(
            bundle_sha256=record.bundle_sha256,
            state_sha256=record.state_sha256,
            canonical_sha256=record.canonical_sha256,
            built_at=record.built_at,
            key_ids=list(record.key_ids),
            bundle_key_id=record.bundle_key_id,
            rank=keys[record.bundle_key_id].rank if record.bundle_key_id in keys else None,
            fingerprints=[keys[k].fingerprint for k in record.key_ids if k in keys],
            keys=[
                TrustedKey(
                    key_id=k,
                    fingerprint=keys[k].fingerprint if k in keys else None,
                    signer_id=keys[k].signer_id if k in keys else None,
                )
                for k in capped("Verification.keys", record.key_ids)
            ],
            pith_number=record.pith_number,
        )


@strawberry.type(description="A paper sharing authors with another one.")
class RelatedPaper:
    paper: Paper = strawberry.field(description="The other paper.")
    shared_authors: int = strawberry.field(description="How many authors the two papers share.")


async def _owned_papers(
    root: Author | Category,
    info: GraphInfo,
    first: First = None,
    after: After = None,
    order_by: OrderBy = PaperOrder.NEWEST,
    last: Last = None,
    before: Before = None,
) -> PaperConnection:
    """``papers`` of an author or a category: a page of ``Query.papers(filter: {author:})``'s
    (``{category:}``'s) listing, read with the level's other owners."""
    if isinstance(root, Author):
        owned, where = Owned("papers_of_authors", root.name_key), PaperFilter(author=root.name_key)
    else:
        owned, where = Owned("papers_of_categories", root.code), PaperFilter(category=root.code)
    count = known_count(root.paper_count)
    pages = (first, after, last, before)
    return await owned_papers(info.context, owned, count, Listing(where), order_by, pages)


@strawberry.type(description="A person named on papers, identified by a normalised name key.")
class Author(Node):
    name: str = strawberry.field(
        description="Display form of the name: the smallest (by code point) of its papers' spellings"
        " of it (Paper.authorNames holds each paper's own)."
    )
    name_key: str = strawberry.field(description="The identity: NFKC, case-folded, whitespace collapsed.")
    paper_count: int = strawberry.field(description="How many papers name the author.")

    @classmethod
    def from_record(cls, record: AuthorRecord) -> Author:
        return cls(name=record.name, name_key=record.name_key, paper_count=counted(record.paper_count))

    @resolver(
        "How its papers spell it, smallest first, with how many papers use each (the first "
        f"{LIST_SIZES['Author.nameForms']}); one, name and paperCount, when they all agree."
    )
    async def name_forms(self, info: GraphInfo) -> list[NameForm]:
        found = await info.context.name_forms_of.load(self.name_key)
        return [NameForm(name=f.name, paper_count=f.paper_count) for f in capped("Author.nameForms", found)]

    papers: PaperConnection = strawberry.field(
        resolver=_owned_papers,
        description="The author's papers, newest first (or oldest first: orderBy: OLDEST, since "
        "0.9.3); last and before page back (since 0.9.4).",
    )

    @resolver("People who share papers with the author: most shared first, then by name key.")
    async def coauthors(self, info: GraphInfo, first: First = None, after: AfterKey = None) -> list[Coauthor]:
        size = page_size(first, info.context.limits)
        found = await info.context.ranked("coauthors", size, coauthor_after(after)).load(self.name_key)
        return [Coauthor(author=Author.from_record(c.author), shared_papers=c.shared_papers) for c in found]

    @resolver("The categories of the author's papers with how many: most first, then by code.")
    async def categories(
        self, info: GraphInfo, first: First = None, after: AfterCode = None
    ) -> list[CategoryCount]:
        size = page_size(first, info.context.limits)
        found = categories_after(await info.context.author_categories.load(self.name_key), after_code(after))
        return [CategoryCount(category=Category.from_record(c.category), count=c.count) for c in found[:size]]


@strawberry.type(description="A coauthor and how many papers the two share.")
class Coauthor:
    author: Author = strawberry.field(description="The coauthor.")
    shared_papers: int = strawberry.field(description="How many papers the two share.")


@strawberry.type(description="An author and how many papers they have somewhere.")
class AuthorCount:
    author: Author = strawberry.field(description="The author.")
    count: int = strawberry.field(description="How many of the papers counted name the author.")


@strawberry.type(description="A category and how many papers it has somewhere.")
class CategoryCount:
    category: Category = strawberry.field(description="The category.")
    count: int = strawberry.field(description="How many of the papers counted are listed in it.")


@strawberry.type(description="An arXiv category.")
class Category(Node):
    code: str = strawberry.field(description="e.g. cs.LG")
    archive: str = strawberry.field(description="The archive part of the code, e.g. cs")
    paper_count: int = strawberry.field(description="Papers listed in the category (primary or cross-list).")

    @classmethod
    def from_record(cls, record: CategoryRecord) -> Category:
        return cls(code=record.code, archive=record.archive, paper_count=counted(record.paper_count))

    papers: PaperConnection = strawberry.field(
        resolver=_owned_papers,
        description="Papers listed in the category, newest first (or oldest first: orderBy: OLDEST, "
        "since 0.9.3); last and before page back (since 0.9.4).",
    )

    @resolver("Authors with the most papers in the category, then by name key.")
    async def top_authors(
        self, info: GraphInfo, first: First = None, after: AfterKey = None
    ) -> list[AuthorCount]:
        size = page_size(first, info.context.limits)
        found = await info.context.ranked("top_authors", size, coauthor_after(after)).load(self.code)
        return [AuthorCount(author=Author.from_record(a.author), count=a.count) for a in found]

    @resolver("Other categories this category's papers are listed in, with how many papers.")
    async def co_listed(
        self, info: GraphInfo, first: First = None, after: AfterCode = None
    ) -> list[CategoryCount]:
        size = page_size(first, info.context.limits)
        found = await info.context.ranked("co_listed", size, after_code(after)).load(self.code)
        return [CategoryCount(category=Category.from_record(c.category), count=c.count) for c in found]


@strawberry.type(description="One hop of a collaboration path: two authors named on one paper.")
class PathStep:
    source: Author = strawberry.field(name="from", description="The author this hop starts from.")
    paper: Paper = strawberry.field(description="A paper naming both.")
    target: Author = strawberry.field(name="to", description="The author this hop reaches.")
