"""The GraphQL schema is a reviewed artefact: the printed SDL must match api/schema.graphql."""

from __future__ import annotations

from pathlib import Path

from pith_graph.api.reads import cypher
from pith_graph.api.reads.records import MAX_PATH_HOPS
from pith_graph.api.schema import build_schema, print_sdl

SDL = Path(__file__).resolve().parents[2] / "api" / "schema.graphql"


def test_printed_sdl_matches_the_checked_in_file() -> None:
    assert print_sdl() == SDL.read_text("utf-8"), (
        "the schema changed: review it, then run  python -m pith_graph.api.schema > api/schema.graphql"
    )


def test_sdl_has_the_fields_frontends_rely_on() -> None:
    sdl = build_schema().as_str()
    for line in (
        "paper(id: String!): Paper",
        "resolve(id: String!): [Paper!]!",
        "papers(filter: PaperFilter = null, first: Int = null, after: String = null): PaperConnection!",
        "search(text: String!, filter: PaperFilter = null, first: Int = null, after: String = null, "
        "orderBy: SearchOrder = RELEVANCE): SearchConnection!",
        "papersById(ids: [String!]!): [Paper]!",
        "authors(prefix: String!, first: Int = 10): [Author!]!",
        "facets(first: Int = 10): Facets!",
        "author(name: String!): Author",
        "category(code: String!): Category",
        "categories: [Category!]!",
        "signer(id: String!): Signer",
        "collaborationPath(from: String!, to: String!, maxHops: Int = null): [PathStep!]",
        "totalCount: Int!",
        "coauthors(first: Int = null): [Coauthor!]!",
        "coListed(first: Int = null): [CategoryCount!]!",
        "topAuthors(first: Int = null): [AuthorCount!]!",
        "verification: Verification!",
        "relatedPapers(first: Int = null): [RelatedPaper!]!",
    ):
        assert line in sdl, line


def test_one_path_statement_per_hop_count() -> None:
    hops = sorted({hops for hops, _counts in cypher.READ_COLLABORATION_PATH})
    assert hops == list(range(1, MAX_PATH_HOPS + 1))
