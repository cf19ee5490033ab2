"""Option values and failures the command line must turn into one line and the right exit
code, never a traceback: numbers out of their range, empty paths, ``--save`` and
``--snapshot`` naming one file (usage errors, exit 2); a verification worker that dies
(``worker_failed``, exit 3, nothing saved); a ``--save``/``--snapshot`` pair whose second
file fails (neither file changes); a malformed saved graph (exit 2, naming the file)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import alive

from pith_graph.loader.facade import SAMPLES
from pith_graph.testing.cli import run_cli, run_main
from pith_graph.testing.corpus import CorpusInfo, write_corpus
from pith_graph.testing.identity import SignerIdentity

OLD = b"the file that was there before: left as it is"
SAMPLE_FILES = sorted(Path(SAMPLES).glob("*.json"))
NEO4J_NOWHERE = ("--uri", "bolt://127.0.0.1:9")  # refused before connecting, or unreachable


def _cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The command's answer to ``args``, from its ``main`` in this process (``env``: the whole
    environment): these tests are about arguments, and a process each took 0.6 to 1.3 s.
    test_the_command_answers_as_its_main_does checks a real process answers alike."""
    return run_main(*args, cwd=cwd, env=env, inherit_env=env is None)


def _one_line_usage_error(done: subprocess.CompletedProcess[str], message: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"pith-graph: error: {message}\n"
    assert done.stdout == ""


#: One case of each kind of refusal below (argparse's, the option checks', the files'), run
#: both ways: in a real process, as a user runs the command, and through its main.
ANSWERED_ALIKE = [
    pytest.param(("verify", SAMPLES, "--max-bytes", "0"), 2, id="number-range"),
    pytest.param(("serve", "--backend", "neo4j", *NEO4J_NOWHERE, "--workers", "129"), 2, id="serve-number"),
    pytest.param(("verify", SAMPLES, "--workers", "\uff14"), 2, id="not-ascii-digits"),
    pytest.param(("verify", SAMPLES, "--clock-skew", "1e400"), 2, id="float-overflow"),
    pytest.param(("load", SAMPLES, "--snapshot", ""), 2, id="empty-path"),
    pytest.param(("load", SAMPLES, "--save", "g.out", "--snapshot", "./g.out"), 2, id="one-file-twice"),
    pytest.param(("load", SAMPLES, "--save", str(SAMPLE_FILES[0])), 2, id="overwrites-an-input"),
    pytest.param(("prune", "--backend", "memory", "--graph", "."), 2, id="graph-a-folder"),
    pytest.param(("prune", "--graph", "g.json", "--revoked-keys", "k.json"), 2, id="graph-with-neo4j"),
    pytest.param(("load", SAMPLES, "--uri", "bolt://127.0.0.1:1"), 2, id="uri-with-memory"),
    pytest.param(
        ("serve", "--backend", "neo4j", *NEO4J_NOWHERE, "--max-bytes", "9"), 2, id="serve-neo4j-load"
    ),
    pytest.param(("load", SAMPLES, "--save", "/dev/null"), 2, id="save-over-a-device"),
    pytest.param(("verify", SAMPLES, "--trusted-keys", "."), 2, id="keys-a-folder"),
    pytest.param(("verify",), 2, id="no-path"),
    pytest.param(("frobnicate",), 2, id="no-such-command"),
    pytest.param(("load", SAMPLES, "--backend", "neo4j", "--uri", "http://127.0.0.1:7474"), 2, id="bad-uri"),
    pytest.param(("verify", SAMPLES, "--trusted-keys", "/no/keys.json"), 2, id="no-keys-file"),
    pytest.param(("load", SAMPLES, "--save", "/no/such/dir/g.json"), 2, id="save-in-no-folder"),
    pytest.param(("--version",), 0, id="version"),
]


@pytest.mark.parametrize(("args", "code"), ANSWERED_ALIKE)
def test_the_command_answers_as_its_main_does(tmp_path: Path, args: tuple[str, ...], code: int) -> None:
    """The tests here call the command's main in this process (:func:`_cli`): a real
    process, started as a user starts it, answers those arguments with the same exit code,
    stdout and stderr, one line, and writes nothing."""
    real = run_cli(*args, cwd=tmp_path)
    assert (real.returncode, real.stdout.count("\n") + real.stderr.count("\n")) == (code, 1), real
    main = run_main(*args, cwd=tmp_path)
    assert (main.returncode, main.stdout, main.stderr) == (real.returncode, real.stdout, real.stderr)
    assert list(tmp_path.iterdir()) == []


def test_a_command_in_this_process_that_does_not_end_is_timed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A case whose refusal no longer happens (the command at work, or serving) fails after
    its timeout, as :func:`run_cli`'s would, not hanging the suite nor reported as the
    command's own failure (exit 70); the alarm is cleared after it."""
    from pith_graph.cli import options

    monkeypatch.setattr(options, "check_arguments", lambda args: time.sleep(30))
    began = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_main("verify", SAMPLES, timeout=0.3)
    assert time.monotonic() - began < 5
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL


def test_a_command_in_this_process_gives_back_the_caller_s_alarm(monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller's own alarm (pytest-timeout's signal method, a test's) is given back with its
    handler, and fires when due; a timeout that is not a positive number is refused before
    anything is changed."""
    fired: list[int] = []
    before = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        assert run_main("--version").returncode == 0
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 0.5
        time.sleep(0.7)
        assert fired == [signal.SIGALRM]
        for bad in (0, -1, float("nan")):
            with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
                run_main("--version", timeout=bad)
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


# -- numbers out of their range ------------------------------------------------------------------

BYTES_RULE = "--max-bytes must be positive and at most 67108864 (64 MiB)"
SKEW_RULE = "--clock-skew must be a number of seconds from 0 to 3155760000 (100 years)"
WORKERS_RULE = "--workers must be from 1 to 128"
MEMORY_RULE = (
    "--importer-memory must be a size in bytes, with k, m or g (2G, 512m, 1000000), "
    "or a share of the memory from 1% to 99%"
)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ("--max-bytes", "100000000000000000000"),
            f"{BYTES_RULE}, not 100000000000000000000",
            id="bytes-overflow",
        ),
        pytest.param(("--max-bytes", "68719476736"), f"{BYTES_RULE}, not 68719476736", id="bytes-64GiB"),
        pytest.param(("--max-bytes", "0"), f"{BYTES_RULE}, not 0", id="bytes-zero"),
        pytest.param(("--clock-skew", "inf"), f"{SKEW_RULE}, not inf", id="skew-inf"),
        pytest.param(("--clock-skew", "3e11"), f"{SKEW_RULE}, not 300000000000", id="skew-five-digit-year"),
        pytest.param(("--clock-skew", "3155760001"), f"{SKEW_RULE}, not 3155760001", id="skew-a-second-over"),
        pytest.param(("--clock-skew", "1e99"), f"{SKEW_RULE}, not 1e+99", id="skew-huge"),
        pytest.param(("--clock-skew", "-0.25"), f"{SKEW_RULE}, not -0.25", id="skew-negative-fraction"),
        pytest.param(("--clock-skew", "nan"), f"{SKEW_RULE}, not nan", id="skew-nan"),
        pytest.param(("--clock-skew", "-1"), f"{SKEW_RULE}, not -1", id="skew-negative"),
        pytest.param(("--workers", "0"), f"{WORKERS_RULE}, not 0", id="workers-zero"),
        pytest.param(("--workers", "-3"), f"{WORKERS_RULE}, not -3", id="workers-negative"),
        pytest.param(("--workers", "129"), f"{WORKERS_RULE}, not 129", id="workers-too-many"),
    ],
)
@pytest.mark.parametrize("command", ["verify", "load"])
def test_input_options_out_of_range_are_usage_errors(
    command: str, args: tuple[str, ...], message: str
) -> None:
    _one_line_usage_error(_cli(command, SAMPLES, *args), message)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ("load", SAMPLES, "--batch-size", "100001"),
            "--batch-size must be positive and at most 100000, not 100001",
            id="batch-size",
        ),
        pytest.param(
            ("serve", "--backend", "neo4j", *NEO4J_NOWHERE, "--workers", "129"),
            f"{WORKERS_RULE}, not 129",
            id="serve-workers",
        ),
        pytest.param(
            ("serve", "--backend", "neo4j", *NEO4J_NOWHERE, "--load-workers", "0"),
            "--load-workers must be from 1 to 128, not 0",
            id="serve-load-workers",
        ),
        pytest.param(  # since 0.9.0 serve verifies under load's --max-bytes and --clock-skew
            ("serve", "--port", "0", "--max-bytes", "0"), f"{BYTES_RULE}, not 0", id="serve-max-bytes"
        ),
        pytest.param(
            ("serve", "--port", "0", "--clock-skew", "nan"), f"{SKEW_RULE}, not nan", id="serve-skew"
        ),
        pytest.param(
            ("import", SAMPLES, "--csv-only", "{tmp}/csv", "--clock-skew", "inf"),
            f"{SKEW_RULE}, not inf",
            id="import-skew",
        ),
        *(
            pytest.param(
                ("import", SAMPLES, "--csv-only", "{tmp}/csv", "--importer-memory", size),
                f"{MEMORY_RULE}, not {size!r}",
                id=f"importer-memory-{size}",
            )
            for size in ("2GB", "1.5g", "0", "100%", "2T", "lots", "\u0662g")  # ٢ (Arabic-Indic two)
        ),
    ],
)
def test_other_numbers_out_of_range_are_usage_errors(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    done = _cli(*(arg.replace("{tmp}", str(tmp_path)) for arg in args))
    _one_line_usage_error(done, message)
    assert not (tmp_path / "csv").exists()


# -- numbers as typed: ASCII digits only ----------------------------------------------------------

#: ``int()`` and ``float()`` take other scripts' digits and underscores; a literal too large for a
#: float becomes infinity. None is a number anyone types meaning one.
NOT_TYPED_AS_NUMBERS = [
    pytest.param(("verify", SAMPLES, "--workers", "\uff14"), "--workers", "int", id="fullwidth-four"),
    pytest.param(("verify", SAMPLES, "--workers", "1_0"), "--workers", "int", id="underscore"),
    pytest.param(
        ("verify", SAMPLES, "--max-bytes", "\u0661\u0660\u0660\u0660"), "--max-bytes", "int", id="arabic"
    ),
    pytest.param(("load", SAMPLES, "--batch-size", "\u0967\u0966"), "--batch-size", "int", id="devanagari"),
    pytest.param(
        ("verify", SAMPLES, "--clock-skew", "\uff13\uff10\uff10"),
        "--clock-skew",
        "float",
        id="skew-fullwidth",
    ),
    pytest.param(("verify", SAMPLES, "--clock-skew", "3_00"), "--clock-skew", "float", id="skew-underscore"),
    pytest.param(("serve", "--port", "\u0668\u0660\u0668\u0660"), "--port", "int", id="port-arabic"),
    pytest.param(("export", "--author", "x", "--hops", "\u00b2"), "--hops", "int", id="hops-superscript"),
]


@pytest.mark.parametrize(("args", "option", "kind"), NOT_TYPED_AS_NUMBERS)
def test_a_number_not_in_ascii_digits_is_a_usage_error(args: tuple[str, ...], option: str, kind: str) -> None:
    _one_line_usage_error(_cli(*args), f"argument {option}: invalid {kind} value: {args[-1]!r}")


def test_a_literal_too_large_for_a_float_is_refused_as_typed() -> None:
    """``1e400`` is refused by what was typed, not as the ``inf`` it overflows to."""
    done = _cli("verify", SAMPLES, "--clock-skew", "1e400")
    _one_line_usage_error(done, "argument --clock-skew: invalid float value: '1e400' (larger than any float)")


# -- paths ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "option"),
    [
        pytest.param(("verify", ""), "PATH", id="verify-path"),
        pytest.param(("load", SAMPLES, ""), "PATH", id="load-second-path"),
        pytest.param(("load", SAMPLES, "--save", ""), "--save", id="save"),
        pytest.param(("load", SAMPLES, "--snapshot", ""), "--snapshot", id="snapshot"),
        pytest.param(("import", SAMPLES, "--csv-only", ""), "--csv-only", id="csv-only"),
        pytest.param(("import", SAMPLES, "--neo4j-data", ""), "--neo4j-data", id="neo4j-data"),
        pytest.param(
            ("prune", "--backend", "memory", "--graph", "g.json", "--save", "", "--trusted-keys", "k.json"),
            "--save",
            id="prune-save",
        ),
        pytest.param(("serve", "--graph", "", "--port", "0"), "--graph", id="serve-graph"),
        pytest.param(
            ("load", SAMPLES, "--backend", "neo4j", *NEO4J_NOWHERE, "--password-file", ""),
            "--password-file",
            id="password-file",
        ),
    ],
)
def test_an_empty_path_is_a_usage_error(tmp_path: Path, args: tuple[str, ...], option: str) -> None:
    done = _cli(*args, cwd=tmp_path)
    _one_line_usage_error(done, f"{option} '': an empty path names no file (use . for this folder)")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("save", "snapshot"),
    [
        pytest.param("g.out", "g.out", id="same-spelling"),
        pytest.param("g.out", "./g.out", id="dot-slash"),
        pytest.param("g.out", "{tmp}/g.out", id="absolute"),
        pytest.param("g.out", "sub/../g.out", id="dot-dot"),
        pytest.param("g.out", "link.out", id="symlink"),
        pytest.param("old.out", "hard.out", id="hard-link"),
    ],
)
def test_save_and_snapshot_naming_one_file_are_refused(tmp_path: Path, save: str, snapshot: str) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "old.out").write_bytes(OLD)
    (tmp_path / "link.out").symlink_to("g.out")  # dangling until something writes g.out
    os.link(tmp_path / "old.out", tmp_path / "hard.out")
    snapshot = snapshot.replace("{tmp}", str(tmp_path))
    done = _cli("load", SAMPLES, "--save", save, "--snapshot", snapshot, "--json", cwd=tmp_path)
    _one_line_usage_error(done, f"--save {save} and --snapshot {snapshot} name the same file")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["hard.out", "link.out", "old.out", "sub"]
    assert (tmp_path / "old.out").read_bytes() == OLD


def _tree(folder: Path) -> dict[str, bytes | str]:
    """Every file under ``folder`` and its bytes (a link: its target)."""
    return {
        str(path.relative_to(folder)): os.readlink(path) if path.is_symlink() else path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_symlink() or path.is_file()
    }


READS = "names a file this command reads"
IN_FOLDER = "a later load of the folder would read it as a bundle"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ("load", "v.jsonl", "--save", "v.jsonl"),
            f"--save 'v.jsonl' {READS} (PATH 'v.jsonl')",
            id="bundle",
        ),
        pytest.param(
            ("load", "v.jsonl", "--save", "{tmp}/v.jsonl"),
            f"--save '{{tmp}}/v.jsonl' {READS} (PATH 'v.jsonl')",
            id="absolute",
        ),
        pytest.param(
            ("load", "v.jsonl", "--snapshot", "hard.jsonl"),
            f"--snapshot 'hard.jsonl' {READS} (PATH 'v.jsonl')",
            id="hard-link",
        ),
        pytest.param(
            ("load", "v.jsonl", "--save", "link.json"),
            f"--save 'link.json' {READS} (PATH 'v.jsonl')",
            id="symlink",
        ),
        pytest.param(
            ("load", "in", "--trusted-keys", "keys.json", "--save", "./keys.json"),
            f"--save './keys.json' {READS} (--trusted-keys 'keys.json')",
            id="trusted-keys",
        ),
        pytest.param(
            ("load", "in", "--registry-keys", "keys.json", "--snapshot", "keys.json"),
            f"--snapshot 'keys.json' {READS} (--registry-keys 'keys.json')",
            id="registry-keys",
        ),
        pytest.param(
            (
                "prune",
                "--backend",
                "memory",
                "--graph",
                "g.json",
                "--revoked-keys",
                "keys.json",
                "--save",
                "keys.json",
            ),
            f"--save 'keys.json' {READS} (--revoked-keys 'keys.json')",
            id="prune-revoked-keys",
        ),
        pytest.param(
            ("export", "--password-file", "keys.json", "--save", "keys.json"),
            f"--save 'keys.json' {READS} (--password-file 'keys.json')",
            id="export-password-file",
        ),
        pytest.param(
            ("load", "in", "--snapshot", "in/a.json"),
            f"--snapshot 'in/a.json' is in the input folder 'in': {IN_FOLDER}",
            id="in-folder",
        ),
        pytest.param(
            ("load", "{tmp}/in", "--save", "in/sub/../sub/new.jsonl.gz"),
            f"--save 'in/sub/../sub/new.jsonl.gz' is in the input folder '{{tmp}}/in': {IN_FOLDER}",
            id="new-file-in-sub-folder",
        ),
    ],
)
def test_a_file_to_write_that_the_command_reads_is_refused(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    """``--save`` or ``--snapshot`` naming an input bundle, a keys or password file (however
    spelled), or a bundle's name in an input folder: exit 2 before anything is read, every
    file as it was. Each was overwritten with the graph, exit 0."""
    (tmp_path / "in" / "sub").mkdir(parents=True)
    (tmp_path / "in" / "a.json").write_bytes(SAMPLE_FILES[0].read_bytes())
    (tmp_path / "v.jsonl").write_bytes(SAMPLE_FILES[0].read_bytes().replace(b"\n", b"") + b"\n")
    os.link(tmp_path / "v.jsonl", tmp_path / "hard.jsonl")
    (tmp_path / "link.json").symlink_to("v.jsonl")
    (tmp_path / "keys.json").write_bytes(OLD)
    (tmp_path / "g.json").write_bytes(OLD)
    before = _tree(tmp_path)
    done = _cli(*(arg.replace("{tmp}", str(tmp_path)) for arg in args), "--json", cwd=tmp_path)
    ending = ": it would be overwritten" if READS in message else ""
    _one_line_usage_error(done, message.replace("{tmp}", str(tmp_path)) + ending)
    assert _tree(tmp_path) == before


def test_a_graph_in_an_input_folder_under_a_name_no_load_reads_is_saved(tmp_path: Path) -> None:
    """Only a name a load of the folder would read is refused there: a snapshot ``.snap`` is not."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_bytes(SAMPLE_FILES[0].read_bytes())
    done = run_cli("load", "in", "--snapshot", "in/g.snap", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "in" / "g.snap").stat().st_size > 0


# -- a verification worker that dies -------------------------------------------------------------

WORKERS = 2


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text() if entry.isdigit() else ""
        except OSError:
            continue
        if stat and int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry))
    return found


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> CorpusInfo:
    """Large enough that a load with two workers runs for seconds (about 28 MB)."""
    return write_corpus(tmp_path_factory.mktemp("options"), 2000, seed=5, workers=2, layout="jsonl")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize(
    ("command", "left"),
    [
        pytest.param(
            ("load", "--save", "{tmp}/graph.json"),
            "nothing was saved ({tmp}/graph.json left as it was)",
            id="load",
        ),
        pytest.param(
            ("import", "--csv-only", "{tmp}/csv"),
            "nothing was imported ({tmp}/csv left as it was)",
            id="import",
        ),
    ],
)
def test_a_worker_killed_mid_run_is_worker_failed_exit_3(
    tmp_path: Path, corpus: CorpusInfo, stray: list[int], command: tuple[str, ...], left: str
) -> None:
    (tmp_path / "graph.json").write_bytes(OLD)
    name, *options = (arg.replace("{tmp}", str(tmp_path)) for arg in command)
    args = [name, str(corpus.directory), "--trusted-keys", str(corpus.keyring_path), *options]
    loader = subprocess.Popen(
        [sys.executable, "-m", "pith_graph", *args, "--workers", str(WORKERS), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    stray.append(loader.pid)
    deadline = time.monotonic() + 60
    while len(workers := _children(loader.pid)) < WORKERS:
        assert loader.poll() is None, "the load ended before its workers started"
        assert time.monotonic() < deadline, "the load started no workers"
        time.sleep(0.02)
    stray.extend(workers)
    time.sleep(0.2)  # the workers are verifying
    assert loader.poll() is None, "the load ended before a worker was killed"
    os.kill(workers[0], signal.SIGKILL)  # as the out-of-memory killer would
    out, err = loader.communicate(timeout=60)

    assert loader.returncode == 3, err
    assert out == ""
    expected = (
        f"pith-graph: store error: worker_failed: verification worker [12] \\(pid {workers[0]}\\) was killed "
        "by SIGKILL \\(as the out-of-memory killer does\\): the run stopped; "
        + re.escape(left.replace("{tmp}", str(tmp_path)))
        + "\n"
    )
    assert re.fullmatch(expected, err), err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["graph.json"]  # no partial file, no csv
    assert (tmp_path / "graph.json").read_bytes() == OLD
    assert not any(alive(pid) for pid in workers)  # the other worker was stopped


# -- a pair of saves ---------------------------------------------------------------------------------


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_snapshot_that_fails_leaves_the_save_as_it_was(
    tmp_path: Path, corpus: CorpusInfo, stray: list[int]
) -> None:
    """``--snapshot``'s folder passes the checks at start, then goes (as a full disk or an
    unmounted volume would fail it) while the load runs: the save, written first, must not
    replace the file that was there."""
    saved, folder = tmp_path / "ok.json", tmp_path / "full"
    saved.write_bytes(OLD)
    folder.mkdir()
    args = ["load", "-", "--trusted-keys", str(corpus.keyring_path), "--workers", str(WORKERS)]
    loader = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pith_graph",
            *args,
            "--save",
            str(saved),
            "--snapshot",
            f"{folder}/s.snap",
            "--json",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    stray.append(loader.pid)
    deadline = time.monotonic() + 60
    while len(workers := _children(loader.pid)) < WORKERS:  # started: the checks are done
        assert loader.poll() is None, (
            f"the load ended early: {loader.stderr.read() if loader.stderr else ''!r}"
        )
        assert time.monotonic() < deadline, "the load started no workers"
        time.sleep(0.02)
    stray.extend(workers)
    folder.rmdir()
    first = corpus.shards[0].read_bytes().splitlines(keepends=True)[:200]
    out, err = loader.communicate(b"".join(first), timeout=60)

    assert loader.returncode == 3, err
    assert out == b""  # no report on a failed command, --json or not (README)
    assert err.decode() == (
        f"pith-graph: store error: write_failed: cannot write the graph to {folder}/s.snap: "
        "No such file or directory\n"
    )
    assert saved.read_bytes() == OLD
    assert [path.name for path in tmp_path.iterdir()] == ["ok.json"]  # no partial file


# -- a malformed saved graph ---------------------------------------------------------------------


def _snapshot(body: bytes, **header: object) -> bytes:
    head = {"format": "pith-graph-snapshot", "version": 3, "nodes": 0, "edges": 0}
    head |= {"sha256": hashlib.sha256(body).hexdigest(), **header}
    return (
        json.dumps({k: v for k, v in head.items() if v is not None}, separators=(",", ":")).encode()
        + b"\n"
        + body
    )


#: Bodies of version 4 (a line per piece, since 0.9.7) that are no snapshot's: a name, the
#: body, the header's other values, what the error says.
_MALFORMED_LINES: list[tuple[str, bytes, dict[str, object], str]] = [
    (
        "unknown-label",
        b'{"nodes":"Foo","properties":[],"at":0,"rows":[[1]]}\n',
        {},
        "a malformed body (KeyError: 'Foo')",
    ),
    ("line-not-a-map", b'[5]\n{"indexes":{}}\n', {}, "line 2: a line of its body is not a map"),
    (
        "line-of-nothing",
        b'{"rows":[]}\n',
        {},
        "line 2: a line of its body holds neither nodes, edges nor indexes",
    ),
    (
        "line-after-indexes",
        b'{"indexes":{}}\n{"indexes":{}}\n',
        {},
        "line 3: a line of its body after its indexes (the last line)",
    ),
    ("no-count", b'{"indexes":{}}\n', {"nodes": None}, "its counts do not match its header"),
]


@pytest.mark.parametrize("given", ["fifo", "folder"])
def test_a_graph_to_prune_that_is_no_regular_file_is_refused_by_its_option(
    tmp_path: Path, given: str
) -> None:
    """``--graph`` is also where the pruned graph is written when ``--save`` is not given: a
    FIFO or a folder there was refused as "--save …", an option the command did not hold."""
    graph = tmp_path / "graph"
    os.mkfifo(graph) if given == "fifo" else graph.mkdir()
    keys = tmp_path / "revoked.json"
    revoked = SignerIdentity.from_seed(b"cli-options", key_id="gone", signer_id="gone.example")
    keys.write_text(json.dumps([{**revoked.keyring_entry(), "revoked": True}]))
    done = _cli("prune", "--backend", "memory", "--graph", str(graph), "--trusted-keys", str(keys))
    assert done.returncode == 2 and done.stderr.startswith(f"pith-graph: error: --graph {graph}: "), (
        done.stderr
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param(
            b'{"graph":5,"nodes":[],"edges":[]}',
            "TypeError: expected a node-link JSON object, its graph attributes a map",
            id="graph-number",
        ),
        pytest.param(
            b'{"graph":"x","nodes":[],"edges":[]}',
            "TypeError: expected a node-link JSON object, its graph attributes a map",
            id="graph-string",
        ),
        pytest.param(
            b'{"graph":[["a",1]],"nodes":[],"edges":[]}',
            "TypeError: expected a node-link JSON object, its graph attributes a map",
            id="graph-pairs",
        ),
        pytest.param(
            b'{"bundle_version":"1","canonical_record":{}}',
            "TypeError: expected a node-link JSON object, its nodes a list (is it a bundle?)",
            id="a-bundle",
        ),
        pytest.param(
            _snapshot(b'{"nodes":5,"edges":{}}'),
            "a malformed body (AttributeError: 'int' object has no attribute 'items')",
            id="snapshot-nodes-number",
        ),
        pytest.param(
            _snapshot(b'{"nodes":{"Foo":{"properties":[],"rows":[[1]],"at":0,"other":[]}},"edges":{}}'),
            "a malformed body (KeyError: 'Foo')",
            id="snapshot-unknown-label",
        ),
        pytest.param(
            _snapshot(b'{"nodes":{},"edges":{}}', nodes=None),
            "its counts do not match its header",
            id="snapshot-no-count",
        ),
        *(
            pytest.param(_snapshot(body, version=4, **header), problem, id=f"snapshot-4-{name}")
            for name, body, header, problem in _MALFORMED_LINES
        ),
    ],
)
def test_a_malformed_saved_graph_is_a_usage_error_naming_the_file(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    graph = tmp_path / "bad-graph.json"
    graph.write_bytes(content)
    keys = tmp_path / "revoked.json"
    revoked = SignerIdentity.from_seed(b"cli-options", key_id="gone", signer_id="gone.example")
    keys.write_text(json.dumps([{**revoked.keyring_entry(), "revoked": True}]))
    done = _cli("prune", "--backend", "memory", "--graph", str(graph), "--trusted-keys", str(keys))
    _one_line_usage_error(done, f"cannot open saved graph {graph}: {problem}")
    assert graph.read_bytes() == content


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("prune", "--graph", "g.json"), id="prune-graph-default-backend"),
        pytest.param(
            ("prune", "--backend", "neo4j", "--graph", "g.json", "--save", "h.json"), id="prune-neo4j"
        ),
        pytest.param(("load", SAMPLES, "--backend", "neo4j", "--save", "g.json"), id="load-neo4j-save"),
    ],
)
def test_a_saved_graph_with_the_neo4j_backend_is_refused(tmp_path: Path, args: tuple[str, ...]) -> None:
    """``prune``'s default backend is neo4j: ``prune --graph g.json`` pruned the database and
    left the file as it was (exit 0). The saved-graph options now need ``--backend memory``."""
    keys = tmp_path / "revoked.json"
    keys.write_text("[]")
    (tmp_path / "g.json").write_bytes(OLD)
    done = _cli(*args, "--revoked-keys", str(keys), "--uri", "bolt://127.0.0.1:1", cwd=tmp_path)
    files = ", ".join(f"--{name}" for name in ("graph", "save") if f"--{name}" in args)
    _one_line_usage_error(
        done,
        f"{files}: for --backend memory only (the backend here is neo4j: "
        "pass --backend memory to use a saved graph)",
    )
    assert (tmp_path / "g.json").read_bytes() == OLD


