"""What varies between synthetic bundles of one signer: :class:`PaperSpec`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pith_graph.loader.canon import sha256_hex
from pith_graph.loader.identifiers import title_key

__all__ = ["SCHEMA_VERSION", "PaperSpec", "micro"]

Json = dict[str, Any]

SCHEMA_VERSION = "1.0"


@dataclass(frozen=True)
class PaperSpec:
    """Everything that varies between bundles of one signer.

    ``authors`` are display names, joined with ``", "`` in the given order (real bundles
    sort them; the caller decides). Times are ISO 8601 UTC with ``Z``. The optional fields
    default to what a fresh build would write: ``abstract_canon_sha256`` to the digest of
    the excerpt (real bundles digest the full abstract, which they do not carry),
    ``snapshot_created_at`` to ``created_at``, the receipt times to ``created_at`` with
    microseconds, ``event_signed_at[i]`` and ``bundle_signed_at`` to ``built_at`` likewise.
    """

    arxiv_id: str
    version: int
    title: str
    authors: Sequence[str]
    abstract_excerpt: str
    primary_cat: str
    cross_cats: Sequence[str]
    license: str
    submitted_at: str
    created_at: str
    built_at: str
    abstract_canon_sha256: str | None = None
    snapshot_created_at: str | None = None
    receipt_computed_at: str | None = None
    receipt_reissued_at: str | None = None
    receipt_signed_at: str | None = None
    event_signed_at: Sequence[str] = ()
    bundle_signed_at: str | None = None
    headline: str = ""

    @classmethod
    def example(cls, arxiv_id: str, **changes: Any) -> PaperSpec:
        """A plain spec of version 1 of ``arxiv_id`` (one author, ``cs.LG``, CC BY 4.0, times
        in early 2026) with ``changes`` to any field: the test vectors that vary a few.

        >>> spec = PaperSpec.example("2601.00001", authors=["Bo"])
        >>> spec.arxiv_version, spec.title, spec.authors_text
        ('2601.00001v1', 'Paper 2601.00001', 'Bo')
        """
        fields: dict[str, Any] = {
            "version": 1,
            "title": f"Paper {arxiv_id}",
            "authors": ["Ann Lee"],
            "abstract_excerpt": "An abstract.",
            "primary_cat": "cs.LG",
            "cross_cats": [],
            "license": "http://creativecommons.org/licenses/by/4.0/",
            "submitted_at": "2026-01-05T10:00:00Z",
            "created_at": "2026-02-01T10:00:00Z",
            "built_at": "2026-02-02T10:00:00Z",
        }
        return cls(arxiv_id=arxiv_id, **{**fields, **changes})

    @property
    def authors_text(self) -> str:
        return ", ".join(self.authors)

    @property
    def arxiv_version(self) -> str:
        return f"{self.arxiv_id}v{self.version}"

    @property
    def doi(self) -> str:
        return f"10.48550/arxiv.{self.arxiv_id}"

    def canonical_record(self) -> Json:
        """The canonical record whose digest makes the pith number."""
        abstract_sha = self.abstract_canon_sha256
        if abstract_sha is None:
            abstract_sha = sha256_hex(title_key(self.abstract_excerpt).encode("utf-8"))
        return {
            "source": {"id": self.arxiv_id, "kind": "arxiv", "version": self.version},
            "metadata": {
                "license": self.license,
                "primary_cat": self.primary_cat,
                "submitted_at": self.submitted_at,
                "cross_cats_sorted": sorted(self.cross_cats),
                "title_canon_sha256": sha256_hex(title_key(self.title).encode("utf-8")),
                "abstract_canon_sha256": abstract_sha,
            },
            "schema_version": SCHEMA_VERSION,
        }

    def event_signing_time(self, index: int) -> str:
        if index < len(self.event_signed_at):
            return self.event_signed_at[index]
        return micro(self.built_at)


def micro(timestamp: str) -> str:
    """``...:27Z`` -> ``...:27.000000Z``; timestamps with a fraction pass unchanged.

    >>> micro("2026-07-05T05:13:27Z"), micro("2026-07-05T05:13:27.052423Z")
    ('2026-07-05T05:13:27.000000Z', '2026-07-05T05:13:27.052423Z')
    """
    if "." in timestamp:
        return timestamp
    return timestamp[:-1] + ".000000Z"
