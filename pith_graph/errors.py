"""The one exception tree of pith-graph.

::

    PithGraphError                 every error this package raises on purpose
    ├── BundleError                one bundle rejected; ``code`` is a stable RejectCode
    ├── UsageError                 the caller asked for something impossible (exit 2);
    │   │                          ``code`` "usage"
    │   └── KeyringError           a ``--trusted-keys`` file that cannot be used; "keyring"
    ├── StoreError                 a graph store failed; ``code`` is a StoreErrorCode
    └── ApiError                   a GraphQL request the API refuses; ``code`` goes to
        │                          ``extensions.code``, with a ``suggestion`` (and the
        │                          ``argument`` refused, when one is: since 0.9.3)
        ├── NotFound               NOT_FOUND         a named thing does not exist
        ├── BadUserInput           BAD_USER_INPUT    an argument is malformed
        ├── LimitExceeded          LIMIT_EXCEEDED    over a request limit
        └── QueryTimeout           TIMEOUT           the request ran past its time

A ``BundleError`` never stops a batch: the pipeline records it as a rejection (code,
message, source file and line) and goes on with the next bundle. Any other exception raised
while one bundle is checked is a bug; the pipeline rejects that bundle as ``internal_error``
and goes on too. How the API turns every other error into a coded, masked GraphQL error is
:mod:`pith_graph.api.coded_errors`.
"""

from __future__ import annotations

import enum
import unicodedata
from dataclasses import dataclass
from typing import Any

__all__ = [
    "QUOTED_CHARACTERS",
    "ApiError",
    "BadUserInput",
    "BundleError",
    "KeyringError",
    "LimitExceeded",
    "NotFound",
    "PithGraphError",
    "QueryTimeout",
    "RejectCode",
    "Source",
    "StoreError",
    "StoreErrorCode",
    "UsageError",
    "printable",
    "quoted",
    "with_article",
]


class RejectCode(enum.StrEnum):
    """Why a bundle was rejected. The values are a public, stable contract."""

    UNREADABLE = "unreadable"  # the input could not be read or decompressed
    TOO_LARGE = "too_large"  # bigger than the size limit
    MALFORMED_JSON = "malformed_json"  # not valid JSON (or not UTF-8)
    DUPLICATE_KEY = "duplicate_key"  # an object repeats a key (RFC 7493)
    TOO_DEEP = "too_deep"  # nesting deeper than the depth limit
    NOT_OBJECT = "not_object"  # the top level is not a JSON object
    SCHEMA_ERROR = "schema_error"  # a required field is missing or has the wrong type
    UNTRUSTED_KEY = "untrusted_key"  # a signature by a key that is not pinned
    KEY_MISMATCH = "key_mismatch"  # an embedded key or fingerprint differs from the pin
    REVOKED_KEY = "revoked_key"  # a signature by a key the keyring revokes for this bundle
    FUTURE_DATED = "future_dated"  # built_at or an event's created_at is ahead of the clock
    IDENTIFIER_MISMATCH = "identifier_mismatch"  # pith number / alias / subject disagree
    DIGEST_MISMATCH = "digest_mismatch"  # a recomputed SHA-256 differs from the stated one
    BAD_SIGNATURE = "bad_signature"  # an Ed25519 signature does not verify
    RECORD_MISMATCH = "record_mismatch"  # record_created payload / receipt / snapshot vs record
    STATE_MISMATCH = "state_mismatch"  # state disagrees with the event log
    INTERNAL_ERROR = "internal_error"  # checking the bundle raised: a pith-graph bug, report it


#: Characters shown escaped: controls, lone surrogates and line separators (they would break
#: a report line or drive the terminal), and format characters and spaces other than ' ',
#: which are invisible or look like others (U+202E showed a name reversed, U+200B and U+00AD
#: not at all, U+00A0 as a space).
_ESCAPED = frozenset({"Cc", "Cs", "Zl", "Zp", "Cf", "Zs"})


