"""What ``pith-graph import`` checks of its folders before it verifies a bundle: the Neo4j
home is its user's alone (as ``scripts/neo4j`` requires), one import writes into it at a
time, links planted where it writes are never followed, and paths reach neo4j-admin in a
form it takes. None of these needs neo4j-admin or a server: each is refused first."""

from __future__ import annotations

import fcntl
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pith_graph.errors import StoreError, UsageError
from pith_graph.loader import bulk
from pith_graph.loader.bulk import _importer_path, bulk_import, neo4j_admin, recovery
from pith_graph.loader.bulk.neo4j_admin import _tail
from pith_graph.loader.bulk.recovery import import_lock, mark_incomplete, private_file
from pith_graph.loader.facade import SAMPLES, resolve_keyring
from pith_graph.loader.keyring import default_keyring
from pith_graph.testing import run_cli


def _import(data: Path, *extra: str) -> tuple[int, str]:
    done = run_cli("import", SAMPLES, "--neo4j-data", str(data), *extra)
    assert "Traceback" not in done.stderr
    return done.returncode, done.stderr


def _planted(data: Path, victims: Path) -> list[Path]:
    """Links another user could plant where an import writes its log and marker."""
    (data / "logs").mkdir(parents=True)
    targets = []
    for name, link in (("one", data / "logs" / "import.log"), ("two", data / "import.incomplete")):
        target = victims / name
        target.write_text("precious\n")
        link.symlink_to(target)
        targets.append(target)
    return targets


def test_a_folder_others_may_write_in_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    data = tmp_path / "data"
    targets = _planted(data, tmp_path)
    data.chmod(0o777)
    code, said = _import(data)
    assert code == 2, said
    assert (
        said
        == f"pith-graph: error: --neo4j-data {data} is writable by group or others (mode 777): chmod go-w {data}\n"
    )
    assert [target.read_text() for target in targets] == ["precious\n"] * 2
    assert sorted(path.name for path in data.iterdir()) == ["import.incomplete", "logs"]  # nothing added


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_folder_another_user_owns_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    os.chown(data, 65534, 65534)
    code, said = _import(data)
    assert (
        code == 2 and f"--neo4j-data {data} is owned by another user (uid 65534), not by you (uid 0)" in said
    )


def test_the_marker_and_the_log_never_follow_a_link(tmp_path: Path) -> None:
    """Defence in depth, inside a folder that passed the check (a link its owner left)."""
    targets = _planted(tmp_path / "data", tmp_path)
    with pytest.raises(StoreError, match=r"import.incomplete \(a link: never followed\): Too many levels"):
        mark_incomplete(tmp_path / "data", replace=False)
    with (
        pytest.raises(StoreError, match=r"import.log \(a link: never followed\)"),
        private_file(tmp_path / "data" / "logs" / "import.log"),
    ):
        pass
    assert [target.read_text() for target in targets] == ["precious\n"] * 2
    with private_file(tmp_path / "new.log") as out:
        out.write("x")
    assert (tmp_path / "new.log").stat().st_mode & 0o777 == 0o600


def test_one_import_into_a_folder_at_a_time(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with import_lock(data):
        with pytest.raises(UsageError, match=f"^another pith-graph import into {data} is running"):
            bulk_import([SAMPLES], keyring=resolve_keyring(), data=data)
        code, said = _import(data)
        assert code == 2 and "another pith-graph import into" in said, said
    assert not (data / "import.incomplete").exists()


def _unlinked_as_we_lock(monkeypatch: pytest.MonkeyPatch, path: Path, successor: bool) -> list[int]:
    """Have the import holding ``path`` end between our open and our lock: it unlinks the
    file (and lets it go), and, if ``successor``, another import creates and locks a new
    one there; the descriptors of the imports in play are returned, to close."""
    held: list[int] = []
    real = fcntl.flock

    def flock(fd: int, operation: int) -> None:
        if not held:
            holder = os.open(path, os.O_RDWR)
            real(holder, fcntl.LOCK_EX)  # an import held it since before our open
            path.unlink()
            os.close(holder)
            held.append(holder)
            if successor:
                other = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                real(other, fcntl.LOCK_EX)
                held.append(other)
        real(fd, operation)

    monkeypatch.setattr(recovery.fcntl, "flock", flock)
    return held


def test_a_lock_file_unlinked_as_it_is_locked_is_not_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file an import locked, unlinked by the import that held it before, is no lock:
    the next import has locked the one at the path, so this one is refused."""
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    (data / "import.lock").touch(mode=0o600)
    held = _unlinked_as_we_lock(monkeypatch, data / "import.lock", successor=True)
    with pytest.raises(UsageError, match="another pith-graph import into"), import_lock(data):
        pass
    assert (data / "import.lock").exists()  # the other import's, left to it
    os.close(held[1])


def test_a_lock_file_unlinked_as_it_is_locked_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no other import waiting, the import creates the file again and holds it."""
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    (data / "import.lock").touch(mode=0o600)
    _unlinked_as_we_lock(monkeypatch, data / "import.lock", successor=False)
    with import_lock(data):
        lock = data / "import.lock"
        other = os.open(lock, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):  # the file at the path is the one held
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(other)
    assert not any(data.iterdir())


@pytest.mark.parametrize(
    ("spelled", "args_file", "refused"),
    [
        ("a/../b", False, None),
        (".", False, None),
        ("with,comma", False, ","),
        ("with space", False, None),
        ("with space", True, " "),
        ('quo"te', True, '"'),
        ("with,comma", True, ","),
    ],
)
def test_paths_reach_the_importer_normal_or_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelled: str, args_file: bool, refused: str | None
) -> None:
    """neo4j-admin refuses ``.`` and ``..`` ("not a normalized path", after every bundle was
    verified), splits file lists at commas, and an @args file at whitespace and quotes."""
    monkeypatch.chdir(tmp_path)
    if refused is None:
        assert (
            _importer_path(Path(spelled), "--neo4j-data", args_file=args_file)
            == (tmp_path / spelled).resolve()
        )
    else:
        with pytest.raises(UsageError, match=f"neo4j-admin cannot take a path holding {refused!r}"):
            _importer_path(Path(spelled), "--neo4j-data", args_file=args_file)


