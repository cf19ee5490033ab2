"""Every ``PITH_API_*`` variable: read into its own setting, a bad value refused at start-up
(``UsageError``, exit code 2, one line), and documented in the settings docstring and the README."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from pith_graph.api import hosts
from pith_graph.api import settings as settings_module
from pith_graph.api.settings import ServerSettings
from pith_graph.errors import UsageError
from pith_graph.testing import run_cli

README = Path(__file__).resolve().parents[2] / "README.md"
SETTINGS_SOURCE = Path(settings_module.__file__).read_text("utf-8")
DEFAULT = ServerSettings()

#: variable, a value, the setting it sets (``limits.*``: a RequestLimits field) and to what.
READS: list[tuple[str, str, str, object]] = [
    ("PITH_API_HOST", "0.0.0.0", "host", "0.0.0.0"),
    ("PITH_API_PORT", "8123", "port", 8123),
    ("PITH_API_PORT", "0", "port", 0),  # any free port
    ("PITH_API_PORT", "65535", "port", 65535),
    ("PITH_API_GRAPH", "/srv/graph.snapshot", "graph", "/srv/graph.snapshot"),
    ("PITH_API_TRUSTED_KEYS", "/srv/keys.json", "trusted_keys", ("/srv/keys.json",)),
    ("PITH_API_REGISTRY_KEYS", "/srv/registry.json", "registry_keys", ("/srv/registry.json",)),
    ("PITH_API_REVOKED_KEYS", "/srv/revoked.json", "revoked_keys", ("/srv/revoked.json",)),
    ("PITH_API_WORKERS", "3", "workers", 3),
    ("PITH_API_WORKERS", "1", "workers", 1),
    ("PITH_API_MEMORY_THREADS", "2", "memory_threads", 2),
    ("PITH_API_MEMORY_THREADS", "1", "memory_threads", 1),
    ("PITH_API_HEAVY_EXECUTIONS", "1", "heavy_executions", 1),
    ("PITH_API_HEAVY_EXECUTIONS", "3", "heavy_executions", 3),
    ("PITH_API_NEO4J_EXECUTIONS", "1", "neo4j_executions", 1),
    ("PITH_API_NEO4J_EXECUTIONS", "5", "neo4j_executions", 5),
    ("PITH_API_MAX_HEADER_BYTES", "32768", "max_header_bytes", 32768),
    ("PITH_API_SEND_TIMEOUT_SECONDS", "2.5", "send_timeout_seconds", 2.5),
    ("PITH_API_MAX_CONNECTIONS", "9", "max_connections", 9),
    ("PITH_API_STOP_SECONDS", "1", "stop_seconds", 1),
    ("PITH_API_STOP_SECONDS", " 3600 ", "stop_seconds", 3600),
    ("PITH_API_PERSISTED_QUERIES", "0", "persisted_queries", 0),  # APQ off
    ("PITH_API_PERSISTED_QUERIES", "50", "persisted_queries", 50),
    ("PITH_API_CORS_ORIGINS", "https://a.example", "cors_origins", ("https://a.example",)),
    ("PITH_API_CACHE_CONTROL", "public, max-age=60", "cache_control", "public, max-age=60"),
    ("PITH_API_ALLOWED_HOSTS", "api.example.org", "allowed_hosts", ("api.example.org",)),
    ("PITH_API_ALLOWED_HOSTS", " *.pith.example , [::1] ,", "allowed_hosts", ("*.pith.example", "[::1]")),
    ("PITH_API_ALLOWED_HOSTS", "*", "allowed_hosts", ("*",)),
    ("PITH_API_GRAPHIQL", "0", "graphiql", False),
    ("PITH_API_GRAPHIQL", "off", "graphiql", False),
    ("PITH_API_MAX_DEPTH", "7", "limits.max_depth", 7),
    ("PITH_API_MAX_ALIASES", "12", "limits.max_aliases", 12),
    ("PITH_API_MAX_TOKENS", "900", "limits.max_tokens", 900),
    ("PITH_API_MAX_PAGE_SIZE", "50", "limits.max_page_size", 50),
    ("PITH_API_MAX_COST", "999", "limits.max_cost", 999),
    ("PITH_API_MAX_BODY_BYTES", "4096", "limits.max_body_bytes", 4096),
    ("PITH_API_TIMEOUT_SECONDS", "2.5", "limits.timeout_seconds", 2.5),
    ("PITH_API_HEADER_TIMEOUT_SECONDS", "3.5", "limits.header_timeout_seconds", 3.5),
    ("PITH_API_BODY_TIMEOUT_SECONDS", "4.5", "limits.body_timeout_seconds", 4.5),
    ("PITH_API_MAX_PATH_HOPS", "5", "limits.max_path_hops", 5),
    ("PITH_API_MAX_BATCH_IDS", "20", "limits.max_batch_ids", 20),
    ("PITH_API_MAX_ANSWER_BYTES", "1048576", "limits.max_answer_bytes", 1048576),
]


@pytest.mark.parametrize(
    ("variable", "value", "setting", "expected"),
    [pytest.param(*row, id=f"{row[0]}={row[1]}") for row in READS],
)
def test_a_variable_sets_its_setting_and_nothing_else(
    variable: str, value: str, setting: str, expected: object
) -> None:
    if setting.startswith("limits."):
        field = setting.removeprefix("limits.")
        assert getattr(DEFAULT.limits, field) != expected
        wanted = dataclasses.replace(DEFAULT, limits=dataclasses.replace(DEFAULT.limits, **{field: expected}))
    else:
        assert getattr(DEFAULT, setting) != expected
        wanted = dataclasses.replace(DEFAULT, **{setting: expected})
    assert ServerSettings.from_env({variable: value}) == wanted


def test_the_backend_variable_selects_neo4j() -> None:
    env = {"PITH_API_BACKEND": "neo4j", "NEO4J_PASSWORD": "secret"}  # a password: no local file looked up
    expected = dataclasses.replace(DEFAULT, backend="neo4j", neo4j_password="secret")
    assert ServerSettings.from_env(env) == expected


def test_neo4j_variables_are_read() -> None:
    env = {"NEO4J_URI": "bolt://db:7688", "NEO4J_USER": "reader", "NEO4J_DATABASE": "papers"}
    expected = dataclasses.replace(
        DEFAULT, neo4j_uri="bolt://db:7688", neo4j_user="reader", neo4j_database="papers"
    )
    assert ServerSettings.from_env(env) == expected


BAD: list[Any] = [
    *(
        pytest.param({variable: value}, id=f"{variable}={value}")
        for variable, values in {
            "PITH_API_PORT": [
                "http",
                "70000",
                "65536",
                "-1",
                "",
                "\u0668\u0660\u0668\u0660",
                "80_80",
            ],  # ٨٠٨٠
            "PITH_API_BACKEND": ["mysql", ""],
            "PITH_API_WORKERS": ["0", "two", "129"],
            "PITH_API_MEMORY_THREADS": ["0", "1.5"],
            "PITH_API_HEAVY_EXECUTIONS": ["0", "two"],
            "PITH_API_NEO4J_EXECUTIONS": ["0", "two"],
            "PITH_API_MAX_HEADER_BYTES": ["64KiB", "100"],
            "PITH_API_SEND_TIMEOUT_SECONDS": ["0", "nan", "inf", "1e400", "\uff15"],  # ５
            "PITH_API_MAX_CONNECTIONS": ["0", "1.5"],
            "PITH_API_STOP_SECONDS": ["0", "-1", "2.5", "3601", "ten", ""],
            "PITH_API_PERSISTED_QUERIES": ["-1", "1.5", "100001", "many"],
            "PITH_API_CORS_ORIGINS": [
                "https://a.example/path",
                # never sent by a browser, so never matched (accepted before 0.8.8)
                "http://App.Example.org",
                "https://app.example.org:443",
                "http://app.example.org:80",
                "http://app.example.org:99999",
                "http://app.example.org:08080",
                "http://app.example.org:",
                "http://127.1:5173",
                "http://[0:0:0:0:0:0:0:1]:5173",
                "http://app.example.org:0",
            ],
            "PITH_API_CACHE_CONTROL": ["max-age=60\x07", "public, max-âge=60"],
            "PITH_API_ALLOWED_HOSTS": [
                "",
                " , ",
                "https://api.example.org",
                "api.example.org/graphql",
                "api.example.org:8000",  # ports are not compared
                "[::1]:8000",
                "::1/128",
                "[::g]",
                ".example.org",  # Django's spelling: *.example.org here
                "*example.org",
                "*.127.0.0.1",
                "127.1",  # as no browser sends it
                "300.1.1.1",
                "exa mple.org",
                "-api.example.org",
            ],
            "PITH_API_MAX_DEPTH": ["abc", "0", "2.5"],
            "PITH_API_MAX_ALIASES": ["abc", "0"],
            "PITH_API_MAX_TOKENS": ["abc", "-5"],
            "PITH_API_MAX_PAGE_SIZE": ["abc", "0"],
            "PITH_API_MAX_COST": ["1e6", "0"],
            "PITH_API_MAX_BODY_BYTES": ["64KiB", "0"],
            "PITH_API_TIMEOUT_SECONDS": ["ten", "0", "-1"],
            "PITH_API_HEADER_TIMEOUT_SECONDS": ["ten", "0"],
            "PITH_API_BODY_TIMEOUT_SECONDS": ["ten", "0"],
            "PITH_API_MAX_PATH_HOPS": ["abc", "0", "7"],
            "PITH_API_MAX_BATCH_IDS": ["abc", "0"],
            "PITH_API_MAX_ANSWER_BYTES": ["1e6", "0"],
            "PITH_API_GRAPHIQL": ["of", "2"],
            "PITH_API_HOST": ["", "  "],
        }.items()
        for value in values
    ),
    pytest.param({"PITH_API_GRAPH": "/srv/g.snapshot", "PITH_API_BACKEND": "neo4j"}, id="graph-with-neo4j"),
    *(
        pytest.param({variable: value}, id=f"{variable}={value}")
        for value in ("nan", "inf")
        for variable in (
            "PITH_API_TIMEOUT_SECONDS",
            "PITH_API_HEADER_TIMEOUT_SECONDS",
            "PITH_API_BODY_TIMEOUT_SECONDS",
        )
    ),
]


@pytest.mark.parametrize("env", BAD)
def test_a_bad_value_is_a_usage_error(env: dict[str, str]) -> None:
    with pytest.raises(UsageError) as raised:
        ServerSettings.from_env({"NEO4J_PASSWORD": "secret", **env})
    variable = next(iter(env))
    setting = variable.removeprefix("PITH_API_").lower()
    message = str(raised.value)
    assert variable in message or setting in message, message  # something a user can act on


@pytest.mark.parametrize(
    ("variable", "field"),
    [("PITH_API_MAX_PAGE_SIZE", "max_page_size"), ("PITH_API_MAX_PATH_HOPS", "max_path_hops")],
)
def test_a_cap_below_its_default_is_a_usable_setting(variable: str, field: str) -> None:
    assert getattr(ServerSettings.from_env({variable: "3"}).limits, field) == 3


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", True), (" ON ", True), ("true", True), ("yes", True), ("false", False), ("no", False)],
)
def test_graphiql_is_switched_by_a_word(value: str, expected: bool) -> None:
    assert ServerSettings.from_env({"PITH_API_GRAPHIQL": value}).graphiql is expected


def test_a_limit_error_names_the_variable_that_is_wrong() -> None:
    env = {"PITH_API_MAX_DEPTH": "5", "PITH_API_MAX_BATCH_IDS": "0"}
    with pytest.raises(UsageError) as raised:
        ServerSettings.from_env(env)
    assert str(raised.value) == "bad limit setting: PITH_API_MAX_BATCH_IDS must be at least 1"


def test_overrides_win_over_the_environment_unless_none() -> None:
    env = {"PITH_API_PORT": "8123", "PITH_API_HOST": "0.0.0.0"}
    settings = ServerSettings.from_env(env, port=9000, host=None)
    assert (settings.port, settings.host) == (9000, "0.0.0.0")


def test_load_workers_are_at_least_one() -> None:
    assert ServerSettings(load_workers=1).load_workers == 1
    with pytest.raises(UsageError, match="--load-workers"):
        ServerSettings(load_workers=0)


def test_the_loads_verification_limits_are_checked_as_loads_are() -> None:
    assert ServerSettings(max_bytes=64 << 20, clock_skew=0).max_bytes == 64 << 20
    with pytest.raises(UsageError, match="--max-bytes must be positive and at most 67108864"):
        ServerSettings(max_bytes=(64 << 20) + 1)
    with pytest.raises(UsageError, match="clock skew must be from 0"):
        ServerSettings(clock_skew=float("inf"))


def test_serve_with_a_bad_limit_exits_2_with_one_line(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PITH_API_MAX_DEPTH": "abc", "HOME": str(tmp_path)}
    result = run_cli("serve", "--port", "0", env=env, inherit_env=False)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        "pith-graph: error: PITH_API_MAX_DEPTH must be a whole number, not 'abc'"
    ]
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("variable", "value", "what"),
    [
        ("PITH_API_STOP_SECONDS", "2.5", "a whole number"),
        ("PITH_API_MEMORY_THREADS", "1.5", "a whole number"),
        ("PITH_API_MAX_DEPTH", "1e3", "a whole number"),
        ("PITH_API_TIMEOUT_SECONDS", "ten", "a number"),
    ],
)
def test_a_number_of_the_wrong_kind_is_named_by_the_kind_wanted(variable: str, value: str, what: str) -> None:
    """A fraction where a whole number is wanted was told it "must be a number" (since 0.9.18:
    a whole number)."""
    with pytest.raises(UsageError) as raised:
        ServerSettings.from_env({variable: value})
    assert str(raised.value) == f"{variable} must be {what}, not {value!r}"


# -- documented where a reader looks -------------------------------------------------------------------


def _read_by_code() -> set[str]:
    """``PITH_API_*`` names in api/settings.py outside its module docstring."""
    tree = ast.parse(SETTINGS_SOURCE)
    docstring = ast.get_docstring(tree, clean=False) or ""
    return set(re.findall(r"PITH_API_[A-Z0-9_]+", SETTINGS_SOURCE.replace(docstring, "", 1)))


def test_every_variable_read_is_tested_here() -> None:
    tested = {row[0] for row in READS} | {"PITH_API_BACKEND"}
    assert _read_by_code() == tested


def test_the_settings_docstring_lists_exactly_the_variables_read() -> None:
    documented = set(re.findall(r"``(PITH_API_[A-Z0-9_]+)``", settings_module.__doc__ or ""))
    assert documented == _read_by_code()


def test_the_readme_names_every_variable_read() -> None:
    readme = README.read_text("utf-8")
    assert {name for name in _read_by_code() if f"`{name}`" not in readme} == set()


def test_the_settings_docstring_gives_the_defaults() -> None:
    rows = (re.split(r"\s{2,}", line.strip()) for line in (settings_module.__doc__ or "").splitlines())
    table = {row[0].strip("`"): row[-1].strip("`") for row in rows if row[0].startswith("``PITH_API_")}
    expected = {
        "PITH_API_HOST": DEFAULT.host,
        "PITH_API_PORT": DEFAULT.port,
        "PITH_API_BACKEND": DEFAULT.backend,
        "PITH_API_MEMORY_THREADS": DEFAULT.memory_threads,
        "PITH_API_GRAPHIQL": int(DEFAULT.graphiql),
        "PITH_API_CACHE_CONTROL": DEFAULT.cache_control,
        "PITH_API_PERSISTED_QUERIES": DEFAULT.persisted_queries,
    }
    for variable, _, setting, _ in READS:
        if setting.startswith("limits."):
            expected[variable] = getattr(DEFAULT.limits, setting.removeprefix("limits."))
    assert {variable: table[variable] for variable in expected} == {
        variable: f"{value:g}" if isinstance(value, float) else str(value)
        for variable, value in expected.items()
    }


def test_the_defaults_the_readme_gives_in_its_text_are_the_code_s() -> None:
    """Defaults stated in the README's sentences (not its limits table, tested elsewhere)."""
    readme = README.read_text("utf-8")

    def stated(pattern: str) -> str:
        found = re.search(pattern, readme)
        assert found is not None, pattern
        return found.group(1)

    assert stated(r"`PITH_API_MEMORY_THREADS` \((\d+):") == str(DEFAULT.memory_threads)
    assert stated(r"`PITH_API_HEAVY_EXECUTIONS` \((\d+)\)") == str(DEFAULT.heavy_executions)
    assert stated(r"`PITH_API_NEO4J_EXECUTIONS` \((\d+)\)") == str(DEFAULT.neo4j_executions)
    assert stated(r"`PITH_API_CACHE_CONTROL` \(default `([^`]+)`") == DEFAULT.cache_control
    assert stated(r"`PITH_API_PERSISTED_QUERIES` \(default ([\d,]+)") == f"{DEFAULT.persisted_queries:,}"
    assert stated(r"\| (\d+) \| `PITH_API_MAX_CONNECTIONS` \|") == str(DEFAULT.max_connections)
    assert f"serve on {DEFAULT.host}:{DEFAULT.port} (--host, --port)" in readme


