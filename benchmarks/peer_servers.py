"""The pieces of ``bench_peer.py`` that set things up: the peer's npm install, wrk, the corpus,
a private Neo4j, the two GraphQL server processes, and a plain HTTP POST."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import neo4j

from pith_graph.testing.corpus import cached_corpus

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PEER_DIR = ROOT / "benchmarks" / "peer"
#: The wrk script that posts the request bodies (bench_workers.py uses it too).
WRK_SCRIPT = ROOT / "benchmarks" / "wrk_bodies.lua"


def say(message: str) -> None:
    print(message, flush=True)


# -- tools -----------------------------------------------------------------------------------


def install_peer() -> dict[str, str]:
    """``npm ci`` the peer when node_modules is missing or older than the lock; its versions."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        raise SystemExit("bench_peer: Node.js 20+ and npm are needed for the peer")
    node_version = subprocess.run(
        [node, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    if int(node_version.lstrip("v").split(".")[0]) < 20:
        raise SystemExit(f"bench_peer: Node.js 20+ is needed, found {node_version}")
    installed = PEER_DIR / "node_modules" / ".package-lock.json"
    lock = PEER_DIR / "package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        say("installing the peer with npm ci into benchmarks/peer/node_modules ...")
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=PEER_DIR, check=True)
    versions = {"node": node_version}
    for package in ("@neo4j/graphql", "@apollo/server", "graphql", "neo4j-driver"):
        meta = json.loads((PEER_DIR / "node_modules" / package / "package.json").read_text())
        versions[package] = meta["version"]
    return versions


def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        say("installing wrk (Debian package) ...")

        def apt(*words: str) -> bool:
            return subprocess.run(["apt-get", *words], stdout=subprocess.DEVNULL, check=False).returncode == 0

        if not apt("install", "-y", "-q", "wrk"):
            apt("update", "-q")
            apt("install", "-y", "-q", "wrk")
    found = shutil.which("wrk")
    if not found:
        raise SystemExit("bench_peer: wrk is needed (apt-get install wrk)")
    return found


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports of 127.0.0.1 (bound at once, so never the same one)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


# -- corpus and database ---------------------------------------------------------------------


def corpus(n: int, seed: int, given: str | None) -> Path:
    """A corpus folder: ``--corpus``, or generated once into benchmarks/results/ (atomically)."""
    if given:
        return Path(given)
    return cached_corpus(RESULTS / f"corpus-{n}-seed{seed}", n, seed=seed, say=say)


class PrivateNeo4j:
    """A Neo4j started with scripts/neo4j on free Bolt and HTTP ports (never a default
    server's 7687/7474) and a temporary data folder, removed again should the start fail,
    with authentication on (user neo4j, the password scripts/neo4j generated)."""

    def __init__(self) -> None:
        bolt, http = free_ports(2)
        self.data = Path(tempfile.mkdtemp(prefix="bench-peer-neo4j-"))
        self.env = {
            **os.environ,
            "NEO4J_DATA": str(self.data),
            "NEO4J_BOLT_PORT": str(bolt),
            "NEO4J_HTTP_PORT": str(http),
        }
        self.env.pop("NEO4J_PASSWORD", None)
        try:
            done = self._script("start")
        except BaseException:
            shutil.rmtree(self.data, ignore_errors=True)
            raise
        if done.returncode != 0:
            self._script("stop")  # in case it started after all; then its folder goes
            shutil.rmtree(self.data, ignore_errors=True)
            raise SystemExit(f"scripts/neo4j start failed:\n{done.stderr}{done.stdout}")
        self.uri = done.stdout.strip().splitlines()[-1]
        self.pid = int((self.data / "neo4j.pid").read_text().strip())
        password_file = self.data / "password"  # scripts/neo4j generates it (auth is on)
        self.password = password_file.read_text().strip() if password_file.is_file() else None

    def _script(self, command: str) -> subprocess.CompletedProcess[str]:
        script = str(ROOT / "scripts" / "neo4j")
        return subprocess.run([script, command], env=self.env, capture_output=True, text=True, check=False)

    def stop(self) -> None:
        self._script("stop")
        shutil.rmtree(self.data, ignore_errors=True)


def count_papers(driver: neo4j.Driver, database: str) -> int:
    records, _, _ = driver.execute_query("MATCH (p:Paper) RETURN count(p)", database_=database)
    return int(records[0][0])


def load(folder: Path, uri: str, env: dict[str, str]) -> None:
    shards = sorted(str(p) for p in folder.iterdir() if p.name.startswith("bundles-"))
    command = [sys.executable, "-m", "pith_graph", "load", *shards, "--backend", "neo4j", "--uri", uri]
    command += ["--trusted-keys", str(folder / "keyring.json")]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    rejected = [line for line in done.stdout.splitlines() if line.startswith("REJECTED ")]
    # Exit 1 is "some bundles rejected": fine when all are future_dated (the generator's later
    # rebuilds can run past today's date, which the loader rightly refuses); anything else stops.
    if done.returncode not in (0, 1) or any(": future_dated: " not in line for line in rejected):
        raise SystemExit(f"pith-graph load failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    note = f", {len(rejected)} bundles rejected as future_dated" if rejected else ""
    say(f"  loaded in {time.perf_counter() - started:.0f} s{note}")


# -- the two servers -------------------------------------------------------------------------


class Server:
    """One GraphQL server process (ours or the peer) on a free port of 127.0.0.1."""

    def __init__(self, kind: str, uri: str, env: dict[str, str], log_dir: Path, workers: int = 1) -> None:
        self.kind = kind
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/graphql"
        self.log = log_dir / f"{kind}-{self.port}.log"
        if kind == "ours":
            command = [sys.executable, "-m", "pith_graph", "serve", "--backend", "neo4j"]
            command += [
                "--uri",
                uri,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                str(workers),
            ]
            env = {**env, "PITH_API_GRAPHIQL": "0"}
        else:
            command = ["node", str(PEER_DIR / "server.mjs")]
            env = {**env, "NEO4J_URI": uri, "HOST": "127.0.0.1", "PORT": str(self.port)}
            env["NODE_ENV"] = "production"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"{kind} server exited:\n{self.log.read_text()[-3000:]}")
            try:
                if post(self.url, {"query": "{ __typename }"}).get("data"):
                    return
            except OSError:
                time.sleep(0.3)
        raise SystemExit(f"{kind} server did not answer within 120 s:\n{self.log.read_text()[-3000:]}")

    def cpu_seconds(self) -> float:
        """CPU time of the server and of its worker processes (children it has not waited for)."""
        return process_cpu_seconds(self.process.pid) + sum(
            process_cpu_seconds(child) for child in children(self.process.pid)
        )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)


def children(pid: int) -> list[int]:
    """The running child processes of ``pid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its waited-for children, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    ticks = sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())
