"""Which password to give Neo4j, found without anyone typing it.

:func:`resolve_password` takes the first of these that is set:

1. ``password``: given explicitly (``--password``; visible in process lists, prefer a file);
2. ``password_file``: a file given explicitly (``--password-file FILE``);
3. ``NEO4J_PASSWORD``;
4. ``NEO4J_PASSWORD_FILE``: a file;
5. ``$NEO4J_DATA/password``: the file ``scripts/neo4j`` writes for its local server;
6. ``<cwd>/.neo4j/password``: the same file in the default data folder, for commands run at
   the root of a checkout.

With none of them there is no password (no authentication). Files 5 and 6 hold a local
server's password, so they are only read for a server on this machine (a loopback URI of a
Bolt scheme: any other is a usage error, said as such): that password is never sent to another
host. Nor to another local user's program: on Linux
(``/proc/net/tcp``) the socket listening at the URI's address and port must belong to the
file's owner (or to root, who can read the file anyway), else :func:`check_listener` raises a
:class:`~pith_graph.errors.StoreError` (``auth``; ``unavailable`` if nothing listens) and the
password is not sent. Without
``/proc/net/tcp`` (macOS, BSD) that check is skipped.

A password file holds the password on its first line (split as Neo4j's launcher splits it:
at ``\\n``, ``\\r\\n`` or ``\\r`` only). Like an ssh key it must be private:
one that group or others may read or write is refused, as is a file named explicitly that
does not exist; both are a :class:`~pith_graph.errors.UsageError` (``pith-graph`` exits 2).
"""

from __future__ import annotations

import ipaddress
import os
import re
import select
import stat
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from pith_graph.errors import StoreError, StoreErrorCode, UsageError

__all__ = [
    "LOCAL_PASSWORD_FILE",
    "MAX_PASSWORD_FILE_BYTES",
    "PIPE_SECONDS",
    "URI_SCHEMES",
    "check_listener",
    "is_loopback",
    "read_password_file",
    "resolve_password",
]

#: Where ``scripts/neo4j`` keeps the local server's password, inside its data folder.
LOCAL_PASSWORD_FILE = "password"

#: The URI schemes of Bolt: plain, TLS (``+s``) and TLS with any certificate (``+ssc``);
#: ``neo4j`` routes (clusters, Aura), ``bolt`` talks to one server.
URI_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")


