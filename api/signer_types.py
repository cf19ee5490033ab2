"""The GraphQL object types of signing: who signed (:class:`Signer`, and its papers), which
events of a paper with which keys (:class:`Signature`), and why a paper's record is trusted
(:class:`Verification`). Re-exported by :mod:`pith_graph.api.types`."""

from __future__ import annotations

from typing import Annotated

import strawberry

from pith_graph.api.connection import OrderBy, Owned, PaperConnection, PaperOrder, known_count, owned_papers
from pith_graph.api.cost import LIST_SIZES, capped
from pith_graph.api.fields import After, Before, First, GraphInfo, Last, argument, counted, resolver
from pith_graph.api.node_ids import Node
from pith_graph.api.plain_types import TrustedKey
from pith_graph.api.reads.discovery import Listing
from pith_graph.api.reads.records import SignatureRecord, SignerRecord

__all__ = ["Signature", "Signer", "Verification"]

_SIGNED_BUNDLE = "true: bundles it signed; false: events it signed in another's bundle; null: every paper."


@strawberry.type(description="A SIGNED edge: who signed which events of a paper, with which keys.")
class Signature:
    signer: Signer = strawberry.field(description="Who signed.")
    key_ids: list[str] = strawberry.field(description="The keys it signed with, sorted.")
    event_types: list[str] = strawberry.field(description="The types of the events it signed ([] for none).")
    signed_bundle: bool = strawberry.field(description="True when this signer signed the bundle itself.")

    @classmethod
    def from_record(cls, record: SignatureRecord) -> Signature:
        return cls(
            signer=Signer.from_record(record.signer),
            key_ids=list(record.key_ids),
            event_types=list(record.event_types),
            signed_bundle=record.signed_bundle,
        )


@strawberry.type(description="Why a paper's record is trusted: the verified bundle and its keys.")
class Verification:
    bundle_sha256: str = strawberry.field(description="SHA-256 of the verified bundle.")
    state_sha256: str = strawberry.field(description="SHA-256 of the bundle's state (without this digest).")
    canonical_sha256: str = strawberry.field(description="SHA-256 of the canonical record.")
    built_at: str = strawberry.field(description="When the bundle was built (the newest bundle wins).")
    key_ids: list[str] = strawberry.field(description="Every key that signed the bundle, sorted.")
    bundle_key_id: str = strawberry.field(
        description="The key that signed the bundle itself: its signer's rank decides conflicts."
    )
    rank: int | None = strawberry.field(
        description="The precedence of that key's signer in this server's keyring (0 is the "
        "highest: the registry); null when this server does not pin the key."
    )
    fingerprints: list[str] = strawberry.field(
        description="The fingerprints of keyIds, in the same order, for the keys this server pins."
    )
    keys: list[TrustedKey] = strawberry.field(
        description=f"The keys of keyIds as this server pins them (the first {LIST_SIZES['Verification.keys']})."
    )
    pith_number: strawberry.Private[str]

    @resolver(f"Who signed the paper's events and bundle (at most {LIST_SIZES['Verification.signatures']}).")
    async def signatures(self, info: GraphInfo) -> list[Signature]:
        found = await info.context.signatures_of.load(self.pith_number)
        return [Signature.from_record(record) for record in capped("Verification.signatures", found)]


@strawberry.type(description="Whoever signed events or bundles.")
class Signer(Node):
    signer_id: str = strawberry.field(description="e.g. pith.science")
    signer_type: str = strawberry.field(description="e.g. pith_registry")
    key_ids: list[str] = strawberry.field(
        description="Keys this signer used on the papers it signed, sorted."
    )
    paper_count: int = strawberry.field(description="How many papers it signed the bundle or an event of.")

    @classmethod
    def from_record(cls, record: SignerRecord) -> Signer:
        return cls(
            signer_id=record.signer_id,
            signer_type=record.signer_type,
            key_ids=list(record.key_ids),
            paper_count=counted(record.paper_count),
        )

    @resolver(
        "Papers with a bundle or an event the signer signed, newest first (or oldest first: orderBy: "
        "OLDEST, since 0.9.3; paperCount counts them); last and before page back (since 0.9.4). "
        "An event copied into another signer's bundle counts too: signedBundle true lists only the "
        "papers whose bundle it signed (what it published), false only those it signed events of "
        "in another signer's bundle (counted when asked for: a scan of the signer's papers)."
    )
    async def papers(
        self,
        info: GraphInfo,
        first: First = None,
        after: After = None,
        signed_bundle: Annotated[bool | None, argument(_SIGNED_BUNDLE)] = None,
        order_by: OrderBy = PaperOrder.NEWEST,
        last: Last = None,
        before: Before = None,
    ) -> PaperConnection:
        context = info.context
        listing = Listing(signer=self.signer_id, signed_bundle=signed_bundle)

        async def count() -> int:
            return await context.run(context.reader.count_listing, listing)

        counter = known_count(self.paper_count) if signed_bundle is None else count
        owned = Owned("papers_of_signers", self.signer_id, (signed_bundle,))
        return await owned_papers(context, owned, counter, listing, order_by, (first, after, last, before))
