"""The local Neo4j a bulk import builds: its data folder, its offline importer, its server.

The folder is ``scripts/neo4j``'s ``NEO4J_DATA`` (a Neo4j home: the database in
``data/databases/neo4j``, its transaction logs in ``data/transactions/neo4j``). The importer
is Neo4j's own (``neo4j-admin database import full``), run from the jars the launcher's
Maven build resolved (``scripts/neo4j-launcher/target/lib``: ``org.neo4j.cli.AdminTool``,
whose ``import`` command lives in ``neo4j-import-tool``). The server is started with
``scripts/neo4j`` on a free loopback port, with the folder's own authentication (the
password ``scripts/neo4j`` keeps in ``password`` there, generated at its first start), only
to check that a database is empty and to create the constraints and indexes after an import: Community's record
format cannot build them during one (``--schema`` needs Enterprise's block format).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType

from pith_graph.errors import StoreError, StoreErrorCode, UsageError
from pith_graph.loader.bulk.ports import start_on_free_ports
from pith_graph.loader.bulk.recovery import private_file
from pith_graph.loader.stores.neo4j_auth import read_password_file

__all__ = [
    "DATABASE",
    "IMPORTER_OPTIONS",
    "MAX_READ_BUFFER",
    "check_read_buffer",
    "database_exists",
    "find_script",
    "heap_bytes",
    "local_server",
    "read_buffer_option",
    "read_buffer_size",
    "run_importer",
    "running_server",
]

DATABASE = "neo4j"
_LAUNCHER_CLASS = "dev.pith.neo4j.Launcher"
#: How long an import waits for a ``scripts/neo4j`` command under way in its folder (the
#: script's own wait for its lock).
SCRIPT_LOCK_SECONDS = 900
#: What the CSV files need of ``neo4j-admin database import full`` (:mod:`.csvfiles`), and
#: ``--verbose``: without it a failure says only ``Error importing csv file.``, its cause (the
#: exception's ``Caused by:`` lines) left out.
IMPORTER_OPTIONS = ("--id-type=string", "--array-delimiter=U+001F", "--bad-tolerance=0", "--verbose")
#: The importer's default buffer per input file, which must hold the longest row of a file.
_READ_BUFFER = 4 << 20
#: Room above the longest row (the buffer is counted in UTF-16 chars, a row in UTF-8 bytes,
#: which are never fewer, so the bytes already overcount it).
_ROW_MARGIN = 1 << 20
#: The largest ``--read-buffer-size`` neo4j-admin 5.26 can use: it reads each file through a
#: ``char[]`` of that many chars (``Math.toIntExact`` of the option, then ``new char[n]``), and
#: no JVM makes an array longer than ``Integer.MAX_VALUE - 8`` (OpenJDK's soft maximum).
MAX_READ_BUFFER = (1 << 31) - 1 - 8
#: What the JVM's ``-Xmx`` takes (``NEO4J_IMPORT_HEAP``): bytes, with an optional k, m, g or t.
_HEAP = re.compile(r"([0-9]+)([kmgt]?)", re.IGNORECASE)  # ASCII digits only


def read_buffer_size(longest_row: int) -> int:
    """The ``--read-buffer-size`` for files whose longest row has ``longest_row`` bytes:
    neo4j-admin fails on a row its buffer cannot hold whole (``Weird input data, no newline
    character in the whole buffer``, exit 70). A Paper row is at most about twice its
    bundle, but an Author row holds every winner's spelling (``nameForms``), so it grows
    with the number of bundles, not with ``--max-bytes`` (1,100 bundles each spelling one
    4,000-letter name its own way: a row of 4.4 MB, past the default 4 MiB).

    >>> read_buffer_size(1000), read_buffer_size(4_411_748)
    (4194304, 5460324)
    """
    return max(_READ_BUFFER, longest_row + _ROW_MARGIN)


def heap_bytes(heap: str) -> int | None:
    """The bytes of a ``-Xmx`` size (``1g``, ``700m``), or ``None`` if it is none.

    >>> heap_bytes("1g"), heap_bytes("512K"), heap_bytes("abc")
    (1073741824, 524288, None)
    """
    found = _HEAP.fullmatch(heap)
    return None if found is None else int(found[1]) << (10 * " kmgt".index(found[2].lower() or " "))


def check_read_buffer(size: int, heap: str | None) -> None:
    """Refuse (:class:`StoreError` ``row_too_long``), before the importer runs and so before
    ``--replace`` lets it overwrite a database, a buffer neo4j-admin cannot use: past
    :data:`MAX_READ_BUFFER`, or (``heap``: the importer's ``-Xmx``, when this process runs it)
    a ``char[]`` of two bytes a char larger than its whole heap. The second is the least it
    needs, not enough: the importer holds more than one buffer, and the rest of its work."""
    refused = None
    if size > MAX_READ_BUFFER:
        refused = f"neo4j-admin reads at most {MAX_READ_BUFFER:,} chars at a time"
    elif heap is not None and (limit := heap_bytes(heap)) is not None and 2 * size > limit:
        refused = (
            f"its buffer of {size:,} chars takes {2 * size:,} bytes, more than the importer's "
            f"heap (NEO4J_IMPORT_HEAP={heap}): raise it"
        )
    if refused is not None:
        raise StoreError(
            StoreErrorCode.ROW_TOO_LONG,
            f"a CSV row of the import needs a --read-buffer-size of {size:,}, and {refused}. "
            "Nothing was imported or replaced; `pith-graph load --backend neo4j` loads these bundles",
        )


def read_buffer_option(size: int) -> str:
    """``--read-buffer-size`` of ``size`` (:func:`read_buffer_size`).

    >>> read_buffer_option(read_buffer_size(1 << 20))
    '--read-buffer-size=4194304'
    """
    return f"--read-buffer-size={size}"


#: The importer's JVM. The parallel collector, as ``scripts/neo4j``'s server: at 100k bundles
#: the importer took 13.7-14.5 s with it against 15.9-17.1 s with G1 (README, bulk import).
_JAVA_OPTIONS = (
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "-XX:+UseParallelGC",
    "-XX:+ExitOnOutOfMemoryError",
)


def _dying_with_us(command: list[str]) -> list[str]:
    """``command`` killed when this process dies (even by SIGKILL, which no ``finally`` sees):
    an importer left running would go on writing the database after the import is reported
    as interrupted. ``setpriv --pdeathsig KILL`` (util-linux) sets Linux's
    ``PR_SET_PDEATHSIG`` and execs the command, so no Python code runs in the forked child
    (a ``preexec_fn`` would, which is unsafe with threads). Without ``setpriv``, as given."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--", *command] if setpriv else command


