"""The pith-graph command: exit codes, one-line errors, JSON output, --save.

Refused arguments are checked through the command's main in this process (``run_main``: no
interpreter to start per case); tests/test_cli_options.py checks a real process answers
them alike. Everything about the process itself (its stdout, signals, start-up) runs one.
"""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import neo4j
import networkx as nx
import pytest

import pith_graph as pith_graph_package
from pith_graph.errors import quoted
from pith_graph.loader.facade import SAMPLES
from pith_graph.loader.stores.neo4j_auth import URI_SCHEMES
from pith_graph.loader.stores.neo4j_connect import LOAD_TIMEOUTS, check_uri, driver_config
from pith_graph.testing import run_cli, run_main

SAMPLE_FILES = sorted(Path(SAMPLES).glob("*.json"))


def _tampered(tmp_path: Path) -> Path:
    bundle = json.loads(SAMPLE_FILES[0].read_bytes())
    bundle["events"][1]["payload"]["graph_snapshot"]["paper"]["title"] = "Something else"
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(bundle))
    return path


def test_version_is_the_installed_package_s() -> None:
    from importlib.metadata import version

    result = run_cli("--version")
    assert (result.returncode, result.stdout.strip()) == (0, f"pith-graph {version('pith-graph')}")
    assert version("pith-graph") == pith_graph_package.__version__


def test_verify_samples_exit_0() -> None:
    result = run_cli("verify", SAMPLES)
    assert result.returncode == 0, result.stderr
    assert "REJECTED" not in result.stdout
    rows = [line.split() for line in result.stdout.splitlines()]
    assert ["bundles", "seen", "3"] in rows
    assert ["verified", "3"] in rows
    assert ["rejected", "0"] in rows


def test_verify_rejection_exit_1_names_file_and_code(tmp_path: Path) -> None:
    bad = _tampered(tmp_path)
    result = run_cli("verify", SAMPLES, str(bad))
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if line.startswith("REJECTED")]
    assert lines == [f"REJECTED {bad}: digest_mismatch: events[1].content_sha256 does not match"]
    assert "Traceback" not in result.stderr + result.stdout


