"""``pith_graph.testing.serving``, the harness the API tests start ``serve`` with: a server
that will not stop is killed and reaped, and the failure says what it printed."""

from __future__ import annotations

import gc
import sys
import time
import warnings

import pytest

from pith_graph.testing.serving import serving

#: Says what serve says once it listens, then ignores SIGTERM.
DEAF = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("Uvicorn running on http://127.0.0.1:1 (Press CTRL+C to quit)", flush=True)
time.sleep(120)
"""


def test_a_server_that_ignores_sigterm_is_killed_and_leaves_nothing_to_collect() -> None:
    """Before, the harness raised TimeoutExpired and left the process running: the Popen was
    collected in a later test, whose run failed on its ResourceWarnings (CI)."""
    started = time.monotonic()
    with (
        pytest.raises(AssertionError, match="did not stop within 1 s of SIGTERM") as caught,
        serving([], stop_timeout=1, command=[sys.executable, "-c", DEAF]),
    ):
        pass
    assert "Uvicorn running on http://127.0.0.1:1" in str(caught.value)  # what it printed
    assert time.monotonic() - started < 60
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        del caught
        gc.collect()
    assert [str(w.message) for w in seen if issubclass(w.category, ResourceWarning)] == []
