"""What a command imports: the Neo4j driver's optional extras only where they can be used.

With the ``analysis`` extra installed (numpy, scipy, pandas), importing the driver took 3 s,
2.3 s of it numpy and pandas, which it imports for ``Result.to_df`` and numpy or pandas
parameters: every command that touches Neo4j started 2 s later for what no command uses.
``entry`` now makes those imports fail in its own process; a script importing pith-graph
keeps them.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest

PROJECT = Path(__file__).resolve().parent.parent
SAMPLES = PROJECT / "loader" / "samples"
EXTRAS = ("numpy", "pandas", "pyarrow")

#: Runs ``entry`` with the arguments given, then prints which modules the run left loaded.
_HARNESS = textwrap.dedent(
    """
    import sys, orjson
    from pith_graph.cli import entry
    sys.argv = ["pith-graph", *sys.argv[1:]]
    try:
        entry()
    except SystemExit as done:
        code = done.code
    loaded = sorted(name for name in ("neo4j", "numpy", "pandas", "pyarrow", "scipy")
                    if sys.modules.get(name) is not None)
    sys.__stdout__.write("\\n" + orjson.dumps({"code": code, "loaded": loaded}).decode() + "\\n")
    """
)


def _run(*args: str) -> tuple[int, list[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", _HARNESS, *args], capture_output=True, text=True, timeout=120, check=False
    )
    last = done.stdout.strip().splitlines()[-1]
    found = orjson.loads(last)
    return found["code"], found["loaded"], done.stderr


def test_the_analysis_extra_is_installed_here() -> None:
    """The tests below mean something only where numpy and pandas are there to be imported."""
    for name in EXTRAS[:2]:
        __import__(name)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("load", "--backend", "neo4j", "--uri", "bolt://127.0.0.1:1", str(SAMPLES)), id="load"),
        pytest.param(("schema", "--uri", "bolt://127.0.0.1:1"), id="schema"),
        pytest.param(("export", "--uri", "bolt://127.0.0.1:1", "--save", "{tmp}/export.json"), id="export"),
    ],
)
def test_a_command_that_opens_the_driver_imports_none_of_its_extras(
    args: tuple[str, ...], tmp_path: Path
) -> None:
    code, loaded, stderr = _run(*(arg.replace("{tmp}", str(tmp_path)) for arg in args))
    assert code == 3, stderr  # the driver was opened, and found no server
    assert "cannot reach Neo4j at bolt://127.0.0.1:1" in stderr, stderr
    assert "neo4j" in loaded
    assert not set(loaded) & set(EXTRAS), loaded


def test_a_memory_load_and_export_work_without_them(tmp_path: Path) -> None:
    saved = tmp_path / "graph.json"
    code, loaded, stderr = _run("load", str(SAMPLES), "--save", str(saved))
    assert code == 0, stderr
    assert not set(loaded) & set(EXTRAS), loaded
    graph = orjson.loads(saved.read_bytes())
    assert len(graph["nodes"]) == 46


def test_a_script_importing_pith_graph_keeps_the_drivers_extras() -> None:
    script = (
        "import pith_graph.cli, pith_graph.loader.stores.neo4j_connect, neo4j._optional_deps as d; "
        "print(d.pd is not None, d.np is not None)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["True", "True"]