def test_load_json_report(tmp_path: Path) -> None:
    bad = _tampered(tmp_path)
    result = run_cli("load", SAMPLES, str(bad), "--backend", "memory", "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert (report["accepted"], report["rejected"], report["stale"], report["duplicate"]) == (3, 1, 0, 0)
    assert report["rejections"] == [
        {
            "code": "digest_mismatch",
            "message": "events[1].content_sha256 does not match",
            "file": str(bad),
            "line": None,
        }
    ]
    assert report["nodes"] == {"Alias": 18, "Author": 19, "Category": 5, "Paper": 3, "Signer": 1}
    assert report["edges"] == {"AUTHORED": 19, "IDENTIFIES": 18, "IN_CATEGORY": 10, "SIGNED": 3}
    assert report["rejectionsOmitted"] == 0


@pytest.mark.parametrize("command", ["verify", "load"])
def test_the_json_report_lists_the_first_1000_rejections_and_counts_the_rest(
    tmp_path: Path, command: str
) -> None:
    """A corpus of bad lines cannot make the report as large as itself; the text report
    still prints every rejection, each with its line."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n" * 1003)
    as_json = run_cli(command, str(bad), "--json")
    assert as_json.returncode == 1, as_json.stderr
    report = json.loads(as_json.stdout)
    assert (report["rejected"], report["rejectionsOmitted"]) == (1003, 3)
    assert [(r["file"], r["line"], r["code"]) for r in report["rejections"]] == [
        (str(bad), line, "schema_error") for line in range(1, 1001)
    ]
    as_text = run_cli(command, str(bad))
    assert as_text.returncode == 1, as_text.stderr
    lines = [line for line in as_text.stdout.splitlines() if line.startswith("REJECTED ")]
    assert [line.split(": ")[0] for line in lines] == [f"REJECTED {bad}:{n}" for n in range(1, 1004)]
    assert ["rejected", "1003"] in [line.split() for line in as_text.stdout.splitlines()]


@pytest.mark.parametrize("command", ["verify", "load"])
def test_what_the_cli_prints_is_printed_as_given(tmp_path: Path, command: str) -> None:
    """File names and messages are never read as rich's markup or emoji codes."""
    name = tmp_path / "a:smile:[bold]x:100:.json"
    name.write_text("{}")
    result = run_cli(command, str(name))
    assert result.returncode == 1, result.stderr
    assert f"REJECTED {name}: schema_error: bundle.bundle_type is missing" in result.stdout.splitlines()
    missing = tmp_path / ":smile:[red]"
    result = run_cli(command, str(missing))
    assert (result.returncode, result.stderr) == (
        2,
        f"pith-graph: error: no such file or folder: {missing}\n",
    )


def test_load_twice_counts_duplicates() -> None:
    result = run_cli("load", SAMPLES, SAMPLES, "--json")
    report = json.loads(result.stdout)
    assert (report["accepted"], report["duplicate"]) == (3, 3)
    assert result.returncode == 0


def test_stdin_jsonl_lines_are_reported(tmp_path: Path) -> None:
    good = SAMPLE_FILES[0].read_bytes().strip()
    result = run_cli("verify", "-", "--json", input=(good + b"\n{not json}\n").decode())
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["verified"] == 1
    assert [(r["code"], r["file"], r["line"]) for r in report["rejections"]] == [("malformed_json", "-", 2)]


def test_save_writes_node_link_json(tmp_path: Path) -> None:
    out = tmp_path / "graph.json"
    result = run_cli("load", SAMPLES, "--save", str(out))
    assert result.returncode == 0, result.stderr
    graph = nx.node_link_graph(json.loads(out.read_text()), edges="edges")
    assert type(graph) is nx.DiGraph
    labels = nx.get_node_attributes(graph, "label")
    assert sorted(labels.values()).count("Paper") == 3
    assert graph.number_of_edges() == 50


def test_piped_output_has_no_progress_bar() -> None:
    result = run_cli("load", SAMPLES)
    assert result.returncode == 0
    assert result.stderr == ""


@pytest.mark.parametrize("command", ["verify", "load"])
def test_a_progress_bar_shows_on_a_terminal_and_is_gone_at_the_end(command: str, tmp_path: Path) -> None:
    """stderr on a pseudo-terminal: the bar is drawn there (label, bundles counted), then
    erased; the report on the piped stdout, its REJECTED lines too, is the same as without a
    terminal, and none of it is on the terminal (``pith-graph verify DIR > report.txt``)."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "a bundle"}\n' * 2)
    controller, terminal = pty.openpty()
    env = {key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "TERM")}
    with subprocess.Popen(
        [sys.executable, "-m", "pith_graph", command, SAMPLES, str(bad)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal,
        env={**env, "TERM": "xterm-256color", "COLUMNS": "120"},
    ) as process:
        os.close(terminal)
        screen = _read_terminal(controller)
        stdout = process.communicate(timeout=120)[0].decode()
    assert process.returncode == 1, screen  # bundles were rejected
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)  # the terminal's control sequences out
    label = "loading" if command == "load" else "verifying"
    assert f" {label} " in text and " 5/? bundles " in text, text  # bundles seen so far, no total
    assert screen.endswith("\x1b[1A\x1b[2K"), screen  # then erased: up a line, clear it
    assert "REJECTED" not in text, text
    piped = run_cli(command, SAMPLES, str(bad)).stdout
    rejected = [line for line in stdout.splitlines() if line.startswith("REJECTED ")]
    assert rejected == [f"REJECTED {bad}:{n}: schema_error: bundle.bundle_type is missing" for n in (1, 2)]
    assert _but_the_time(stdout) == _but_the_time(piped)
    assert "bundles" not in piped.replace("bundles seen", "")  # no bar there: stdout is a pipe


@pytest.mark.parametrize("command", ["verify", "load"])
def test_rejections_on_the_terminal_of_the_progress_bar_are_printed_above_it(
    command: str, tmp_path: Path
) -> None:
    """stdout and stderr on one terminal (a shell, run by hand): each REJECTED line is printed
    above the bar, whole; when it is done the screen holds the lines and the report and no
    bar. Written past the bar, each line was glued to the bar's and left a stale bar behind."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "a bundle"}\n' * 3)
    controller, terminal = pty.openpty()
    env = {key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "TERM")}
    with subprocess.Popen(
        [sys.executable, "-m", "pith_graph", command, SAMPLES, str(bad)],
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
        env={**env, "TERM": "xterm-256color", "COLUMNS": "200"},
    ) as process:
        os.close(terminal)
        drawn = _read_terminal(controller)
        process.wait(timeout=120)
    assert process.returncode == 1, drawn
    assert "verifying" in drawn or "loading" in drawn, drawn  # a bar was drawn
    screen = _screen(drawn)
    rejected = [f"REJECTED {bad}:{n}: schema_error: bundle.bundle_type is missing" for n in (1, 2, 3)]
    assert screen[:3] == rejected, screen
    assert screen[3] == "pith-graph" and not any(re.search(r"\d/\? bundles", line) for line in screen), screen


