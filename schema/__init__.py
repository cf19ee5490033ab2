"""The pith-graph schema: node labels, keys, properties, relationships and their indexes."""

from __future__ import annotations

from pith_graph.schema.database import ConstraintSpec, IndexSpec, constraints, indexes
from pith_graph.schema.graph import (
    ALIAS,
    AUTHOR,
    AUTHORED,
    CATEGORY,
    IDENTIFIES,
    IN_CATEGORY,
    NODES,
    PAPER,
    RELATIONSHIPS,
    SIGNED,
    SIGNER,
    NodeSpec,
    PropertySpec,
    RelationshipSpec,
    node_id,
)

__all__ = [
    "ALIAS",
    "AUTHOR",
    "AUTHORED",
    "CATEGORY",
    "IDENTIFIES",
    "IN_CATEGORY",
    "NODES",
    "PAPER",
    "RELATIONSHIPS",
    "SIGNED",
    "SIGNER",
    "ConstraintSpec",
    "IndexSpec",
    "NodeSpec",
    "PropertySpec",
    "RelationshipSpec",
    "constraints",
    "indexes",
    "node_id",
]
