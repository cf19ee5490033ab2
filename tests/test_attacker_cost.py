"""What one trusted, low-ranked key may make a load write: the per-bundle author limit.

A 1 MiB bundle could name about 90,000 authors: one Neo4j transaction of about 300 MB (a
load stops with ``write_failed`` where the transaction memory is smaller) and, in the API,
every author on it pays for all of them in ``coauthors``. ``MAX_AUTHORS`` bounds it; the
measurements are ``benchmarks/bench_attacker_cost.py``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import orjson
import pytest

from pith_graph.errors import BundleError, RejectCode
from pith_graph.loader.keyring import PinnedKey, default_keyring
from pith_graph.loader.parse import parse_bundle
from pith_graph.loader.pipeline import MAX_BATCH_ROWS, run
from pith_graph.loader.rows import PaperRows
from pith_graph.loader.stores.base import AppliedBatch
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.verify import MAX_AUTHORS, verify_bundle
from pith_graph.testing.signer import PaperSpec, SignerIdentity, build_bundle

HIGH = SignerIdentity.from_seed(b"cost-high", key_id="cost-high-key", signer_id="high.invalid")
LOW = SignerIdentity.from_seed(b"cost-low", key_id="cost-low-key", signer_id="low.invalid")
# built by hand: HIGH is pinned with the type its events claim, pith_registry, which keys files and resolve_keyring keep for pith.science
KEYRING = default_keyring().with_keys(
    [
        PinnedKey(HIGH.key_id, HIGH.public_key, HIGH.signer_id, signer_type=HIGH.signer_type),
        PinnedKey(LOW.key_id, LOW.public_key, LOW.signer_id),
    ]
)


def _names(count: int) -> list[str]:
    return [f"P{n:x}" for n in range(count)]


def _bundle(arxiv_id: str, authors: list[str], signer: SignerIdentity = LOW) -> bytes:
    return orjson.dumps(build_bundle(PaperSpec.example(arxiv_id, authors=authors), signer))


def test_a_bundle_naming_more_than_max_authors_is_a_schema_error() -> None:
    over = _bundle("2601.00001", _names(MAX_AUTHORS + 1))
    assert len(over) < 1 << 20  # within --max-bytes: only the count refuses it
    with pytest.raises(BundleError) as raised:
        verify_bundle(parse_bundle(over), KEYRING)
    assert raised.value.code is RejectCode.SCHEMA_ERROR
    assert f"names {MAX_AUTHORS + 1} authors, over the limit of {MAX_AUTHORS}" in str(raised.value)


def test_max_authors_and_blank_parts_are_accepted() -> None:
    """Exactly MAX_AUTHORS names verify; blank parts between them (which name nobody) do not count."""
    names = _names(MAX_AUTHORS)
    names[100:100] = ["", " ", "\u3000"]
    verified = verify_bundle(parse_bundle(_bundle("2601.00002", names)), KEYRING)
    assert (
        verified.bundle["events"][1]["payload"]["graph_snapshot"]["paper"]["authors_text"].count(",")
        > MAX_AUTHORS
    )


def test_a_load_rejects_the_wide_bundle_and_loads_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "bundles.jsonl"
    honest = _bundle("2601.00003", ["Bea Honest", "Ann Lee"], HIGH)
    wide = _bundle("2601.00004", ["Bea Honest", *_names(MAX_AUTHORS + 5)])
    path.write_bytes(honest + b"\n" + wide + b"\n")
    store = MemoryStore()
    report = run([str(path)], keyring=KEYRING, store=store, workers=1)
    assert (report.inserted, report.rejected) == (1, 1)
    assert [r.code for r in report.rejections] == [RejectCode.SCHEMA_ERROR]
    assert store.counts().nodes["Author"] == 2


class _BatchSizes(MemoryStore):
    """A memory store that records the author rows of every batch it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    def apply(self, batch: Sequence[PaperRows], rank: Callable[[str], int]) -> AppliedBatch:
        self.batches.append(sum(len(rows.authors) for rows in batch))
        return super().apply(batch, rank)


def test_a_batch_of_wide_bundles_is_written_in_parts(tmp_path: Path) -> None:
    """Five bundles of 20,000 authors each, under the default batch size: the loader writes the
    batch once it holds MAX_BATCH_ROWS rows, so no Neo4j transaction holds them all (ten such
    bundles in one took a Neo4j of 1 GB heap down), and the graph is the one batches of one
    bundle make."""
    wide = [_bundle(f"2601.{10 + n:05d}", [f"W{n} {name}" for name in _names(20_000)]) for n in range(5)]
    path = tmp_path / "wide.jsonl"
    path.write_bytes(b"".join(data + b"\n" for data in wide))
    store, one_by_one = _BatchSizes(), MemoryStore()
    report = run([str(path)], keyring=KEYRING, store=store, workers=1)
    run([str(path)], keyring=KEYRING, store=one_by_one, workers=1, batch_size=1)
    assert report.inserted == 5
    assert sum(store.batches) == 100_000
    assert len(store.batches) > 1 and max(store.batches) <= MAX_BATCH_ROWS
    assert store.export() == one_by_one.export()
