"""A lower-ranked signer's spelling of an author cannot change what ``authors(prefix:)`` finds.

An author's ``name`` is the smallest spelling among all signers' papers (README "Threat
model"), so any trusted key can choose how a higher-ranked signer's author is *displayed*.
Typeahead compares ``Author.nameFolded``, which until 0.9.8 was folded from that display
name: a lowest-ranked key publishing one paper by "QU𝐄𝐍𝐓𝐈𝐍 𝐓𝐑𝐔𝐓𝐇𝐅𝐔𝐋" (Mathematical
Bold, same ``nameKey``, sorting first) made *quentin* and *truthful* find nobody, on both
backends. Since 0.9.8 ``nameFolded`` is folded from the key, and typed words are made a key
first: here, over real HTTP on each backend, the answers of a world where the low signer
re-spells the honest authors (bold letters, full-width letters, a capital early) are those
of the same world where it spells them as the honest signer does, and typed bold or
full-width prefixes find them too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from apitest import api_of

from pith_graph.loader.keyring import PinnedKey, default_keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.base import GraphStore
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.neo4j import Neo4jStore
from pith_graph.testing.identity import SignerIdentity
from pith_graph.testing.signer import PaperSpec, build_bundle

HIGH = SignerIdentity.from_seed(b"respell-high", key_id="respell-high-key", signer_id="high.invalid")
LOW = SignerIdentity.from_seed(b"respell-low", key_id="respell-low-key", signer_id="low.invalid")
#: HIGH ranks first among the pinned keys, LOW last.
KEYRING = default_keyring().with_keys([PinnedKey(s.key_id, s.public_key, s.signer_id) for s in (HIGH, LOW)])


def _bold(text: str) -> str:
    """Capitals as Mathematical Bold capitals (U+1D400...): NFKC makes them ASCII again."""
    return "".join(chr(0x1D400 + ord(c) - ord("A")) if "A" <= c <= "Z" else c for c in text)


def _wide(text: str) -> str:
    """Letters as full-width letters (U+FF21...)."""
    return "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalpha() else c for c in text)


#: (the honest spelling, the low signer's re-spelling: smaller by code point, so its name).
AUTHORS = [
    ("Quentin Truthful", "QU" + _bold("ENTIN TRUTHFUL")),
    ("Bea Honest", "BEA " + _wide("HONEST")),
    ("Zoë Smith", "ZOË " + _bold("SMITH")),
    ("Straße Bo", "STRAẞE " + _bold("BO")),
    ("Ann Lee", "ANN " + _wide("LEE")),
]
TYPED = [
    *("quentin", "truthful", "qu tr", "bea", "honest", "zoe", "ZOË sm", "smith", "strasse", "straße"),
    *("bo", "ann", "lee", "a", "t"),
    *(_bold("QUEN"), _wide("quen"), _wide("ZOE") + " " + _bold("SM"), _bold("STRASSE"), "ＨＯＮ"),
]
QUERY = "query($p: String!) { authors(prefix: $p, first: 20) { name nameKey paperCount } }"


def _answers(store: GraphStore, folder: Path, respelt: bool) -> dict[str, list[dict[str, Any]]]:
    """The honest signer's two papers and the low signer's one, naming every author as
    ``respelt`` says, loaded into ``store``; each typed prefix's answer over HTTP."""
    honest = [name for name, _ in AUTHORS]
    papers = [
        (HIGH, PaperSpec.example("2601.90001", title="Honest work", authors=honest)),
        (HIGH, PaperSpec.example("2601.90002", title="More honest work", authors=honest[:2])),
        (LOW, PaperSpec.example("2601.90003", authors=[pair[respelt] for pair in AUTHORS])),
    ]
    folder.mkdir()
    path = folder / "bundles.jsonl"
    path.write_bytes(b"".join(orjson.dumps(build_bundle(spec, signer)) + b"\n" for signer, spec in papers))
    report = run([str(path)], keyring=KEYRING, store=store, workers=1)
    assert report.accepted == 3, report.rejections
    with api_of(store, KEYRING) as api:
        return {typed: api.data(QUERY, p=typed)["authors"] for typed in TYPED}


def test_a_lower_ranked_respelling_leaves_typeahead_as_it_was(store: GraphStore, tmp_path: Path) -> None:
    store.ensure_schema()
    attacked = _answers(store, tmp_path / "respelt", respelt=True)
    if isinstance(store, Neo4jStore):
        store.clear()
    plain = _answers(
        store if isinstance(store, Neo4jStore) else MemoryStore(), tmp_path / "plain", respelt=False
    )

    def found(answers: dict[str, list[dict[str, Any]]]) -> dict[str, list[tuple[str, int]]]:
        return {
            typed: [(a["nameKey"], a["paperCount"]) for a in authors] for typed, authors in answers.items()
        }

    assert found(attacked) == found(plain)
    for typed, keys in (
        ("quentin", ["quentin truthful"]),
        ("truthful", ["quentin truthful"]),
        (_bold("QUEN"), ["quentin truthful"]),
        (_wide("quen"), ["quentin truthful"]),
        ("ＨＯＮ", ["bea honest"]),
        (_wide("ZOE") + " " + _bold("SM"), ["zoë smith"]),
        (_bold("STRASSE"), ["strasse bo"]),
        ("ann", ["ann lee"]),
    ):
        assert [key for key, _ in found(attacked)[typed]] == keys, typed
    shown = {author["nameKey"]: author["name"] for found in attacked.values() for author in found}
    assert sorted(shown.values()) == sorted(respelling for _, respelling in AUTHORS)  # their names


@pytest.mark.parametrize(
    ("typed", "keys"),
    [("quentin", ("quentin",)), (_bold("QUENTIN"), ("quentin",)), (_wide("Quen tru"), ("quen", "tru"))],
)
def test_typed_bold_and_full_width_letters_fold_as_a_key(typed: str, keys: tuple[str, ...]) -> None:
    from pith_graph.api.reads.folding import typed_keys

    assert typed_keys(typed) == keys
