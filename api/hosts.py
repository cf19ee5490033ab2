"""Which ``Host`` a request may name: the allow-list that stops DNS rebinding (since 0.9.0).

A page on ``evil.example`` whose name its owner then points at ``127.0.0.1`` calls this
server as its own origin: the browser sends ``Host: evil.example``, and CORS never applies
(same origin). Binding to loopback does not stop that; answering only for the names the
server is known by does. So, as Django's ``ALLOWED_HOSTS`` and Starlette's
``TrustedHostMiddleware``:

* ``PITH_API_ALLOWED_HOSTS`` lists host names and IP addresses (``api.example.org``,
  ``10.0.0.5``, ``[::1]``), ``*.example.org`` for any subdomain of ``example.org`` (not the
  name itself), ``*`` for any host. Compared case-insensitively, the port ignored, one
  trailing dot dropped; an IPv6 address in its short form.
* Unset, a server bound to loopback (``127.0.0.1``, ``::1``, ``localhost``) answers for
  ``localhost``, ``127.0.0.1``, ``[::1]`` and the address it is bound to
  (:func:`default_allowed_hosts`); one bound to any other address answers for any host, and
  ``serve`` warns of it at start.
* A request for another host is answered ``421 Misdirected Request``
  (``MISDIRECTED_REQUEST``): it is well formed, sent to a server that does not answer for that
  host (RFC 9110, 15.5.20). A ``Host`` that is not a host (``a:b:c``), several ``Host`` lines,
  or none on HTTP/1.1 are ``400`` (``BAD_REQUEST``), as RFC 9112 (3.2) asks. HTTP/1.0 allows no
  ``Host``; such a request is answered: no browser sends one, so no page rebinds it. Every
  path is checked, ``/healthz`` included.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from pith_graph.api.http import accept_of, coded_refusal
from pith_graph.errors import quoted

__all__ = [
    "LOOPBACK_HOSTS",
    "AllowedHosts",
    "allowed_entry",
    "default_allowed_hosts",
    "request_host",
    "with_hosts",
]

#: What a server bound to loopback answers for when ``PITH_API_ALLOWED_HOSTS`` is unset.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
_LABEL = r"(?!-)[a-z0-9_-]{1,63}(?<!-)"
_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
#: A last label that makes a browser read the host as an IPv4 address (WHATWG URL).
_NUMBER = re.compile(r"[0-9]+|0x[0-9a-f]*")


#: What an entry of ``PITH_API_ALLOWED_HOSTS`` is, as its refusals say.
_ENTRY = "no scheme, path or port; * for any host, *.example.org for the subdomains of example.org"


def _bracketed(address: str) -> str:
    """An IPv6 address in brackets, in its short form (:class:`ValueError` if it is none)."""
    return f"[{ipaddress.IPv6Address(address).compressed}]"


def allowed_entry(entry: str) -> str:
    """``entry`` of ``PITH_API_ALLOWED_HOSTS`` as requests are compared with it: lower case,
    no trailing dot, an IPv6 address in brackets in its short form. :class:`ValueError` says
    why it names no host, or how a browser would write it.

    >>> [allowed_entry(e) for e in ("API.Example.org.", "::1", "[0:0::1]", "*.example.org", "*")]
    ['api.example.org', '[::1]', '[::1]', '*.example.org', '*']
    >>> allowed_entry("127.1")
    Traceback (most recent call last):
    ValueError: '127.1' is not an address as a browser sends it: write '127.0.0.1'
    """
    text = entry.strip().lower()
    if text == "*":
        return text
    wildcard = text.startswith("*.")
    name = text.removeprefix("*.")
    if "/" in name:  # a URL's colon is not a port's: say what an entry is
        raise ValueError(f"{quoted(entry)} is not a host name or an IP address ({_ENTRY})")
    if (name.startswith("[") and "]:" in name) or (not name.startswith("[") and name.count(":") == 1):
        host = text.rpartition(":")[0]
        raise ValueError(f"{quoted(entry)} names a port: ports are not compared, write {quoted(host)}")
    if name.startswith("[") or ":" in name:
        try:
            address = _bracketed(name[1:-1] if name.startswith("[") and name.endswith("]") else name)
        except ValueError:
            raise ValueError(f"{quoted(entry)} is not an IPv6 address") from None
        if wildcard:
            raise ValueError(f"{quoted(entry)}: an address has no subdomains, write {quoted(address)}")
        return address
    if name.startswith("."):
        raise ValueError(f"{quoted(entry)}: write '*{name}' for its subdomains (and {quoted(name[1:])})")
    name = name.removesuffix(".")
    if not _NAME.fullmatch(name):
        raise ValueError(f"{quoted(entry)} is not a host name or an IP address ({_ENTRY})")
    if _NUMBER.fullmatch(name.rpartition(".")[2]):  # an IPv4 address, however written
        try:
            address = socket.inet_ntoa(socket.inet_aton(name))
        except OSError:
            raise ValueError(f"{quoted(entry)} is not an IPv4 address") from None
        if wildcard:
            raise ValueError(f"{quoted(entry)}: an address has no subdomains, write {quoted(address)}")
        if address != name:
            raise ValueError(
                f"{quoted(entry)} is not an address as a browser sends it: write {quoted(address)}"
            )
    return ("*." if wildcard else "") + name


def default_allowed_hosts(bound: str) -> tuple[str, ...]:
    """The hosts answered when ``PITH_API_ALLOWED_HOSTS`` is unset, by the interface the
    server listens on: loopback, only the names of loopback; else any (``*``).

    >>> default_allowed_hosts("127.0.0.1"), default_allowed_hosts("0.0.0.0")
    (('localhost', '127.0.0.1', '[::1]'), ('*',))
    >>> default_allowed_hosts("127.0.0.2"), default_allowed_hosts("LOCALHOST")
    (('localhost', '127.0.0.1', '[::1]', '127.0.0.2'), ('localhost', '127.0.0.1', '[::1]'))
    """
    host = bound.strip().lower().removesuffix(".")
    if host == "localhost":
        return LOOPBACK_HOSTS
    try:
        address = ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
    except ValueError:
        return _named_interface(host)
    if not address.is_loopback:
        return ("*",)
    own = _bracketed(str(address)) if address.version == 6 else str(address)
    return LOOPBACK_HOSTS if own in LOOPBACK_HOSTS else (*LOOPBACK_HOSTS, own)


def _named_interface(name: str) -> tuple[str, ...]:
    """The hosts answered on an interface given by name: loopback's names and that name when
    every address it resolves to is loopback (``--host vm`` with ``127.0.0.1 vm`` in
    ``/etc/hosts`` answered any host, open to DNS rebinding); else, or if it does not resolve
    (the server cannot listen there anyway), any host. Asked once, at start."""
    try:
        found = {info[4][0] for info in socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)}
        loopback = bool(found) and all(
            ipaddress.ip_address(str(a).partition("%")[0]).is_loopback for a in found
        )
    except (OSError, UnicodeError, ValueError):
        loopback = False
    return (*LOOPBACK_HOSTS, name) if loopback else ("*",)


def request_host(value: str) -> str | None:
    """The host a ``Host`` header names, as :func:`allowed_entry` writes entries (no port);
    ``None`` when it names none.

    >>> [request_host(v) for v in ("LocalHost:8000", "[0:0::1]:8000", "example.org.", "a:b:c", "h:x")]
    ['localhost', '[::1]', 'example.org', None, None]
    """
    text = value.strip().lower()
    if text.startswith("["):
        inside, bracket, port = text[1:].partition("]")
        try:
            host = _bracketed(inside) if bracket else ""
        except ValueError:
            return None
        if port and not port.startswith(":"):
            return None
        port = port[1:]
    else:
        host, _, port = text.partition(":")
    if port and not (port.isascii() and port.isdigit()):
        return None
    return host.removesuffix(".") or None


class AllowedHosts:
    """The ``Host`` values a server answers for (entries as :func:`allowed_entry` takes them)."""

    def __init__(self, entries: Sequence[str]) -> None:
        written = [allowed_entry(entry) for entry in entries]
        self.any = "*" in written
        self.names = frozenset(entry for entry in written if not entry.startswith("*."))
        self.suffixes = tuple(entry[1:] for entry in written if entry.startswith("*."))

    def allows(self, host: str) -> bool:
        """Whether ``host`` (as :func:`request_host` gives it) is answered."""
        return self.any or host in self.names or host.endswith(self.suffixes)


class HostCheck:
    """Answers only requests for an allowed host; refuses others before anything is read."""

    def __init__(self, app: ASGIApp, allowed: AllowedHosts) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        values = [value.decode("latin-1") for name, value in scope["headers"] if name == b"host"]
        if not values and scope.get("http_version") == "1.0":
            await self.app(scope, receive, send)
            return
        host = request_host(values[0]) if len(values) == 1 else None
        if host is not None and self.allowed.allows(host):
            await self.app(scope, receive, send)
            return
        if host is not None:
            status, code = 421, "MISDIRECTED_REQUEST"
            message = (
                f"This server does not answer for the host {quoted(host)}: ask it by a name it "
                "serves (its operator lists them in PITH_API_ALLOWED_HOSTS)."
            )
        else:
            status, code = 400, "BAD_REQUEST"
            message = (
                f"The request names {len(values)} hosts: send one Host header."
                if len(values) > 1
                else f"The Host header {quoted(values[0])} is not a host and port."
                if values
                else "An HTTP/1.1 request needs a Host header."
            )
        headers, body = coded_refusal(message, code, accept_of(scope["headers"]))
        extra = [(b"connection", b"close"), (b"x-content-type-options", b"nosniff")]  # a body left unread
        await send({"type": "http.response.start", "status": status, "headers": [*headers, *extra]})
        await send({"type": "http.response.body", "body": body})


def with_hosts(app: ASGIApp, allowed: Sequence[str]) -> ASGIApp:
    """``app`` answering only requests for the hosts ``allowed``; unchanged when any is (``*``)."""
    hosts = AllowedHosts(allowed)
    return app if hosts.any else HostCheck(app, hosts)
