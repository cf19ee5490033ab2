"""The ``Host`` allow-list (``api/hosts.py``, since 0.9.0), over real HTTP to real uvicorns:
a page on a foreign name rebound to 127.0.0.1 (DNS rebinding) is refused, 421
``MISDIRECTED_REQUEST``; the names of loopback are answered on a server bound to it, whatever
the port; ``PITH_API_ALLOWED_HOSTS`` replaces them; ``*`` answers any; a bad entry stops the
server at start. Each served by ``pith-graph serve`` itself (httptools) and by the app under
h11 (the :func:`~apitest.address` fixture), where both parsers apply."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import orjson
import pytest
from apitest import ThreadServer, address, address_of, corpus, memory_reader  # noqa: F401 (fixtures)

from pith_graph.api.app import create_app
from pith_graph.api.http import GRAPHQL_RESPONSE
from pith_graph.api.protocols import protocol_with_header_timeout
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.api.settings import ServerSettings
from pith_graph.testing import run_cli
from pith_graph.testing.serving import serving

QUERY = "/graphql?query=%7B__typename%7D"
#: A list as an operator behind a proxy writes it: a name, a domain's subdomains, an address.
LISTED = "API.example.org, *.pith.example, [::1]"


@pytest.fixture(scope="module")
def served_cli() -> Iterator[tuple[str, int]]:
    """``pith-graph serve`` on 127.0.0.1, ``PITH_API_ALLOWED_HOSTS`` unset."""
    with serving(["--port", "0", "--workers", "1"], stop_timeout=30) as url:
        yield address_of(url)


@pytest.fixture(scope="module")
def served_h11(memory_reader: MemoryReader) -> Iterator[tuple[str, int]]:
    """The app with the hosts ``serve`` answers for on 127.0.0.1 by default, under h11."""
    app = create_app(memory_reader, allowed_hosts=ServerSettings.from_env({}).hosts_answered)
    with ThreadServer(app, http=protocol_with_header_timeout(30, parser="h11")) as server:
        yield "127.0.0.1", server.port


@pytest.fixture(scope="module")
def served_listed() -> Iterator[tuple[str, int]]:
    with serving(
        ["--port", "0", "--workers", "1"], {"PITH_API_ALLOWED_HOSTS": LISTED}, stop_timeout=30
    ) as url:
        yield address_of(url)


def _ask(
    address: tuple[str, int], host: str | None, path: str = "/healthz", version: str = "1.1", extra: str = ""
) -> tuple[int, dict[str, str], bytes]:
    """``GET path`` naming ``host`` (none: no ``Host`` line) on a connection of its own:
    the status, the headers (lower-case names) and the body."""
    head = f"GET {path} HTTP/{version}\r\n" + (f"Host: {host}\r\n" if host is not None else "") + extra
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall((head + "Connection: close\r\n\r\n").encode("latin-1"))
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    top, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = top.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def _code(body: bytes) -> str:
    found: str = orjson.loads(body)["errors"][0]["extensions"]["code"]
    return found


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:{port}",
        "127.0.0.1",
        "localhost:{port}",
        "LocalHost:8000",  # any port, any case: a name is what is compared
        "localhost.",
        "[::1]:{port}",
        "[0:0::1]:80",  # an IPv6 address however written
    ],
)
def test_the_names_of_loopback_are_answered_on_loopback(address: tuple[str, int], host: str) -> None:
    status, _, body = _ask(address, host.format(port=address[1]))
    assert status == 200, body
    status, _, body = _ask(address, host.format(port=address[1]), QUERY)
    assert (status, orjson.loads(body)) == (200, {"data": {"__typename": "Query"}})


@pytest.mark.parametrize("path", ["/healthz", QUERY, "/nowhere"])
@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:{port}", "localhost.evil.example", "127.0.0.1.evil.example"]
)
def test_a_foreign_host_is_refused_421(address: tuple[str, int], host: str, path: str) -> None:
    """What a DNS-rebinding page sends: its own name, at the server's address and port."""
    status, headers, body = _ask(address, host.format(port=address[1]), path)
    assert status == 421, body
    assert _code(body) == "MISDIRECTED_REQUEST"
    assert headers["content-type"] == "application/json" and headers["cache-control"] == "no-store"
    assert "PITH_API_ALLOWED_HOSTS" in orjson.loads(body)["errors"][0]["message"]
    assert headers["connection"] == "close"


