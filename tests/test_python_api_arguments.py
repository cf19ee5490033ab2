"""The Python API's helpers refuse wrong input as load_graph does: a :class:`UsageError`
(so a script catching :class:`PithGraphError` sees it) naming the parameter and what to pass.
``papers_of(None, a)``, ``coauthorship_graph([1, 2])`` or ``MemoryStore([1])`` raised a bare
``TypeError`` or ``AttributeError`` from inside; a ``MultiDiGraph`` was read, or copied by
``MemoryStore`` (which then wrote to the copy); ``export_graph`` named its dates by the command
line's flags (``from``) and took ``hops="2"`` for a number out of range. The command line's
own messages are unchanged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import networkx as nx
import pytest

from pith_graph import (
    SAMPLES,
    KeyringError,
    MemoryStore,
    PinnedKey,
    PithGraphError,
    UsageError,
    coauthorship_graph,
    export_graph,
    load_graph,
    papers_of,
)
from pith_graph.testing import run_cli

_G = load_graph(SAMPLES, workers=1)[0]
_AUTHOR = next(node for node, label in _G.nodes(data="label") if label == "Author")
#: No server listens there: every case must be refused before anything connects.
_NOWHERE: dict[str, Any] = {"uri": "bolt://127.0.0.1:1", "password": "unused"}

#: (case, call, exception type, the whole message).
CASES: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    (
        "papers_of None",
        lambda: papers_of(None, _AUTHOR),  # type: ignore[arg-type]
        UsageError,
        "G: expected a DiGraph load_graph built, not a value of type NoneType",
    ),
    (
        "papers_of undirected",
        lambda: papers_of(nx.Graph(_G), _AUTHOR),
        UsageError,
        "G: expected a DiGraph load_graph built, not a value of type Graph",
    ),
    (
        "papers_of MultiDiGraph",
        lambda: papers_of(nx.MultiDiGraph(_G), _AUTHOR),
        UsageError,
        "G: a MultiDiGraph (what earlier versions built): pass nx.DiGraph(G)",
    ),
    (
        "papers_of author a list",
        lambda: papers_of(_G, [_AUTHOR]),  # type: ignore[arg-type]
        UsageError,
        f"papers_of: [{_AUTHOR!r}] is not an Author node of the graph "
        '(it takes a node id, "Author:<nameKey>", not a name)',
    ),
    (
        "coauthorship_graph None",
        lambda: coauthorship_graph(None),  # type: ignore[arg-type]
        UsageError,
        "G: expected a DiGraph load_graph built, not a value of type NoneType",
    ),
    (
        "coauthorship_graph list",
        lambda: coauthorship_graph([1, 2]),  # type: ignore[arg-type]
        UsageError,
        "G: expected a DiGraph load_graph built, not a value of type list",
    ),
    (
        "coauthorship_graph undirected",
        lambda: coauthorship_graph(nx.Graph(_G)),
        UsageError,
        "G: expected a DiGraph load_graph built, not a value of type Graph",
    ),
    (
        "coauthorship_graph MultiDiGraph",
        lambda: coauthorship_graph(nx.MultiDiGraph(_G)),
        UsageError,
        "G: a MultiDiGraph (what earlier versions built): pass nx.DiGraph(G)",
    ),
    (
        "MemoryStore list",
        lambda: MemoryStore([1]),  # type: ignore[arg-type]
        UsageError,
        "graph: expected a DiGraph load_graph built, not a value of type list",
    ),
    (
        "MemoryStore undirected",
        lambda: MemoryStore(nx.Graph()),
        UsageError,
        "graph: expected a DiGraph load_graph built, not a value of type Graph",
    ),
    (
        "MemoryStore MultiDiGraph",
        lambda: MemoryStore(nx.MultiDiGraph(_G)),
        UsageError,
        "graph: a MultiDiGraph (what earlier versions built): pass nx.DiGraph(graph)",
    ),
    (  # named as a parameter first, as every other refusal of the Python API (trusted_keys[0]: ...)
        "PinnedKey public_key short",
        lambda: PinnedKey("k1", b"x" * 31),
        KeyringError,
        "public_key: expected the Ed25519 key's 32 raw bytes (bytes.fromhex or base64.b64decode of a "
        "keys file's text), not 31 bytes (PinnedKey 'k1')",
    ),
    (
        "export_graph submitted_from not a date",
        lambda: export_graph(**_NOWHERE, submitted_from="2020"),
        UsageError,
        "submitted_from is not an ISO 8601 date or date-time: '2020'",
    ),
    (
        "export_graph submitted_to a week",
        lambda: export_graph(**_NOWHERE, submitted_to="2020-W01"),
        UsageError,
        "submitted_to names a week, not a day: '2020-W01' (add the day: 2020-W01-1 to 2020-W01-7)",
    ),
    (
        "export_graph submitted_from not a str",
        lambda: export_graph(**_NOWHERE, submitted_from=2020),  # type: ignore[arg-type]
        UsageError,
        "submitted_from: expected a str, not a value of type int",
    ),
    (
        "export_graph hops a str",
        lambda: export_graph(**_NOWHERE, author="a", hops="2"),  # type: ignore[arg-type]
        UsageError,
        "hops must be an integer, not str",
    ),
    (
        "export_graph hops a bool",
        lambda: export_graph(**_NOWHERE, author="a", hops=True),
        UsageError,
        "hops must be an integer, not bool",
    ),
    (
        "export_graph hops 7",
        lambda: export_graph(**_NOWHERE, author="a", hops=7),
        UsageError,
        "hops must be between 1 and 6",
    ),
]


@pytest.mark.parametrize(("call", "kind", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_helper_refuses_wrong_input_naming_its_parameter(
    call: Callable[[], object], kind: type[Exception], message: str
) -> None:
    with pytest.raises(PithGraphError) as raised:
        call()
    assert type(raised.value) is kind
    assert str(raised.value) == message
    assert raised.value.code == kind.code  # type: ignore[attr-defined]


def test_what_the_helpers_took_they_still_take() -> None:
    """A load's graph, a view of it (read, not written to), an empty graph."""
    view = _G.subgraph(list(_G))
    assert papers_of(view, _AUTHOR) == papers_of(_G, _AUTHOR) != []
    assert coauthorship_graph(view).number_of_edges() == coauthorship_graph(_G).number_of_edges()
    assert MemoryStore(_G).graph is _G and MemoryStore().graph.number_of_nodes() == 0


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (("--from", "2020"), "from is not an ISO 8601 date or date-time: '2020'"),
        (
            ("--to", "2020-W01"),
            "to names a week, not a day: '2020-W01' (add the day: 2020-W01-1 to 2020-W01-7)",
        ),
        (("--from", "\x1b[31m2020"), "from is not an ISO 8601 date or date-time: '\\x1b[31m2020'"),
        (
            ("--to", "\x1b[2J" + "2" * 5000),
            "to is not an ISO 8601 date or date-time: '\\x1b[2J" + "2" * 96 + "…' (5004 characters)",
        ),
    ],
)
def test_the_command_line_still_names_its_flags(flags: tuple[str, ...], line: str) -> None:
    """``export`` shares export_graph's checks but names the dates as its flags (``from``),
    quoted as every message quotes a value: escaped, and cut to its first 100 characters
    (before 0.9.0 a date of 5,000 characters came back whole)."""
    result = run_cli("export", *flags, "--uri", "bolt://127.0.0.1:9", "--save", "out.json")
    assert result.returncode == 2
    assert result.stderr.strip() == f"pith-graph: error: {line}"