def resolve_password(
    uri: str,
    *,
    password: str | None = None,
    password_file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> str | None:
    """The password for the Neo4j at ``uri``, in the order of the module docstring.

    ``environ`` defaults to ``os.environ`` and ``cwd`` to the working directory.

    Raises :class:`~pith_graph.errors.UsageError` for a password file that is missing (when
    named explicitly), empty, or readable by group or others, and
    :class:`~pith_graph.errors.StoreError` (``auth``) when the local server's file would go to
    a listener another user owns (:func:`check_listener`).
    """
    env = os.environ if environ is None else environ
    if password:
        return password
    if password_file is not None:
        return read_password_file(password_file)
    if env.get("NEO4J_PASSWORD"):
        return env["NEO4J_PASSWORD"]
    if env.get("NEO4J_PASSWORD_FILE"):
        return read_password_file(env["NEO4J_PASSWORD_FILE"])
    if not is_loopback(uri) or urlsplit(uri).scheme not in URI_SCHEMES:
        return None  # not this machine's, or a URI no driver is opened with (a usage error)
    local = [Path(env["NEO4J_DATA"]) / LOCAL_PASSWORD_FILE] if env.get("NEO4J_DATA") else []
    local.append(Path(os.getcwd() if cwd is None else cwd) / ".neo4j" / LOCAL_PASSWORD_FILE)
    for path in local:
        if path.is_file():
            local_password = read_password_file(path)
            check_listener(uri, path)
            return local_password
    return None


#: The most a password file may hold (one line; it was read whole, 100 MB of it).
MAX_PASSWORD_FILE_BYTES = 4096
#: How long a password file that is a pipe (``--password-file <(pass neo4j)``) may take to
#: say it; a FIFO no process writes to is at its end at once (empty), not waited on.
PIPE_SECONDS = 10.0


def _read_at_most(path: str | os.PathLike[str], limit: int) -> bytes:
    """Up to ``limit`` bytes of a regular file or a pipe; a pipe read for at most
    :data:`PIPE_SECONDS` (a FIFO with no writer blocked the command for ever). A device or a
    socket is :class:`OSError`."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise OSError("not a regular file or a pipe (a device or socket)")
        chunks: list[bytes] = []
        size, deadline = 0, time.monotonic() + PIPE_SECONDS
        while size < limit:
            try:
                chunk = os.read(fd, limit - size)
            except BlockingIOError:  # a pipe whose writer has not written yet
                if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                    raise OSError(f"the pipe said nothing in {PIPE_SECONDS:g} s") from None
                continue
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_password_file(path: str | os.PathLike[str]) -> str:
    """The first line of ``path``, a regular file (or a pipe) only its owner may read or write."""
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise UsageError(f"password file {path} is a folder")
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISFIFO(info.st_mode)):  # before its mode:
            # /dev/null is 666, and "chmod 600 /dev/null" is no advice to give
            raise UsageError(f"password file {path} is not a regular file or a pipe (a device or socket)")
        if stat.S_IMODE(info.st_mode) & 0o077:
            mode = f"{stat.S_IMODE(info.st_mode):o}"
            raise UsageError(
                f"password file {path} is accessible by group or others (mode {mode}): chmod 600 {path}"
            )
        raw = _read_at_most(path, MAX_PASSWORD_FILE_BYTES + 1)
        if len(raw) > MAX_PASSWORD_FILE_BYTES:
            raise UsageError(f"password file {path} holds more than {MAX_PASSWORD_FILE_BYTES} bytes")
        text = raw.decode("utf-8")
    except FileNotFoundError as err:
        raise UsageError(f"password file {path} does not exist") from err
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"cannot read password file {path}: {err}") from err
    password = re.split("\r\n|\r|\n", text, maxsplit=1)[0]
    if not password:
        raise UsageError(f"password file {path} is empty")
    return password


def is_loopback(uri: str) -> bool:
    """True if ``uri`` names this machine (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    try:
        host = urlsplit(uri).hostname
    except ValueError:
        return False
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_listener(uri: str, password_file: str | os.PathLike[str], proc: str = "/proc/net") -> None:
    """Raise :class:`StoreError` unless every socket listening at the loopback ``uri``'s
    address and port (wildcard addresses included) belongs to the owner of ``password_file``
    or to root: ``auth`` if another uid's does, ``unavailable`` if none listens. Reads
    ``proc``/tcp and tcp6 (Linux); without them, does nothing."""
    parts = urlsplit(uri)
    try:
        port = parts.port or 7687
    except ValueError:
        return  # a bad port: no connection is made (neo4j_connect.check_uri says why)
    host = parts.hostname or ""
    targets = {"127.0.0.1", "::1"} if host == "localhost" else {str(ipaddress.ip_address(host))}
    owner = os.stat(password_file).st_uid
    listeners = _listeners(proc, port)
    if listeners is None:
        return
    found = [uid for address, uid in listeners if _reaches(address, targets)]
    strangers = sorted({uid for uid in found if uid not in (owner, 0)})
    if found and not strangers:
        return
    if not found:  # nothing to send it to: the server is down
        raise StoreError(
            StoreErrorCode.UNAVAILABLE,
            f"cannot reach Neo4j at {uri}: nothing listens on {host} port {port}, so the password "
            f"in {password_file} (uid {owner}'s) was not sent; is the server running? (scripts/neo4j start)",
        )
    raise StoreError(
        StoreErrorCode.AUTH,
        f"the listener on {host} port {port} is owned by uid {', '.join(map(str, strangers))}, "
        f"but the password file {password_file} belongs to uid {owner}: its password was not "
        "sent (is the local server running, as the file's owner? scripts/neo4j start)",
    )


def _listeners(
    proc: str, port: int
) -> list[tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]] | None:
    """(local address, uid) of the sockets listening on ``port``; None without ``proc``/tcp."""
    found = []
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(proc, name).read_text(encoding="ascii").splitlines()[1:]
        except FileNotFoundError:
            if name == "tcp":
                return None
            continue  # no IPv6
        for line in lines:
            fields = line.split()
            address, _, port_hex = fields[1].partition(":")
            if fields[3] != "0A" or int(port_hex, 16) != port:  # 0A: LISTEN
                continue
            raw = b"".join(  # 32-bit words in the kernel's byte order
                bytes.fromhex(address[i : i + 8])[:: -1 if sys.byteorder == "little" else 1]
                for i in range(0, len(address), 8)
            )
            found.append((ipaddress.ip_address(raw), int(fields[7])))
    return found


def _reaches(address: ipaddress.IPv4Address | ipaddress.IPv6Address, targets: set[str]) -> bool:
    """True if a socket bound to ``address`` may take a connection to one of ``targets``."""
    if address.is_unspecified:  # 0.0.0.0 takes IPv4; :: takes both (unless IPV6_V6ONLY)
        return address.version == 6 or any(ipaddress.ip_address(t).version == 4 for t in targets)
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped or address) in targets
