"""Numbers as people type them in options and environment variables: ASCII digits only.

``int()`` and ``float()`` also take other scripts' digits (``４``, ``٨٠٨٠``) and underscores
between digits (``1_0``): no one types those in a shell meaning a number, and a typo there
should be refused, not read as some number. ``float()`` also turns a literal too large to
hold (``1e400``) into infinity: refused too, by what was typed.
"""

from __future__ import annotations

import math
import re

__all__ = ["decimal", "integer"]

_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE
)


def integer(text: str) -> int:
    """``text`` (blanks around it allowed) as an int: ASCII digits, an optional sign.

    >>> integer(" 42 "), integer("-3")
    (42, -3)
    >>> integer("1_0")
    Traceback (most recent call last):
    ValueError: invalid int value: '1_0'
    """
    stripped = text.strip()
    if not _INTEGER.fullmatch(stripped):
        raise ValueError(f"invalid int value: {text!r}")
    return int(stripped)


def decimal(text: str) -> float:
    """``text`` as a float: ASCII digits with an optional sign, point and exponent, or
    ``inf`` / ``nan`` (left for the caller's range to refuse, by name); not a literal that
    overflows.

    >>> decimal("0.5"), decimal("3e2"), decimal("nan") != decimal("nan")
    (0.5, 300.0, True)
    >>> decimal("1e400")
    Traceback (most recent call last):
    ValueError: invalid float value: '1e400' (larger than any float)
    """
    stripped = text.strip()
    if not _DECIMAL.fullmatch(stripped):
        raise ValueError(f"invalid float value: {text!r}")
    value = float(stripped)
    if math.isinf(value) and stripped.lstrip("+-")[:1] in tuple("0123456789."):
        raise ValueError(f"invalid float value: {text!r} (larger than any float)")
    return value
