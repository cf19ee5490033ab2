"""Verification workers never outlive the loader: a ``kill -9`` of ``pith-graph load`` takes
its worker processes with it (Linux: the kernel's parent-death signal; elsewhere a watchdog)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import alive

from pith_graph.testing.corpus import CorpusInfo, write_corpus

WORKERS = 2


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry))
    return found


def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := [pid for pid in pids if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> CorpusInfo:
    return write_corpus(tmp_path_factory.mktemp("workers"), 600, seed=11, workers=2, layout="jsonl")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_sigkill_of_the_loader_ends_its_workers(corpus: CorpusInfo, stray: list[int]) -> None:
    # The corpus goes in on stdin, which stays open: the loader has started its workers and
    # is mid-run, waiting for more input, when it is killed.
    args = ["load", "-", "--workers", str(WORKERS), "--trusted-keys", str(corpus.keyring_path)]
    loader = subprocess.Popen(
        [sys.executable, "-m", "pith_graph", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    stray.append(loader.pid)
    assert loader.stdin is not None
    loader.stdin.write(corpus.shards[0].read_bytes())
    loader.stdin.flush()
    deadline = time.monotonic() + 60
    while len(workers := _children(loader.pid)) < WORKERS:
        assert loader.poll() is None, "the loader ended before it was killed"
        assert time.monotonic() < deadline, "the loader started no workers"
        time.sleep(0.05)
    stray.extend(workers)

    os.kill(loader.pid, signal.SIGKILL)  # the loader only, not its process group
    loader.wait(10)
    loader.stdin.close()

    assert _wait_gone(workers, 5.0) == [], "workers outlived the killed loader"


def test_watchdog_ends_a_worker_without_prctl(tmp_path: Path, stray: list[int]) -> None:
    """Where the kernel cannot be asked (not Linux), a thread watches the parent instead."""
    pid_file = tmp_path / "worker.pid"
    script = textwrap.dedent(
        f"""
        import os, time
        from pith_graph.loader import workers
        workers._kernel_kills_orphans = lambda: False
        parent = os.getpid()
        if os.fork() == 0:
            workers.die_with_parent(parent)
            with open({str(pid_file)!r}, "w") as f:
                f.write(str(os.getpid()))
            time.sleep(60)
            os._exit(0)
        time.sleep(60)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    stray.append(parent.pid)
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the worker did not start"
        time.sleep(0.05)
    worker = int(pid_file.read_text())
    stray.append(worker)

    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(10)

    assert _wait_gone([worker], 5.0) == [], "the watchdog did not end the orphan"


# -- in_processes ------------------------------------------------------------------------------


def test_in_processes_runs_each_share_in_a_process_of_its_own() -> None:
    from pith_graph.loader.workers import in_processes

    here = os.getpid()
    lock = threading.Lock()  # a lock does not pickle: the work closes over it, forked, not sent
    results = in_processes(3, lambda k: (k, os.getpid(), not lock.locked()))
    assert [k for k, _, _ in results] == [0, 1, 2]
    pids = [pid for _, pid, _ in results]
    assert pids[0] == here and len(set(pids)) == 3
    assert all(free for _, _, free in results)
    assert in_processes(1, lambda k: os.getpid()) == [here]


def test_in_processes_raises_a_share_s_error_here() -> None:
    from pith_graph.errors import StoreError, StoreErrorCode
    from pith_graph.loader.workers import in_processes

    def work(k: int) -> int:
        if k == 1:
            raise StoreError(StoreErrorCode.IMPORT_FAILED, "share 1 failed")
        return k

    with pytest.raises(StoreError) as raised:
        in_processes(2, work)
    assert raised.value.code is StoreErrorCode.IMPORT_FAILED and "share 1 failed" in str(raised.value)


def test_a_share_killed_before_its_result_is_worker_failed() -> None:
    """A share killed (as the out-of-memory killer does) is a coded error naming it and its
    signal (was a bare RuntimeError: a traceback from ``pith-graph import``)."""
    from pith_graph.errors import StoreError, StoreErrorCode
    from pith_graph.loader.workers import in_processes

    def work(k: int) -> int:
        if k == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return k

    with pytest.raises(StoreError) as raised:
        in_processes(2, work)
    assert raised.value.code is StoreErrorCode.WORKER_FAILED
    assert "worker process 1 (pid " in str(raised.value) and "killed by SIGKILL" in str(raised.value)


def test_in_processes_stops_the_others_when_its_own_share_fails(tmp_path: Path) -> None:
    from pith_graph.loader.workers import in_processes

    marker = tmp_path / "pids"

    def work(k: int) -> None:
        if k == 0:
            deadline = time.monotonic() + 10
            while not marker.exists() or len(marker.read_text().split()) < 2:  # both started
                assert time.monotonic() < deadline
                time.sleep(0.01)
            raise ValueError("own share failed")
        with marker.open("a") as handle:
            handle.write(f"{os.getpid()}\n")
        time.sleep(60)

    started = time.monotonic()
    with pytest.raises(ValueError, match="own share failed"):
        in_processes(3, work)
    assert time.monotonic() - started < 30
    for pid in map(int, marker.read_text().split()):
        assert not alive(pid)


def test_an_interrupt_that_lands_while_a_worker_is_forked_is_raised_after_it() -> None:
    """A SIGTERM (the CLI turns it into an interrupt) delivered in one of ``os.fork``'s at-fork
    handlers was "ignored" by Python, and ``load -`` went on to its end and exited 0 (CI, once):
    it is now held until the fork is done, then raised. Run in a child interpreter, whose
    at-fork handler sends the signal as the first worker is forked."""
    script = textwrap.dedent(
        """
        import os, signal, sys
        from pith_graph.loader.workers import in_processes

        def interrupt(signum, frame):
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, interrupt)
        sent = []

        def land_in_the_fork():
            if not sent:
                sent.append(True)
                signal.raise_signal(signal.SIGTERM)

        os.register_at_fork(after_in_parent=land_in_the_fork)
        try:
            in_processes(2, lambda index: index)
        except KeyboardInterrupt:
            print("interrupted")
            sys.exit(130)
        print("went on")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip(), done.stderr) == (130, "interrupted", "")
