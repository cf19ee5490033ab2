"""Shape's fast path (``_shape_ok``, since 0.9.6) admits only bundles that every field check
admits: each sample bundle, with any one field removed or replaced by a value of another type
or form, is rejected with the same message as the field-by-field checks give, or admitted by
both."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from pith_graph.errors import BundleError
from pith_graph.loader.shape import _check_each, _shape_ok, check_shape

SAMPLES = sorted((Path(__file__).resolve().parents[1] / "loader" / "samples").glob("*.json"))
#: Stand-ins of every JSON type, and strings of the forms shape checks (times, digests, kinds).
REPLACEMENTS: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    2**31,
    1.0,
    "",
    "x",
    "X Y",
    "2026-02-30T00:00:00Z",
    "2026-01-01T00:00:00Z",
    "a" * 64,
    "A" * 64,
    "ed25519",
    "graph_snapshot",
    "record_created",
    [],
    {},
    ["x"],
    [1],
    [{}],
    {"key_id": "k"},
]
Path_ = tuple[str | int, ...]


def _paths(value: Any, path: Path_ = ()) -> Iterator[Path_]:
    """Every member of ``value`` (nested), as a path of keys and indexes."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield (*path, key)
        yield from _paths(child, (*path, key))


def _mutated(bundle: dict[str, Any], path: Path_, replacement: Any, remove: bool) -> dict[str, Any]:
    changed = orjson.loads(orjson.dumps(bundle))
    parent: Any = changed
    for key in path[:-1]:
        parent = parent[key]
    if remove:
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(replacement)
    return changed


def _outcome(check: Any, bundle: dict[str, Any]) -> str | None:
    try:
        check(bundle)
    except BundleError as err:
        return f"{err.code.value}: {err.message}"
    return None


def _variants(bundle: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield bundle
    for path in _paths(bundle):
        yield _mutated(bundle, path, None, remove=True)
        for replacement in REPLACEMENTS:
            yield _mutated(bundle, path, replacement, remove=False)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda path: path.stem)
def test_the_fast_path_admits_only_what_every_field_check_admits(sample: Path) -> None:
    bundle = orjson.loads(sample.read_bytes())
    assert _shape_ok(bundle)  # the common case takes it
    checked = admitted = 0
    for variant in _variants(bundle):
        expected = _outcome(_check_each, variant)
        if _shape_ok(variant):
            assert expected is None, f"the fast path admitted what the field checks reject: {expected}"
            admitted += 1
        assert _outcome(check_shape, variant) == expected
        checked += 1
    assert checked > 5000 and admitted > 100  # both outcomes were met many times
