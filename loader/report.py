"""What a run reports: each rejected bundle (:class:`Rejection`) and the counts of a load or a
verification (:class:`LoadReport`), which ``pith-graph`` prints as text or as ``--json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from pith_graph.errors import Source, printable
from pith_graph.loader.stores.base import GraphCounts, Outcome, schema_counts

__all__ = ["LOAD_ONLY_KEYS", "MAX_KEPT_REJECTIONS", "GraphLoadReport", "LoadReport", "Rejection"]

#: What only a load decides: keys of a load's ``--json`` that a verification's leaves out
#: (since 0.8.9; before, ``verify --json`` gave them as 0, and ``nodes``/``edges`` as null).
LOAD_ONLY_KEYS = (
    "accepted",
    "inserted",
    "replaced",
    "duplicate",
    "stale",
    "outranked",
    "displaced",
    "nodes",
    "edges",
)

#: ``--json`` lists the first ones met; ``rejectionsOmitted`` counts the rest (a corpus of
#: millions of bad lines must not make the report as large as the input).
MAX_KEPT_REJECTIONS = 1000


@dataclass(frozen=True, slots=True)
class Rejection:
    """One rejected bundle: a stable code, a message and where it came from."""

    code: str
    message: str
    source: Source

    def __str__(self) -> str:
        return f"{self.source}: {self.code}: {printable(self.message)}"


@dataclass(slots=True)
class LoadReport:
    """What a run did. ``accepted`` = inserted + replaced; ``outranked``: bundles not applied
    because a higher-ranked signer holds their source id; ``displaced``: stored papers
    removed because a higher-ranked signer's bundle took their source id over, or a newer
    record of their version superseded them."""

    seen: int = 0
    inserted: int = 0
    replaced: int = 0
    duplicate: int = 0
    stale: int = 0
    outranked: int = 0
    displaced: int = 0
    rejected: int = 0
    rejections: list[Rejection] = field(default_factory=list)
    counts: GraphCounts | None = None
    seconds: float = 0.0

    @property
    def accepted(self) -> int:
        return self.inserted + self.replaced

    @property
    def verified(self) -> int:
        return self.seen - self.rejected

    @property
    def rejections_omitted(self) -> int:
        """Rejections counted in ``rejected`` but not kept in ``rejections`` (past the first
        :data:`MAX_KEPT_REJECTIONS`)."""
        return self.rejected - len(self.rejections)

    def add_rejection(self, rejection: Rejection) -> None:
        self.rejected += 1
        if len(self.rejections) < MAX_KEPT_REJECTIONS:
            self.rejections.append(rejection)

    def add_outcome(self, outcome: Outcome) -> None:
        if outcome is Outcome.INSERTED:
            self.inserted += 1
        elif outcome is Outcome.REPLACED:
            self.replaced += 1
        elif outcome is Outcome.DUPLICATE:
            self.duplicate += 1
        elif outcome is Outcome.OUTRANKED:
            self.outranked += 1
        elif outcome is Outcome.STALE:
            self.stale += 1
        else:
            raise ValueError(f"not an outcome: {outcome!r}")

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready summary (what ``--json`` prints). A verification's (a report without
        ``counts``: no store) leaves out what only a load decides (:data:`LOAD_ONLY_KEYS`);
        a load's ``nodes`` and ``edges`` count every label and type of the schema, 0 included."""
        found: dict[str, object] = {
            "seen": self.seen,
            "verified": self.verified,
            "accepted": self.accepted,
            "inserted": self.inserted,
            "replaced": self.replaced,
            "duplicate": self.duplicate,
            "stale": self.stale,
            "outranked": self.outranked,
            "displaced": self.displaced,
            "rejected": self.rejected,
            "rejections": [
                {
                    "code": r.code,
                    "message": printable(r.message),
                    "file": r.source.shown_path,
                    "line": r.source.line,
                }
                for r in self.rejections
            ],
            "rejectionsOmitted": self.rejections_omitted,
        }
        if self.counts is None:
            for key in LOAD_ONLY_KEYS:
                found.pop(key, None)
        else:
            counts = schema_counts(self.counts.nodes.items(), self.counts.edges.items())
            found["nodes"] = counts.nodes
            found["edges"] = counts.edges
        found["seconds"] = round(self.seconds, 3)
        return found


@dataclass(slots=True)
class GraphLoadReport(LoadReport):
    """The report of a load into a graph (what :func:`~pith_graph.loader.facade.load_graph`
    returns): a :class:`LoadReport` whose ``counts`` are always there, so typed scripts read
    ``report.counts.nodes`` without a check for ``None``."""

    counts: GraphCounts = field(default_factory=GraphCounts)

    @classmethod
    def of(cls, report: LoadReport, counts: GraphCounts) -> GraphLoadReport:
        """``report`` as a graph load's, with the graph's ``counts``."""
        values = {item.name: getattr(report, item.name) for item in fields(LoadReport)}
        return cls(**{**values, "counts": counts})