def test_a_comma_in_the_folder_is_refused_before_verifying(tmp_path: Path) -> None:
    code, said = _import(tmp_path / "a,b")
    assert code == 2 and "neo4j-admin cannot take a path holding ','" in said, said
    assert not (tmp_path / "a,b").exists()


@pytest.mark.parametrize("option", ["--neo4j-data", "--csv-only"])
def test_a_folder_whose_name_is_not_utf_8_is_refused_before_verifying(tmp_path: Path, option: str) -> None:
    """A byte that is not UTF-8 in the folder's name: one line, exit 2, nothing written. With
    --csv-only it was exit 70 (UnicodeEncodeError) once the CSV files were written, its
    ``neo4j-admin.args`` left empty and the folder refused at the next run (not empty)."""
    folder = tmp_path / os.fsdecode(b"cz\xffx")
    done = run_cli("import", SAMPLES, option, str(folder), "--json")
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == (
        f"pith-graph: error: {option} {tmp_path}/cz\\xffx: neo4j-admin cannot take a path that is "
        "not UTF-8 (the byte \\xff); choose another folder\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["--neo4j-data", "--csv-only"])
@pytest.mark.parametrize("there", ["file", "device"])
def test_a_file_where_the_folder_goes_is_refused_before_verifying(
    tmp_path: Path, option: str, there: str
) -> None:
    """A regular file or a device named as the folder: one line, exit 2, before a bundle is
    verified (it was exit 70, FileExistsError; for --csv-only, once every bundle was)."""
    path = tmp_path / "a-file" if there == "file" else Path("/dev/null")
    if there == "file":
        path.write_text("not a folder\n")
    done = run_cli("import", SAMPLES, option, str(path), "--json")
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == f"pith-graph: error: {option} {path} is not a folder\n"
    assert path.read_text() == ("not a folder\n" if there == "file" else "")


@pytest.mark.parametrize("option", ["--neo4j-data", "--csv-only"])
def test_a_folder_under_a_file_is_refused_before_verifying(tmp_path: Path, option: str) -> None:
    """A folder to make under a regular file: refused alike (--csv-only was exit 70)."""
    above = tmp_path / "a-file"
    above.write_text("not a folder\n")
    done = run_cli("import", SAMPLES, option, str(above / "sub"))
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr == f"pith-graph: error: {option} {above / 'sub'} is not a folder: {above} is no folder\n"
    )


def test_the_importer_s_message_is_its_last_line_that_is_no_stack_frame() -> None:
    output = """ERROR: Invalid value for option '--nodes': File '/tmp/x' doesn't exist
java.lang.IllegalArgumentException: File '/tmp/x' doesn't exist
\tat org.neo4j.importer.Something.parse(Something.java:12)
\t... 23 more
\tat org.neo4j.cli.AdminTool.main(AdminTool.java:82)
"""
    assert _tail(output) == "java.lang.IllegalArgumentException: File '/tmp/x' doesn't exist"
    assert _tail("") == "(no output)"
    assert _tail("Import failed\n") == "Import failed"


