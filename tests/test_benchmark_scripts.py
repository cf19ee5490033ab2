"""Every benchmark is a script anyone can rerun: each one with a command line answers
``--help`` with its usage (exit 0), without a server, a corpus or a traceback; the modules
the others import (no ``__main__``) import cleanly. Run in this process, as ``python
benchmarks/NAME.py --help`` would (the libraries they import are loaded once)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))


def _runnable(script: Path) -> bool:
    return '__name__ == "__main__"' in script.read_text()


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.name for script in SCRIPTS])
def test_a_benchmark_answers_help(
    script: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(script.parent))  # as python puts a script's folder first
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    if not _runnable(script):
        runpy.run_path(str(script))
        return
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(str(script), run_name="__main__")
    assert exited.value.code in (0, None)
    assert capsys.readouterr().out.startswith("usage: ")


def test_there_are_benchmarks_to_check() -> None:
    assert sum(_runnable(script) for script in SCRIPTS) >= 15
