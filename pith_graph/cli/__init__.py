"""The ``pith-graph`` command line. This package owns the terminal; the library never prints.

Exit codes (``EXIT_*`` here, a public contract): 0 success; 1 some bundle was rejected (the rest
still loaded); 2 usage error (bad option, missing path, unreadable keyring); 3 the graph
store failed (unreachable, wrong password, missing database, or a graph loaded in memory
could not be saved: ``write_failed``), stdout could not be written (``write_failed``: a full
disk) or a verification worker died (``worker_failed``); 70 a bug (an exception none of
these, its traceback written to a file the line names); 130 interrupted; 141 stdout's reader
went away (``| head``). Never a traceback for any of them.

Commands: ``verify``, ``load``, ``schema`` (:mod:`pith_graph.cli.commands`), ``import``
(:mod:`pith_graph.cli.importer`), ``prune`` (:mod:`pith_graph.cli.prune`), ``export``
(:mod:`pith_graph.cli.export`) and ``serve``
(:mod:`pith_graph.cli.serve`, which builds the API's settings and calls
:func:`pith_graph.api.serve.serve`).

This module imports nothing heavy at its top, so that :func:`entry` guards the whole run:
the commands' imports take most of a second, and Ctrl-C during them was a
``KeyboardInterrupt`` traceback. :func:`build_parser` and :func:`main` import them.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import sys
import typing
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO

from pith_graph.interrupts import interrupts_held

if typing.TYPE_CHECKING:
    import argparse

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REJECTED",
    "EXIT_STORE",
    "EXIT_USAGE",
    "build_parser",
    "entry",
    "main",
]

#: Success; some bundle was rejected (the rest still loaded); a usage error; the graph store,
#: a save or stdout failed, or a verification worker died.
EXIT_OK, EXIT_REJECTED, EXIT_USAGE, EXIT_STORE = 0, 1, 2, 3
#: Interrupted (Ctrl-C): 128 + SIGINT, as a shell reports a command SIGINT killed.
EXIT_INTERRUPTED = 130
#: Stdout's reader went away (``pith-graph verify … | head -1``): 128 + SIGPIPE, as a shell
#: reports ``cat`` or ``grep`` there, which SIGPIPE kills. Not 1: that says a bundle was
#: rejected.
EXIT_BROKEN_PIPE = 141
#: A bug: an exception none of the above (``EX_SOFTWARE`` of sysexits.h). One line too; the
#: traceback goes to a file the line names.
EXIT_INTERNAL = 70


#: What the Neo4j driver imports at its own import when installed (the ``analysis`` extra
#: brings numpy and pandas) for what no command uses: ``Result.to_df`` and numpy or pandas
#: values as query parameters. They took 2.3 s of the 3 s that importing the driver took, so
#: every command that touches Neo4j (``load``, ``schema``, ``serve``, ``prune``) started 2 s
#: later, and each ``serve`` worker held ~60 MB more (README, Command line).
_DRIVER_EXTRAS = ("numpy", "pandas", "pyarrow")


def _without_driver_extras() -> None:
    """Make the driver's optional imports fail, as if not installed, in this process only
    (:func:`entry` calls it: a script importing pith-graph keeps them). Commands import no
    numpy, scipy or pandas of their own (tests/test_cli_imports.py runs each kind)."""
    for name in _DRIVER_EXTRAS:
        if name not in sys.modules:
            sys.modules[name] = None  # type: ignore[assignment]  # import raises ImportError


def _command_adders() -> list[Callable[[Any], None]]:
    """Each command's ``add_*`` function, its module imported (most of a second, the first
    time: :func:`entry` holds Ctrl-C meanwhile)."""
    from pith_graph.cli.commands import add_loader_commands
    from pith_graph.cli.export import add_export_command
    from pith_graph.cli.importer import add_import_command
    from pith_graph.cli.prune import add_prune_command
    from pith_graph.cli.serve import add_serve_command

    return [add_loader_commands, add_import_command, add_prune_command, add_export_command, add_serve_command]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    from importlib.metadata import version

    from pith_graph.cli.options import Parser

    parser = Parser(prog="pith-graph", description="Verify Pith open graph bundles and load them as a graph.")
    parser.add_argument("--version", action="version", version=f"pith-graph {version('pith-graph')}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for add in _command_adders():
        add(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    args = build_parser().parse_args(argv)
    from pith_graph.cli import terminal
    from pith_graph.cli.options import check_arguments
    from pith_graph.errors import PithGraphError, StoreError, UsageError, printable

    err = terminal.console(stderr=True)
    files = [f"--{name}" for name in ("graph", "save", "snapshot") if getattr(args, name, None)]
    if args.command in ("load", "prune") and files and args.backend != "memory":
        # prune's default backend is neo4j: its --graph ignored would prune the database
        err.print(
            f"pith-graph: error: {', '.join(files)}: for --backend memory only "
            f"(the backend here is {args.backend}: pass --backend memory to use a saved graph)"
        )
        return EXIT_USAGE
    came: list[int] = []  # the interrupts (Ctrl-C, SIGTERM) the command met
    try:
        check_arguments(args)
        with contextlib.nullcontext() if args.command == "serve" else _interrupts_noted(came):
            code: int = args.handler(args)  # (serve: uvicorn's own stop, its workers' too)
        return code
    except _OutputFailed:
        raise  # stdout failed: entry() says so
    except KeyboardInterrupt:
        err.print("pith-graph: interrupted")
        return EXIT_INTERRUPTED
    except Exception as error:
        if came:  # raised inside a library's I/O, which then failed on its way out (the Neo4j
            # driver, closing a connection it was reading: BufferError, exit 70): Ctrl-C's end
            err.print("pith-graph: interrupted")
            return EXIT_INTERRUPTED
        if isinstance(error, UsageError):
            err.print(f"pith-graph: error: {printable(str(error))}")
            return EXIT_USAGE
        if isinstance(error, StoreError):
            err.print(f"pith-graph: store error: {printable(str(error))}")
            return EXIT_STORE
        if isinstance(error, PithGraphError):
            err.print(f"pith-graph: error: {printable(str(error))}")
            return EXIT_STORE
        err.print(f"pith-graph: internal error: {_internal_error(error)}")
        return EXIT_INTERNAL


@contextlib.contextmanager
def _interrupts_noted(came: list[int]) -> typing.Iterator[None]:
    """SIGTERM (a supervisor's stop, ``timeout``) ends a command as Ctrl-C does: what it was
    writing removed (a ``--save`` file's temporary copy; an import's work folder, importer or
    private server), ``pith-graph: interrupted``, exit 130; not killed where it stood. Each
    interrupt, SIGTERM or Ctrl-C (unless ignored: a background job), is noted in ``came``."""
    import signal

    def interrupt(signum: int, frame: object) -> None:
        came.append(signum)
        raise KeyboardInterrupt

    ours = [signal.SIGTERM] + [signal.SIGINT] * (
        signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )
    previous = {signum: signal.signal(signum, interrupt) for signum in ours}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


def _internal_error(error: Exception) -> str:
    """What an unexpected exception was, quoted, and the file its traceback went to (a bug
    report needs it; a user needs one line, as for every other failure)."""
    import tempfile
    import traceback

    from pith_graph.errors import printable, quoted

    said = f"{type(error).__name__}: {printable(quoted(str(error)))}"
    try:
        handle, path = tempfile.mkstemp(prefix="pith-graph-traceback-", suffix=".txt")
        with os.fdopen(handle, "w") as out:
            traceback.print_exception(error, file=out)
    except OSError:
        return f"{said} (a bug in pith-graph)"
    return f"{said} (a bug in pith-graph; its traceback is in {path})"


class _OutputFailed(Exception):
    """Stdout could not be written (its reader went away, a full disk): ``error`` says why.

    Not an :class:`OSError`, so nothing on the way (rich catches a ``BrokenPipeError`` and
    exits 1) takes it for one; and every other ``OSError`` stays what it is."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error)
        self.error = error


class _Stdout:
    """``sys.stdout``, whose write errors are :class:`_OutputFailed`; the rest as it is.

    Unbuffered (``PYTHONUNBUFFERED``, ``python -u``: many container images set it), the
    stream writes straight to the file and takes no account of a partial write: a reader
    leaving mid-way through a report of more than a pipe's 64 KiB (``verify --json … | head
    -c 10``) lost the rest without an error, exit 1. Such a stream's text is written here,
    to its end or to the error. ``None`` (stdout closed, ``>&-``) fails every write."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream
        self._fd: int | None = None
        if stream is not None and type(getattr(stream, "buffer", None)).__name__ == "FileIO":
            with contextlib.suppress(OSError, ValueError, LookupError):
                # one encoder for the whole output: a byte-order mark once (utf-16), not per write
                errors = _escaping(stream.errors)
                self._encode = codecs.getincrementalencoder(stream.encoding)(errors).encode
                self._fd = stream.fileno()

    def write(self, text: str) -> int:
        try:
            if self._stream is None:
                raise OSError(9, "stdout is closed")  # EBADF
            if self._fd is None:
                return self._stream.write(text)
            data = memoryview(self._encode(text))
            while data:
                data = data[os.write(self._fd, data) :]
            return len(text)
        except OSError as error:
            raise _OutputFailed(error) from error

    def flush(self) -> None:
        try:
            if self._stream is not None:
                self._stream.flush()
        except OSError as error:
            raise _OutputFailed(error) from error

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _escape(error: UnicodeError) -> tuple[str | bytes, int]:
    """A character stdout's encoding lacks (``é`` or ``…`` in ASCII: ``PYTHONIOENCODING=ascii``,
    a Latin-1 terminal), written as JSON escapes it (``\\u00e9``, ``\\u2026``), so a ``--json``
    report stays JSON with the same text: a report that quoted one was an internal error (exit
    70), the rest of the command lost. A file name's undecodable byte (a lone surrogate; none
    passes :func:`~pith_graph.errors.printable`) is written as the byte (``surrogateescape``)."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    try:
        return _SURROGATE_ESCAPE(error)
    except UnicodeError:
        pass
    escaped = []
    for char in error.object[error.start : error.end]:
        code = ord(char)
        if code > 0xFFFF:  # as JSON writes it: a UTF-16 surrogate pair
            code -= 0x10000
            escaped.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            escaped.append(f"\\u{code:04x}")
    return "".join(escaped), error.end


