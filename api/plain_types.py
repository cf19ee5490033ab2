"""The GraphQL object types without relations (no resolver, no reader call): a paper's
identifiers, one way an author's papers spell it, a key that signed a bundle. Re-exported
by :mod:`pith_graph.api.types`, which builds them."""

from __future__ import annotations

import strawberry

from pith_graph.api.reads.records import AliasRecord

__all__ = ["Alias", "NameForm", "TrustedKey"]


@strawberry.type(description="An identifier of a paper: arXiv id, DOI, pith short forms.")
class Alias:
    kind: str = strawberry.field(
        description="arxiv, arxiv_version, doi, pith_short_8, pith_short_12, pith_short_16"
    )
    value: str = strawberry.field(description="The identifier itself, as its kind writes it.")

    @classmethod
    def from_record(cls, record: AliasRecord) -> Alias:
        return cls(kind=record.kind, value=record.value)


@strawberry.type(description="A key that signed a paper's bundle, as this server's keyring pins it.")
class TrustedKey:
    key_id: str = strawberry.field(description="The key id, as the bundle names it.")
    fingerprint: str | None = strawberry.field(
        description="First 16 bytes of SHA-256 of the key, hex; null when this server does not pin the key."
    )
    signer_id: str | None = strawberry.field(
        description="The signer this key speaks for (its signer id, or without one the key id itself); null when this server does not pin the key."
    )


@strawberry.type(description="One way an author's papers spell it.")
class NameForm:
    name: str = strawberry.field(description="The spelling.")
    paper_count: int = strawberry.field(description="How many of the author's papers spell it so.")
