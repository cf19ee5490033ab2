"""A save that fails after the load (the graph is built, writing it failed) is a store
failure: ``write_failed``, exit 3, one line naming the file; the file that was there stays
whole and no partial file is left beside it. Node-link (``--save``) and snapshot
(``--snapshot``) alike."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from pith_graph.errors import StoreError, StoreErrorCode
from pith_graph.loader.facade import SAMPLES, load_graph
from pith_graph.loader.stores.files import writes_beside
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.testing import run_cli

OLD = b"the graph saved before: left as it is"
LIMIT = 4096  # bytes a file may grow to: less than the samples' graph in either format


#: ``pith-graph`` in a process whose files may grow to ``LIMIT`` bytes, a write past it
#: failing with EFBIG (SIGXFSZ ignored) as on a full disk.
SMALL_FILES_ONLY = f"""
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, ({LIMIT}, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
from pith_graph.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("linked", [False, True], ids=["file", "through-a-link"])
@pytest.mark.parametrize("option", ["--save", "--snapshot"])
def test_a_save_that_fails_mid_write_exits_3_and_leaves_the_old_file(
    tmp_path: Path, option: str, linked: bool
) -> None:
    """The file system refuses the write part way (as a full disk would): the pre-checks
    passed, the samples loaded, then the save failed. Through a link, the error names the
    path given and the file it leads to (it named the file only)."""
    target = tmp_path / "graph.out"
    target.write_bytes(OLD)
    given = tmp_path / "latest.out" if linked else target
    if linked:
        given.symlink_to(target.name)
    done = subprocess.run(
        [sys.executable, "-c", SMALL_FILES_ONLY, "load", SAMPLES, option, str(given), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout == ""  # a failed command prints no report: its error is the line on stderr
    where = f"{given} (a link to {target})" if linked else str(target)
    assert (
        done.stderr
        == f"pith-graph: store error: write_failed: cannot write the graph to {where}: File too large\n"
    )
    assert target.read_bytes() == OLD
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        {given.name, target.name}
    )  # no partial file


@pytest.fixture(scope="module")
def store() -> MemoryStore:
    return MemoryStore(load_graph([SAMPLES], workers=1)[0])


@pytest.mark.parametrize("save", [MemoryStore.save, MemoryStore.save_snapshot], ids=["node-link", "snapshot"])
def test_a_save_whose_rename_fails_is_write_failed(
    tmp_path: Path, store: MemoryStore, save: Callable[[MemoryStore, Path], None]
) -> None:
    """A folder where the file should go (made after any check): the graph is written
    beside it, the rename fails, and the partial file is removed."""
    target = tmp_path / "graph.out"
    target.mkdir()
    (target / "kept").write_bytes(OLD)
    with pytest.raises(StoreError) as caught:
        save(store, target)
    assert caught.value.code is StoreErrorCode.WRITE_FAILED
    assert str(caught.value) == f"write_failed: cannot write the graph to {target}: Is a directory"
    assert [path.name for path in tmp_path.iterdir()] == [target.name]
    assert (target / "kept").read_bytes() == OLD


def test_threads_saving_one_path_each_write_a_file_of_their_own(tmp_path: Path) -> None:
    """Two threads of one process saving to the same path: each save writes its own file
    beside it (they shared one name, and about 40 of 100 saves failed ``write_failed``:
    No such file or directory), and the path holds a whole graph after."""
    graph, _ = load_graph([SAMPLES], workers=1)
    store, errors = MemoryStore(graph), list[str]()
    barrier = threading.Barrier(2)
    target = tmp_path / "shared.snapshot"

    def save() -> None:
        barrier.wait()
        for _ in range(50):
            try:
                store.save_snapshot(target)
            except StoreError as error:
                errors.append(str(error))

    threads = [threading.Thread(target=save) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert MemoryStore.open(target).counts() == store.counts()
    assert [path.name for path in tmp_path.iterdir()] == ["shared.snapshot"]  # nothing left beside it


def test_a_save_whose_folder_was_replaced_by_a_file_is_write_failed(tmp_path: Path) -> None:
    """The ``--save`` folder replaced by a file while the load ran (checked at the start):
    ``write_failed`` naming the file, as for a full disk. Removing the temporary copy it could
    not make raised NotADirectoryError over that error: exit 70, an internal error."""
    folder = tmp_path / "out"
    folder.mkdir()
    store = MemoryStore(load_graph([SAMPLES], workers=1)[0])
    folder.rmdir()
    folder.write_text("in the way")
    with pytest.raises(StoreError) as failed:
        store.save(folder / "graph.json")
    assert failed.value.code is StoreErrorCode.WRITE_FAILED and str(folder / "graph.json") in str(
        failed.value
    )
    assert folder.read_text() == "in the way"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("option", ["--save", "--snapshot"])
def test_a_save_keeps_the_permissions_of_the_file_it_replaces(tmp_path: Path, option: str) -> None:
    """A ``chmod 600`` graph saved again stays 600 (it became 644, the umask's), and a new
    file has the umask's permissions."""
    kept, new = tmp_path / "private.out", tmp_path / "new.out"
    kept.write_bytes(OLD)
    kept.chmod(0o600)
    for target in (kept, new):
        done = run_cli("load", SAMPLES, option, str(target))
        assert done.returncode == 0, done.stderr
    mask = os.umask(0o077)
    os.umask(mask)
    assert (_mode(kept), _mode(new)) == (0o600, 0o666 & ~mask)
    assert kept.read_bytes() != OLD


def test_the_file_being_written_is_its_owners_only(tmp_path: Path) -> None:
    """Until it is renamed into place, the file written beside the path is 600 (it was
    readable by all, under the usual umask, while the graph was written)."""
    target = tmp_path / "g.json"
    with writes_beside() as write:
        write(target, b"{}")
        (partial,) = tmp_path.iterdir()
        assert _mode(partial) == 0o600
    assert target.read_bytes() == b"{}"


@pytest.mark.parametrize("save", [MemoryStore.save, MemoryStore.save_snapshot], ids=["node-link", "snapshot"])
def test_a_save_through_a_symbolic_link_replaces_the_file_it_leads_to(
    tmp_path: Path, store: MemoryStore, save: Callable[[MemoryStore, Path], None]
) -> None:
    """``latest.out -> store/real.out``: the graph goes to ``store/real.out``, with its
    permissions, and the link stays (the link was replaced by a file, the target left as it was)."""
    (tmp_path / "store").mkdir()
    real, link = tmp_path / "store" / "real.out", tmp_path / "latest.out"
    real.write_bytes(OLD)
    real.chmod(0o640)
    link.symlink_to(Path("store") / "real.out")
    save(store, link)
    assert link.is_symlink() and os.readlink(link) == os.path.join("store", "real.out")
    assert MemoryStore.open(real).counts() == store.counts()
    assert _mode(real) == 0o640
    assert [path.name for path in (tmp_path / "store").iterdir()] == ["real.out"]
