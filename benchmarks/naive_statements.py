"""The naive loader's statements: the baseline ``bench_neo4j.py`` measures ours against.

One statement per node and per edge, each bundle in its own transaction: what a loader
without batching would do. Not part of the library.
"""

from __future__ import annotations

NAIVE_STATEMENTS: dict[str, str] = {
    "stored": "MATCH (p:Paper {pithNumber: $pithNumber}) RETURN p.builtAt AS builtAt, p.bundleSha256 AS bundleSha256",
    "paper": "MERGE (p:Paper {pithNumber: $pithNumber}) SET p = $props",
    "detach": "MATCH (:Paper {pithNumber: $pithNumber})-[r]-() DELETE r",
    "author": (
        "MERGE (a:Author {nameKey: $nameKey}) ON CREATE SET a.name = $name "
        "WITH a WHERE $name < a.name SET a.name = $name"
    ),
    "category": "MERGE (c:Category {code: $code}) ON CREATE SET c.archive = $archive",
    "alias": "MERGE (:Alias {kind: $kind, value: $value})",
    "signer": (
        "MERGE (s:Signer {signerId: $signerId}) ON CREATE SET s.signerType = $signerType, s.keyIds = []"
    ),
    "authored": (
        "MATCH (a:Author {nameKey: $nameKey}), (p:Paper {pithNumber: $pithNumber}) MERGE (a)-[:AUTHORED]->(p)"
    ),
    "in_category": (
        "MATCH (c:Category {code: $code}), (p:Paper {pithNumber: $pithNumber}) "
        "MERGE (p)-[r:IN_CATEGORY]->(c) SET r.primary = $primary"
    ),
    "identifies": (
        "MATCH (a:Alias {kind: $kind, value: $value}), (p:Paper {pithNumber: $pithNumber}) "
        "MERGE (a)-[:IDENTIFIES]->(p)"
    ),
    "signed": (
        "MATCH (s:Signer {signerId: $signerId}), (p:Paper {pithNumber: $pithNumber}) "
        "MERGE (s)-[r:SIGNED]->(p) "
        "SET r.keyIds = $keyIds, r.eventTypes = $eventTypes, r.signedBundle = $signedBundle"
    ),
}
