"""Every field of the schema as a plan resolves it (see :mod:`pith_graph.api.plan.specs`).

The answers are the resolvers' (:mod:`pith_graph.api.schema`, :mod:`pith_graph.api.types`):
the same reader calls, argument checks (:mod:`pith_graph.api.inputs`, :mod:`pith_graph.api.limits`)
and errors, on which the plan gives way and the resolvers answer (a test runs both on every
field): no message raised here reaches a client, so ``page_size`` needs no ``on=`` here. A field
missing here makes documents that ask for it run on the resolvers only: so far the discovery fields
(``search``, ``papersById``, ``authors``, ``facets``) and ``node``/``nodes``: one read call each.
Paper connections (``papers`` and its pages, edges, cursors) are in :mod:`~pith_graph.api.plan.connections`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from operator import attrgetter, itemgetter
from typing import Any

from pith_graph.api.author_pages import after_key
from pith_graph.api.context import KeyInfo
from pith_graph.api.cost import READ_SIZES, capped, first_default
from pith_graph.api.ids import parse_identifier
from pith_graph.api.inputs import author_key, key_text, named_by_keys
from pith_graph.api.limits import page_size, path_hops
from pith_graph.api.node_ids import NODE_KEYS, id_of
from pith_graph.api.plan.bylines import BYLINE_FIELDS
from pith_graph.api.plan.connections import CONNECTION_FIELDS, page_of, papers
from pith_graph.api.plan.specs import Resolve, Spec, Step, load, value
from pith_graph.api.rank_pages import after_code, after_pith_number, categories_after, coauthor_after
from pith_graph.api.reads.records import CategoryRecord
from pith_graph.errors import NotFound
from pith_graph.schema.rows import PaperRow

__all__ = ["FIELDS", "Verification"]

_VERIFIED = ("bundleSha256", "stateSha256", "canonicalSha256", "builtAt", "keyIds", "bundleKeyId")


@dataclass(frozen=True, slots=True)
class Verification:
    paper: PaperRow
    keys: Mapping[str, KeyInfo]


# -- Query ----------------------------------------------------------------------------------


def _named(step: Step, sources: list[Any]) -> Callable[[], list[PaperRow]]:
    parsed = parse_identifier(step.args["id"])
    keys = parsed.keys if parsed is not None else ()
    found = step.batch.keyed("papers_by_identifiers", (step.want, step.context.ranks), keys)
    rank = step.context.rank

    def named() -> list[PaperRow]:
        answer = found()
        return named_by_keys([answer[key] for key in keys], rank)

    return named


def _paper(step: Step, sources: list[Any]) -> Callable[[], list[Any]]:
    named = _named(step, sources)
    return lambda: [next(iter(named()), None)]


def _resolve(step: Step, sources: list[Any]) -> Callable[[], list[Any]]:
    named = _named(step, sources)
    return lambda: [capped("Query.resolve", named())]


def _by_key(method: str, key: Callable[[dict[str, Any]], str]) -> Callable[..., Any]:
    """A root lookup of one record by the key its arguments give (``None`` when unknown)."""

    def resolve(step: Step, sources: list[Any]) -> Callable[[], list[Any]]:
        wanted = key(step.args)
        found = step.batch.keyed(method, (step.hint.counts,), [wanted])
        return lambda: [found().get(wanted)]

    return resolve


def _categories(step: Step, sources: list[Any]) -> Callable[[], list[Any]]:
    found = step.batch.call("all_categories", step.hint.counts)
    return lambda: [capped("Query.categories", found())]


def _path(step: Step, sources: list[Any]) -> Callable[[], list[Any]]:
    args = step.args
    hops = path_hops(args.get("maxHops"), step.context.limits)
    names = (args["from"], args["to"])
    keys = [author_key(names[0], "from"), author_key(names[1], "to")]
    known = step.batch.keyed("authors_by_keys", (False,), keys)
    path = step.batch.call("collaboration_path", keys[0], keys[1], hops, step.want, step.hint.counts)

    def found() -> list[Any]:
        for name, key in zip(names, keys, strict=True):
            if key not in known():
                raise NotFound(
                    f"No author is named {name.strip()!r}.", "Look the name up with author(name:)."
                )
        return [path()]

    return found


# -- relations of papers, authors, categories, signers ----------------------------------------


_AFTERS: dict[str, Callable[[str | None], str | None]] = {
    "after_name": coauthor_after,
    "after_pith": after_pith_number,
    "after_code": after_code,
}


def _of(method: str, pick: Callable[[Any], Any], key: str, *extra: str) -> Callable[..., Any]:
    """A field answered by ``reader.<method>(keys of the sources, *extra)`` then ``pick``:
    ``"first"`` the field's page size, ``"size"`` the most of each source's list the method
    reads (:data:`~pith_graph.api.cost.READ_SIZES`: one read of a paper's categories serves
    its categories and its primary one, of its signatures its signers and its verification's
    signatures), ``"want"`` the step's selection, ``"counts"`` whether counts are shown,
    ``"after_name"``/``"after_pith"`` a ranked list's ``after`` (:mod:`~pith_graph.api.rank_pages`)."""

    def resolve(step: Step, sources: list[Any]) -> Callable[[], list[Any]]:
        arguments: list[Any] = []
        for name in extra:
            if name == "size":
                arguments.append(READ_SIZES[method])
            elif name == "first":
                arguments.append(page_size(step.args.get("first"), step.context.limits))
            elif name in _AFTERS:
                arguments.append(_AFTERS[name](step.args.get("after")))
            else:
                arguments.append(step.want if name == "want" else step.hint.counts)
        keys = [getattr(source, key) for source in sources]
        found = step.batch.keyed(method, tuple(arguments), keys)
        return lambda: [pick(found()[k]) for k in keys]

    return resolve


