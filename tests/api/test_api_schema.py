"""The GraphQL schema is a reviewed artefact: the printed SDL must match api/schema.graphql."""

from __future__ import annotations

from pathlib import Path

from graphql import GraphQLObjectType
from graphql.utilities.print_schema import print_input_value

from pith_graph.api.reads import cypher
from pith_graph.api.reads.records import MAX_PATH_HOPS
from pith_graph.api.schema import build_schema, print_sdl

SDL = Path(__file__).resolve().parents[2] / "api" / "schema.graphql"


def test_printed_sdl_matches_the_checked_in_file() -> None:
    assert print_sdl() == SDL.read_text("utf-8"), (
        "the schema changed: review it, then run  python -m pith_graph.api.schema > api/schema.graphql"
    )


def _signatures() -> set[str]:
    """Each object field as the SDL declares it, without descriptions (which, once an
    argument has one, put each argument on a line of its own)."""
    found: set[str] = set()
    for kind in build_schema()._schema.type_map.values():
        if isinstance(kind, GraphQLObjectType):
            for name, field in kind.fields.items():
                args = ", ".join(print_input_value(arg, value) for arg, value in field.args.items())
                found.add(f"{name}({args}): {field.type}" if args else f"{name}: {field.type}")
    return found


def test_sdl_has_the_fields_frontends_rely_on() -> None:
    sdl = _signatures()
    for line in (
        "paper(id: String!): Paper",
        "resolve(id: String!): [Paper!]!",
        "papers(filter: PaperFilter = null, first: Int = null, after: String = null, "
        "orderBy: PaperOrder = NEWEST, last: Int = null, before: String = null): PaperConnection!",
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
        "coauthors(first: Int = null, after: String = null): [Coauthor!]!",
        "coListed(first: Int = null, after: String = null): [CategoryCount!]!",
        "topAuthors(first: Int = null, after: String = null): [AuthorCount!]!",
        "verification: Verification!",
        "relatedPapers(first: Int = null, after: String = null): [RelatedPaper!]!",
        # An author's and a category's papers, and a signer's (since 0.9.3: orderBy; since
        # 0.9.4: last, before).
        "papers(first: Int = null, after: String = null, orderBy: PaperOrder = NEWEST, "
        "last: Int = null, before: String = null): PaperConnection!",
        "papers(first: Int = null, after: String = null, signedBundle: Boolean = null, "
        "orderBy: PaperOrder = NEWEST, last: Int = null, before: String = null): PaperConnection!",
    ):
        assert line in sdl, line


def test_one_path_statement_per_hop_count() -> None:
    hops = sorted({hops for hops, _counts in cypher.READ_COLLABORATION_PATH})
    assert hops == list(range(1, MAX_PATH_HOPS + 1))