def test_the_lock_goes_with_the_import(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    with import_lock(data):
        assert [path.name for path in data.iterdir()] == ["import.lock"]
    assert not any(data.iterdir())
    with import_lock(data):  # and the next one takes it
        pass


def _planting_while_verifying(monkeypatch: pytest.MonkeyPatch, plant: Callable[[], None]) -> list[int]:
    """Run ``plant`` as the bundles start to be verified (after the checks of the folders):
    what another user could do meanwhile. Returns a list that counts the bundles read."""
    read: list[int] = []
    original = bulk.parts

    def parts(*args: Any, **kwargs: Any) -> Iterator[Any]:
        plant()
        for seen, results in original(*args, **kwargs):
            read.append(seen)
            yield seen, results

    monkeypatch.setattr(bulk, "parts", parts)
    return read


def test_a_link_planted_in_the_csv_folder_while_verifying_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The --csv-only folder, missing at the checks, was made only once every bundle was
    verified (and accepted if someone else had made it meanwhile): a link planted in it had
    its target overwritten. It is made before a bundle is verified now, and no file is written
    through a link or one already there."""
    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    victim.write_text("precious\n")

    def plant() -> None:
        out.mkdir(exist_ok=True)
        (out / "paper.header.csv").symlink_to(victim)

    _planting_while_verifying(monkeypatch, plant)
    with pytest.raises(StoreError, match=r"cannot write .*paper\.header\.csv \(a link: never followed\)"):
        bulk_import([SAMPLES], keyring=default_keyring(), data=None, csv_only=out, workers=1)
    assert victim.read_text() == "precious\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_csv_folder_another_user_made_after_the_checks_is_refused_before_verifying(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    original = bulk._check_csv_folder

    def checked_then_made(folder: Path) -> None:
        original(folder)
        out.mkdir()
        os.chown(out, 65534, 65534)

    monkeypatch.setattr(bulk, "_check_csv_folder", checked_then_made)
    read = _planting_while_verifying(monkeypatch, lambda: None)
    with pytest.raises(UsageError, match="is owned by another user"):
        bulk_import([SAMPLES], keyring=default_keyring(), data=None, csv_only=out, workers=1)
    assert read == [] and not any(out.iterdir())


@pytest.mark.parametrize(
    ("owner", "mode", "refused"),
    [
        (65534, 0o755, "is owned by another user (uid 65534), who could replace the folder"),
        (0, 0o777, "is writable by group or others (mode 777) without the sticky bit"),
        (0, 0o1777, None),  # as /tmp: others cannot rename or remove what is ours there
    ],
    ids=["another-user-s", "writable", "sticky"],
)
def test_the_folder_the_csv_folder_is_made_in_is_checked(
    tmp_path: Path, owner: int, mode: int, refused: str | None
) -> None:
    """The --csv-only folder's parent (where its hidden work folder goes too) was never
    checked: another user's was accepted, who could swap the CSV folder for their own."""
    if owner != os.geteuid() and os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    parent = tmp_path / "own"
    parent.mkdir()
    parent.chmod(mode)
    os.chown(parent, owner, owner)
    done = run_cli("import", SAMPLES, "--csv-only", str(parent / "sub"), "--json")
    if refused is None:
        assert done.returncode == 0, done.stderr
        assert (parent / "sub" / "neo4j-admin.args").is_file()
        return
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == f"pith-graph: error: --csv-only {parent / 'sub'}: {parent} {refused}: " + (
        "name one in a folder of yours\n" if owner != 0 else "name a folder elsewhere\n"
    )
    assert not any(parent.iterdir())


def test_a_bad_import_heap_is_refused_before_verifying(tmp_path: Path) -> None:
    """NEO4J_IMPORT_HEAP=abc reached the importer's JVM once every bundle was verified: exit 3,
    "A fatal exception has occurred", and the folder marked as an interrupted import."""
    data = tmp_path / "data"
    done = run_cli("import", SAMPLES, "--neo4j-data", str(data), env={"NEO4J_IMPORT_HEAP": "abc"})
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == (
        "pith-graph: error: NEO4J_IMPORT_HEAP (the importer's JVM heap, -Xmx) must be a size in bytes, "
        "with k, m, g or t (1g, 512m), not 'abc'\n"
    )
    assert not data.exists()


def test_the_jvm_s_own_last_words_are_no_cause() -> None:
    output = "Invalid maximum heap size: -Xmxabc\nError: Could not create the Java Virtual Machine.\n"
    output += "Error: A fatal exception has occurred. Program will exit.\n"
    assert _tail(output) == "Invalid maximum heap size: -Xmxabc"


@pytest.mark.parametrize("workers", [1, 2])
def test_no_room_for_the_work_files_is_a_store_error_that_leaves_the_database(
    tmp_path: Path, workers: int
) -> None:
    """A write of the spill that finds no room (here the file size limit, ``ulimit -f``: EFBIG,
    as a full disk's ENOSPC) was exit 70, "a bug in pith-graph" (before 0.9.12); now
    ``write_failed`` naming the folder, with ``--replace`` too: the database there untouched,
    no marker, no work folder left."""
    data = tmp_path / "data"
    store = data / "data" / "databases" / "neo4j" / "neostore"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"the old database")
    data.chmod(0o700)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pith_graph",
            "import",
            SAMPLES,
            "--neo4j-data",
            str(data),
            "--replace",
            "--workers",
            str(workers),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024)),
    )
    assert (done.returncode, done.stdout) == (3, ""), done.stderr
    assert done.stderr == (
        f"pith-graph: store error: write_failed: cannot write the import's files in {data}: File too large: "
        f"nothing was imported, the database of {data} is as it was\n"
    )
    assert store.read_bytes() == b"the old database"
    assert sorted(path.name for path in data.iterdir()) == ["data"]


