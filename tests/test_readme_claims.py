"""The README names what the code has, with the code's defaults: every option of every
command, every environment variable the package and ``scripts/neo4j`` read (with the
defaults of the latter), the API's limits and their defaults, the store and API error codes,
the numbers of the command line's ranges, and every module of the package (the Development
section's layout tree). Text checks only: no server, no load."""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

import pytest

import pith_graph.api.settings as settings_module
from pith_graph.api.cost import LIST_SIZES
from pith_graph.api.inputs import MAX_FILTER_CATEGORIES
from pith_graph.api.limits import RequestLimits
from pith_graph.api.settings import ServerSettings
from pith_graph.cli import build_parser
from pith_graph.cli.commands import DEFAULT_BATCH_SIZES
from pith_graph.cli.options import MAX_BATCH_SIZE, MAX_BYTES_LIMIT, MAX_CLOCK_SKEW, MAX_WORKERS, neo4j_option
from pith_graph.errors import ApiError, StoreErrorCode
from pith_graph.loader.parse import DEFAULT_MAX_BYTES
from pith_graph.loader.stores.neo4j_connect import LOAD_TIMEOUTS, MAX_RETRY_SECONDS, READ_TIMEOUTS
from pith_graph.loader.verify import DEFAULT_CLOCK_SKEW

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text("utf-8")
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
ENV_NAME = r"(?:NEO4J|PITH)_[A-Z0-9_]*[A-Z0-9]"


def _section(start: str, end: str) -> str:
    assert README.count(start) == 1, start
    return README.split(start, 1)[1].split(end, 1)[0]


def _commands(monkeypatch: pytest.MonkeyPatch) -> dict[str, argparse.ArgumentParser]:
    for name in ("NEO4J_URI", "NEO4J_USER", "NEO4J_DATABASE", "NEO4J_DATA"):
        monkeypatch.delenv(name, raising=False)  # the defaults come from them
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings if s.startswith("--") and s != "--help"}


# -- the command line ---------------------------------------------------------------------------


def test_every_command_and_every_option_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    named = set(OPTION.findall(README))
    unnamed = {
        f"{command} {option}"
        for command, parser in _commands(monkeypatch).items()
        for option in _options(parser)
        if option not in named
    }
    assert unnamed == set()
    assert {c for c in _commands(monkeypatch) if f"pith-graph {c}" not in README} == set()


def test_options_shown_with_a_command_are_that_command_s(monkeypatch: pytest.MonkeyPatch) -> None:
    commands = _commands(monkeypatch)
    wrong = []
    for line in README.splitlines():
        for found in re.finditer(rf"pith-graph ({'|'.join(commands)})\b([^`#\n]*)", line):
            command, rest = found.groups()
            wrong += [f"{command} {o}" for o in OPTION.findall(rest) if o not in _options(commands[command])]
    assert wrong == []


def test_the_neo4j_load_line_shows_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pith-graph load PATH… --backend neo4j [--opt VALUE] …``: each VALUE given as a value,
    not a placeholder, is what the option is when left out."""
    block = _section("### Loading\n\n```bash\n", "```")
    usage = block.split("pith-graph schema", 1)[0].replace("\\\n", " ")
    assert "--backend neo4j" in usage
    shown = dict(re.findall(r"\[(--[a-z-]+) ([^\]\s]+)\]", usage))
    load = _commands(monkeypatch)["load"]
    parsed = load.parse_args(["x", "--backend", "neo4j"])
    args = vars(parsed)
    defaults = {option: args[a.dest] for a in load._actions for option in a.option_strings if a.dest in args}
    defaults["--batch-size"] = DEFAULT_BATCH_SIZES["neo4j"]  # None: chosen by backend
    for dest in ("uri", "user", "database"):  # None: filled in when the database is used
        defaults[f"--{dest}"] = neo4j_option(parsed, dest)
    values = {option: value for option, value in shown.items() if not value.isupper()}
    assert set(values) >= {"--uri", "--user", "--database", "--batch-size"}
    assert values == {option: str(defaults[option]) for option in values}


def test_the_command_line_numbers_are_the_code_s() -> None:
    mib = 1 << 20
    assert (
        f"`--batch-size` bundles (default {DEFAULT_BATCH_SIZES['neo4j']}; {DEFAULT_BATCH_SIZES['memory']} in memory)"
        in README
    )
    assert f"`--batch-size` up to {MAX_BATCH_SIZE:,}" in README
    assert f"`--workers` from 1 to {MAX_WORKERS} " in README
    assert (
        f"over `--max-bytes` (default {DEFAULT_MAX_BYTES // mib} MiB, at most {MAX_BYTES_LIMIT // mib} MiB"
        in README
    )
    years = MAX_CLOCK_SKEW / (365.25 * 86400)
    assert f"`--clock-skew` seconds (default {DEFAULT_CLOCK_SKEW:g}, at most {years:g} years)" in README


# -- environment variables ----------------------------------------------------------------------


def _package_source() -> str:
    folders = ("pith_graph", "loader", "api", "schema")
    return "".join(p.read_text("utf-8") for f in folders for p in sorted((ROOT / f).rglob("*.py")))


def test_every_environment_variable_the_package_reads_is_named() -> None:
    read = set(re.findall(rf"""env(?:iron)?(?:\.get\(|\[)\s*"({ENV_NAME})\"""", _package_source()))
    assert {"NEO4J_URI", "NEO4J_PASSWORD_FILE", "NEO4J_IMPORT_HEAP", "PITH_API_HOST"} <= read
    assert {name for name in read if f"`{name}`" not in README} == set()


