"""Ctrl-C (or Jupyter's "interrupt kernel": SIGINT either way) during a load or removal into
the in-memory graph leaves the caller's graph whole: the batch being written is written,
then ``KeyboardInterrupt`` is raised, and the graph is still one a later
``load_graph(graph=G)`` takes. Before, an interrupt inside a paper's write left an Author's
``paperCount`` below its AUTHORED edges (or nodes without a paper), and every later load
onto the graph was refused. So does SIGTERM where a handler turns it into an exception (the
command line does; so do scripts that stop gracefully): before 0.9.13 it cut the write."""

from __future__ import annotations

import os
import signal
from functools import partial
from typing import Any

import networkx as nx
import pytest

from pith_graph.loader.facade import SAMPLES, load_graph
from pith_graph.loader.stores.memory import MemoryStore
from pith_graph.loader.stores.memory_graph import check_structure

#: (what is interrupted, at which of its papers' tidying, counted from 1)
CASES = [
    ("load", 1),
    ("load", 2),
    ("load", 3),
    ("remove", 1),
    ("remove", 2),
]


def _interrupted_at(monkeypatch: pytest.MonkeyPatch, at: int, signum: signal.Signals) -> None:
    """``signum`` sent to this process as the ``at``-th tidying of a write begins (the paper's
    edges written, its authors' counts not yet)."""
    tidy = MemoryStore._tidy
    calls = [0]

    def interrupting(self: MemoryStore, *args: Any) -> None:
        calls[0] += 1
        if calls[0] == at:
            os.kill(os.getpid(), signum)
        tidy(self, *args)

    monkeypatch.setattr(MemoryStore, "_tidy", interrupting)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize(("change", "at"), CASES, ids=[f"{c}-{n}" for c, n in CASES])
def test_an_interrupted_write_leaves_the_graph_whole(
    monkeypatch: pytest.MonkeyPatch, change: str, at: int, signum: signal.Signals
) -> None:
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    term_before = signal.signal(signal.SIGTERM, _raise_interrupt)  # as the command line's
    G = nx.DiGraph()
    if change == "remove":
        load_graph(SAMPLES, graph=G)
    piths = sorted(pith for _, pith in G.nodes(data="pithNumber") if pith)
    store = MemoryStore(G)
    _interrupted_at(monkeypatch, at, signum)
    write = (
        partial(load_graph, SAMPLES, graph=G, workers=1)
        if change == "load"
        else partial(store.remove_papers, piths)
    )
    try:
        with pytest.raises(KeyboardInterrupt):
            write()
        assert signal.getsignal(signal.SIGTERM) is _raise_interrupt  # restored
    finally:
        signal.signal(signal.SIGTERM, term_before)
    monkeypatch.undo()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    check_structure(G)  # whole: the batch written (or removed) entirely
    _, report = load_graph(SAMPLES, graph=G)  # and a later load takes it
    assert report.rejected == 0
    assert sum(1 for _, label in G.nodes(data="label") if label == "Paper") == 3
