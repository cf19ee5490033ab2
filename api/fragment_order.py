"""Fragments in an order where each comes after the fragments it spreads, for measures that
add up a fragment's spreads once (:class:`~pith_graph.api.limits.DocumentShape`,
:mod:`~pith_graph.api.overlaps`): time linear in the document, however often fragments spread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

__all__ = ["dependency_order"]


def dependency_order(
    fragments: Mapping[str, object], spreads: Callable[[str], Iterable[str]]
) -> tuple[list[str], bool]:
    """The names of ``fragments`` (a fragment's ``spreads(name)`` first, each once), found
    depth first without recursion (the parser bounds nesting, not Python's stack), and
    whether a spread closes a cycle. Such a spread, and one naming no fragment of
    ``fragments``, is passed over: a measure taken in this order counts nothing for it."""
    order: list[str] = []
    done: set[str] = set()
    cyclic = False
    for root in fragments:
        if root in done:
            continue
        path = [(root, iter(spreads(root)))]
        on_path = {root}
        while path:
            name, pending = path[-1]
            for spread in pending:
                if spread in on_path:
                    cyclic = True
                elif spread in fragments and spread not in done:
                    path.append((spread, iter(spreads(spread))))
                    on_path.add(spread)
                    break
            else:
                path.pop()
                on_path.remove(name)
                done.add(name)
                order.append(name)
    return order, cyclic