def test_the_hosts_answered_follow_the_interface_unless_listed() -> None:
    """Unset: loopback's names on loopback (and its own address), any host elsewhere."""
    names = ("localhost", "127.0.0.1", "[::1]")
    assert DEFAULT.hosts_answered == names
    assert ServerSettings.from_env({"PITH_API_HOST": "::1"}).hosts_answered == names
    assert ServerSettings.from_env({"PITH_API_HOST": "localhost"}).hosts_answered == names
    assert ServerSettings.from_env({"PITH_API_HOST": "127.0.0.2"}).hosts_answered == (*names, "127.0.0.2")
    for host in ("0.0.0.0", "::", "192.0.2.7", "api.example.org"):
        assert ServerSettings.from_env({"PITH_API_HOST": host}).hosts_answered == ("*",), host
    listed = {"PITH_API_HOST": "0.0.0.0", "PITH_API_ALLOWED_HOSTS": "api.example.org"}
    assert ServerSettings.from_env(listed).hosts_answered == ("api.example.org",)


@pytest.mark.parametrize(
    ("addresses", "answered"),
    [
        pytest.param(["127.0.0.1", "::1"], ("localhost", "127.0.0.1", "[::1]", "vm.test"), id="loopback"),
        pytest.param(["127.0.0.1", "192.0.2.7"], ("*",), id="also-elsewhere"),
        pytest.param(OSError("no such name"), ("*",), id="unresolved"),
    ],
)
def test_an_interface_named_answers_as_the_addresses_it_resolves_to(
    monkeypatch: pytest.MonkeyPatch, addresses: list[str] | OSError, answered: tuple[str, ...]
) -> None:
    """``--host vm`` (``127.0.0.1 vm`` in /etc/hosts) answered any Host, open to DNS rebinding
    as 0.0.0.0 is: a name resolving to loopback alone now answers as loopback does, and for
    itself. (The resolver is the system's; a stand-in gives the name its addresses.)"""

    def getaddrinfo(name: str, *_args: object, **_kwargs: object) -> list[tuple[object, ...]]:
        assert name == "vm.test"
        if isinstance(addresses, OSError):
            raise addresses
        return [(None, None, None, "", (address, 0)) for address in addresses]

    monkeypatch.setattr(hosts.socket, "getaddrinfo", getaddrinfo)
    assert ServerSettings.from_env({"PITH_API_HOST": "VM.test."}).hosts_answered == answered