def _read_terminal(controller: int) -> str:
    drawn = b""
    while True:
        try:
            chunk = os.read(controller, 1 << 16)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        drawn += chunk
    os.close(controller)
    return drawn.decode("utf-8", "replace")


def _screen(drawn: str) -> list[str]:
    """What a terminal shows after ``drawn``: the few controls rich's bar uses (cursor up, erase
    line, carriage return, colours, cursor hidden); any other is an error, not ignored."""
    lines, row, column = [""], 0, 0
    for token in re.findall(r"\x1b\[[0-9;?]*[A-Za-z]|\r\n|[\r\n]|[^\x1b\r\n]+", drawn):
        if token.startswith("\x1b["):
            code, final = token[2:-1], token[-1]
            if final == "A":
                row = max(0, row - int(code or 1))
            elif final == "K" and code == "2":
                lines[row] = ""
            elif final != "m" and token[2:] not in ("?25l", "?25h"):
                raise AssertionError(f"a control this emulator does not know: {token!r}")
        elif token == "\r":
            column = 0
        elif token in ("\n", "\r\n"):
            row, column = row + 1, 0
            lines += [""] * (row + 1 - len(lines))
        else:
            line = lines[row].ljust(column)
            lines[row] = line[:column] + token + line[column + len(token) :]
            column += len(token)
    return [line.rstrip() for line in lines if line.strip()]


def _but_the_time(report: str) -> list[str]:
    return [line for line in report.splitlines() if line.split()[:1] != ["seconds"]]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        pytest.param(("verify", "/no/such/path"), "no such file or folder: /no/such/path", id="missing-path"),
        pytest.param(
            ("verify", SAMPLES, "--trusted-keys", "/no/keys.json"),
            "cannot read keys file",
            id="missing-keyring",
        ),
        pytest.param(("verify",), "the following arguments are required", id="no-paths"),
        pytest.param(("load", SAMPLES, "--backend", "sqlite"), "invalid choice", id="bad-backend"),
        pytest.param(("verify", SAMPLES, "--max-bytes", "0"), "--max-bytes must be positive", id="bad-limit"),
        pytest.param(("frobnicate",), "invalid choice", id="bad-command"),
        pytest.param(("load", SAMPLES, "--batch-size", "0"), "--batch-size must be positive", id="bad-batch"),
        # Refused before connecting: no server listens on port 9.
        pytest.param(
            ("export", "--from", "yesterday", "--uri", "bolt://127.0.0.1:9", "--save", "out.json"),
            "from is not an ISO 8601 date or date-time: 'yesterday'",
            id="export-bad-date",
        ),
        pytest.param(
            ("export", "--hops", "2", "--uri", "bolt://127.0.0.1:9", "--save", "out.json"),
            "hops needs an author",
            id="export-hops-without-author",
        ),
    ],
)
def test_usage_errors_exit_2_in_one_line(args: tuple[str, ...], needle: str) -> None:
    result = run_main(*args)
    assert result.returncode == 2
    assert needle in result.stderr
    # One line, argparse's own refusals too (it would add a usage line): Parser.error.
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("pith-graph: error: ")


def test_malformed_keyring_exit_2(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text('[{"key_id": "k", "public_key_hex": "zz"}]')
    result = run_main("verify", SAMPLES, "--trusted-keys", str(keys))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"pith-graph: error: {keys}[0]: key is not valid hex/base64 (non-hexadecimal number found in fromhex() arg at position 0)"
    ]


