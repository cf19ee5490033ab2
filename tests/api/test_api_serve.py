"""``pith-graph serve``: loads before it listens, answers, and stops cleanly on SIGTERM."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import httpx


def test_serve_samples_then_sigterm() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "pith_graph", "serve", "--port", "0", "--workers", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    output: list[str] = []
    try:
        deadline = time.monotonic() + 60
        url = None
        while url is None and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            output.append(line)
            found = re.search(r"Uvicorn running on (http://\S+)", line)
            if found:
                url = found.group(1)
        assert url is not None, "".join(output)
        assert any("loaded 3 papers" in line for line in output), output
        assert httpx.get(f"{url}/healthz").json() == {"status": "ok", "backend": "memory"}
        body = httpx.post(
            f"{url}/graphql", json={"query": '{ paper(id: "doi:10.48550/ARXIV.2201.07821") { title } }'}
        )
        assert body.json()["data"]["paper"]["title"].startswith("Building a Performance Model")
    finally:
        process.send_signal(signal.SIGTERM)
        rest, _ = process.communicate(timeout=30)
    output.append(rest)
    assert process.returncode == 0, "".join(output)
    log = "".join(output)
    assert "Application shutdown complete" in log
    assert "Traceback" not in log


def test_serve_neo4j_refuses_paths() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pith_graph", "serve", "--backend", "neo4j", "some/path"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "pith-graph load" in done.stderr
    assert "Traceback" not in done.stderr