def printable(text: str) -> str:
    r"""``text`` safe to print on one line and to encode as UTF-8 (JSON, a terminal).

    A file name that is not valid UTF-8 reaches Python with each undecodable byte as a lone
    surrogate (PEP 383); those become ``\xNN``, the byte itself. Control characters (a
    newline, a terminal escape sequence) and line separators become ``\xNN`` or ``\uNNNN``
    too, so a file name can neither break a report line nor drive the terminal, and so do
    invisible characters and spaces but ``' '`` (a bidirectional control showed ``txt.exe``
    as ``exe.txt``; a zero-width space made one name look like another). Everything else, a
    backslash included, is kept as it is.

    >>> printable("bad\udcff.json"), printable("two\nlines"), printable("Zoë.json")
    ('bad\\xff.json', 'two\\x0alines', 'Zoë.json')
    >>> printable("report\u202egpj.json"), printable("a b\u200b\xa0.json")
    ('report\\u202egpj.json', 'a b\\u200b\\xa0.json')
    """
    if text.isprintable():
        return text
    out = []
    for char in text:
        code = ord(char)
        if char == " " or unicodedata.category(char) not in _ESCAPED:
            out.append(char)
        elif 0xDC80 <= code <= 0xDCFF:  # an undecodable byte of a file name
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out)


#: How many characters of an input value a message quotes (:func:`quoted`).
QUOTED_CHARACTERS = 100


def quoted(value: object, *, ascii_only: bool = False) -> str:
    """``value`` quoted for a message (:func:`repr`, or :func:`ascii` with ``ascii_only``),
    cut to its first :data:`QUOTED_CHARACTERS` characters and its full length when longer.

    A message that quotes its input whole is as large as the input: a bundle of one key of
    60 MB made a 60 MB rejection, in the report and in every process it crossed.

    >>> quoted("2.0"), quoted(12), quoted("x" * 150)[96:]
    ("'2.0'", '12', "xxxxx…' (150 characters)")
    """
    render = ascii if ascii_only else repr
    if not isinstance(value, str):
        shown = render(value)
        if len(shown) <= QUOTED_CHARACTERS:
            return shown
        return f"{shown[:QUOTED_CHARACTERS]}… ({len(shown)} characters)"
    if len(value) <= QUOTED_CHARACTERS:
        return render(value)
    cut = render(value[:QUOTED_CHARACTERS])
    return f"{cut[:-1]}…{cut[-1]} ({len(value)} characters)"


#: Words whose first vowel letter is said as a consonant ("a uniqueness constraint").
_SAID_WITH_A = ("uni", "use", "usu", "uti", "one", "eu")


def with_article(word: str) -> str:
    """``word`` after "a" or "an", chosen by how it starts (quotes, dots and case aside):
    messages name an argument or a label they did not choose the spelling of.

    >>> with_article("id"), with_article("name"), with_article("'IN_CATEGORY'")
    ('an id', 'a name', "an 'IN_CATEGORY'")
    >>> with_article("filter.archive"), with_article("uniqueness constraint")
    ('a filter.archive', 'a uniqueness constraint')
    """
    start = word.lstrip("'\"`.").lower()
    vowel = start[:1] in ("a", "e", "i", "o", "u") and not start.startswith(_SAID_WITH_A)
    return f"{'an' if vowel else 'a'} {word}"


@dataclass(frozen=True, slots=True)
class Source:
    """Where a bundle came from: a path (``-`` for stdin) and, for JSON Lines, a line.

    ``path`` is the path as the file system gave it; reports show :attr:`shown_path`.
    """

    path: str
    line: int | None = None

    @property
    def shown_path(self) -> str:
        """The path as reports show it (:func:`printable`)."""
        return printable(self.path)

    def __str__(self) -> str:
        return self.shown_path if self.line is None else f"{self.shown_path}:{self.line}"


class PithGraphError(Exception):
    """Root of every error pith-graph raises on purpose."""


