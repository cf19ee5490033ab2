"""A DOI is one identifier in any ASCII letter case: one Alias node in every store, found by
the API however it is pasted, and a database written before DOIs were folded is upgraded."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from apitest import api_of

from pith_graph.loader.doi_upgrade import fold_doi_aliases
from pith_graph.loader.facade import resolve_keyring
from pith_graph.loader.keyring import PinnedKey
from pith_graph.loader.pipeline import LoadReport, run
from pith_graph.loader.rows import build_rows
from pith_graph.loader.stores.base import GraphStore
from pith_graph.loader.verify import verify_bundle
from pith_graph.testing import PaperSpec, SignerIdentity, build_bundle, resign

HIGH = SignerIdentity.from_seed(b"doi-case-high", key_id="high-key", signer_id="high.example")
LOW = SignerIdentity.from_seed(b"doi-case-low", key_id="low-key", signer_id="low.example")
KEYRING = resolve_keyring([PinnedKey(s.key_id, s.public_key, s.signer_id) for s in (HIGH, LOW)])

DOI = "10.1103/PhysRevLett.116.061102"
FOLDED = "10.1103/physrevlett.116.061102"
GENUINE = PaperSpec.example("2601.00007", title="Genuine GW paper")
IMPOSTOR = PaperSpec.example("2601.00008", title="Impostor")

_runs = itertools.count()


def with_dois(spec: PaperSpec, signer: SignerIdentity, *values: str) -> bytes:
    bundle = build_bundle(spec, signer)
    for value in values:
        bundle["source_aliases"].append(
            {"alias_kind": "doi", "alias_value": value, "created_at": spec.created_at}
        )
    return orjson.dumps(resign(bundle, signer))


def load(store: GraphStore, folder: Path, bundles: Sequence[bytes]) -> LoadReport:
    run_dir = folder / f"run-{next(_runs):03d}"
    run_dir.mkdir()
    for index, data in enumerate(bundles):
        (run_dir / f"{index:04d}.json").write_bytes(data)
    report = run([str(run_dir)], keyring=KEYRING, store=store, workers=1, batch_size=1)
    assert report.rejected == 0, report.rejections
    return report


def pith(spec: PaperSpec, signer: SignerIdentity) -> str:
    return str(build_bundle(spec, signer)["pith_number"])


def doi_aliases(store: GraphStore) -> dict[str, set[str]]:
    """DOI Alias node id → the papers it identifies."""
    export = store.export()
    found: dict[str, set[str]] = {
        key: set() for key, node in export.nodes.items() if node["label"] == "Alias" and node["kind"] == "doi"
    }
    for start, kind, end in export.edges:
        if kind == "IDENTIFIES" and start in found:
            found[start].add(end.removeprefix("Paper:"))
    return {key: papers for key, papers in found.items() if not key.startswith("Alias:doi:10.48550/")}


# -- the rows every store (and the bulk import) writes ------------------------------------------


def test_rows_hold_a_doi_folded_once_whatever_its_spellings() -> None:
    data = with_dois(GENUINE, HIGH, DOI, DOI.upper(), "10.1000/ÄBC")
    rows = build_rows(verify_bundle(orjson.loads(data), KEYRING), KEYRING)
    dois = sorted(alias.value for alias in rows.aliases if alias.kind == "doi")
    # the arXiv DOI too; a non-ASCII capital is not folded (DOIs fold ASCII only)
    assert dois == ["10.1000/Äbc", FOLDED, f"10.48550/arxiv.{GENUINE.arxiv_id}"]


def test_two_spellings_of_a_doi_are_one_alias(store: GraphStore, tmp_path: Path) -> None:
    load(store, tmp_path, [with_dois(GENUINE, HIGH, DOI), with_dois(IMPOSTOR, LOW, FOLDED)])
    assert doi_aliases(store) == {
        f"Alias:doi:{FOLDED}": {pith(GENUINE, HIGH), pith(IMPOSTOR, LOW)},
    }


# -- over HTTP, both backends -------------------------------------------------------------------


SPELLINGS = [DOI, FOLDED, DOI.upper(), f"https://doi.org/{FOLDED}", f"doi:{DOI.upper()}"]


@pytest.mark.parametrize("order", ["high-first", "low-first"])
def test_every_spelling_of_a_doi_answers_with_the_higher_ranked_signer(
    store: GraphStore, tmp_path: Path, order: str
) -> None:
    bundles = [with_dois(GENUINE, HIGH, DOI), with_dois(IMPOSTOR, LOW, FOLDED)]
    load(store, tmp_path, bundles if order == "high-first" else bundles[::-1])
    query = (
        "query($id: String!) { paper(id: $id) { title verification { bundleKeyId } }"
        " resolve(id: $id) { title } }"
    )
    with api_of(store, KEYRING) as api:
        for pasted in SPELLINGS:
            data = api.data(query, id=pasted)
            assert data == {
                "paper": {"title": GENUINE.title, "verification": {"bundleKeyId": HIGH.key_id}},
                "resolve": [{"title": GENUINE.title}],
            }, pasted
        batch = api.data("query($ids: [String!]!) { papersById(ids: $ids) { title } }", ids=SPELLINGS)
        assert batch["papersById"] == [{"title": GENUINE.title}] * len(SPELLINGS)
        aliases = api.data(
            "query($id: String!) { paper(id: $id) { aliases { kind value } } }",
            id=f"arXiv:{GENUINE.arxiv_id}",
        )
        assert {"kind": "doi", "value": FOLDED} in aliases["paper"]["aliases"]


# -- a Neo4j database written before DOIs were folded ---------------------------------------------


@pytest.mark.neo4j
def test_schema_upgrade_folds_the_doi_aliases_an_older_version_wrote(
    neo4j_server: Any, tmp_path: Path
) -> None:
    store = neo4j_server.connect()
    try:
        store.clear()
        store.ensure_schema()
        load(store, tmp_path, [with_dois(GENUINE, HIGH, DOI), with_dois(IMPOSTOR, LOW, FOLDED)])
        genuine, impostor = pith(GENUINE, HIGH), pith(IMPOSTOR, LOW)
        with store.driver.session(database=store.database) as session:
            # as 0.3 wrote them: values as the bundles spelled them; the genuine paper also
            # under the upper-case spelling, and a DOI whose only capital is not ASCII
            session.run(
                """
                MATCH (p:Paper {pithNumber: $genuine}), (:Alias {kind: 'doi', value: $folded})-[r:IDENTIFIES]->(p)
                DELETE r
                MERGE (:Alias {kind: 'doi', value: $mixed})-[:IDENTIFIES]->(p)
                MERGE (:Alias {kind: 'doi', value: $upper})-[:IDENTIFIES]->(p)
                MERGE (:Alias {kind: 'doi', value: '10.1000/Äbc'})-[:IDENTIFIES]->(p)
                """,
                genuine=genuine,
                folded=FOLDED,
                mixed=DOI,
                upper=DOI.upper(),
            ).consume()
            assert doi_aliases(store) == {
                f"Alias:doi:{DOI}": {genuine},
                f"Alias:doi:{DOI.upper()}": {genuine},
                f"Alias:doi:{FOLDED}": {impostor},
                "Alias:doi:10.1000/Äbc": {genuine},
            }
            assert fold_doi_aliases(session, batch=1) == 2
            assert fold_doi_aliases(session) == 0  # nothing left: done once
        assert doi_aliases(store) == {
            f"Alias:doi:{FOLDED}": {genuine, impostor},
            "Alias:doi:10.1000/Äbc": {genuine},
        }
        with api_of(store, KEYRING) as api:
            found = api.data("query($id: String!) { paper(id: $id) { title } }", id=DOI)
            assert found == {"paper": {"title": GENUINE.title}}
    finally:
        store.clear()
        store.close()