def _categories_after(resolve: Resolve) -> Resolve:
    """``Author.categories`` after the category ``after`` (see :mod:`~pith_graph.api.rank_pages`)."""

    def after(step: Step, sources: list[Any]) -> Callable[[], list[Any]]:
        code = after_code(step.args.get("after"))
        found = resolve(step, sources)
        return lambda: [categories_after(items, code) for items in found()]

    return after


def _first(resolve: Resolve, key: str) -> Resolve:
    """A list field with ``first`` whose reader call answers whole lists: each cut to ``first``
    (default: :func:`~pith_graph.api.cost.first_default`, else the default page size)."""

    def first(step: Step, sources: list[Any]) -> Callable[[], list[Any]]:
        limits = step.context.limits
        size = page_size(step.args.get("first"), limits, first_default(key, limits))
        found = resolve(step, sources)
        return lambda: [items[:size] for items in found()]

    return first


def _authors(step: Step, sources: list[PaperRow]) -> Callable[[], list[Any]]:
    """A page of each paper's authors: the first ``first`` after ``after`` (see
    :mod:`pith_graph.api.author_pages`), one read for the level (none without ``after``
    when a listing fetched them ahead)."""
    limits = step.context.limits
    size = page_size(step.args.get("first"), limits, first_default("Paper.authors", limits))
    given = step.args.get("after")
    after = None if given is None else after_key(given)
    keys = [paper.pith_number for paper in sources]
    found = step.batch.keyed("author_pages", (size, after, step.hint.counts), keys)
    return lambda: [list(found()[k].authors) for k in keys]


def _author_count(step: Step, sources: list[PaperRow]) -> Callable[[], list[Any]]:
    """How many authors each paper has (a page of none, uncounted: a listing that fetched
    authors ahead, counted or not, answers it)."""
    keys = [paper.pith_number for paper in sources]
    found = step.batch.keyed("author_pages", (0, None, False), keys)
    return lambda: [found()[k].total for k in keys]


def _primary(step: Step, sources: list[Any]) -> Callable[[], list[Any]]:
    links = _of("categories_of_papers", lambda found: found, "pith_number", "size", "counts")(step, sources)

    def primary() -> list[Any]:
        chosen = []
        for paper, found in zip(sources, links(), strict=True):
            link = next((link for link in found if link.primary), None)
            code = paper.primary_category
            fallback = CategoryRecord(code, code.split(".", 1)[0], 0 if step.hint.counts else None)
            chosen.append(link.category if link is not None else fallback)
        return chosen

    return primary