class BundleError(PithGraphError):
    """A bundle failed parsing or verification.

    ``code`` is stable (see :class:`RejectCode`); ``message`` is for people; ``source`` is
    filled in by the pipeline when it knows the file and line.
    """

    def __init__(self, code: RejectCode, message: str, source: Source | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.source = source

    def at(self, source: Source) -> BundleError:
        """The same error, located at ``source``."""
        return BundleError(self.code, self.message, source)

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source is not None else ""
        return f"{where}{self.code.value}: {self.message}"

    def __reduce__(self) -> tuple[object, ...]:  # picklable across worker processes
        return (BundleError, (self.code, self.message, self.source))


class UsageError(PithGraphError):
    """The caller asked for something that cannot be done (a missing path, a bad option).

    ``code`` is ``"usage"`` (since 0.8.8; ``"keyring"`` for a :class:`KeyringError`), so a
    script can tell every error of the tree apart by ``code`` alone."""

    code: str = "usage"


class KeyringError(UsageError):
    """A trusted-keys file that is missing, unreadable or malformed."""

    code = "keyring"


class StoreErrorCode(enum.StrEnum):
    """Why a graph store failed. The values are stable (the CLI prints them)."""

    UNAVAILABLE = "unavailable"  # nothing answers, or the connection was lost for good
    AUTH = "auth"  # credentials refused
    DATABASE = "database"  # no such database
    WRITE_FAILED = "write_failed"  # the server refused a statement, or a graph file could not be written
    TIMEOUT = "timeout"  # the server stopped a statement that ran past its time
    MEMORY = "memory"  # a read needed more memory than the server lets one transaction hold
    IMPORT_FAILED = "import_failed"  # Neo4j's offline importer refused the files or failed
    ROW_TOO_LONG = "row_too_long"  # a CSV row longer than the offline importer can read: nothing run
    WORKER_FAILED = "worker_failed"  # a verification worker process died (killed, out of memory)
    HAND_EDITED = (
        "hand_edited"  # the database holds a node or edge of the graph's that pith-graph never writes
    )
    #: A database folder ``import --replace`` keeps aside could not be moved (since 0.9.12).
    MOVE_FAILED = "move_failed"


class StoreError(PithGraphError):
    """A graph store failed; ``code`` tells what to fix (see :class:`StoreErrorCode`)."""

    def __init__(self, code: StoreErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = StoreErrorCode(code)
        self.message = message

    def __str__(self) -> str:
        return f"{self.code.value}: {self.message}"

    def __reduce__(self) -> tuple[object, ...]:
        return (StoreError, (self.code, self.message))


class ApiError(PithGraphError):
    """A request the API refuses: ``message`` for people, ``code`` for programs, and how to
    fix it (``suggestion``); ``argument``: the one argument whose value is refused, as the
    client wrote it (``first``, ``filter.categories[1]``), when the error is about one
    (since 0.9.3)."""

    code = "BAD_USER_INPUT"

    def __init__(self, message: str, suggestion: str | None = None, *, argument: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.suggestion = suggestion
        self.argument = argument

    @property
    def extensions(self) -> dict[str, Any]:
        """``extensions`` of the GraphQL error: the code and, when there are, the suggestion and
        the argument (no ``argument`` key, not ``null``, for an error about no one argument).

        >>> BadUserInput("first must not be negative.", "Pass a number from 0 up.", argument="first").extensions
        {'code': 'BAD_USER_INPUT', 'suggestion': 'Pass a number from 0 up.', 'argument': 'first'}
        >>> LimitExceeded("The query costs 30303000, over the limit of 25000.").extensions
        {'code': 'LIMIT_EXCEEDED'}
        """
        found: dict[str, Any] = {"code": self.code}
        if self.suggestion:
            found["suggestion"] = self.suggestion
        if self.argument is not None:
            found["argument"] = self.argument
        return found


class NotFound(ApiError):
    """A named thing does not exist where ``null`` would not do."""

    code = "NOT_FOUND"


class BadUserInput(ApiError):
    """A malformed argument or variable (bad cursor, bad date, empty id)."""

    code = "BAD_USER_INPUT"


class LimitExceeded(ApiError):
    """Over a request limit (page size, depth, aliases, tokens, cost)."""

    code = "LIMIT_EXCEEDED"


class QueryTimeout(ApiError):
    """The request ran past its time limit."""

    code = "TIMEOUT"