@pytest.mark.parametrize(
    ("args", "env", "given"),
    [
        pytest.param(("load", SAMPLES, "--uri", "bolt://127.0.0.1:1"), {}, "--uri", id="load-uri"),
        pytest.param(
            ("load", SAMPLES, "--backend", "memory", "--user", "u", "--database", "d"),
            {},
            "--user, --database",
            id="load-user-database",
        ),
        pytest.param(
            ("prune", "--backend", "memory", "--graph", "g.json", "--password-file", "pw"),
            {},
            "--password-file",
            id="prune-password-file",
        ),
        pytest.param(("serve", "--uri", "bolt://127.0.0.1:1"), {}, "--uri", id="serve-default-backend"),
        pytest.param(
            ("serve", "--database", "d"),
            {"PITH_API_BACKEND": "memory"},
            "--database",
            id="serve-backend-from-env",
        ),
    ],
)
def test_connection_options_with_the_memory_backend_are_refused(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], given: str
) -> None:
    """``load PATH --uri bolt://…`` (the backend left at its default, memory) loaded into
    memory, reported the load and exited 0: the user believed the database written. A
    connection option is now refused unless the backend is neo4j; its environment variable
    (NEO4J_URI, ...) is not an option given, and stays a default for the neo4j backend."""
    keys = tmp_path / "revoked.json"
    keys.write_text("[]")
    (tmp_path / "g.json").write_bytes(OLD)
    extra = ("--revoked-keys", str(keys)) if args[0] == "prune" else ()
    done = _cli(*args, *extra, cwd=tmp_path, env={**os.environ, **env, "NEO4J_URI": "bolt://127.0.0.1:1"})
    _one_line_usage_error(
        done,
        f"{given}: for --backend neo4j only (the backend here is memory: pass --backend neo4j to use the database)",
    )
    assert (tmp_path / "g.json").read_bytes() == OLD