_SURROGATE_ESCAPE = codecs.lookup_error("surrogateescape")
codecs.register_error("pith-graph-escape", _escape)


def _escaping(errors: str | None) -> str:
    """The error handler to write a stream with: its own, unless that fails on a character
    the encoding lacks (``strict``, ``surrogateescape``)."""
    return "pith-graph-escape" if errors in (None, "strict", "surrogateescape") else errors


def _tolerant(stream: TextIO | None) -> None:
    """``stream`` (stdout, stderr) writes what its encoding lacks escaped (:func:`_escape`)."""
    with contextlib.suppress(AttributeError, ValueError, LookupError):
        if stream is not None and _escaping(stream.errors) != stream.errors:
            stream.reconfigure(errors=_escaping(stream.errors))  # type: ignore[attr-defined]


def _say(line: str) -> None:
    """``line`` on stderr, if stderr can still be written."""
    with contextlib.suppress(OSError):
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _output_failed(error: OSError, stdout: TextIO) -> int:
    """Stdout failed: later writes go to the null device (the interpreter flushes stdout as
    it exits, which would fail again), and say so unless its reader just went away."""
    with contextlib.suppress(OSError, AttributeError, ValueError):  # not when there is no stdout
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
    if isinstance(error, BrokenPipeError):
        return EXIT_BROKEN_PIPE
    _say(f"pith-graph: error: write_failed: cannot write to stdout: {error.strerror or error}")
    return EXIT_STORE


def entry() -> NoReturn:
    """Console-script entry point: :func:`main`, guarded from the start. Ctrl-C at any time
    exits 130, stdout's reader going away (``| head``) 141 quietly, stdout that cannot be
    written 3 with one line; none of them with a traceback."""
    real = sys.stdout  # None when started with stdout closed (``>&-``): writing fails, exit 3
    _tolerant(real)
    _tolerant(sys.stderr)
    sys.stdout = typing.cast(TextIO, _Stdout(real))
    try:
        _without_driver_extras()
        with interrupts_held():  # (a native module interrupted as it initialises may crash)
            _command_adders()  # the imports, native modules among them
        code = main()
        sys.stdout.flush()  # a write error shows here, not as the interpreter exits
    except KeyboardInterrupt:
        _say("pith-graph: interrupted")
        code = EXIT_INTERRUPTED
    except _OutputFailed as failed:
        code = _output_failed(failed.error, real)
    finally:
        sys.stdout = real
    sys.exit(code)