@pytest.mark.parametrize("command", ["verify", "load"])
def test_file_name_not_utf8_is_reported_escaped(tmp_path: Path, command: str) -> None:
    """Undecodable bytes and control characters of a file name are shown as ``\\xNN``, and
    invisible characters as ``\\uNNNN``, the same in text and JSON; the file is rejected like
    any other."""
    folder = os.fsencode(tmp_path)
    names = (
        b"bad\xff.json",
        b"two\nlines\x1b[31m.json",
        "report\u202egpj.json".encode(),
        "rep\u200bort.json".encode(),
    )
    for name in names:  # (since 0.8.3 also invisible characters: U+202E showed the name reversed)
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(b"{}")
    shown = [
        f"{tmp_path}/bad\\xff.json",
        f"{tmp_path}/rep\\u200bort.json",
        f"{tmp_path}/report\\u202egpj.json",
        f"{tmp_path}/two\\x0alines\\x1b[31m.json",
    ]

    as_json = run_cli(command, str(tmp_path), "--json")
    assert as_json.returncode == 1, as_json.stderr
    assert "Traceback" not in as_json.stderr
    report = json.loads(as_json.stdout)
    assert sorted(r["file"] for r in report["rejections"]) == shown
    assert {r["code"] for r in report["rejections"]} == {"schema_error"}

    as_text = run_cli(command, str(tmp_path))
    assert as_text.returncode == 1, as_text.stderr
    rejected = sorted(line for line in as_text.stdout.splitlines() if line.startswith("REJECTED"))
    assert [line.split(": ")[0] for line in rejected] == [f"REJECTED {path}" for path in shown]

    by_name = subprocess.run(
        [sys.executable, "-m", "pith_graph", command, os.path.join(folder, b"bad\xff.json"), "--json"],
        capture_output=True,
        timeout=120,
    )
    assert by_name.returncode == 1, by_name.stderr
    assert [r["file"] for r in json.loads(by_name.stdout)["rejections"]] == shown[:1]  # bad\xff
    missing = subprocess.run(
        [sys.executable, "-m", "pith_graph", command, b"/no/such/\xff"], capture_output=True, timeout=120
    )
    assert missing.returncode == 2
    assert missing.stderr.decode() == "pith-graph: error: no such file or folder: /no/such/\\xff\n"


@pytest.mark.parametrize(
    ("destination", "needle"),
    [
        pytest.param("/no/such/dir/g.json", "no such folder: /no/such/dir", id="missing-folder"),
        pytest.param(".", "is a folder", id="a-folder"),
        pytest.param("{samples}/1907.13257.json/g.json", "is not a folder", id="parent-is-a-file"),
        pytest.param("/proc/g.json", "cannot write in /proc", id="not-writable"),
    ],
)
def test_save_destination_is_checked_before_loading(destination: str, needle: str) -> None:
    result = run_main("load", SAMPLES, "--save", destination.format(samples=SAMPLES))
    assert result.returncode == 2
    assert result.stdout == ""  # nothing was loaded: no report
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pith-graph: error: --save "), result.stderr
    assert needle in lines[0]