def test_a_connection_variable_alone_is_no_option_given(tmp_path: Path) -> None:
    """NEO4J_URI set, no connection option given: a load into memory runs (once, not once
    per refused option above: it does not depend on them)."""
    quiet = run_cli("load", SAMPLES, "--workers", "1", cwd=tmp_path, env={"NEO4J_URI": "bolt://x:1"})
    assert quiet.returncode == 0, quiet.stderr  # the variable alone is no option given


@pytest.mark.parametrize(
    ("extra", "given"),
    [
        pytest.param(("--max-bytes", "2000000"), "--max-bytes", id="max-bytes"),
        pytest.param(("--clock-skew", "60", "--load-workers", "2"), "--load-workers, --clock-skew", id="two"),
    ],
)
def test_load_options_with_the_neo4j_backend_are_refused(extra: tuple[str, ...], given: str) -> None:
    """Since 0.9.0 ``serve`` takes load's ``--max-bytes`` and ``--clock-skew`` for the bundles
    it loads; with ``--backend neo4j`` it loads none, and the option (as ``--load-workers``)
    was ignored: the user believed a limit in force. Refused before connecting."""
    done = _cli("serve", "--backend", "neo4j", *NEO4J_NOWHERE, "--port", "0", *extra)
    _one_line_usage_error(
        done,
        f"{given}: for the memory backend only "
        "(--backend neo4j serves what the database holds: load bundles with pith-graph load)",
    )