def test_a_post_for_a_foreign_host_is_refused_in_the_media_type_asked_for(address: tuple[str, int]) -> None:
    url = f"http://{address[0]}:{address[1]}/graphql"
    headers = {"host": "evil.example", "accept": GRAPHQL_RESPONSE}
    response = httpx.post(url, json={"query": "{ papers { nodes { title } } }"}, headers=headers)
    assert response.status_code == 421
    assert response.headers["content-type"] == GRAPHQL_RESPONSE
    assert "data" not in response.json() and _code(response.content) == "MISDIRECTED_REQUEST"


@pytest.mark.parametrize(
    ("host", "extra"),
    [
        pytest.param("a:b:c", "", id="bare-ipv6"),
        pytest.param("[::1", "", id="unclosed"),
        pytest.param("localhost:http", "", id="named-port"),
        pytest.param("localhost", "Host: evil.example\r\n", id="two-hosts"),
        pytest.param(None, "", id="none-on-http-1.1"),
    ],
)
def test_a_host_that_names_no_one_host_is_400(address: tuple[str, int], host: str | None, extra: str) -> None:
    status, headers, body = _ask(address, host, extra=extra)
    assert status == 400, body
    if headers.get("content-type") == "application/json":  # h11 refuses some itself, in plain text
        assert _code(body) == "BAD_REQUEST"


def test_an_http_1_0_request_without_host_is_answered(address: tuple[str, int]) -> None:
    """HTTP/1.0 needs no ``Host``, and no browser leaves it out: no rebinding page sends it."""
    status, _, body = _ask(address, None, QUERY, version="1.0")
    assert (status, orjson.loads(body)) == (200, {"data": {"__typename": "Query"}})


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("api.example.org", 200),
        ("api.EXAMPLE.org:443", 200),
        ("a.b.pith.example", 200),
        ("[::1]:8000", 200),
        ("pith.example", 421),  # *. is for the subdomains alone
        ("evilpith.example", 421),
        ("127.0.0.1", 421),  # the list replaces loopback's names
        ("localhost", 421),
    ],
)
def test_an_allow_list_answers_the_hosts_it_names(
    served_listed: tuple[str, int], host: str, status: int
) -> None:
    assert _ask(served_listed, host)[0] == status


def test_a_star_answers_any_host(memory_reader: MemoryReader) -> None:
    allowed = ServerSettings.from_env({"PITH_API_ALLOWED_HOSTS": "*"}).hosts_answered
    with ThreadServer(create_app(memory_reader, allowed_hosts=allowed)) as server:
        for host in ("evil.example", "localhost", "10.0.0.5:8000"):
            assert _ask(("127.0.0.1", server.port), host)[0] == 200, host


def test_a_server_bound_to_all_interfaces_answers_any_host_and_warns() -> None:
    output: list[str] = []
    with serving(["--host", "0.0.0.0", "--port", "0", "--workers", "1"], output=output) as url:
        port = address_of(url)[1]
        assert _ask(("127.0.0.1", port), "evil.example")[0] == 200
        assert _ask(("127.0.0.1", port), "api.example.org")[0] == 200
    warned = [line for line in output if "answers requests for any Host" in line]
    assert len(warned) == 1 and "set PITH_API_ALLOWED_HOSTS" in warned[0], output


def test_a_bad_entry_stops_the_server_at_start_with_one_line() -> None:
    result = run_cli(
        "serve", "--port", "0", env={"PITH_API_ALLOWED_HOSTS": "localhost, api.example.org:8000"}
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        "pith-graph: error: PITH_API_ALLOWED_HOSTS: 'api.example.org:8000' names a port: "
        "ports are not compared, write 'api.example.org'"
    ]
