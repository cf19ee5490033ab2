"""Values past Neo4j's index key limit are rejected alike on every path (``loader/indexable.py``).

One bundle with a 9,000-byte author name, license or category (any trusted key can sign one)
used to load into memory and stop a Neo4j load with ``write_failed`` (``Property value is too
large to index``); so did, before 0.8.8, a source kind of 9,000 bytes, through the alias a
Neo4j load locks the source on. The cases are ``vectors/indexed-values.json``: each is rejected with its
``schema_error`` by verification and rows, by both stores (the rest of the batch loads), by
the bulk import and by ``pith-graph verify``; the cases at the limit load.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import neo4j
import orjson
import pytest

from pith_graph.errors import BundleError, Source
from pith_graph.loader.bulk import bulk_import
from pith_graph.loader.keyring import PinnedKey, default_keyring
from pith_graph.loader.pipeline import Rejection, WorkerConfig, check_one, process_one, run
from pith_graph.loader.rows import PaperRows, build_rows
from pith_graph.loader.sources import RawBundle
from pith_graph.loader.stores.base import GraphStore
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.verify import verify_bundle
from pith_graph.schema.database import MAX_INDEXED_BYTES, indexed_groups
from pith_graph.testing import run_cli
from pith_graph.testing.signer import PaperSpec, SignerIdentity, build_bundle, resign

VECTORS = json.loads((Path(__file__).parent / "vectors" / "indexed-values.json").read_text())
CASES = VECTORS["cases"]
REJECTED = [case for case in CASES if case["message"] is not None]
SIGNER = SignerIdentity.from_seed(b"indexed-values", key_id="indexed-key", signer_id="indexed.invalid")
KEYRING = default_keyring().with_keys([PinnedKey(SIGNER.key_id, SIGNER.public_key, SIGNER.signer_id)])
CONFIG = WorkerConfig(KEYRING)


def test_the_vectors_limit_is_the_schemas() -> None:
    assert VECTORS["limit"] == MAX_INDEXED_BYTES


def _bundle(case: dict[str, Any], number: int) -> dict[str, Any]:
    """A plain bundle of arXiv id 2601.1nnnn with the case's value in its field."""
    value = case["prefix"] + case["unit"] * case["times"]
    changes: dict[str, Any] = {
        "authors": {"authors": [value]},
        "second_author": {"authors": ["Ann Lee", value]},
        "license": {"license": value},
        "primary_cat": {"primary_cat": value},
        "cross_cats": {"cross_cats": [value]},
        "title": {"title": value},
        "many_authors": {"authors": [f"{case['unit']} {n}" for n in range(case["times"])]},
        "doi": {},
        "source": {},
    }[case["field"]]
    bundle = build_bundle(PaperSpec.example(f"2601.{10000 + number}", **changes), SIGNER)
    if case["field"] == "source":
        prefix, unit, times = case["id"]
        _set_source(bundle, value, prefix + unit * times)
    if case["field"] == "doi":
        created = bundle["source_aliases"][0]["created_at"]
        bundle["source_aliases"].append({"alias_kind": "doi", "alias_value": value, "created_at": created})
        resign(bundle, SIGNER)
    return bundle


def _set_source(bundle: dict[str, Any], kind: str, source_id: str) -> None:
    """Make ``bundle`` a record of another source (no arXiv alias), re-signed."""
    bundle["canonical_record"]["source"] = {"id": source_id, "kind": kind, "version": 1}
    bundle["source"] = {"kind": kind, "id": source_id, "version": 1}
    for event in bundle["events"]:
        if event["event_type"] == "record_created":
            payload = event["payload"]
            payload["canonical_record"] = copy.deepcopy(bundle["canonical_record"])
            payload["source_kind"], payload["source_id"] = kind, source_id
    bundle["source_aliases"] = [
        a for a in bundle["source_aliases"] if a["alias_kind"].startswith("pith_short")
    ]
    resign(bundle, SIGNER)


def _raw(bundle: dict[str, Any], name: str = "case.json") -> RawBundle:
    return RawBundle(orjson.dumps(bundle), Source(name))


@pytest.mark.parametrize(("number", "case"), list(enumerate(CASES)), ids=[case["name"] for case in CASES])
def test_each_case_is_rejected_or_loads_as_its_vector_says(number: int, case: dict[str, Any]) -> None:
    raw = _raw(_bundle(case, number))
    result = process_one(raw, CONFIG)
    checked = check_one(raw, CONFIG)  # pith-graph verify: the same answer
    if case["message"] is None:
        assert isinstance(result, PaperRows)
        assert checked is None
    else:
        assert result == Rejection("schema_error", case["message"], raw.source)
        assert checked == result
        verified = verify_bundle(orjson.loads(raw.data), KEYRING)  # the Python API's own steps
        with pytest.raises(BundleError) as caught:
            build_rows(verified, KEYRING)
        assert (caught.value.code.value, caught.value.message) == ("schema_error", case["message"])


def _folder(tmp_path: Path) -> Path:
    """One bundle per case, a file each (named after the case's index)."""
    folder = tmp_path / "bundles"
    folder.mkdir()
    for number, case in enumerate(CASES):
        (folder / f"case-{number:02d}.json").write_bytes(orjson.dumps(_bundle(case, number)))
    return folder


def _expected_rejections() -> list[tuple[str, str, str]]:
    return sorted(
        (f"case-{number:02d}.json", "schema_error", case["message"])
        for number, case in enumerate(CASES)
        if case["message"] is not None
    )