def find_script() -> Path:
    """``scripts/neo4j``: ``PITH_NEO4J_SCRIPT``, else the checkout this package runs from."""
    given = os.environ.get("PITH_NEO4J_SCRIPT")
    script = Path(given) if given else Path(__file__).resolve().parents[2] / "scripts" / "neo4j"
    if not script.is_file():
        raise UsageError(
            f"cannot find scripts/neo4j at {script}: run from a pith-graph checkout or set PITH_NEO4J_SCRIPT"
        )
    return script


def _script_env(data: Path) -> dict[str, str]:
    env = {**os.environ, "NEO4J_DATA": str(data)}
    env.pop("NEO4J_PASSWORD", None)  # the folder's password stays as it is
    env.pop("NEO4J_AUTH", None)  # authentication on, as the folder's server runs
    return env


def _lib(script: Path, data: Path) -> Path:
    lib = script.parent / "neo4j-launcher" / "target" / "lib"
    if not (lib.is_dir() and any(lib.glob("neo4j-import-tool-*.jar"))):
        done = subprocess.run(
            [str(script), "build"], env=_script_env(data), capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise StoreError(
                StoreErrorCode.IMPORT_FAILED, f"building Neo4j's jars failed: {_tail(done.stderr)}"
            )
    return lib


#: Lines a failing command prints last that say nothing of why: neo4j-admin's hint, and
#: ``scripts/neo4j``'s own last word after the line that gives the cause.
#: and the JVM's own after a bad option (``Invalid maximum heap size: -Xmxabc`` comes first).
_SAY_NOTHING = (
    "Run with '--verbose' for a more detailed error message.",
    "neo4j: stopped",
    "Error: Could not create the Java Virtual Machine.",
    "Error: A fatal exception has occurred. Program will exit.",
)


def _tail(text: str) -> str:
    r"""The last line that says something: not a Java stack frame (``at …``, ``... 23
    more``), which is what a failing importer prints last, nor a line of :data:`_SAY_NOTHING`.
    With ``--verbose`` the importer's last such line is its root cause (``Caused by: …``).

    >>> _tail("Database already exist. Re-run with --overwrite-destination\nRun with '--verbose' for a more detailed error message.\n")
    'Database already exist. Re-run with --overwrite-destination'
    >>> _tail("org.neo4j.cli.CommandFailedException: Error importing csv file.\n\tat a.B(B.java:1)\n"
    ...       "Caused by: java.lang.IllegalStateException: Weird input data\n\tat c.D(D.java:2)\n\t... 13 more\n")
    'Caused by: java.lang.IllegalStateException: Weird input data'
    """
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    said = [
        line
        for line in lines
        if (not line.startswith(("at ", "... ")) or not line.endswith((")", "more")))
        and line not in _SAY_NOTHING
    ]
    return (said or lines or ["(no output)"])[-1]


def running_server(data: Path) -> str | None:
    """Why the Neo4j of ``data`` counts as running (its launcher's pid file names a live
    launcher, or a process holds the store's lock), or ``None``. A ``scripts/neo4j`` command
    under way in ``data`` ends first (:func:`_scripts_settled`)."""
    with _scripts_settled(data):
        return _running_server(data)


@contextlib.contextmanager
def _scripts_settled(data: Path) -> Iterator[None]:
    """Hold ``data``'s ``.script.lock``, which ``scripts/neo4j`` holds from its checks until
    its start (pid file written, Bolt answering) or stop has ended: a start that found no
    import holding ``import.lock`` just before this import took it has launched its server
    when the lock comes, and is seen; any later start sees the import and refuses. Waits as
    the script does, 900 s at most. None there: no command has begun (one that makes it now
    sees this import's ``import.lock``, held already), nothing is made."""
    lock = data / ".script.lock"
    try:  # (looked at first: opening a FIFO waits for a reader, a device does what it does)
        if not stat.S_ISREG(os.lstat(lock).st_mode):
            raise UsageError(
                f"cannot lock {lock}: it is not a file (a link, folder, FIFO or device): remove it"
            )
        handle = os.open(lock, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        yield
        return
    except OSError as err:
        raise UsageError(f"cannot lock {lock}: {err.strerror or err}") from err
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):  # (replaced between the two)
            raise UsageError(f"cannot lock {lock}: it is not a file")
        deadline = time.monotonic() + SCRIPT_LOCK_SECONDS
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise UsageError(
                        f"scripts/neo4j commands in {data} have held {lock} for {SCRIPT_LOCK_SECONDS} s: "
                        "let them end, then import"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(handle)


def _running_server(data: Path) -> str | None:
    pid_file = data / "neo4j.pid"
    with contextlib.suppress(OSError, ValueError):
        pid = int(pid_file.read_text().strip())
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
        if _LAUNCHER_CLASS.encode() in command:
            return f"its server is running (pid {pid})"
    for lock in (
        data / "data" / "databases" / "store_lock",
        data / "data" / "databases" / DATABASE / "database_lock",
    ):
        try:
            handle = lock.open("rb+")
        except OSError:
            continue  # absent (never started) or not ours to lock: the importer checks again
        with handle:
            try:
                fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return f"a process holds {lock}"
            fcntl.lockf(handle, fcntl.LOCK_UN)
    return None


def database_exists(data: Path) -> bool:
    """Whether ``data`` holds files of the database: its store, or transaction logs left
    without one (neo4j-admin counts either as a database there, and without
    ``--overwrite-destination`` refused, even under ``--replace``)."""
    for folder in (data / "data" / "databases" / DATABASE, data / "data" / "transactions" / DATABASE):
        try:
            if next(folder.iterdir(), None) is not None:
                return True
        except FileNotFoundError:
            continue
    return False


#: What ``scripts/neo4j`` is told for the import's own server: start whatever the folder's
#: marker says (the import's own), and register no plugin's procedures (since 0.9.15).
#: Read-only (since 0.9.16): a caller changing it in place changed every later import's server.
IMPORT_SERVER: Mapping[str, str] = MappingProxyType({"NEO4J_INCOMPLETE": "import", "NEO4J_PLUGINS": "off"})


@contextlib.contextmanager
def local_server(data: Path, *, importing: bool = True) -> Iterator[tuple[str, str | None]]:
    """Start the Neo4j of ``data`` on free loopback ports (others when one was taken before
    the server bound it); yield its Bolt URI and the password of user neo4j
    (``data/password``); stop it (cleanly: the next start needs no recovery). ``importing``:
    the server of the import that holds ``data``'s import lock, started whatever its marker
    says (``NEO4J_INCOMPLETE=import``, which ``scripts/neo4j`` refuses from anyone else since
    0.9.12), and without APOC and GDS (``NEO4J_PLUGINS=off``: it only creates the schema, and
    starts in about a quarter less time and CPU); else a plain start
    (``benchmarks/bench_import.py``'s loads)."""
    script = find_script()
    env = {**_script_env(data), **(IMPORT_SERVER if importing else {})}

    def start(bolt: int, http: int) -> subprocess.CompletedProcess[str]:
        # its HTTP port too: another server on the default 7474 must not stop this one
        ports = {"NEO4J_BOLT_PORT": str(bolt), "NEO4J_HTTP_PORT": str(http)}
        return subprocess.run(
            [str(script), "start"], env={**env, **ports}, capture_output=True, text=True, check=False
        )

    try:  # an interrupted start leaves a server starting (detached: setsid): stopped all the same
        done = start_on_free_ports(start)
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            raise StoreError(
                StoreErrorCode.UNAVAILABLE, f"starting Neo4j on {data} failed: {_tail(done.stderr)}"
            )
        password_file = data / "password"
        yield lines[-1], read_password_file(password_file) if password_file.is_file() else None
    finally:
        subprocess.run([str(script), "stop"], env=env, capture_output=True, text=True, check=False)


def run_importer(
    data: Path,
    importer_args: list[str],
    *,
    overwrite: bool,
    threads: int,
    heap: str,
    memory: str,
    report_file: Path,
    log: Path,
) -> None:
    """``neo4j-admin database import full`` into the database of ``data`` (which no server
    may use); its output goes to ``log``. Raises :class:`StoreError` (``import_failed``)."""
    script = find_script()
    data.mkdir(parents=True, exist_ok=True)
    lib = _lib(script, data)
    command = [
        os.environ.get("NEO4J_JAVA", "java"),
        f"-Xmx{heap}",
        *_JAVA_OPTIONS,
        "-cp",
        f"{lib}/*",
        "org.neo4j.cli.AdminTool",
        "database",
        "import",
        "full",
        *importer_args,
        *IMPORTER_OPTIONS,
        f"--overwrite-destination={str(overwrite).lower()}",
        f"--threads={threads}",
        f"--max-off-heap-memory={memory}",
        f"--report-file={report_file}",
        DATABASE,
    ]
    env = {**os.environ, "NEO4J_HOME": str(data)}
    env.pop("NEO4J_CONF", None)
    log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # logs/ as scripts/neo4j makes it
    with (
        private_file(log) as out,  # umask 077: the store private to its owner, as scripts/neo4j keeps it
        subprocess.Popen(
            _dying_with_us(command), env=env, stdout=out, stderr=subprocess.STDOUT, umask=0o077
        ) as importer,
    ):
        try:
            code = importer.wait()
        except BaseException:  # Ctrl-C: gone, not going, before the old database moves back
            importer.kill()
            importer.wait()
            raise
    if code != 0:
        text = log.read_text(errors="replace")
        raise StoreError(
            StoreErrorCode.IMPORT_FAILED,
            f"neo4j-admin database import exited {code}: {_tail(text)} (full output: {log})",
        )
