"""The Cypher that brings a database written by an earlier version up to date (the rest of
pith-graph's writes: :mod:`pith_graph.loader.stores.cypher`). Values travel as parameters."""

from __future__ import annotations

from pith_graph.loader.stores.cypher import keyed

__all__ = [
    "AUTHORS_TO_UPGRADE",
    "AUTHOR_FOLDS",
    "DOIS_TO_FOLD",
    "FOLD_DOIS",
    "REFOLDED_CHARACTERS",
    "REFOLDED_PATTERN",
    "REFOLD_AUTHORS",
    "SET_AUTHORS",
    "SOURCES_WITHOUT_LATEST",
]

#: Authors written before ``nameFolded`` and ``paperCount`` existed (the loader fills them in:
#: :meth:`~pith_graph.loader.stores.neo4j.Neo4jStore.ensure_schema`), $limit at a time.
#: An analyst's stub (:func:`~pith_graph.loader.stores.cypher.keyed`: without ``nameKey`` or
#: ``name``) is theirs, left alone: the write, matching on ``nameKey``, could never change it.
AUTHORS_TO_UPGRADE = f"""
MATCH (a:Author)
WHERE (a.nameFolded IS NULL OR a.paperCount IS NULL) AND {keyed("a", "Author", filled=("nameFolded", "paperCount"))}
RETURN a.nameKey AS key, a.name AS name
LIMIT $limit
"""

#: $rows: ``[nameKey, name (null: the stored one), nameFolded]``; paperCount counted again.
SET_AUTHORS = """
UNWIND $rows AS row
MATCH (a:Author {nameKey: row[0]})
SET a.name = coalesce(row[1], a.name), a.nameFolded = row[2], a.paperCount = COUNT { (a)-[:AUTHORED]->() }
"""

#: The characters (inclusive code point ranges) of an NFKC-normal name that 0.9.7 folded otherwise
#: than its key (``nameFolded`` of the display name, not of its NFKC, case-folded key): those
#: whose case folding is not their lower case (``ς``, ``ͅ``, Greek letters with ypogegrammeni,
#: old Cyrillic letter variants), and the Unicode 14 letters with a compatibility decomposition
#: that Java 17's normalizer (Unicode 13) takes for normal. A name holding none of them, and
#: NFKC-normal, folds alike in both (tests/test_refold_candidates.py sweeps every code point).
REFOLDED_CHARACTERS: tuple[tuple[int, int], ...] = (
    (0x0345, 0x0345),
    (0x03C2, 0x03C2),
    (0x1C80, 0x1C88),
    (0x1F80, 0x1FAF),
    (0x1FB2, 0x1FB4),
    (0x1FB7, 0x1FB7),
    (0x1FBC, 0x1FBC),
    (0x1FC2, 0x1FC4),
    (0x1FC7, 0x1FC7),
    (0x1FCC, 0x1FCC),
    (0x1FF2, 0x1FF4),
    (0x1FF7, 0x1FF7),
    (0x1FFC, 0x1FFC),
    (0xA7F2, 0xA7F4),
    (0x10780, 0x107BA),
)
#: A Java regular expression (``=~``, $pattern) matching a name that holds one of them.
REFOLDED_PATTERN = (
    "(?s).*["
    + "".join(
        f"\\x{{{low:X}}}" + (f"-\\x{{{high:X}}}" if high > low else "") for low, high in REFOLDED_CHARACTERS
    )
    + "].*"
)

#: Of the (at most) $scan authors from nameKeys above $after on ('': the first), in nameKey
#: order on its constraint's index: the last key (null: none left) and the ``[nameKey,
#: nameFolded]`` of those whose ``nameFolded`` 0.9.7 may have folded otherwise than 0.9.8
#: (a name beyond ASCII, not NFKC-normal or holding a :data:`REFOLDED_CHARACTERS` one: $pattern;
#: the ASCII test first, the cheapest: 0.9.7 folded an ASCII name as its key), the only
#: authors compared with their key's fold: by ``serve``, to warn
#: (:meth:`~pith_graph.api.reads.neo4j_upkeep.Neo4jUpkeep.unfolded_author`), and by
#: ``pith-graph schema``, to fold them again (since 0.9.9:
#: :func:`~pith_graph.loader.stores.neo4j_names.refold_authors`; 0.9.8 compared every
#: name beyond ASCII).
AUTHOR_FOLDS = f"""
MATCH (a:Author)
WHERE a.nameKey > $after
WITH a ORDER BY a.nameKey
LIMIT $scan
RETURN max(a.nameKey) AS last,
       collect(CASE WHEN NOT a.name =~ '\\p{{ASCII}}*' AND (a.name IS NOT NFKC NORMALIZED OR a.name =~ $pattern)
                    AND {keyed("a", "Author")}
               THEN [a.nameKey, a.nameFolded] END) AS rows
"""

#: $rows: ``[nameKey, nameFolded]``.
REFOLD_AUTHORS = """
UNWIND $rows AS row
MATCH (a:Author {nameKey: row[0]})
SET a.nameFolded = row[1]
"""

# DOI aliases written before 0.6 (pith_graph.loader.doi_upgrade): those with an ASCII capital
# (Java's [A-Z] is ASCII only), $limit at a time; $rows [value, folded]: the folded node
# takes the old one's papers (made only when there are any), the old goes.
DOIS_TO_FOLD = (
    f"MATCH (a:Alias {{kind: 'doi'}}) WHERE {keyed('a', 'Alias')} AND a.value =~ '(?s).*[A-Z].*' "
    "RETURN a.value AS value LIMIT $limit"
)
FOLD_DOIS = """
UNWIND $rows AS row
MATCH (old:Alias {kind: 'doi', value: row[0]})
WITH old, row, [(old)-[:IDENTIFIES]->(p:Paper) | p] AS papers
FOREACH (p IN papers |
  MERGE (folded:Alias {kind: 'doi', value: row[1]})
  MERGE (folded)-[:IDENTIFIES]->(p))
DETACH DELETE old
"""

#: Sources (``[sourceKind, sourceId]``) with a paper written before ``Paper.isLatest`` existed
#: (0.9.4), from $after on (a sourceId; null: the first), in sourceId order on the
#: ``(sourceId, sourceVersion)`` index: each read goes on where the last stopped, so one pass
#: over the index brings a database up to date (``cypher.REFRESH_LATEST`` writes each $limit),
#: and finds nothing to do, once it is.
SOURCES_WITHOUT_LATEST = """
MATCH (p:Paper)
WHERE p.sourceId >= coalesce($after, '') AND p.sourceVersion IS NOT NULL AND p.isLatest IS NULL
  AND size(p.pithNumber) > 0 AND p.sourceKind IS NOT NULL AND p.builtAt IS NOT NULL
WITH DISTINCT p.sourceId AS id, p.sourceKind AS kind
ORDER BY id
RETURN [kind, id] AS source
LIMIT $limit
"""
