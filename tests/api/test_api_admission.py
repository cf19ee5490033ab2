"""Admission of executions under overload (memory backend, :mod:`pith_graph.api.loops`).

The reviewer's shape: many different heavy queries at once (30 filtered listings with
their facets each, about half a second apiece alone). Before, every one ran at once,
sharing one GIL: thirty such queries all ran out of time (none answered, each ``TIMEOUT``
over a second past the limit, and a hundred only at the hard deadline, limit + 5 s), and a
light query sent meanwhile waited seconds. Now at most two heavy executions run at once,
the others wait in turn (their wait counted in their time), and light ones never wait
behind them.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from pith_graph.testing.corpus import write_corpus
from pith_graph.testing.serving import serving

LIMIT = 4.0
#: Seconds an answer may come past the limit on a shared, loaded 2-core machine (before: the
#: hard deadline, limit + 5 s, for every one). A quiet machine gives 1.7-1.9 s; two CI runs
#: among about 25 gave 3.05 and 3.1 s (44 heavy queries of 0.27 s, the host's cores shared),
#: so 4 s: still a second short of the hard deadline this guards against.
SLACK = 4.0
FACETS = "facets(first: 100) { years { value count } categories { value count } authors { value count } }"
#: Light: planned (from its second request on) and cheap, though not inline (a whole list).
LIGHT = "{ categories { code } }"
#: Light too, but never planned (search documents are not) and each time a new document: its
#: cost is known before it runs only if the view works it out (cost 5).
SEARCH = '{{ search(text: "paper {}", first: 5) {{ totalCount edges {{ node {{ title }} }} }} }}'


def _heavy(k: int) -> str:
    """A different document for each ``k`` (no plan), a fifth of a second of CPU or more."""
    day = f"19{{:02d}}-{1 + k // 28:02d}-{1 + k % 28:02d}"
    aliases = (
        f'x{i}: papers(filter: {{submittedFrom: "{day.format(i)}"}}) {{ totalCount {FACETS} }}'
        for i in range(20)
    )
    return "{ " + " ".join(aliases) + " }"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``pith-graph serve`` (memory, one worker) over a generated corpus, a 2 s limit."""
    folder: Path = tmp_path_factory.mktemp("admission")
    info = write_corpus(folder, 2000, seed=12, workers=2, layout="jsonl")
    env = {"PITH_API_TIMEOUT_SECONDS": str(LIMIT)}
    args = [str(info.directory), "--trusted-keys", str(info.keyring_path), "--port", "0", "--workers", "1"]
    with serving(args, env) as url:
        yield url


def _ask(url: str, query: str) -> tuple[float, dict[str, Any]]:
    """Seconds until the answer's headers came (the server sends them with its body, once
    the answer is built: its time, not this client's reading and parsing of a large body
    among 40 threads on a busy host), and the answer."""
    started = time.monotonic()
    with httpx.stream("POST", f"{url}/graphql", json={"query": query}, timeout=60) as response:
        seconds = time.monotonic() - started
        text = response.read()
    assert response.status_code == 200, text
    body: dict[str, Any] = orjson.loads(text)
    return seconds, body


def test_under_overload_heavy_requests_are_answered_in_turn_and_light_ones_at_once(served: str) -> None:
    alone, body = _ask(served, _heavy(100))
    assert "errors" not in body, body
    if alone > LIMIT / 4:  # two at once, sharing the GIL, would not fit in the limit
        pytest.skip(f"this host is too slow for the premise: one heavy query alone took {alone:.2f} s")
    count = max(16, min(64, math.ceil(3 * LIMIT / alone)))  # three limits' worth of work, however fast
    assert _ask(served, LIGHT)[1]["data"]["categories"]  # its plan, from now on
    answers: list[tuple[float, dict[str, Any]]] = []
    health: list[float] = []
    light: list[float] = []
    searches: list[float] = []  # behind the heavy queue, the first would wait over 1.5 s

    def heavy(k: int) -> None:
        answers.append(_ask(served, _heavy(k)))

    burst = [threading.Thread(target=heavy, args=(k,)) for k in range(count)]
    for thread in burst:
        thread.start()
    time.sleep(1.0)  # the heavy ones are all under way (their documents parsed and costed)
    for _ in range(3):
        started = time.monotonic()
        assert httpx.get(f"{served}/healthz", timeout=60).status_code == 200
        health.append(time.monotonic() - started)
        seconds, body = _ask(served, LIGHT)
        assert body["data"]["categories"]
        light.append(seconds)
        seconds, body = _ask(served, SEARCH.format(len(light)))
        assert "errors" not in body, body
        searches.append(seconds)
        time.sleep(0.2)
    for thread in burst:
        thread.join()

    codes = [body["errors"][0]["extensions"]["code"] if "errors" in body else None for _, body in answers]
    slowest = max(seconds for seconds, _ in answers)
    print(
        f"heavy alone {alone:.2f} s; {count} at once: {codes.count(None)} answered, slowest {slowest:.2f} s"
    )
    print(f"health during the burst: {', '.join(f'{s:.2f}' for s in health)} s")
    print(f"a light query during the burst: {', '.join(f'{s:.2f}' for s in light)} s")
    print(f"a new search document during the burst: {', '.join(f'{s:.2f}' for s in searches)} s")
    assert set(codes) <= {None, "TIMEOUT"}, codes
    assert count * alone > 1.5 * LIMIT, f"not heavy enough to overload this machine ({alone:.2f} s each)"
    assert codes.count(None) >= 2, f"no work done under overload: {codes}"
    assert slowest < LIMIT + SLACK, f"an answer {slowest - LIMIT:.1f} s past the limit"
    # Queued behind the heavy ones, a light query would wait until they drain or time out:
    # about LIMIT - 1 s. Alone it takes 0.1-0.7 s on a loaded host.
    assert max(light) < LIMIT / 2, f"light requests waited behind heavy ones: {light}"
    assert max(health) < 2.5, f"/healthz waited behind heavy requests: {health}"
    assert max(searches) < 1.0, f"a light search waited behind heavy ones: {searches}"
