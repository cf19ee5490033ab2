"""A request that saw a paper in two states (:class:`TornRead`).

Kept apart from the Neo4j reader that raises it (:mod:`~pith_graph.api.reads.neo4j_base`) so
that what catches it (:mod:`~pith_graph.api.plan.run`, :mod:`~pith_graph.api.app`) does not
import the Neo4j driver: a server of the memory backend never loads it (with pandas
installed, the driver's import alone took 0.9 s of the 1.5 s that ``pith_graph.api.app``
took to import).
"""

from __future__ import annotations

from pith_graph.errors import StoreError, StoreErrorCode

__all__ = ["TornRead"]


class TornRead(StoreError):
    """A paper changed between two statements of one request: Neo4j runs transactions at
    READ COMMITTED, so a load that committed in between is seen by the later statement only
    (see :meth:`~pith_graph.api.reads.neo4j_base.Neo4jBase.check_stamp`). Whoever runs the
    request reads it all again (after :meth:`~pith_graph.api.reads.neo4j.Neo4jReader.close`)
    while its time lasts; if it cannot, the answer is ``SERVICE_UNAVAILABLE``."""

    def __init__(self, pith_number: str) -> None:
        super().__init__(StoreErrorCode.UNAVAILABLE, f"{pith_number} changed while a request read it")
