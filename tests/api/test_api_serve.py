"""``pith-graph serve``: loads before it listens, answers, and stops cleanly on SIGTERM, with
one serving process or several."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from pith_graph import SAMPLES, load_graph
from pith_graph.testing import run_cli
from pith_graph.testing.corpus import write_corpus
from pith_graph.testing.serving import serving

QUERY = '{ paper(id: "doi:10.48550/ARXIV.2201.07821") { title } }'
#: The stop's cap in the tests that wait it out (``PITH_API_STOP_SECONDS``; 10 by default,
#: which test_api_settings checks): short, to keep their time, and unlike the default, so they
#: fail if the setting is not what uvicorn is given.
STOP_SECONDS = 4


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _under_way(sock: socket.socket, host: str, length: int, start: bytes) -> None:
    """Send a POST's head (``Content-Length: length``) and the ``start`` of its body, and return
    once the request has reached the application: the head asks ``Expect: 100-continue``, and
    the server sends ``100 Continue`` when the application first reads the body. (A fixed wait
    here let a SIGTERM find the request not yet read on a busy host, and the server closed it
    unanswered, as it may a connection that has sent no whole request.)"""
    head = (
        f"POST /graphql HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\nExpect: 100-continue\r\n\r\n"
    )
    sock.sendall(head.encode() + start)
    interim = b""
    while not interim.endswith(b"\r\n\r\n"):
        chunk = sock.recv(1)
        assert chunk, f"closed before the request was read: {interim!r}"
        interim += chunk
    assert interim == b"HTTP/1.1 100 Continue\r\n\r\n", interim


def _start(*options: str) -> tuple[subprocess.Popen[str], str, list[str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "pith_graph", "serve", "--port", "0", "--load-workers", "1", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    output: list[str] = []
    deadline = time.monotonic() + 60
    url = None
    while url is None and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        output.append(line)
        found = re.search(r"Uvicorn running on (http://\S+)", line)
        if found:
            url = found.group(1)
    if url is None:
        process.kill()
        pytest.fail("".join(output))
    return process, url, output


def _stop(process: subprocess.Popen[str], output: list[str]) -> str:
    process.send_signal(signal.SIGTERM)
    rest, _ = process.communicate(timeout=30)
    output.append(rest)
    return "".join(output)


def _answers(url: str) -> None:
    deadline = time.monotonic() + 30
    while True:  # the workers may still be starting
        try:
            health = httpx.get(f"{url}/healthz")
            break
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    assert health.json() == {"status": "ok", "backend": "memory"}
    for _ in range(3):  # the resolvers, then the plan
        body = httpx.post(f"{url}/graphql", json={"query": QUERY})
        assert body.json()["data"]["paper"]["title"].startswith("Building a Performance Model")


def test_serve_samples_then_sigterm() -> None:
    process, url, output = _start("--workers", "1")
    try:
        assert any("the graph holds 3 papers" in line for line in output), output
        _answers(url)
    finally:
        log = _stop(process, output)
    assert process.returncode == 0, log
    assert "Application shutdown complete" in log
    assert "Traceback" not in log


def test_serve_says_how_many_papers_the_bundles_left(tmp_path: Path) -> None:
    """Bundles that replace papers an earlier batch loaded are accepted but add no paper: the
    start-up line counts the graph's papers, not the bundles accepted (at 250k generated
    bundles it said "loaded 248792 papers" of a graph holding 238,116), and says how long
    the indexes took."""
    write_corpus(tmp_path, 1300, seed=1, layout="jsonl", workers=1)  # rebuilds past the first batch of 1000
    corpus = ["--trusted-keys", str(tmp_path / "keyring.json"), str(tmp_path / "bundles-00000.jsonl")]
    _, report = load_graph(
        [tmp_path / "bundles-00000.jsonl"], trusted_keys=tmp_path / "keyring.json", workers=1
    )
    assert report.counts is not None
    papers = report.counts.nodes["Paper"]
    assert report.replaced > 0 and report.accepted > papers  # what the case is about
    process, _, output = _start("--workers", "1", *corpus)
    try:
        line = next(line for line in output if line.startswith("loaded "))
        assert line.startswith(f"loaded {report.verified} bundles in "), line
        assert f"({report.rejected} rejected; {report.replaced} replaced an earlier one; " in line, line
        assert line.rstrip().endswith(f": the graph holds {papers} papers"), line
        assert any(
            re.fullmatch(r"built the search, ranking and facet indexes in \d+\.\d s\n", x) for x in output
        )
    finally:
        _stop(process, output)


def test_serve_lists_the_first_1000_rejections_and_counts_the_rest(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n" * 1002)
    process, _, output = _start("--workers", "1", str(bad))
    try:
        rejected = [line for line in output if line.startswith("REJECTED ")]
        assert [line.split(": ")[0] for line in rejected] == [f"REJECTED {bad}:{n}" for n in range(1, 1001)]
        at = output.index(rejected[-1])
        assert output[at + 1] == "and 2 more rejected, not listed\n", output[at + 1 :]
        assert output[at + 2].startswith("loaded 0 bundles in "), output[at + 2]
        assert "(1002 rejected; " in output[at + 2]
    finally:
        _stop(process, output)


def test_serve_in_two_workers_then_sigterm_stops_them_all() -> None:
    process, url, output = _start("--workers", "2")
    try:
        assert sum("the graph holds 3 papers" in line for line in output) == 1, output  # loaded once
        _answers(url)
        deadline = time.monotonic() + 30
        while len(workers := _children(process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(workers) == 2, workers
        for _ in range(20):  # both workers answer (new connections are spread between them)
            assert httpx.post(f"{url}/graphql", json={"query": QUERY}).status_code == 200
    finally:
        log = _stop(process, output)
    assert process.returncode == 0, log
    assert log.count("Application shutdown complete") == 2, log
    assert "Traceback" not in log
    assert not [pid for pid in workers if _alive(pid)], "a worker outlived the server"


def test_a_crashed_worker_is_replaced_and_the_server_keeps_answering() -> None:
    process, url, output = _start("--workers", "2")
    try:
        _answers(url)
        victim, survivor = sorted(_children(process.pid))
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            now = _children(process.pid)
            if len(now) == 2 and victim not in now:
                break
            time.sleep(0.1)
        assert len(now) == 2 and victim not in now and survivor in now, (victim, survivor, now)
        for _ in range(20):  # the new worker serves beside the old one
            assert httpx.post(f"{url}/graphql", json={"query": QUERY}).status_code == 200
    finally:
        log = _stop(process, output)
    assert process.returncode == 0, log
    assert f"worker {victim} exited with -9; starting another" in log
    assert log.count("Application shutdown complete") == 2, log  # the survivor and the new one


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_request_under_way_at_sigterm_is_answered_before_the_server_stops(workers: str) -> None:
    """Half a request's body is sent, then SIGTERM, then the rest: the answer comes whole, the
    server takes no new connections meanwhile, and it exits 0."""
    process, url, output = _start("--workers", workers)
    try:
        _answers(url)
        body = json.dumps({"query": QUERY}).encode()
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            _under_way(sock, host, len(body), body[:10])
            process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # until the listening sockets are closed
                try:
                    socket.create_connection((host, int(port)), timeout=1).close()
                except OSError:
                    break
                time.sleep(0.05)
            else:
                pytest.fail("still accepting connections 10 s after SIGTERM")
            time.sleep(1.5)  # the stop is under way: well past an immediate one, within its 10 s
            sock.sendall(body[10:])
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
                if b"\r\n\r\n" in answer and answer.rstrip().endswith(b"}"):
                    break
        status, _, payload = answer.partition(b"\r\n\r\n")
        assert status.startswith(b"HTTP/1.1 200"), answer
        assert json.loads(payload)["data"]["paper"]["title"].startswith("Building a Performance Model")
        process.wait(30)
    finally:
        log = _stop(process, output)  # (a SIGTERM to a process that has exited is not sent)
    assert process.returncode == 0, log
    assert "Traceback" not in log


def test_a_request_that_does_not_finish_holds_the_stop_back_for_its_cap_at_most(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """README: SIGTERM "lets running requests finish (10 s at most, `PITH_API_STOP_SECONDS`)".
    A client sends half a body and no more, with the body wait raised to 60 s so that only the
    stop's own cap can end it: the server waits for it (it does not exit at once), then answers
    it 503 SERVICE_UNAVAILABLE, logs one line (uvicorn's cancellation gave a traceback and a
    plain-text 500) and exits 0 by about the cap."""
    monkeypatch.setenv("PITH_API_BODY_TIMEOUT_SECONDS", "60")
    monkeypatch.setenv("PITH_API_STOP_SECONDS", str(STOP_SECONDS))
    process, url, output = _start("--workers", "1")
    try:
        _answers(url)
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            _under_way(sock, host, 100, b'{"query": ')
            process.send_signal(signal.SIGTERM)
            started = time.monotonic()
            with pytest.raises(subprocess.TimeoutExpired):
                process.wait(STOP_SECONDS - 2)  # held back by the request under way
            process.wait(2 + 4)  # the cap, and time to close the store and exit
            seconds = time.monotonic() - started
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
    finally:
        log = _stop(process, output)  # (a SIGTERM to a process that has exited is not sent)
    assert process.returncode == 0, log
    assert STOP_SECONDS - 2 <= seconds < STOP_SECONDS + 4, (seconds, log)
    status, _, payload = answer.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 503"), answer
    assert [e["extensions"]["code"] for e in json.loads(payload)["errors"]] == ["SERVICE_UNAVAILABLE"]
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log
    assert "a request (POST /graphql) was still under way when the server stopped: answered 503" in log
    assert "ASGI callable returned without" not in log, log


def test_a_client_that_does_not_read_its_answers_holds_the_stop_back_for_its_cap_at_most(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client asks for a large answer (GraphiQL's script, 3.5 MB unzipped) and pipelines a
    query behind it, with a small receive buffer, and reads nothing: the server cannot send
    the rest of the first answer, nor any of the second. SIGTERM: the stop waits its cap, then
    closes the connection (the client holds less than the first answer's Content-Length),
    logs the query in one line, with no traceback, and exits 0."""
    monkeypatch.setenv("PITH_API_STOP_SECONDS", str(STOP_SECONDS))
    process, url, output = _start("--workers", "1")
    try:
        _answers(url)
        host, port = url.removeprefix("http://").split(":")
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(30)
            sock.connect((host, int(port)))
            body = json.dumps({"query": QUERY}).encode()
            large = f"GET /graphiql/graphiql.min.js HTTP/1.1\r\nHost: {host}\r\n\r\n"
            query = (
                f"POST /graphql HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
            sock.sendall(large.encode() + query.encode() + body)
            time.sleep(1)  # the answer fills the buffers; the query waits behind it
            process.send_signal(signal.SIGTERM)
            started = time.monotonic()
            with pytest.raises(subprocess.TimeoutExpired):
                process.wait(STOP_SECONDS - 2)
            process.wait(2 + 4)
            seconds = time.monotonic() - started
            answer = b""
            while chunk := sock.recv(1 << 20):
                answer += chunk
    finally:
        log = _stop(process, output)
    assert process.returncode == 0, log
    assert STOP_SECONDS - 2 <= seconds < STOP_SECONDS + 4, (seconds, log)
    head, _, rest = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), answer[:200]
    declared = int(re.search(rb"content-length: (\d+)", head, re.IGNORECASE).group(1))  # type: ignore[union-attr]
    assert declared > 3_000_000 and len(rest) < declared, (declared, len(rest))
    assert b"HTTP/1.1" not in rest, "the pipelined query was answered"
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log
    assert (
        "a request (POST /graphql) was still under way when the server stopped: not answered: its client was not reading"
        in log
    )
    assert "ASGI callable returned without" not in log, log  # uvicorn's line, said better above