@pytest.mark.parametrize("entry", ["https://api.example.org", "api.example.org/graphql", "http://x:8000/"])
def test_a_url_for_a_host_is_told_what_an_entry_is(entry: str) -> None:
    """A URL's colon was read as a port's: ``https://api.example.org`` was told it "names a
    port" and to write ``'https'``."""
    with pytest.raises(UsageError) as raised:
        ServerSettings.from_env({"PITH_API_ALLOWED_HOSTS": entry})
    assert str(raised.value).startswith(
        f"PITH_API_ALLOWED_HOSTS: '{entry}' is not a host name or an IP address"
    )
    assert "(no scheme, path or port;" in str(raised.value)


def test_an_origin_a_browser_does_not_send_is_refused_with_the_one_it_does() -> None:
    with pytest.raises(UsageError) as raised:
        ServerSettings.from_env({"PITH_API_CORS_ORIGINS": "https://a.example, https://App.Example.org:443"})
    assert str(raised.value) == (
        "PITH_API_CORS_ORIGINS: 'https://App.Example.org:443' is not an origin a browser sends "
        "(host in lower case, no default port): write 'https://app.example.org'"
    )
    origins = "http://localhost:8080,http://[::1]:3000,https://app.example.org"
    assert ServerSettings.from_env({"PITH_API_CORS_ORIGINS": origins}).cors_origins == tuple(
        origins.split(",")
    )
