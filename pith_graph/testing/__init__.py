"""Tools for tests and benchmarks: sign bundles with any key, generate whole corpora, run the
command.

Like httpx's ``MockTransport``, these are a deliberate, named part of the package, kept out
of the production path (nothing under :mod:`pith_graph.loader`, ``schema`` or ``api``
imports them):

* :class:`SignerIdentity` — an Ed25519 key and the names bundles give it;
* :func:`build_bundle` / :func:`resign` — a bundle with exactly the real ones' structure,
  signed with any identity, and re-signing after a test edited one;
* :func:`generate_bundles` / :func:`write_corpus` — a seeded corpus with heavy-tailed
  authorship, several arXiv versions and rebuilt bundles (``python -m
  pith_graph.testing.corpus DIR -n 100000``);
* :func:`run_cli` — ``pith-graph ARGS`` in a child process, run to its end (with a
  timeout), its exit code and output captured as text; :func:`run_main` — the same answer
  from the CLI's ``main(ARGS)`` in this process, for the many cases of argument handling;
* :func:`~pith_graph.testing.serving.serving` — ``pith-graph serve`` in a child process,
  until its URL is known and then until the block ends.

The names from :mod:`pith_graph.testing.corpus` are imported on first use (PEP 562), not
with this package: ``python -m pith_graph.testing.corpus`` imports this package first, and
would otherwise find the module it is about to run already imported.
"""

from __future__ import annotations

import typing

from pith_graph import _imported_on_first_use
from pith_graph.testing.cli import run_cli, run_main
from pith_graph.testing.identity import SignerIdentity
from pith_graph.testing.signer import PaperSpec, build_bundle, resign, seal_event, state_for

if typing.TYPE_CHECKING:
    from pith_graph.testing.corpus import (
        CorpusInfo,
        corpus_signers,
        generate_bundles,
        generate_papers,
        write_corpus,
    )

__all__ = [
    "CorpusInfo",
    "PaperSpec",
    "SignerIdentity",
    "build_bundle",
    "corpus_signers",
    "generate_bundles",
    "generate_papers",
    "resign",
    "run_cli",
    "run_main",
    "seal_event",
    "state_for",
    "write_corpus",
]

_imported_on_first_use(
    globals(),
    "pith_graph.testing.corpus",
    frozenset({"CorpusInfo", "corpus_signers", "generate_bundles", "generate_papers", "write_corpus"}),
)