@pytest.mark.parametrize(
    "command", [("load", SAMPLES, "--save"), ("load", SAMPLES, "--snapshot"), ("export", "--save")], ids=str
)
def test_a_save_name_longer_than_the_system_takes_is_a_usage_error(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """300 characters, past the 255 bytes a file's name may have: exit 70, ``OSError: File
    name too long`` from the check of the destination, before."""
    destination = str(tmp_path / ("c" * 300 + ".json"))
    result = run_main(*command, destination, env={"NEO4J_URI": "bolt://127.0.0.1:1"})
    assert result.returncode == 2, result.stderr
    assert result.stderr == f"pith-graph: error: {command[-1]} {quoted(destination)}: File name too long\n"


@pytest.mark.parametrize("option", ["--save", "--snapshot"])
def test_a_save_name_of_255_bytes_is_written(tmp_path: Path, option: str) -> None:
    """A name as long as a name may be: its temporary file's name (``.name.….tmp``) was too
    long, and the save refused, "cannot write in …: File name too long"."""
    name = "b" + "é" * 120 + "b" * 9 + ".json"  # 255 bytes in UTF-8, the cut in an é
    assert len(os.fsencode(name)) == 255
    result = run_cli("load", SAMPLES, option, str(tmp_path / name))
    assert result.returncode == 0, result.stderr
    assert [path.name for path in tmp_path.iterdir()] == [name]  # no temporary file left


def test_save_replaces_an_existing_file_whole(tmp_path: Path) -> None:
    out = tmp_path / "graph.json"
    out.write_text("an older graph")
    result = run_cli("load", SAMPLES, "--save", str(out), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["nodes"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.json"]  # no temporary file left


LOAD_NEO4J = ("load", SAMPLES, "--backend", "neo4j")


@pytest.mark.parametrize(
    ("command", "uri", "needle"),
    [
        pytest.param(LOAD_NEO4J, "http://127.0.0.1:7474", "http:// is not a Bolt scheme", id="load-http"),
        pytest.param(("schema",), "http://127.0.0.1:7474", "http:// is not a Bolt scheme", id="schema-http"),
        pytest.param(
            ("schema", "--print"), "http://127.0.0.1:7474", "http:// is not", id="schema-print-http"
        ),
        pytest.param(
            ("serve", "--backend", "neo4j", "--port", "0"),
            "https://example.org",
            "https:// is not a Bolt scheme",
            id="serve-https",
        ),
        pytest.param(LOAD_NEO4J, "localhost:7687", "no scheme; use bolt://, bolt+s://", id="no-scheme"),
        pytest.param(LOAD_NEO4J, "bolt://127.0.0.1:99999", "a number from 1 to 65535", id="port-range"),
        pytest.param(LOAD_NEO4J, "neo4j://", "no host", id="no-host"),
        pytest.param(LOAD_NEO4J, "bolt://[::1", "Invalid IPv6 URL", id="ipv6-unclosed"),
        pytest.param(
            ("schema",), "bolt://[zz]:7687", "'zz' does not appear to be an IPv4 or IPv6", id="ipv6-bad"
        ),
    ],
)
def test_unusable_neo4j_uri_is_a_usage_error(command: tuple[str, ...], uri: str, needle: str) -> None:
    result = run_main(*command, "--uri", uri)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"pith-graph: error: bad Neo4j URI '{uri}': "), result.stderr
    assert needle in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_every_bolt_scheme_the_readme_names_is_taken_and_opens_a_driver() -> None:
    """TLS (``+s``, ``+ssc``) and routing (``neo4j://``: clusters, Aura) included: dropping
    one from URI_SCHEMES would turn a user's working URI into a usage error."""
    readme = (Path(__file__).parent.parent / "README.md").read_text("utf-8")
    paragraph = readme.split("The URI is Bolt: ", 1)[1].split("anything\nelse", 1)[0]
    named = re.findall(r"`([a-z0-9+]+)://`", paragraph)
    assert sorted(named) == sorted(URI_SCHEMES)
    for scheme in named:
        uri = f"{scheme}://db.example.org:7687"
        check_uri(uri)
        driver = neo4j.GraphDatabase.driver(uri, **driver_config("neo4j", "secret", LOAD_TIMEOUTS))
        driver.close()  # made without connecting: the driver took the scheme and its settings


@pytest.mark.parametrize("command", [LOAD_NEO4J, ("schema",), ("export", "--save", "out.json")])
def test_neo4j_uri_from_the_environment_is_the_default(command: tuple[str, ...]) -> None:
    uri = "http://127.0.0.1:7474"
    result = run_main(*command, env={"NEO4J_URI": uri})
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"pith-graph: error: bad Neo4j URI '{uri}': http:// is not a Bolt scheme")


# --- never a traceback: Ctrl-C from the start, a reader that goes away, a full disk -------

#: The console script (``.venv/bin/pith-graph``), with SIGINT sent to itself the moment the
#: module named by its first argument is first imported: Ctrl-C at a known point of the
#: start-up, every time. SIGINT back to Python's handler first (a test run as a background
#: job inherits it ignored).
_INTERRUPTED_AT = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
at = sys.argv.pop(1)
class InterruptAt:
    def find_spec(self, name, path=None, target=None):
        if name == at:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, InterruptAt())
from pith_graph.cli import entry
sys.exit(entry())
"""


@pytest.mark.parametrize(
    "module",
    # uuid: imported by orjson's native initialisation, which a KeyboardInterrupt there crashed
    # (a segmentation fault, exit 139)
    ["rich.console", "networkx", "orjson", "uuid", "pith_graph.loader.pipeline", "pith_graph.cli.commands"],
)
def test_ctrl_c_while_the_command_starts_exits_130_without_a_traceback(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_AT, module, "verify", SAMPLES],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "pith-graph: interrupted\n")


def _with_stdout(stdout: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pith_graph", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def rejected(tmp_path: Path) -> Path:
    """A file of 3,000 lines, each rejected: a text report far larger than a pipe's buffer."""
    path = tmp_path / "rejected.jsonl"
    path.write_text("{not json}\n" * 3000)
    return path


