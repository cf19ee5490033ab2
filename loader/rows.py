"""Build the graph rows of one verified bundle: plain data, the same for every store.

A :class:`PaperRows` holds the Paper's properties and the rows for its Authors, Categories,
Aliases and Signers (node keys plus edge properties), named as :mod:`pith_graph.schema.graph` names them.
Rows are small and picklable, so worker processes return them instead of whole bundles.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from pith_graph.loader.format import RECORD_CREATED
from pith_graph.loader.identifiers import alias_value, split_authors
from pith_graph.loader.indexable import check_indexable
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.stores.names import folded_words
from pith_graph.loader.verify import VerifiedBundle, newest_snapshot
from pith_graph.schema.graph import PAPER
from pith_graph.schema.rows import AliasRow, AuthorRow, CategoryLinkRow, PaperRow, SignatureRow

__all__ = ["AUTHOR_NAMES", "PaperRows", "build_rows"]

#: The Paper property holding its authors' display forms, in its order.
AUTHOR_NAMES = PAPER.prop("authorNames")


class PaperRows(NamedTuple):
    """Everything one paper contributes to the graph: its node and the rows of its links.

    Each row type is checked against :mod:`pith_graph.schema.graph` (see
    :mod:`pith_graph.schema.rows`); authors are in the paper's order, other lists in key order.
    """

    paper: PaperRow
    authors: tuple[AuthorRow, ...] = ()
    categories: tuple[CategoryLinkRow, ...] = ()
    aliases: tuple[AliasRow, ...] = ()
    signers: tuple[SignatureRow, ...] = ()

    @property
    def pith_number(self) -> str:
        return self.paper.pith_number

    @property
    def built_at(self) -> str:
        return self.paper.built_at

    @property
    def bundle_sha256(self) -> str:
        return self.paper.bundle_sha256

    @property
    def source(self) -> tuple[str, str]:
        """``(sourceKind, sourceId)``: what the precedence rule groups by."""
        return (self.paper.source_kind, self.paper.source_id)

    @property
    def source_version(self) -> int:
        """The version of the source id: rule 2 keeps one paper per version."""
        return self.paper.source_version

    @property
    def bundle_key_id(self) -> str:
        return self.paper.bundle_key_id

    def paper_properties(self) -> dict[str, Any]:
        """The Paper node's properties: the row's and ``authorNames``, the authors' display
        forms in the paper's order, absent when it names none (Neo4j's importer cannot write
        an empty list, so no writer does: schema.graph)."""
        props = self.paper.properties()
        if self.authors:
            props[AUTHOR_NAMES] = [author.name for author in self.authors]
        return props


def _archive(code: str) -> str:
    return code.split(".", 1)[0]


def _signer_rows(bundle: Mapping[str, Any], keyring: Keyring) -> tuple[SignatureRow, ...]:
    """A row per signer of the bundle's events, receipt and bundle signature, each key credited
    to the signer the keyring pins it for (verification checked that events claim that signer).

    The type is the one the keyring pins for the signer, else ``unknown``: never the type its
    events claim, which is an unpinned signer's own word (taken, it made ``Signer.signerType``
    depend on which of its bundles came first). So every row of a signer agrees, in any bundle.
    """
    keys: dict[str, set[str]] = {}
    events: dict[str, set[str]] = {}

    def signer(key_id: str) -> str:
        signer_id = keyring[key_id].signer
        keys.setdefault(signer_id, set()).add(key_id)
        return signer_id

    for event in bundle["events"]:
        events.setdefault(signer(event["signature"]["key_id"]), set()).add(event["event_type"])
        if event["event_type"] == RECORD_CREATED:
            signer(event["payload"]["receipt"]["key_id"])
    bundle_signer = signer(bundle["bundle_signature"]["key_id"])
    return tuple(
        SignatureRow(
            signer_id,
            keyring[min(key_ids)].signer_type or "unknown",  # pinned for all keys of a signer, or none
            tuple(sorted(key_ids)),
            tuple(sorted(events.get(signer_id, ()))),
            signer_id == bundle_signer,
        )
        for signer_id, key_ids in sorted(keys.items())
    )


def build_rows(verified: VerifiedBundle, keyring: Keyring) -> PaperRows:
    """The rows of a verified bundle (the newest graph snapshot gives title and authors).
    Raises ``schema_error`` (:class:`~pith_graph.errors.BundleError`) for rows Neo4j could not
    index (:mod:`~pith_graph.loader.indexable`), so that no store writes them."""
    bundle = verified.bundle
    record = bundle["canonical_record"]
    source = record["source"]
    meta = record["metadata"]
    snapshot = newest_snapshot(bundle)["payload"]["graph_snapshot"]["paper"]
    signers = _signer_rows(bundle, keyring)
    paper = PaperRow(
        pith_number=bundle["pith_number"],
        short_pith_number=bundle["short_pith_number"],
        title=snapshot["title"],
        abstract_excerpt=snapshot["abstract_excerpt"],
        license=meta["license"],
        submitted_at=meta["submitted_at"][:19] + "Z",  # whole seconds: it sorts as text (README)
        submitted_year=int(meta["submitted_at"][:4]),
        primary_category=meta["primary_cat"],
        source_kind=source["kind"],
        source_id=source["id"],
        source_version=source["version"],
        canonical_sha256=bundle["canonical_sha256"],
        bundle_sha256=verified.bundle_sha256,
        state_sha256=bundle["state"]["state_sha256"],
        built_at=bundle["built_at"],
        key_ids=tuple(sorted({key for row in signers for key in row.key_ids})),
        bundle_key_id=bundle["bundle_signature"]["key_id"],
    )
    primary = meta["primary_cat"]
    categories = [CategoryLinkRow(primary, _archive(primary), True)]
    categories += [
        CategoryLinkRow(code, _archive(code), False)
        for code in sorted(set(meta["cross_cats_sorted"]) - {primary})
    ]
    aliases = sorted(  # a DOI in lower case: its spellings are one Alias (identifiers.doi_key)
        {
            AliasRow(alias["alias_kind"], alias_value(alias["alias_kind"], alias["alias_value"]))
            for alias in bundle["source_aliases"]
        }
    )
    rows = PaperRows(
        paper=paper,
        authors=tuple(_author(key, name) for key, name in split_authors(snapshot["authors_text"])),
        categories=tuple(categories),
        aliases=tuple(aliases),
        signers=signers,
    )
    check_indexable(rows)
    return rows


def _author(key: str, name: str) -> AuthorRow:
    return AuthorRow(key, name, folded_words(key))
