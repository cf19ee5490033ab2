"""The consoles the CLI prints through (:func:`console`).

Everything the CLI prints may quote its input: file names, a bundle's text in a rejection's
message, an error from the server. Rich would read some of it as its own syntax: ``[b]`` as
markup, ``:100:`` as an emoji code (``file.jsonl:100: schema_error`` printed as
``file.jsonl💯 schema_error``), numbers and paths as things to colour. These consoles print
text as given.
"""

from __future__ import annotations

import os

from rich.console import Console

__all__ = ["console", "same_file"]


def console(*, stderr: bool = False) -> Console:
    """A console for stdout (or ``stderr``) that prints text as given: no markup, no emoji
    codes, no highlighting; long lines are not wrapped (one report line per rejection)."""
    return Console(stderr=stderr, soft_wrap=True, markup=False, emoji=False, highlight=False)


def same_file(one: Console, other: Console) -> bool:
    """Whether two consoles write to the same file (stdout and stderr on one terminal, say)."""
    try:
        return os.path.samestat(os.fstat(one.file.fileno()), os.fstat(other.file.fileno()))
    except (OSError, ValueError, AttributeError):  # not a file with a descriptor (a test's buffer)
        return False
