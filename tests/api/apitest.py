"""The API suite's helpers and fixtures: one corpus in both stores, served by real uvicorns.

The corpus is the three real sample bundles, a generated corpus (heavy-tailed authorship,
several versions, rebuilds, non-ASCII names) and a few hand-made papers whose titles and
names exercise word splitting and string ordering. It is loaded once into a networkx graph
and once into the session's Neo4j (``tests/conftest.py``); each backend is served by its own
uvicorn on a free port, in a thread of this process.

Test modules import the fixtures they use from here (``api`` is parametrized over ``memory``
and ``neo4j``). Not a ``conftest.py``: two of those outside packages both import as module
``conftest``, which pytest's ``--doctest-modules`` collection cannot tell apart; the costly
parts are cached per process, so a fixture imported into several modules builds once.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import uvicorn

from pith_graph.api.app import create_app
from pith_graph.api.bridge import BridgeRunner
from pith_graph.api.lanes import ThreadRunner
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.reads.neo4j import Neo4jReader
from pith_graph.api.reads.reader import GraphReader
from pith_graph.loader.facade import SAMPLES, resolve_keyring
from pith_graph.loader.keyring import Keyring
from pith_graph.loader.pipeline import run
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.testing.corpus import corpus_signers, generate_bundles
from pith_graph.testing.signer import PaperSpec, SignerIdentity, build_bundle


class ThreadServer:
    """A real uvicorn serving ``app`` on a free loopback port, in a thread of this process
    (``config_options`` go to ``uvicorn.Config``)."""

    def __init__(self, app: Any, **config_options: Any) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(app, lifespan="on", log_config=None, access_log=False, **config_options)
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self._socket]}, name="uvicorn", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ThreadServer:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self._thread.join(30)
        self._socket.close()
        assert not self._thread.is_alive(), "uvicorn did not stop"


@dataclass
class Api:
    """A running server and an HTTP client for it."""

    backend: str
    url: str
    reader: GraphReader
    client: httpx.Client = field(repr=False)

    def post(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """POST a query; the JSON answer (the status must be 200)."""
        response = self.client.post("/graphql", json={"query": query, "variables": variables or {}})
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def data(self, query: str, **variables: Any) -> dict[str, Any]:
        """The ``data`` of a query that must not fail."""
        body = self.post(query, variables)
        assert "errors" not in body, body["errors"]
        result: dict[str, Any] = body["data"]
        return result


def address_of(url: str) -> tuple[str, int]:
    """The host and port of ``url`` (a server's, as :func:`~pith_graph.testing.serving.serving` gives it)."""
    found = httpx.URL(url)
    assert found.host and found.port
    return found.host, found.port


@contextmanager
def served(app: Any, backend: str, reader: GraphReader) -> Iterator[Api]:
    """Serve ``app`` on a real uvicorn for the duration of the block."""
    with ThreadServer(app) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        yield Api(backend, server.url, reader, client)


@contextmanager
def served_as_serve_does(reader: GraphReader, **options: Any) -> Iterator[Api]:
    """``reader`` served over HTTP as ``pith-graph serve`` serves its backend (Neo4j's reads
    bridged onto the event loop); ``options``: more of :func:`create_app`'s."""
    backend = "memory" if isinstance(reader, MemoryReader) else "neo4j"
    if backend == "neo4j":
        options = {"run": BridgeRunner(), "backend": "neo4j", **options}
    with served(create_app(reader, **options), backend, reader) as api:
        yield api


@contextmanager
def api_of(store: Any, keyring: Keyring) -> Iterator[Api]:
    """The API over what ``store`` (a MemoryStore or a Neo4jStore) holds, served over HTTP
    with ``keyring``: the memory reader inline, Neo4j's on two threads."""
    if isinstance(store, MemoryStore):
        reader: Any = MemoryReader(store.graph)
        runner: Any = None
    else:
        reader = Neo4jReader(store.driver, store.database, uri=store.uri)
        runner = ThreadRunner(2)
    app = create_app(reader, keyring=keyring, **({"run": runner} if runner else {}))
    try:
        with served(app, "memory" if runner is None else "neo4j", reader) as api:
            yield api
    finally:
        if runner is not None:
            runner.close()


def load_signed(
    store: Any, folder: Path, specs: Sequence[PaperSpec], signer: SignerIdentity, keyring: Keyring
) -> None:
    """``specs`` signed by ``signer`` into a new ``folder``, loaded into ``store`` (a
    MemoryStore or a Neo4jStore) with ``keyring``: every one accepted."""
    folder.mkdir()
    path = folder / "bundles.jsonl"
    path.write_bytes(b"".join(orjson.dumps(build_bundle(spec, signer)) + b"\n" for spec in specs))
    report = run([str(path)], keyring=keyring, store=store, workers=1)
    assert report.accepted == len(specs), report.rejections


def signed_jsonl(folder: Path, specs: list[PaperSpec], seed: int) -> tuple[Path, Keyring]:
    """``specs`` signed by the corpus signer of ``seed``, as one JSON Lines file in ``folder``,
    and the keyring that trusts it."""
    signer, _ = corpus_signers(seed)
    keyring_path = folder / "keyring.json"
    keyring_path.write_bytes(orjson.dumps([signer.keyring_entry()]))
    path = folder / "bundles.jsonl"
    path.write_bytes(b"".join(orjson.dumps(build_bundle(spec, signer)) + b"\n" for spec in specs))
    return path, resolve_keyring(keyring_path)


def memory_reader_of(bundles: tuple[Path, Keyring]) -> MemoryReader:
    """``bundles`` (a file and its keyring) loaded into a memory store, every one accepted."""
    store = MemoryStore()
    report = run([str(bundles[0])], keyring=bundles[1], store=store, workers=1)
    assert report.rejected == 0, report.rejections
    return MemoryReader(store.graph)


@contextmanager
def loaded_neo4j(
    request: pytest.FixtureRequest, bundles: tuple[Path, Keyring], timeout: float, **load: Any
) -> Iterator[Neo4jReader]:
    """``bundles`` (a file and its keyring) loaded into the session's Neo4j (``load``: options
    of :func:`~pith_graph.loader.pipeline.run`), read by a reader with ``timeout``; the
    database is cleared before and after (the API suite reloads its own corpus)."""
    server = request.getfixturevalue("neo4j_server")
    store = server.connect()
    try:
        store.clear()
        store.ensure_schema()
        report = run([str(bundles[0])], keyring=bundles[1], store=store, workers=1, **load)
        assert report.rejected == 0, report.rejections
    finally:
        store.close()
    reader = Neo4jReader.connect(server.uri, server.user, server.password, server.database, timeout=timeout)
    try:
        yield reader
    finally:
        reader.close()
        cleanup = server.connect()
        try:
            cleanup.clear()
        finally:
            cleanup.close()


@contextmanager
def served_both(request: pytest.FixtureRequest, bundles: tuple[Path, Keyring]) -> Iterator[tuple[Api, Api]]:
    """``bundles`` (a file and its keyring) served over HTTP by the memory and the Neo4j
    backend (loaded into the session's Neo4j as :func:`loaded_neo4j` does)."""
    memory = memory_reader_of(bundles)
    with loaded_neo4j(request, bundles, timeout=30) as neo4j:
        neo4j_app = create_app(neo4j, keyring=bundles[1], run=BridgeRunner(), backend="neo4j")
        with (
            served(create_app(memory, keyring=bundles[1]), "memory", memory) as on_memory,
            served(neo4j_app, "neo4j", neo4j) as on_neo4j,
        ):
            yield on_memory, on_neo4j


#: A page of ``papers`` and of ``search`` (``@``: the page's selection) for :func:`walk_alike`.
PAPERS_QUERY = (
    "query($f: PaperFilter, $n: Int, $a: String) { papers(filter: $f, first: $n, after: $a) { @ } }"
)
SEARCH_QUERY = (
    "query($t: String!, $f: PaperFilter, $o: SearchOrder, $n: Int, $a: String) {"
    " search(text: $t, filter: $f, orderBy: $o, first: $n, after: $a) { @ } }"
)


def both_fixture(name: str, specs: Callable[[], list[PaperSpec]], seed: int) -> Any:
    """A module fixture: ``specs()``, signed into a folder named ``name``, served by the memory
    and the Neo4j backend (:func:`served_both`)."""

    @pytest.fixture(scope="module")
    def both(
        request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
    ) -> Iterator[tuple[Api, Api]]:
        with served_both(request, signed_jsonl(tmp_path_factory.mktemp(name), specs(), seed=seed)) as found:
            yield found

    return both


def each_backend_fixture(name: str, specs: Callable[[], list[PaperSpec]], seed: int) -> Any:
    """A module fixture parametrized over ``memory`` and ``neo4j``: ``specs()``, signed into a
    folder named ``name``, loaded into that backend and served as ``pith-graph serve`` does."""

    @pytest.fixture(scope="module", params=["memory", pytest.param("neo4j", marks=pytest.mark.neo4j)])
    def each(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
        bundles = signed_jsonl(tmp_path_factory.mktemp(name), specs(), seed=seed)
        with ExitStack() as stack:
            reader: GraphReader = (
                memory_reader_of(bundles)
                if request.param == "memory"
                else stack.enter_context(loaded_neo4j(request, bundles, timeout=30))
            )
            yield stack.enter_context(served_as_serve_does(reader, keyring=bundles[1]))

    return each


def alike(both: tuple[Api, Api], query: str, **variables: Any) -> dict[str, Any]:
    """The data of ``query`` on both backends (:func:`served_both`), which must be equal."""
    on_memory, on_neo4j = both
    answer = on_memory.data(query, **variables)
    assert on_neo4j.data(query, **variables) == answer, (query, variables)
    return answer


def walk_alike(
    both: tuple[Api, Api], query: str, field: str, size: int, page: str, **variables: Any
) -> list[dict[str, Any]]:
    """Every node of the connection ``field`` of ``query`` (its ``@`` replaced by ``page``, which
    selects ``edges { node }`` and ``pageInfo``; ``$n`` the page size, ``$a`` the cursor),
    ``size`` a page, following the cursors: :func:`alike` at each page. A nested connection's
    ``field`` is its path, e.g. ``author.papers``."""
    nodes: list[dict[str, Any]] = []
    after = None
    while True:
        found = alike(both, query.replace("@", page), n=size, a=after, **variables)
        for name in field.split("."):
            found = found[name]
        nodes += [edge["node"] for edge in found["edges"]]
        assert len(found["edges"]) <= size
        if not found["pageInfo"]["hasNextPage"]:
            return nodes
        after = found["pageInfo"]["endCursor"]


def load_vectors(name: str) -> list[dict[str, Any]]:
    """A JSON test-vector file of this folder."""
    data: list[dict[str, Any]] = json.loads((Path(__file__).parent / "vectors" / name).read_text("utf-8"))
    return data


CORPUS_SIZE = int(os.environ.get("PITH_API_TEST_CORPUS", "400"))
CORPUS_SEED = 4

_TRICKY = [
    ("Schro\u0308dinger bridges in 3.5 dimensions", ["Zoe\u0308 Smith", "Ann Lee"]),
    ("李伟的 graph neural networks", ["李伟", "Ann Lee"]),
    ("U.S.A. O'Brien's multi-GPU v2.0 self_supervised results", ["Sean O'Brien", "Zoë Smith"]),
    ("İstanbul ΣΊΣΥΦΟΣ Ünïcödé: Erdős–Rényi graphs", ["𝒜lice Kim", "Ann Lee"]),
    ("Rocket 🚀 science of deep learning, 1,000 times", ["𝒜lice Kim", "Åsa Berg"]),
]


def _tricky_specs() -> list[PaperSpec]:
    specs = []
    for index, (title, authors) in enumerate(_TRICKY):
        specs.append(
            PaperSpec(
                arxiv_id=f"2605.{90001 + index}",
                version=1,
                title=title,
                authors=sorted(authors),
                abstract_excerpt=f"An abstract about {title}.",
                primary_cat="cs.LG" if index % 2 else "math.PR",
                cross_cats=["cs.AI"] if index % 2 else [],
                license="http://creativecommons.org/licenses/by/4.0/",
                submitted_at=f"2026-05-0{index + 1}T10:00:00Z",
                created_at="2026-05-20T10:00:00Z",
                built_at="2026-05-21T10:00:00Z",
            )
        )
    return specs


@dataclass(frozen=True)
class Corpus:
    """The bundles of the suite, written as files, and the keyring that trusts them."""

    paths: tuple[str, ...]
    keyring_path: Path
    keyring: Keyring


_CACHE: dict[str, Any] = {}


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """The suite's bundles (built once per run, whichever module asks first)."""
    if "corpus" not in _CACHE:
        _CACHE["corpus"] = _write_corpus(tmp_path_factory.mktemp("api-corpus"))
    found: Corpus = _CACHE["corpus"]
    return found


def _write_corpus(folder: Path) -> Corpus:
    signer, builder = corpus_signers(CORPUS_SEED)
    keyring_path = folder / "keyring.json"
    keyring_path.write_bytes(orjson.dumps([signer.keyring_entry(), builder.keyring_entry()]))
    lines = list(
        generate_bundles(
            CORPUS_SIZE, signer=signer, seed=CORPUS_SEED, extra_signer=builder, extra_signer_every=40
        )
    )
    lines += [orjson.dumps(build_bundle(spec, signer)) for spec in _tricky_specs()]
    generated = folder / "bundles.jsonl"
    generated.write_bytes(b"".join(line + b"\n" for line in lines))
    return Corpus((SAMPLES, str(generated)), keyring_path, resolve_keyring(keyring_path))


@pytest.fixture(scope="session")
def memory_reader(corpus: Corpus) -> MemoryReader:
    """The corpus in a networkx graph (loaded once per run)."""
    if "memory" not in _CACHE:
        store = MemoryStore()
        report = run(corpus.paths, keyring=corpus.keyring, store=store, workers=1)
        assert report.rejected == 0, report.rejections
        _CACHE["memory"] = MemoryReader(store.graph)
    found: MemoryReader = _CACHE["memory"]
    return found


class _Neo4jCorpus:
    """The corpus in the session's Neo4j, reloaded if another test cleared the database."""

    def __init__(self, server: Any, corpus: Corpus, digests: frozenset[str]) -> None:
        self.server = server
        self.corpus = corpus
        self.digests = digests

    def ensure_loaded(self) -> None:
        store = self.server.connect()
        try:
            if store.known_bundle_digests() == self.digests:
                return
            store.clear()
            store.ensure_schema()
            report = run(self.corpus.paths, keyring=self.corpus.keyring, store=store, workers=1)
            assert report.rejected == 0, report.rejections
            assert store.known_bundle_digests() == self.digests
        finally:
            store.close()


@pytest.fixture(scope="session")
def neo4j_corpus(request: pytest.FixtureRequest, corpus: Corpus, memory_reader: MemoryReader) -> _Neo4jCorpus:
    server = request.getfixturevalue("neo4j_server")
    digests = frozenset(
        data["bundleSha256"] for _, data in memory_reader.G.nodes(data=True) if data["label"] == "Paper"
    )
    loaded = _Neo4jCorpus(server, corpus, digests)
    loaded.ensure_loaded()
    return loaded


@pytest.fixture
def neo4j_reader(neo4j_corpus: _Neo4jCorpus) -> Iterator[Neo4jReader]:
    neo4j_corpus.ensure_loaded()
    server = neo4j_corpus.server
    reader = Neo4jReader.connect(server.uri, server.user, server.password, server.database, timeout=30)
    try:
        yield reader
    finally:
        reader.close()


@pytest.fixture(scope="session")
def memory_api(memory_reader: MemoryReader, corpus: Corpus) -> Iterator[Api]:
    with served(create_app(memory_reader, keyring=corpus.keyring), "memory", memory_reader) as found:
        yield found


@pytest.fixture(scope="session")
def _neo4j_api(neo4j_corpus: _Neo4jCorpus, corpus: Corpus) -> Iterator[Api]:
    server_info = neo4j_corpus.server
    reader = Neo4jReader.connect(
        server_info.uri, server_info.user, server_info.password, server_info.database, timeout=30
    )
    ping_runner = ThreadRunner(1)

    def shutdown() -> None:
        ping_runner.close()
        reader.close()

    app = create_app(
        reader,
        keyring=corpus.keyring,
        run=BridgeRunner(),  # as serve does
        ping_run=ping_runner,
        backend="neo4j",
        on_shutdown=shutdown,
    )
    with served(app, "neo4j", reader) as found:
        yield found


@pytest.fixture
def neo4j_api(_neo4j_api: Api, neo4j_corpus: _Neo4jCorpus) -> Api:
    neo4j_corpus.ensure_loaded()
    return _neo4j_api


@pytest.fixture(params=["memory", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def api(request: pytest.FixtureRequest) -> Api:
    """The API served from each backend in turn."""
    found: Api = request.getfixturevalue(f"{request.param}_api")
    return found


@pytest.fixture(params=["httptools", "h11"])
def address(request: pytest.FixtureRequest) -> tuple[str, int]:
    """The address of the module's server with uvicorn's httptools parser (its fixture
    ``served_cli``) and with h11 (``served_h11``): the same test over both."""
    found: tuple[str, int] = request.getfixturevalue(
        "served_cli" if request.param == "httptools" else "served_h11"
    )
    return found
