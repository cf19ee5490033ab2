"""Shared, read-only edge attributes: :class:`EdgeData` and the :class:`EdgeInterner` that
makes one per distinct attribute set.

Most edges of the graph carry one of a few attribute sets (``{"type": "AUTHORED"}``,
``{"type": "IN_CATEGORY", "primary": True}``, ...); each set is one :class:`EdgeData`
shared by its edges, a dict whose changing methods raise ``TypeError`` (a change that
changes nothing, such as networkx's ``G.add_edge(u, v)`` of an edge already there, passes),
so that a script cannot change one edge's attributes and silently change thousands. Pickle
and ``copy.deepcopy`` keep them shared and read-only; ``G.copy()`` and ``nx.DiGraph(G)``
give every edge a plain dict of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NoReturn

__all__ = ["EdgeData", "EdgeInterner"]


class EdgeData(dict[str, Any]):
    """An edge's attributes, shared with every edge whose attributes are equal: read-only."""

    __slots__ = ()

    def _read_only(self, *_args: object, **_kwargs: object) -> NoReturn:
        raise TypeError(
            "pith-graph's edge attributes are shared between edges and read-only; "
            "work on a copy (G.copy() or nx.DiGraph(G)) to change them"
        )

    __delitem__ = pop = popitem = clear = setdefault = _read_only

    def _unchanged(self, pairs: Iterable[tuple[str, Any]]) -> bool:
        return all(name in self and _same(self[name], value) for name, value in pairs)

    def __setitem__(self, name: str, value: Any) -> None:  # allowed when it changes nothing
        if not self._unchanged(((name, value),)):
            self._read_only()

    def update(self, *args: Any, **kwargs: Any) -> None:  # G.add_edge(u, v) of an edge there
        if not self._unchanged(dict(*args, **kwargs).items()):
            self._read_only()

    def __ior__(self, other: Any) -> EdgeData:  # type: ignore[override,misc]
        self.update(other)
        return self

    def __reduce__(self) -> tuple[object, ...]:  # pickle builds it whole (once: memoized)
        return (EdgeData, (dict(self),))

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, _memo: object) -> EdgeData:
        """Itself, shared and read-only as pickle gives it: a plain dict would be memoized and
        shared by every edge that shared this one (an edit to one was an edit to them all)."""
        return self


def _same(one: Any, other: Any) -> bool:
    return type(one) is type(other) and _typed(one) == _typed(other)


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _typed(value: Any) -> Any:
    """``value`` in a key telling apart what ``==`` does not (``True``/``1``/``1.0``, ``[True]``/``[1]``,
    ``-0.0``/``0.0``): a list of strings as it is, others with their items' types, a float as hex."""
    if type(value) is list or type(value) is tuple:
        if all(type(item) is str for item in value):
            return tuple(value)
        return tuple((type(item), _typed(item)) for item in value)
    return value.hex() if type(value) is float else value


class EdgeInterner:
    """One :class:`EdgeData` per distinct attribute set (values of the same types: ``True`` is not ``1``)."""

    def __init__(self) -> None:
        self._known: dict[tuple[tuple[str, type, Any], ...], EdgeData] = {}

    def __call__(self, attributes: Mapping[str, Any]) -> EdgeData:
        key = tuple((name, type(value), _typed(value)) for name, value in attributes.items())
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = EdgeData((name, _frozen(value)) for name, value in attributes.items())
        return found