def test_a_worker_dies_with_a_killed_supervisor() -> None:
    process, url, _ = _start("--workers", "2")
    try:
        _answers(url)
        workers = _children(process.pid)
        assert len(workers) == 2
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
        deadline = time.monotonic() + 20
        while [pid for pid in workers if _alive(pid)] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in workers if _alive(pid)], "a worker outlived its supervisor"
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)


def test_a_memory_server_never_imports_the_neo4j_driver(tmp_path: Path) -> None:
    """The memory backend's server, in two serving processes, loads the samples and answers
    without importing the Neo4j driver (0.9 s of its start with pandas installed): a ``neo4j``
    package first on the path that marks a file and refuses to be imported is never met."""
    shadow = tmp_path / "shadow"
    (shadow / "neo4j").mkdir(parents=True)
    marker = tmp_path / "imported"
    (shadow / "neo4j" / "__init__.py").write_text(
        f"open({str(marker)!r}, 'a').close()\nraise ImportError('the memory backend imported neo4j')\n"
    )
    path = os.pathsep.join(filter(None, [str(shadow), os.environ.get("PYTHONPATH")]))
    with serving(["--port", "0", "--workers", "2"], {"PYTHONPATH": path}) as url:
        for _ in range(2):  # either serving process may take a connection
            _answers(url)
    assert not marker.exists()