@pytest.mark.parametrize("report", [(), ("--json",)], ids=["text", "json"])
@pytest.mark.parametrize("what", ["samples", "rejected"])
def test_a_reader_that_went_away_ends_the_command_quietly_with_141(
    report: tuple[str, ...], what: str, rejected: Path
) -> None:
    """``pith-graph verify … | head -1``: 141 (128 + SIGPIPE), as a shell reports ``cat`` or
    ``grep`` there; not 1, which says a bundle was rejected. Here the reader has gone before the
    first write (deterministic): the summary, the REJECTED lines and the --json report each meet
    it."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = _with_stdout(write, "verify", SAMPLES if what == "samples" else str(rejected), *report)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("report", [(), ("--json",)], ids=["text", "json"])
def test_a_reader_that_leaves_mid_report_ends_the_command_with_141(
    report: tuple[str, ...], unbuffered: bool, rejected: Path
) -> None:
    """The reader takes 10 bytes of a report larger than a pipe's buffer and leaves (``| head
    -c 10``): 141 too. Unbuffered (``PYTHONUNBUFFERED=1``, as many container images set),
    the write that met the reader leaving wrote part of the report and the rest was dropped
    without an error: exit 1, the report cut short, nothing said."""
    read, write = os.pipe()
    taken: list[bytes] = []
    reader = threading.Thread(target=lambda: (taken.append(os.read(read, 10)), os.close(read)))
    reader.start()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"} if unbuffered else {**os.environ, "PYTHONUNBUFFERED": ""}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pith_graph", "verify", str(rejected), *report],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
            env=env,
        )
    finally:
        os.close(write)
        reader.join()
    assert taken and taken[0]
    assert (done.returncode, done.stderr) == (141, "")


def test_an_unbuffered_report_in_utf_16_has_one_byte_order_mark(rejected: Path) -> None:
    """Unbuffered stdout is written by pith-graph itself, through one encoder: each write
    began with a byte-order mark (utf-16), a report of 3,000 lines with 3,000 of them."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-16"}
    done = subprocess.run(
        [sys.executable, "-m", "pith_graph", "verify", str(rejected)],
        capture_output=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.count("\ufeff".encode("utf-16-le")) == 1
    assert done.stdout.decode("utf-16").count("REJECTED") == 3000


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "ascii:surrogateescape"])
def test_a_report_in_an_encoding_without_its_characters_escapes_them(
    tmp_path: Path, encoding: str, unbuffered: bool
) -> None:
    """Stdout in ASCII (``PYTHONIOENCODING=ascii``, a terminal in another locale): a rejection
    that quotes ``é`` or ``…`` (neither in ASCII, ``…`` not in Latin-1) is written escaped,
    exit 1; it was an internal error (exit 70), the report lost and nothing saved."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "é….json").write_bytes(b"x")
    (folder / "ok.json").write_bytes(SAMPLE_FILES[0].read_bytes())
    env = {**os.environ, "PYTHONUNBUFFERED": "1" if unbuffered else "", "PYTHONIOENCODING": encoding}
    name = {"latin-1": r"é\u2026"}.get(encoding, r"\u00e9\u2026")
    for report in ((), ("--json",)):
        done = subprocess.run(
            [sys.executable, "-m", "pith_graph", "verify", str(folder), *report],
            capture_output=True,
            timeout=120,
            check=False,
            env=env,
        )
        assert (done.returncode, done.stderr) == (1, b""), done.stderr
        text = done.stdout.decode("latin-1")
        if report:  # JSON still, the same name
            assert json.loads(text)["rejections"][0]["file"] == str(folder / "é….json")
        else:
            assert f"REJECTED {folder}/{name}.json" in text
    saved = tmp_path / "g.json"
    done = subprocess.run(
        [sys.executable, "-m", "pith_graph", "load", str(folder), "--save", str(saved)],
        capture_output=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert (done.returncode, done.stderr) == (1, b""), done.stderr
    assert f"REJECTED {folder}/{name}.json" in done.stdout.decode("latin-1")
    assert len(json.loads(saved.read_bytes())["nodes"]) > 1


def test_a_report_to_a_closed_stdout_is_one_line_and_exit_3(rejected: Path) -> None:
    """Started with stdout closed (``>&-``): the report cannot be written, exit 3 (the text
    report ended 0 having said nothing; ``--json``, 70, an internal error)."""
    for report in ((), ("--json",)):
        done = subprocess.run(
            [
                "sh",
                "-c",
                'exec "$@" >&-',
                "sh",
                sys.executable,
                "-m",
                "pith_graph",
                "verify",
                SAMPLES,
                *report,
            ],
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
        expected = "pith-graph: error: write_failed: cannot write to stdout: stdout is closed\n"
        assert (done.returncode, done.stderr) == (3, expected), report


@pytest.mark.parametrize("report", [(), ("--json",)], ids=["text", "json"])
@pytest.mark.parametrize("what", ["samples", "rejected"])
def test_stdout_that_cannot_be_written_is_one_line_and_exit_3(
    report: tuple[str, ...], what: str, rejected: Path
) -> None:
    """``pith-graph verify … > /dev/full``: the save-like failure of the report itself."""
    with open("/dev/full", "w") as full:
        done = _with_stdout(full.fileno(), "verify", SAMPLES if what == "samples" else str(rejected), *report)
    assert (done.returncode, done.stderr) == (
        3,
        "pith-graph: error: write_failed: cannot write to stdout: No space left on device\n",
    )


def test_a_bug_is_one_line_exit_70_and_its_traceback_goes_to_a_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Bad input has its codes; an exception none of them (a bug, such as the KeyError a
    malformed snapshot raised in serve) printed Python's traceback. Now one line, exit 70,
    and the traceback in a file the line names, for the bug report."""
    import pith_graph.cli.commands as commands
    from pith_graph.cli import EXIT_INTERNAL, main

    def broken(args: object, *, load: bool) -> int:
        raise KeyError("code")

    monkeypatch.setattr(commands, "cmd_verify_or_load", broken)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where TMPDIR would put it
    assert main(["verify", SAMPLES]) == EXIT_INTERNAL == 70
    said = capsys.readouterr().err
    found = re.fullmatch(
        r"pith-graph: internal error: KeyError: .*'code'.* \(a bug in pith-graph; its traceback is in (\S+)\)\n",
        said,
    )
    assert found, said
    traceback = Path(found.group(1)).read_text()
    assert traceback.startswith("Traceback (most recent call last):") and "KeyError: 'code'" in traceback
    assert Path(found.group(1)).parent == tmp_path


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_an_interrupt_a_library_fails_on_is_still_an_interrupt(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], signum: int
) -> None:
    """An interrupt raised inside the Neo4j driver's read made the driver fail as it closed
    the connection (``BufferError: Existing exports of data``, or a ``write_failed`` store
    error): exit 70 or 3 instead of 130, in 2 of 6 SIGTERMs during ``schema``. The command
    here meets the signal and fails the same way."""
    import pith_graph.cli.commands as commands
    from pith_graph.cli import EXIT_INTERRUPTED, main

    def failing_on_its_way_out(args: object, *, load: bool) -> int:
        try:
            signal.raise_signal(signum)  # as it came while the driver read
        except KeyboardInterrupt:
            raise BufferError("Existing exports of data: object cannot be re-sized")  # noqa: B904
        raise AssertionError("the signal raised nothing")

    monkeypatch.setattr(commands, "cmd_verify_or_load", failing_on_its_way_out)
    assert main(["verify", SAMPLES]) == EXIT_INTERRUPTED == 130
    assert capsys.readouterr().err == "pith-graph: interrupted\n"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # given back


def _catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler of its own for ``signum`` (Linux's SigCgt)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught >> (signum - 1) & 1)


@pytest.mark.parametrize("command", ["load", "verify"])
def test_sigterm_ends_a_command_as_ctrl_c_does(command: str, tmp_path: Path) -> None:
    """A supervisor's stop or ``timeout`` (SIGTERM) killed ``load --save`` where it stood,
    leaving its temporary copy of the graph (its name holding the pid, never removed): now
    it ends as at Ctrl-C, ``pith-graph: interrupted``, exit 130, nothing left behind."""
    saving = ["--save", str(tmp_path / "graph.json")] if command == "load" else []
    with subprocess.Popen(
        [sys.executable, "-m", "pith_graph", command, "-", *saving],
        stdin=subprocess.PIPE,  # held open: the command waits for bundles
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    ) as process:
        deadline = time.monotonic() + 60
        while not _catches(process.pid, signal.SIGTERM):  # the command has begun
            assert process.poll() is None and time.monotonic() < deadline, process.stderr
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert stderr.decode().strip().splitlines()[-1] == "pith-graph: interrupted", stderr
    assert list(tmp_path.iterdir()) == []
