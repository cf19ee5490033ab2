"""As a user installs it: the wheel holds one import package, ``pith_graph``, and nothing
else at the top of site-packages; it installs beside PyPI's ``schema`` package, and both,
the ``pith-graph`` command and a script work from another folder."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel, and what its build printed (``-v``: the build backend's warnings too)."""
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(out), str(PROJECT)],
        check=True,
        capture_output=True,
        text=True,
    )
    (found,) = out.glob("pith_graph-*.whl")
    return found, done.stdout + done.stderr


@pytest.fixture(scope="module")
def wheel(built: tuple[Path, str]) -> Path:
    return built[0]


def test_the_build_lists_every_folder_it_installs(built: tuple[Path, str]) -> None:
    """Folders of data only (the samples, GraphiQL's files) are packages of the configuration
    too: setuptools warned about each one that was not, and says it may stop installing them."""
    log = built[1]
    assert "Successfully built pith-graph" in log or "Saved " in log, log[-2000:]
    assert "absent from the `packages` configuration" not in log, log[-4000:]


def test_wheel_installs_one_import_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/", 1)[0] for name in names}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"pith_graph"}
    for data in (
        "pith_graph/loader/samples/1907.13257.json",
        "pith_graph/schema/neo4j-schema.cypher",
        "pith_graph/api/schema.graphql",
        "pith_graph/api/static/graphiql.html",
        "pith_graph/api/reads/word_classes.txt",  # Lucene's word classes, for search and typeahead
        "pith_graph/api/reads/ascii_folding.txt",
        "pith_graph/loader/_ed25519.pyi",  # the Rust extensions' types, for mypy in users' code
        "pith_graph/api/_json_size.pyi",
        "pith_graph/py.typed",  # PEP 561: without it, mypy ignores the package's hints in users' code
    ):
        assert data in names
    for native in ("pith_graph/loader/_ed25519.", "pith_graph/api/_json_size."):
        assert [name for name in names if name.startswith(native) and name.endswith(".so")], native
    assert not [name for name in names if "/tests/" in name or name.startswith("tests/")]
    rooms = {
        "pith_graph": "pith_graph",
        "loader": "pith_graph/loader",
        "schema": "pith_graph/schema",
        "api": "pith_graph/api",
    }
    for folder, installed in rooms.items():
        for source in (PROJECT / folder).rglob("*.py"):
            if "__pycache__" not in source.parts:
                assert f"{installed}/{source.relative_to(PROJECT / folder).as_posix()}" in names, source


def test_installed_beside_pypi_schema_from_another_folder(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel), "schema"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = (
        "import schema, pith_graph\n"
        "assert schema.Schema(int).validate(7) == 7\n"
        "G, report = pith_graph.load_graph([pith_graph.SAMPLES], workers=1)\n"
        "C = pith_graph.coauthorship_graph(G)\n"
        "from pith_graph.loader.signatures import NATIVE\n"
        "from pith_graph.api import answer_size\n"
        "print(report.accepted, report.rejected, C.number_of_nodes() > 0, NATIVE, answer_size.NATIVE)\n"
    )
    ran = subprocess.run(
        [str(python), "-c", script], cwd=elsewhere, capture_output=True, text=True, check=False
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    # signatures checked by the extension, answers measured by the other
    assert ran.stdout.split() == ["3", "0", "True", "True", "True"]
    cli = subprocess.run(
        [str(env_dir / "bin" / "pith-graph"), "verify", "--json", "--workers", "1", "-"],
        input=(PROJECT / "loader" / "samples" / "1907.13257.json").read_bytes(),
        cwd=elsewhere,
        capture_output=True,
        check=False,
    )
    assert cli.returncode == 0, cli.stderr[-2000:]
    assert b'"verified": 1' in cli.stdout
    site = next((env_dir / "lib").glob("python3*/site-packages"))
    ours = {p.name for p in site.iterdir()} - {
        p.name for p in site.iterdir() if not p.name.startswith("pith")
    }
    assert ours == {"pith_graph", f"pith_graph-{wheel.name.split('-')[1]}.dist-info"}