def _verification(step: Step, sources: list[PaperRow]) -> Callable[[], list[Any]]:
    keys = step.context.keys
    found = [Verification(paper, keys) for paper in sources]
    return lambda: found


def _trusted(verification: Verification) -> list[dict[str, Any]]:
    keys = verification.keys
    return [
        {
            "keyId": k,
            "fingerprint": keys[k].fingerprint if k in keys else None,
            "signerId": keys[k].signer_id if k in keys else None,
        }
        for k in capped("Verification.keys", verification.paper.key_ids)
    ]


_attribute, _entry, _LIST = attrgetter, itemgetter, list
FIELDS: dict[tuple[str, str], Spec] = {
    **{(kind, "id"): value(id_of(kind), *(["pithNumber"] if kind == "Paper" else [])) for kind in NODE_KEYS},
    **BYLINE_FIELDS,
    ("Query", "paper"): load(_paper, embeds=True),
    ("Query", "resolve"): load(_resolve, embeds=True),
    ("Query", "papers"): load(papers, embeds=True),
    ("Query", "author"): load(_by_key("authors_by_keys", lambda args: author_key(args["name"], "name"))),
    ("Query", "category"): load(_by_key("categories_by_codes", lambda args: key_text(args["code"], "code"))),
    ("Query", "categories"): load(_categories),
    ("Query", "signer"): load(_by_key("signers_by_ids", lambda args: key_text(args["id"], "id"))),
    ("Query", "collaborationPath"): load(_path),
    # Paper (a PaperRow)
    **{
        ("Paper", name): value(_attribute(attribute), name)
        for name, attribute in (
            ("pithNumber", "pith_number"),
            ("shortPithNumber", "short_pith_number"),
            ("title", "title"),
            ("abstractExcerpt", "abstract_excerpt"),
            ("license", "license"),
            ("submittedAt", "submitted_at"),
            ("sourceKind", "source_kind"),
            ("sourceId", "source_id"),
            ("sourceVersion", "source_version"),
            ("isLatest", "is_latest"),  # since 0.9.4
        )
    },
    ("Paper", "primaryCategory"): load(_primary, "primaryCategory"),
    ("Paper", "categories"): load(
        _of(
            "categories_of_papers",
            lambda links: [link.category for link in capped("Paper.categories", links)],
            "pith_number",
            "size",
            "counts",
        )
    ),
    ("Paper", "authors"): load(_authors),
    ("Paper", "authorCount"): load(_author_count),
    ("Paper", "authorNames"): load(
        _of("author_names_of_papers", partial(capped, "Paper.authorNames"), "pith_number", "size")
    ),
    ("Paper", "aliases"): load(
        _of("aliases_of_papers", partial(capped, "Paper.aliases"), "pith_number", "size")
    ),
    ("Paper", "signers"): load(
        _of(
            "signatures_of_papers",
            lambda found: [s.signer for s in capped("Paper.signers", found)],
            "pith_number",
            "size",
            "counts",
        )
    ),
    ("Paper", "versions"): load(
        _of("versions_of_papers", partial(capped, "Paper.versions"), "pith_number", "size", "want"),
        embeds=True,
    ),
    ("Paper", "relatedPapers"): load(
        _of("related_papers", _LIST, "pith_number", "first", "want", "after_pith"), embeds=True
    ),
    ("Paper", "verification"): Spec(_verification, frozenset(_VERIFIED)),
    ("Verification", "bundleSha256"): value(lambda v: v.paper.bundle_sha256),
    ("Verification", "stateSha256"): value(lambda v: v.paper.state_sha256),
    ("Verification", "canonicalSha256"): value(lambda v: v.paper.canonical_sha256),
    ("Verification", "builtAt"): value(lambda v: v.paper.built_at),
    ("Verification", "keyIds"): value(lambda v: list(v.paper.key_ids)),
    ("Verification", "bundleKeyId"): value(lambda v: v.paper.bundle_key_id),
    ("Verification", "rank"): value(
        lambda v: v.keys[v.paper.bundle_key_id].rank if v.paper.bundle_key_id in v.keys else None
    ),
    ("Verification", "fingerprints"): value(
        lambda v: [v.keys[k].fingerprint for k in v.paper.key_ids if k in v.keys]
    ),
    ("Verification", "keys"): value(_trusted),
    ("Verification", "signatures"): load(
        lambda step, sources: _of(
            "signatures_of_papers",
            partial(capped, "Verification.signatures"),
            "pith_number",
            "size",
            "counts",
        )(step, [v.paper for v in sources])
    ),
    ("TrustedKey", "keyId"): value(_entry("keyId")),
    ("TrustedKey", "fingerprint"): value(_entry("fingerprint")),
    ("TrustedKey", "signerId"): value(_entry("signerId")),
    ("Signature", "signer"): value(_attribute("signer")),
    ("Signature", "keyIds"): value(lambda s: list(s.key_ids)),
    ("Signature", "eventTypes"): value(lambda s: list(s.event_types)),
    ("Signature", "signedBundle"): value(_attribute("signed_bundle")),
    ("Alias", "kind"): value(_attribute("kind")),
    ("Alias", "value"): value(_attribute("value")),
    # Author (an AuthorRecord)
    ("Author", "name"): value(_attribute("name")),
    ("Author", "nameKey"): value(_attribute("name_key")),
    ("Author", "paperCount"): value(_attribute("paper_count"), counts=True),
    ("Author", "papers"): load(page_of("papers_of_authors", "name_key"), embeds=True),
    ("Author", "nameForms"): load(
        _of("name_forms_of_authors", partial(capped, "Author.nameForms"), "name_key", "size")
    ),
    ("NameForm", "name"): value(_attribute("name")),
    ("NameForm", "paperCount"): value(_attribute("paper_count")),
    ("Author", "coauthors"): load(_of("coauthors", _LIST, "name_key", "first", "counts", "after_name")),
    ("Author", "categories"): load(
        _first(_categories_after(_of("author_categories", _LIST, "name_key", "counts")), "Author.categories")
    ),
    ("Coauthor", "author"): value(_attribute("author")),
    ("Coauthor", "sharedPapers"): value(_attribute("shared_papers")),
    ("AuthorCount", "author"): value(_attribute("author")),
    ("AuthorCount", "count"): value(_attribute("count")),
    ("CategoryCount", "category"): value(_attribute("category")),
    ("CategoryCount", "count"): value(_attribute("count")),
    # Category (a CategoryRecord)
    ("Category", "code"): value(_attribute("code")),
    ("Category", "archive"): value(_attribute("archive")),
    ("Category", "paperCount"): value(_attribute("paper_count"), counts=True),
    ("Category", "papers"): load(page_of("papers_of_categories", "code"), embeds=True),
    ("Category", "topAuthors"): load(_of("top_authors", _LIST, "code", "first", "counts", "after_name")),
    ("Category", "coListed"): load(_of("co_listed", _LIST, "code", "first", "counts", "after_code")),
    # Signer (a SignerRecord)
    ("Signer", "signerId"): value(_attribute("signer_id")),
    ("Signer", "signerType"): value(_attribute("signer_type")),
    ("Signer", "keyIds"): value(lambda s: list(s.key_ids)),
    ("Signer", "paperCount"): value(_attribute("paper_count"), counts=True),
    ("Signer", "papers"): load(page_of("papers_of_signers", "signer_id", bundled=True), embeds=True),
    **CONNECTION_FIELDS,
    ("RelatedPaper", "paper"): value(_attribute("paper")),
    ("RelatedPaper", "sharedAuthors"): value(_attribute("shared_authors")),
    ("PathStep", "from"): value(_attribute("source")),
    ("PathStep", "paper"): value(_attribute("paper")),
    ("PathStep", "to"): value(_attribute("target")),
}
