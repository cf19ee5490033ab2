"""The README's Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pith_graph.loader.facade import SAMPLES, resolve_keyring
from pith_graph.loader.pipeline import run

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


NEEDS_NEO4J = "# needs: neo4j"


def _param(index: int, code: str) -> Any:
    marks = [pytest.mark.neo4j] if code.startswith(NEEDS_NEO4J) else []
    return pytest.param(code, id=f"block-{index}", marks=marks)


@pytest.mark.parametrize("code", [_param(i, code) for i, code in enumerate(BLOCKS)])
def test_readme_python_block_runs(
    code: str,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if code.startswith(NEEDS_NEO4J):  # the session's server, holding the shipped samples
        server = request.getfixturevalue("neo4j_server")
        store = server.connect()
        try:
            store.clear()
            report = run([SAMPLES], keyring=resolve_keyring(), store=store, workers=1)
            assert report.accepted == 3
        finally:
            store.close()
        monkeypatch.setenv("NEO4J_URI", server.uri)
        if server.password:
            monkeypatch.setenv("NEO4J_PASSWORD", server.password)
    exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    assert capsys.readouterr().out.strip()