def _neo4j_table() -> dict[str, str]:
    """README's ``scripts/neo4j`` variables: name -> default as written (backticks dropped)."""
    table = _section("| variable | meaning | default |", "\n\n")
    rows: dict[str, str] = {}
    for names, default in re.findall(r"^\| (`[^|]*`) \| .* \| ([^|]*) \|$", table, flags=re.M):
        defaults = [d.strip().strip("`") for d in default.split(",")]
        found = re.findall(rf"`({ENV_NAME})`", names)
        rows.update(
            zip(found, defaults if len(defaults) == len(found) else defaults * len(found), strict=True)
        )
    return rows


def test_the_neo4j_table_lists_every_variable_of_scripts_neo4j_with_its_default() -> None:
    script = (ROOT / "scripts/neo4j").read_text("utf-8")
    header = script.split("# Environment", 1)[1].split("\nset -", 1)[0]
    documented = set(re.findall(rf"^#   ({ENV_NAME}) ", header, flags=re.M))
    launcher = ROOT / "scripts/neo4j-launcher/src/main/java/dev/pith/neo4j/Launcher.java"
    code_defaults = dict(re.findall(rf'"\$\{{({ENV_NAME}):-([^}}"$]+)\}}"', script))
    code_defaults |= dict(re.findall(rf'env\("({ENV_NAME})", "([^"]+)"\)', launcher.read_text("utf-8")))
    table = _neo4j_table()
    assert documented - set(table) == set()
    assert {"NEO4J_HEAP", "NEO4J_PAGECACHE", "NEO4J_TX_TIMEOUT", "NEO4J_START_TIMEOUT"} <= set(code_defaults)
    assert {name: table.get(name) for name in code_defaults if name in documented} == {
        name: default for name, default in code_defaults.items() if name in documented
    }


# -- the API's limits ---------------------------------------------------------------------------


def _number(text: str) -> float:
    found = re.fullmatch(r"([0-9][0-9,.]*)( KiB| s)?", text.strip())
    assert found is not None, f"not a number of bytes, KiB or seconds: {text!r}"
    value, unit = found.groups()
    return float(value.replace(",", "")) * (1024 if unit == " KiB" else 1)


def test_the_limits_table_gives_the_code_s_defaults() -> None:
    table = _section("| limit | default | variable |", "\n\n")
    rows = {
        variable: default
        for default, variable in re.findall(r"^\| .* \| ([^|]+) \| `(PITH_API_\w+)` \|$", table, flags=re.M)
    }
    settings, limits = ServerSettings(), RequestLimits()
    fields = {v: ("limits", name) for v, (name, _) in settings_module._LIMIT_VARIABLES.items()}
    fields |= {v: ("settings", name) for v, (name, _) in settings_module._CONNECTION_VARIABLES.items()}
    assert set(rows) == set(fields)
    lower_defaults = {"max_page_size": "default_page_size", "max_path_hops": "default_path_hops"}
    for variable, default in rows.items():
        where, name = fields[variable]
        owner = limits if where == "limits" else settings
        cap, _, rest = default.partition(" (default ")
        assert _number(cap) == getattr(owner, name), variable
        if name in lower_defaults:
            assert _number(rest.rstrip(")")) == getattr(limits, lower_defaults[name]), variable
        else:
            assert not rest, variable


def test_the_waits_for_neo4j_are_the_code_s() -> None:
    """How long ``load`` and ``serve`` wait for a server, and how long a batch is retried."""
    flat = " ".join(README.split())
    load, read = LOAD_TIMEOUTS, READ_TIMEOUTS
    assert (
        f"Connecting gives up after {load.acquire:g} s ({read.acquire:g} s for `serve`; each attempt's"
        f" TCP connect and Bolt handshake within {load.connect:g} s, {read.connect:g} s for `serve`)"
    ) in flat
    assert f"a batch is retried for {MAX_RETRY_SECONDS:g} s as below" in flat
    assert f"with the driver's back-off, for up to {load.retry:g} s)" in flat
    assert read.retry == 0 and "at once, reads are not retried" in flat
    assert f"(a connection attempt gives up after {read.connect:g} s," in flat
    assert f"a connection from the pool, connecting included, after {read.acquire:g} s" in flat


def test_the_category_lists_limit_is_the_code_s() -> None:
    """``PaperFilter.categories`` and ``excludeCategories`` (since 0.9.1): a fixed limit, no variable."""
    table = _section("| limit | default | variable |", "\n\n")
    row = "| codes in `PaperFilter.categories`, and in `excludeCategories`, each (since 0.9.1; `LIMIT_EXCEEDED`) |"
    assert f"{row} {MAX_FILTER_CATEGORIES} | none (fixed) |" in table
    assert f"holds at most {MAX_FILTER_CATEGORIES} codes (`LIMIT_EXCEEDED`" in " ".join(README.split())


