"""The Docker files, read without a Docker engine: every path the Dockerfile COPYs exists and
is in the build context that .dockerignore leaves (and secrets and build outputs are not),
no compose command line carries a password, and the folders the pith-graph services write
to through named volumes exist in the image, owned by its user."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
DOCKERFILE = PROJECT / "docker" / "Dockerfile"
COMPOSE = PROJECT / "docker" / "compose.yml"


def _pattern(text: str) -> re.Pattern[str]:
    """A .dockerignore pattern as Docker's matcher reads it: `**` any number of folders,
    `*` and `?` within one name, anchored at the context's root."""
    text = text.strip("/")
    out = ""
    i = 0
    while i < len(text):
        if text.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif text.startswith("**", i):
            out, i = out + ".*", i + 2
        elif text[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif text[i] == "?":
            out, i = out + "[^/]", i + 1
        elif text[i] == "[":
            end = text.index("]", i)
            out, i = out + text[i : end + 1], end + 1
        else:
            out, i = out + re.escape(text[i]), i + 1
    return re.compile(out)


def _rules() -> list[tuple[bool, re.Pattern[str]]]:
    lines = (PROJECT / ".dockerignore").read_text().splitlines()
    rules = []
    for line in (raw.strip() for raw in lines):
        if line and not line.startswith("#"):
            negated = line.startswith("!")
            rules.append((negated, _pattern(line.removeprefix("!"))))
    return rules


def _sent(path: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Whether the file at `path` (relative to the context) reaches the daemon: the last
    rule matching it or one of its folders decides."""
    parts = path.split("/")
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for negated, rule in rules:
        if any(rule.fullmatch(candidate) for candidate in candidates):
            excluded = not negated
    return not excluded


def _copy_sources() -> list[str]:
    sources = []
    for line in DOCKERFILE.read_text().splitlines():
        words = shlex.split(line) if line.startswith("COPY ") else []
        if words and not any(word.startswith("--from") for word in words):
            sources += [word for word in words[1:-1] if not word.startswith("--")]
    return sources


def test_every_copied_path_exists_and_is_in_the_context() -> None:
    rules = _rules()
    sources = _copy_sources()
    assert {"pyproject.toml", "README.md", "loader", "api", "loader/samples"} <= set(sources)
    for source in sources:
        found = PROJECT / source
        assert found.exists(), source
        files = [found] if found.is_file() else [p for p in found.rglob("*") if p.is_file()]
        kept = [
            p
            for p in files
            if "__pycache__" not in p.parts and "target" not in p.parts and p.suffix not in {".so", ".pyc"}
        ]
        assert kept, source
        for file in kept:
            assert _sent(file.relative_to(PROJECT).as_posix(), rules), file


@pytest.mark.parametrize(
    "path",
    [
        ".neo4j/password",
        ".neo4j/data/databases/neo4j/neostore",
        ".venv/bin/python",
        ".git/config",
        "scripts/neo4j-launcher/target/neo4j.jsa",
        "loader/ed25519/target/release/libed25519.so",
        "loader/_ed25519.cpython-311-x86_64-linux-gnu.so",
        "loader/__pycache__/parse.cpython-311.pyc",
        "api/reads/__pycache__/search.cpython-311.pyc",
        "pith_graph.egg-info/PKG-INFO",
        "benchmarks/results/bench_api.json",
        "artifacts/report.json",
        "build/lib/pith_graph/__init__.py",
        ".hypothesis/examples/x",
        "docker/.env",
    ],
)
def test_secrets_and_build_outputs_stay_out_of_the_context(path: str) -> None:
    assert not _sent(path, _rules())


def _services() -> dict[str, list[str]]:
    """The lines of each compose service, by name (a two-space indented key under services:)."""
    text = COMPOSE.read_text().split("\nservices:\n", 1)[1].split("\nvolumes:\n", 1)[0]
    services: dict[str, list[str]] = {}
    name = ""
    for line in text.splitlines():
        key = re.match(r"^  ([\w-]+):", line)
        if key:
            name = key.group(1)
            services[name] = []
        elif name:
            services[name].append(line)
    return services


def test_no_command_line_carries_a_password() -> None:
    services = _services()
    assert "neo4j" in services and "import-csv" in services
    for name, lines in services.items():
        for line in lines:
            if line.lstrip().startswith("#"):
                continue
            assert not re.search(r"(?:^|\s)(?:-p|--password)(?:\s|=)", line), f"{name}: {line.strip()}"
            if line.lstrip().startswith("- "):  # an item of a command, a test, a volume or a port
                for secret in re.finditer(r"\$+\{?\w*(?:PASSWORD|AUTH)", line):
                    before = line[: secret.start()].rstrip('"')
                    assert before.endswith("="), f"{name}: a secret as an argument: {line.strip()}"


def test_named_volumes_the_image_writes_to_are_its_users() -> None:
    owned = set()
    for match in re.finditer(r"install -d -o pith -g pith((?: /[\w./-]+)+)", DOCKERFILE.read_text()):
        owned |= set(match.group(1).split())
    written = set()
    for name, lines in _services().items():
        if not any(line.strip() == "image: pith-graph:local" for line in lines):
            continue
        for line in lines:
            volume = re.match(r'^\s+- "?([A-Za-z][\w.-]*):(/[^:"]+)(:ro)?"?\s*$', line)
            if volume and not volume.group(3):
                written.add((name, volume.group(2)))
    assert ("import-csv", "/import") in written
    for name, target in written:
        assert target in owned, f"{name} writes to {target}, which the image does not make for pith"


def _block(lines: list[str], key: str) -> list[str]:
    """The lines under ``key:`` (indented deeper than it) in a service's lines."""
    at = next(n for n, line in enumerate(lines) if line.strip() == f"{key}:")
    depth = len(lines[at]) - len(lines[at].lstrip())
    block = []
    for line in lines[at + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) <= depth:
            break
        block.append(line.strip())
    return block


def test_the_api_starts_only_after_the_loader_loaded_every_bundle() -> None:
    """README: a rejected bundle makes the loader exit 1 (``load`` does) and the api does not
    start; nor does a failed loader start again, loading the same bundles in a loop."""
    services = _services()
    loader, api = services["loader"], services["api"]
    assert '    command: ["pith-graph", "load", "/bundles", "--backend", "neo4j"]' in loader
    assert '    restart: "no"' in loader
    depends = _block(api, "depends_on")
    assert depends[depends.index("loader:") + 1] == "condition: service_completed_successfully", depends
    assert depends[depends.index("neo4j:") + 1] == "condition: service_healthy", depends