@pytest.mark.parametrize("kind", ["fifo", "device"])
@pytest.mark.parametrize("option", ["--save", "--snapshot"])
def test_a_save_over_something_not_a_regular_file_is_refused(tmp_path: Path, kind: str, option: str) -> None:
    """The graph is written beside the path and renamed over it: ``--save /dev/null`` (as
    root) would have made the system's /dev/null a file, a FIFO became one (exit 0)."""
    target = tmp_path / "out"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/null")
    done = _cli("load", SAMPLES, option, str(target), cwd=tmp_path)
    _one_line_usage_error(done, f"{option} {target}: not a regular file (a device, FIFO or socket)")
    assert target.is_fifo() if kind == "fifo" else Path("/dev/null").is_char_device()


# -- a folder where a file is wanted -------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("verify", SAMPLES, "--trusted-keys", "{folder}"), "cannot read keys file {folder}: is a folder"),
        (("verify", SAMPLES, "--registry-keys", "{folder}"), "cannot read keys file {folder}: is a folder"),
        (
            ("prune", "--backend", "memory", "--graph", "{folder}", "--revoked-keys", "{folder}"),
            "cannot read keys file {folder}: is a folder",
        ),
        (("serve", "--graph", "{folder}", "--port", "0"), "cannot open saved graph {folder}: is a folder"),
        (
            ("load", SAMPLES, "--backend", "neo4j", "--password-file", "{folder}"),
            "password file {folder} is a folder",
        ),
    ],
    ids=["trusted-keys", "registry-keys", "revoked-keys", "saved-graph", "password-file"],
)
def test_a_folder_given_for_a_file_is_said_to_be_one(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    """Not "a folder that could not be searched when the inputs were listed" (the bundle
    inputs' reason), nor "accessible by group or others: chmod 600" for a password file."""
    folder = tmp_path / "keys"
    folder.mkdir(mode=0o755)
    done = _cli(*(arg.format(folder=folder) for arg in args))
    _one_line_usage_error(done, message.format(folder=folder))