def test_the_list_sizes_table_gives_the_code_s_sizes() -> None:
    """Each list that takes no ``first`` answers at most LIST_SIZES items: the table says how many."""
    table = _section("| list | size |", "\n\n")
    documented: dict[str, int] = {}
    for names, size in re.findall(r"^\| ((?:`[\w.]+`(?:, )?)+) \| (\d+)\b", table, flags=re.M):
        for name in re.findall(r"`([\w.]+)`", names):
            documented["Query.resolve" if name == "resolve" else name] = int(size)
    assert documented == LIST_SIZES


# -- error codes --------------------------------------------------------------------------------


def test_every_store_error_code_the_command_line_prints_is_named() -> None:
    # ``timeout`` and ``memory`` stay inside the API (a read past its time, or past the
    # server's transaction memory), answered as TIMEOUT and LIMIT_EXCEEDED.
    printed = {code.value for code in StoreErrorCode} - {"timeout", "memory"}
    assert {
        c for c in printed if not re.search(rf"`(?:pith-graph:\s+store\s+error:\s+)?{c}[`:]", README)
    } == set()


def _api_codes() -> set[str]:
    from pith_graph.api import app, coded_errors

    found, stack = set(), [ApiError]
    while stack:
        kind = stack.pop()
        found.add(kind.code)
        stack += kind.__subclasses__()
    found |= set(app._HTTP_CODES.values())  # the view's refusals (HTTP 400, 404, 405, 413)
    return found | set(re.findall(r"``([A-Z][A-Z_]+)``", coded_errors.__doc__ or ""))


def test_the_api_error_table_lists_exactly_the_codes() -> None:
    table = _section("Every error carries `extensions.code`", "\n\n\n").split("| code | when |", 1)[1]
    table = table.split("\n\n", 1)[0]
    listed = set(
        re.findall(r"`([A-Z][A-Z_]+)`", "\n".join(line.split(" | ")[0] for line in table.splitlines()))
    )
    assert "SERVICE_UNAVAILABLE" in _api_codes()
    assert listed == _api_codes()


# -- the Development section's layout tree ------------------------------------------------------


def _package_folders() -> set[str]:
    """The repository folder of every package ``pyproject.toml`` installs (its package-dir map)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
    mapped: dict[str, str] = setuptools["package-dir"]
    folders: set[str] = set()
    for package in setuptools["packages"]:
        prefix = max((p for p in mapped if package == p or package.startswith(p + ".")), key=len)
        folders.add("/".join([mapped[prefix], *package[len(prefix) :].split(".")[1:]]))
    return folders


def _tree_names() -> tuple[set[str], set[str]]:
    """The folders and the modules the layout tree names, as paths from the repository root
    (the rule is the test's docstring)."""
    tree = _section("<!-- section: development -->", "<!-- /section: development -->")
    tree = tree.split("\n```\n", 1)[1].split("\n```", 1)[0]
    folders: set[str] = set()
    modules: set[str] = set()
    open_folders: list[tuple[int, str]] = []
    for line in tree.splitlines():
        indent = len(line) - len(line.lstrip())
        while open_folders and open_folders[-1][0] >= indent:
            open_folders.pop()
        first = line.split()[0] if line.strip() else ""
        if first.endswith("/"):
            parent = open_folders[-1][1] + "/" if open_folders else ""
            open_folders.append((indent, parent + first.rstrip("/")))
            folders.add(open_folders[-1][1])
        folder = open_folders[-1][1] + "/" if open_folders else ""
        modules |= {folder + name for name in re.findall(r"(?<![\w/.-])(\w+\.py)\b", line)}
    return folders, modules


def test_the_layout_tree_names_every_module_of_the_package_and_no_other() -> None:
    """How the tree names things: a line whose first word ends in ``/`` is a folder, inside the
    nearest less indented folder line above it (none: the repository root); every line belongs
    to the innermost folder open at its indent (a folder's own line to that folder). A bare
    ``name.py`` anywhere on a line (not part of a path such as ``stores/base.py``) names the
    module ``name.py`` of the line's folder.

    Every package ``pyproject.toml`` installs has its folder's line, and every module of it is
    named; a package's ``__init__.py`` may be left to its folder's line. The other way, every
    folder and module the tree names (benchmarks and scripts included) exists."""
    folders, modules = _tree_names()
    packages = _package_folders()
    assert {"pith_graph/testing", "loader/bulk", "api/reads"} <= packages
    assert packages - folders == set(), "package folders without a line in the layout tree"
    in_package = {
        p.relative_to(ROOT).as_posix()
        for f in packages
        for p in (ROOT / f).glob("*.py")
        if p.name != "__init__.py"
    }
    assert len(in_package) > 100
    assert in_package - modules == set(), "modules the README's layout tree does not name"
    assert {m for m in modules if not (ROOT / m).is_file()} == set(), "named, but no such module"
    assert {f for f in folders if not (ROOT / f).is_dir()} == set(), "named, but no such folder"