def test_serve_neo4j_refuses_paths() -> None:
    done = run_cli("serve", "--backend", "neo4j", "some/path", timeout=60)
    assert done.returncode == 2
    assert "pith-graph load" in done.stderr
    assert "Traceback" not in done.stderr


def test_serving_papers_of_keys_the_server_does_not_pin_or_revokes_warns(tmp_path: Path) -> None:
    """Ranks come from the server's keyring, not from the graph: a saved graph served without
    the ``--trusted-keys`` its loads used answers an identifier two signers claim with the
    newest claim, not the higher-ranked signer's. ``serve`` says so at start, naming keys the
    graph's signers used and its keyring lacks (since 0.8.9; in 0.8.8 whenever a stored graph
    was served without ``--trusted-keys``: the samples, all the registry's, too, and never
    when a keys file lacked one of them); with the keys, or when it loads bundles itself (their
    keys are the ones given), it does not. Since 0.8.9 it also names keys ``--revoked-keys``
    revokes for all time whose papers it still serves (until ``prune`` removes them)."""
    write_corpus(tmp_path / "corpus", 3, seed=2, layout="jsonl", workers=1)
    keys = tmp_path / "corpus" / "keyring.json"
    entries = json.loads(keys.read_text())
    one_key, revoked, rotated = (tmp_path / name for name in ("one-key.json", "revoked.json", "rotated.json"))
    one_key.write_text(json.dumps(entries[1:]))  # the builder's, no bundle's
    revoked.write_text(json.dumps([{**entries[0], "revoked": True}]))
    rotated.write_text(json.dumps([{**entries[0], "revoked_at": "2099-01-01T00:00:00Z"}]))
    samples, corpus, pruned = (str(tmp_path / f"{name}.snapshot") for name in ("samples", "corpus", "pruned"))
    for source, snapshot in ((str(SAMPLES), samples), (str(tmp_path / "corpus"), corpus)):
        saved = run_cli("load", source, "--snapshot", snapshot, "--trusted-keys", str(keys))
        assert saved.returncode == 0, saved.stderr
    prune = ("prune", "--backend", "memory", "--graph", corpus, "--revoked-keys", str(revoked))
    done = run_cli(*prune, "--trusted-keys", str(keys), "--save", pruned, timeout=60)
    assert done.returncode == 0, done.stderr
    unpinned = (
        "the graph holds papers signed by a key ('pith-graph-corpus-2-registry') this server's keyring does "
        "not pin: they are served unranked (rank null), so where two signers claim one identifier the API "
        "cannot prefer the higher-ranked one; pass the --trusted-keys files the loads used"
    )
    revocation = (
        "the graph holds papers signed by a key ('pith-graph-corpus-2-registry') revoked in --revoked-keys: "
        "they are served as before until pith-graph prune, given the same --revoked-keys, removes them"
    )
    trusted = ("--trusted-keys", str(keys))
    for options, warned in (
        (("--graph", corpus), unpinned),
        (("--graph", corpus, "--trusted-keys", str(one_key)), unpinned),
        (("--graph", corpus, *trusted), None),
        (("--graph", samples), None),
        ((str(tmp_path / "corpus"), *trusted), None),
        (("--graph", corpus, *trusted, "--revoked-keys", str(revoked)), revocation),
        (("--graph", corpus, *trusted, "--revoked-keys", str(rotated)), None),  # its papers are older
        (("--graph", pruned, *trusted, "--revoked-keys", str(revoked)), None),
    ):
        process, url, output = _start("--workers", "1", *options)
        try:
            assert httpx.get(f"{url}/healthz", timeout=30).status_code == 200
        finally:
            log = _stop(process, output)
        found = [line for line in log.splitlines() if line.startswith("WARNING pith_graph.api.serve")]
        assert found == ([f"WARNING pith_graph.api.serve: {warned}"] if warned else []), (options, log)
