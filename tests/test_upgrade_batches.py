"""The loop of an upgrade stops on a row its write left unchanged (an analyst's stub
``(:Author {name: …})`` made ``pith-graph load`` and ``schema`` run for ever)."""

from __future__ import annotations

import pytest

from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.stores.upgrade_batches import upgrade_batches

#: What each read returns, in turn; the batches given out, or the error's message.
CASES = {
    "each-write-takes-its-rows-out": ([["a", "b"], ["c"], []], [["a", "b"], ["c"]]),
    "nothing-to-do": ([[]], []),
    "a-row-read-again": (
        [["a", "b"], ["b", "c"], []],
        "1 rows could not be brought up to date ('b'): they are unchanged after their upgrade was written",
    ),
    "the-same-batch-for-ever": (
        [["a", "b", "c", "d"]] * 1000,
        "4 rows could not be brought up to date ('a', 'b', 'c', ...): they are unchanged after "
        "their upgrade was written",
    ),
    "a-hand-edited-key-unhashable": ([[["x"]], [["x"]]], "1 rows could not be brought up to date (['x'])"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_upgrade_loop_ends_or_names_what_it_cannot_change(case: str) -> None:
    reads, expected = CASES[case]
    answers = iter(reads)
    batches = upgrade_batches(lambda: next(answers), lambda row: row, "rows")
    if isinstance(expected, str):
        with pytest.raises(StoreError) as stuck:
            list(batches)
        assert stuck.value.code == StoreErrorCode.WRITE_FAILED
        assert stuck.value.message.startswith(expected)
    else:
        assert list(batches) == expected
