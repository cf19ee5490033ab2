"""What an export selects, taken before anything connects: dates as the stored texts they
bound (papers store whole seconds), and the selections that cannot be (usage errors)."""

from __future__ import annotations

from typing import Any

import pytest

from pith_graph import export_graph
from pith_graph.errors import StoreError, UsageError
from pith_graph.loader.export import Selection


def test_years_before_1000_are_stored_texts_that_sort_as_times() -> None:
    assert Selection(submitted_from="0999-01-01", submitted_to="0999-12-31T10:00:00+01:00").bounds() == (
        "0999-01-01T00:00:00Z",
        "0999-12-31T09:00:01Z",
    )


@pytest.mark.parametrize(
    ("given", "low", "high"),
    [
        pytest.param("2020-12-31", "2020-12-31T00:00:00Z", "2021-01-01T00:00:00Z", id="extended-date"),
        pytest.param("20201231", "2020-12-31T00:00:00Z", "2021-01-01T00:00:00Z", id="basic-date"),
        pytest.param("2020-W53-4", "2020-12-31T00:00:00Z", "2021-01-01T00:00:00Z", id="week-date"),
        pytest.param("2020-12-31T10:00:00Z", "2020-12-31T10:00:00Z", "2020-12-31T10:00:01Z", id="date-time"),
        pytest.param("2020-12-31T10:00:00.5Z", "2020-12-31T10:00:01Z", "2020-12-31T10:00:01Z", id="fraction"),
    ],
)
def test_every_iso_date_form_is_a_whole_day_and_a_fraction_rounds_inwards(
    given: str, low: str, high: str
) -> None:
    """Papers store whole seconds: a bare date in any ISO 8601 form is its whole day (a basic
    ``20201231`` or a week date was taken as that day's first second: ``--to`` dropped the
    day), and a bound with a fraction keeps exactly the seconds within it (``--from`` took the
    second before)."""
    assert Selection(submitted_from=given, submitted_to=given).bounds() == (low, high)


@pytest.mark.parametrize("to", ["9999-12-31", "9999-12-31T23:59:59Z"])
def test_a_bound_at_the_last_second_there_is_bounds_nothing(to: str) -> None:
    assert Selection(submitted_from="2024-01-31T10:00:00+01:00", submitted_to=to).bounds() == (
        "2024-01-31T09:00:00Z",
        None,
    )


@pytest.mark.parametrize(
    "selection",
    [
        pytest.param({"submitted_from": "yesterday"}, id="bad-date"),
        pytest.param({"submitted_to": "2019-W01"}, id="a-week-not-a-day"),  # was its Monday alone
        pytest.param({"submitted_from": "2019W01"}, id="a-basic-week-not-a-day"),
        pytest.param({"submitted_to": "2019-W01T23:59:59Z"}, id="a-week-and-a-time-not-a-day"),
        pytest.param({"submitted_from": ""}, id="empty-from"),  # was taken as no bound
        pytest.param({"submitted_to": ""}, id="empty-to"),
        pytest.param({"submitted_from": "9999-12-31T23:59:59-23:59"}, id="after-year-9999-in-utc"),
        pytest.param({"submitted_to": "0001-01-01T00:00:00+00:01"}, id="before-year-1-in-utc"),
        pytest.param({"hops": 2}, id="hops-without-author"),
        pytest.param({"author": "x", "hops": 7}, id="hops-above-6"),
        pytest.param({"author": "x", "hops": 0}, id="no-hops"),
    ],
)
def test_impossible_selections_are_usage_errors(selection: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        Selection(**selection)
    with pytest.raises(UsageError):  # not a StoreError: refused before connecting (nothing listens on 9)
        export_graph("bolt://127.0.0.1:9", password="unused", **selection)


def test_six_hops_is_a_selection() -> None:
    """The README's limit: ``--hops`` above 6 is refused, 6 is not (nothing listens on 9:
    the store fails, after the selection was taken)."""
    assert Selection(author="x", hops=6).hops == 6
    with pytest.raises(StoreError):
        export_graph("bolt://127.0.0.1:9", password="unused", author="x", hops=6)
