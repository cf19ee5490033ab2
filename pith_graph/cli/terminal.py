"""The consoles the CLI prints through (:func:`console`).

Everything the CLI prints may quote its input: file names, a bundle's text in a rejection's
message, an error from the server. Rich would read some of it as its own syntax: ``[b]`` as
markup, ``:100:`` as an emoji code (``file.jsonl:100: schema_error`` printed as
``file.jsonl💯 schema_error``), numbers and paths as things to colour. These consoles print
text as given.
"""

from __future__ import annotations

from rich.console import Console

__all__ = ["console"]


def console(*, stderr: bool = False) -> Console:
    """A console for stdout (or ``stderr``) that prints text as given: no markup, no emoji
    codes, no highlighting; long lines are not wrapped (one report line per rejection)."""
    return Console(stderr=stderr, soft_wrap=True, markup=False, emoji=False, highlight=False)
