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
server's password, so they are only read for a server on this machine (a loopback URI): that
password is never sent to another host.

A password file holds the password on its first line. Like an ssh key it must be private:
one that group or others may read or write is refused, as is a file named explicitly that
does not exist; both are a :class:`~pith_graph.errors.UsageError` (``pith-graph`` exits 2).
"""

from __future__ import annotations

import ipaddress
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from pith_graph.errors import UsageError

__all__ = ["LOCAL_PASSWORD_FILE", "is_loopback", "read_password_file", "resolve_password"]

#: Where ``scripts/neo4j`` keeps the local server's password, inside its data folder.
LOCAL_PASSWORD_FILE = "password"


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
    named explicitly), empty, or readable by group or others.
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
    if not is_loopback(uri):
        return None
    local = [Path(env["NEO4J_DATA"]) / LOCAL_PASSWORD_FILE] if env.get("NEO4J_DATA") else []
    local.append(Path(os.getcwd() if cwd is None else cwd) / ".neo4j" / LOCAL_PASSWORD_FILE)
    for path in local:
        if path.is_file():
            return read_password_file(path)
    return None


def read_password_file(path: str | os.PathLike[str]) -> str:
    """The first line of ``path``, a file only its owner may read or write."""
    try:
        info = os.stat(path)
        if stat.S_IMODE(info.st_mode) & 0o077:
            mode = f"{stat.S_IMODE(info.st_mode):o}"
            raise UsageError(
                f"password file {path} is accessible by group or others (mode {mode}): chmod 600 {path}"
            )
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise UsageError(f"password file {path} does not exist") from err
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"cannot read password file {path}: {err}") from err
    password = text.splitlines()[0] if text else ""
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
