"""Tools for tests and benchmarks: sign bundles with any key, generate whole corpora.

Like httpx's ``MockTransport``, these are a deliberate, named part of the package, kept out
of the production path (nothing under :mod:`pith_graph.loader`, ``schema`` or ``api``
imports them):

* :class:`SignerIdentity` — an Ed25519 key and the names bundles give it;
* :func:`build_bundle` / :func:`resign` — a bundle with exactly the real ones' structure,
  signed with any identity, and re-signing after a test edited one;
* :func:`generate_bundles` / :func:`write_corpus` — a seeded corpus with heavy-tailed
  authorship, several arXiv versions and rebuilt bundles (``python -m
  pith_graph.testing.corpus DIR -n 100000``);
* :func:`~pith_graph.testing.serving.serving` — ``pith-graph serve`` in a child process,
  until its URL is known and then until the block ends.
"""

from __future__ import annotations

from pith_graph.testing.corpus import (
    CorpusInfo,
    corpus_signers,
    generate_bundles,
    generate_papers,
    write_corpus,
)
from pith_graph.testing.identity import SignerIdentity
from pith_graph.testing.signer import PaperSpec, build_bundle, resign, seal_event, state_for

__all__ = [
    "CorpusInfo",
    "PaperSpec",
    "SignerIdentity",
    "build_bundle",
    "corpus_signers",
    "generate_bundles",
    "generate_papers",
    "resign",
    "seal_event",
    "state_for",
    "write_corpus",
]