def _script_lock_held(data: Path) -> int:
    """``data``'s ``.script.lock`` held as ``scripts/neo4j`` holds it through a start."""
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle = os.open(data / ".script.lock", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def _import_holds_its_lock(data: Path, process: subprocess.Popen[str]) -> bool:
    try:
        handle = os.open(data / "import.lock", os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(handle)
    assert process.poll() is None, process.communicate()
    return False


def test_a_server_start_under_way_as_the_import_begins_is_waited_for_and_seen(tmp_path: Path) -> None:
    """A ``scripts/neo4j start`` that found no import holding ``import.lock`` just before this
    one took it launches its server anyway: the import waits for the script's lock, then sees
    the server and refuses (before 0.9.13 it went on, the server's pid file not yet written)."""
    data = tmp_path / "data"
    held = _script_lock_held(data)
    fake = subprocess.Popen(["bash", "-c", "exec -a dev.pith.neo4j.Launcher sleep 60"], cwd=data)
    importing = subprocess.Popen(
        [sys.executable, "-m", "pith_graph", "import", SAMPLES, "--neo4j-data", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not _import_holds_its_lock(data, importing):
            assert time.monotonic() < deadline, "the import never took import.lock"
            time.sleep(0.02)
        time.sleep(1.0)  # the import checks the folder meanwhile (it did at once before)
        assert importing.poll() is None  # waiting for the start to end
        (data / "neo4j.pid").write_text(f"{fake.pid}\n")  # what the start writes
        os.close(held)
        _, said = importing.communicate(timeout=60)
        assert importing.returncode == 2, said
        assert said == (
            f"pith-graph: error: the Neo4j of {data} is in use (its server is running (pid {fake.pid})): "
            "stop it first (scripts/neo4j stop)\n"
        )
    finally:
        for process in (importing, fake):
            process.kill()
            process.communicate()
    assert not (data / "import.incomplete").exists()


def test_a_scripts_lock_held_past_the_script_s_own_wait_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    held = _script_lock_held(data)
    monkeypatch.setattr(neo4j_admin, "SCRIPT_LOCK_SECONDS", 0.3)
    try:
        with pytest.raises(UsageError, match=f"^scripts/neo4j commands in {data} have held .* for 0.3 s"):
            bulk_import([SAMPLES], keyring=resolve_keyring(), data=data)
    finally:
        os.close(held)
    assert not (data / "import.incomplete").exists()


@pytest.mark.parametrize("kind", ["fifo", "folder", "link"])
def test_a_scripts_lock_that_is_no_file_is_refused_without_waiting(tmp_path: Path, kind: str) -> None:
    """A FIFO where ``.script.lock`` goes would have held the import in its open() for ever
    (the script's own lock waits there too): refused at once, as a folder or a link there
    is (the link's target untouched)."""
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    target = tmp_path / "target"
    target.write_text("precious\n")
    if kind == "fifo":
        os.mkfifo(data / ".script.lock", 0o600)
    elif kind == "folder":
        (data / ".script.lock").mkdir()
    else:
        (data / ".script.lock").symlink_to(target)
    code, said = _import(data)
    assert code == 2, said
    assert said == (
        f"pith-graph: error: cannot lock {data}/.script.lock: it is not a file (a link, folder, FIFO or device): "
        "remove it\n"
    )
    assert target.read_text() == "precious\n"


def test_the_import_server_s_settings_cannot_be_changed_in_place() -> None:
    """``IMPORT_SERVER`` is public: a caller's ``IMPORT_SERVER["NEO4J_PLUGINS"] = "on"`` changed
    the server of every later import in that process (it was a dict until 0.9.16)."""
    with pytest.raises(TypeError):
        neo4j_admin.IMPORT_SERVER["NEO4J_PLUGINS"] = "on"  # type: ignore[index]
    assert dict(neo4j_admin.IMPORT_SERVER) == {"NEO4J_INCOMPLETE": "import", "NEO4J_PLUGINS": "off"}