def test_both_stores_reject_the_oversized_and_load_the_rest(store: GraphStore, tmp_path: Path) -> None:
    """Neo4j used to stop the whole load at the first (write_failed, exit 3)."""
    report = run([str(_folder(tmp_path))], keyring=KEYRING, store=store, workers=1, batch_size=4)
    assert (report.inserted, report.rejected) == (len(CASES) - len(REJECTED), len(REJECTED))
    assert (
        sorted((Path(r.source.path).name, r.code, r.message) for r in report.rejections)
        == _expected_rejections()
    )
    licenses = {node["license"] for node in store.export().nodes.values() if node["label"] == "Paper"}
    assert "L" * MAX_INDEXED_BYTES in licenses and all(len(text) <= MAX_INDEXED_BYTES for text in licenses)


def test_a_long_source_kind_is_refused_at_its_line_and_both_stores_load_the_rest_alike(
    neo4j_server: Any, tmp_path: Path
) -> None:
    """A source kind of 9,000 bytes reaches Neo4j's index only as the lock alias a load merges
    (``Alias {kind: sourceKind, value: sourceId}``): it stopped every Neo4j load of its batch
    (``write_failed``, no paper written) while memory took it."""
    case = next(case for case in CASES if case["name"].startswith("a source kind of 9000"))
    honest = [orjson.dumps(build_bundle(PaperSpec.example(f"2601.{20000 + n}"), SIGNER)) for n in range(40)]
    path = tmp_path / "batch.jsonl"
    path.write_bytes(b"\n".join([*honest[:20], orjson.dumps(_bundle(case, 0)), *honest[20:]]) + b"\n")
    exports = []
    neo4j_store = neo4j_server.connect()
    try:
        neo4j_store.clear()
        for store in (MemoryStore(), neo4j_store):
            report = run([str(path)], keyring=KEYRING, store=store, workers=1, batch_size=100)
            assert (report.inserted, report.rejected) == (40, 1)
            assert [(str(r.source), r.code, r.message) for r in report.rejections] == [
                (f"{path}:21", "schema_error", case["message"])
            ]
            exports.append(store.export())
    finally:
        neo4j_store.close()
    memory, neo4j = exports
    assert (neo4j.nodes, neo4j.edges) == (memory.nodes, memory.edges)


#: Neo4j 5.26's range-index key limit in bytes, and what it counts per string of an entry
#: besides its UTF-8 (measured: one string of 8,164 bytes fits, two of 8,161 together).
NEO4J_KEY_BYTES, PER_STRING = 8167, 3


def test_every_entry_taken_fits_neo4j_with_its_overhead(neo4j_server: Any) -> None:
    """The real server's limit on the composite Alias key, just under and just over, and the
    limit the loader applies (each entry's strings together) far within it for every entry."""
    widest = max(len(group) for groups in indexed_groups().values() for group in groups)
    assert MAX_INDEXED_BYTES + PER_STRING * widest <= NEO4J_KEY_BYTES
    store = neo4j_server.connect()
    try:
        store.clear()
        with store.driver.session(database=store.database) as session:
            fits = NEO4J_KEY_BYTES - 2 * PER_STRING
            session.run("MERGE (:Alias {kind: 'k', value: $value})", value="v" * (fits - 1)).consume()
            with pytest.raises(neo4j.exceptions.DatabaseError, match="too large to index"):
                session.run("MERGE (:Alias {kind: 'k', value: $value})", value="w" * fits).consume()
        store.clear()
    finally:
        store.close()


def test_the_bulk_import_rejects_them_before_any_csv(tmp_path: Path) -> None:
    """Its constraints could not have been created over such a value."""
    csv = tmp_path / "csv"
    report = bulk_import([str(_folder(tmp_path))], keyring=KEYRING, data=None, csv_only=csv, workers=1)
    assert (report.inserted, report.rejected) == (len(CASES) - len(REJECTED), len(REJECTED))
    assert sorted((Path(r.source.path).name, r.code, r.message) for r in report.rejections) == (
        _expected_rejections()
    )
    written = "".join(path.read_text(encoding="utf-8") for path in csv.glob("*.csv"))
    assert "L" * MAX_INDEXED_BYTES in written and "L" * (MAX_INDEXED_BYTES + 1) not in written
    assert "b" * 5000 not in written


def test_pith_graph_verify_names_the_file_and_the_rule(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps([SIGNER.keyring_entry()]))
    path = tmp_path / "bundles.jsonl"
    path.write_bytes(b"".join(orjson.dumps(_bundle(case, n)) + b"\n" for n, case in enumerate(CASES[:2])))
    done = run_cli("verify", str(path), "--trusted-keys", str(keys))
    assert done.returncode == 1, done.stderr
    assert f"{path}:2" in done.stdout + done.stderr
    assert CASES[1]["message"] in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("size", "refused"), [(MAX_INDEXED_BYTES, False), (MAX_INDEXED_BYTES + 1, True)])
def test_a_keyring_whose_signer_id_neo4j_cannot_index_is_refused(
    tmp_path: Path, size: int, refused: bool
) -> None:
    """Signer.signerId is a uniqueness constraint's key: every bundle of that signer would fail."""
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps([{**SIGNER.keyring_entry(), "signer_id": "s" * size}]))
    path = tmp_path / "one.json"
    path.write_bytes(orjson.dumps(_bundle(CASES[0], 0)))
    done = run_cli("verify", str(path), "--trusted-keys", str(keys))
    if refused:
        assert done.returncode == 2
        assert done.stderr.strip() == (
            f"pith-graph: error: {keys}[0]: signer_id is longer than {MAX_INDEXED_BYTES} bytes of UTF-8, "
            "which Neo4j cannot index"
        )
    else:  # the keyring loads; the bundle names another signer id for the key
        assert done.returncode == 1, done.stderr
        assert f"{path}: untrusted_key: events[0] claims signer" in done.stdout
