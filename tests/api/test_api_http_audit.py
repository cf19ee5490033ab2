"""GraphQL over HTTP, to the letter: the ``graphql-http`` project's server audit, run by Node
against a real uvicorn, passes every check with no warning.

``tests/http_audit`` pins graphql-http (``package-lock.json``); ``npm ci`` installs it once
into its git-ignored ``node_modules`` (npm's cache serves later installs).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from apitest import Api, corpus, memory_api, memory_reader  # noqa: F401 (fixtures)

pytestmark = pytest.mark.node

AUDIT = Path(__file__).resolve().parents[1] / "http_audit"


def _node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("Node.js and npm are required under CI")
        pytest.skip("needs Node.js and npm")
    if not (AUDIT / "node_modules" / "graphql-http").is_dir():
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=AUDIT,
            check=True,
            timeout=600,
            capture_output=True,
        )
    return node


def test_graphql_http_audit_passes_without_warnings(memory_api: Api) -> None:
    node = _node()
    done = subprocess.run(
        [node, str(AUDIT / "audit.mjs"), f"{memory_api.url}/graphql"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    results = json.loads(done.stdout)
    assert len(results) >= 60  # graphql-http 1.23: 61 audits
    not_ok = [(r["id"], r["status"], r["name"], r["reason"]) for r in results if r["status"] != "ok"]
    assert not_ok == []
