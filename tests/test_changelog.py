"""CHANGELOG.md keeps up with the version: its newest section is ``pyproject.toml``'s version,
and its sections run newest first, so a bump without its changelog entry fails here."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHANGELOG = ROOT / "CHANGELOG.md"
SECTION = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.M)


def _versions() -> list[tuple[int, ...]]:
    return [
        tuple(int(part) for part in v.split(".")) for v, _ in SECTION.findall(CHANGELOG.read_text("utf-8"))
    ]


def test_the_newest_section_is_the_package_version() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    assert _versions(), "CHANGELOG.md has no '## [x.y.z] - YYYY-MM-DD' section"
    assert ".".join(map(str, _versions()[0])) == version


def test_sections_run_newest_first_each_version_once() -> None:
    versions = _versions()
    assert versions == sorted(set(versions), reverse=True)


def test_the_readme_points_to_it() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    assert "[CHANGELOG.md](CHANGELOG.md)" in readme
    assert "`CHANGELOG.md`" in readme.split("## Development", 1)[1]
