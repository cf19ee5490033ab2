"""What one very long word costs: splitting it into search words, and loading its bundle.

A trusted bundle may carry a title of one word of hundreds of thousands of letters (300,000
``a``, 614 KB, is under the default ``--max-bytes`` of 1 MiB). This script measures, in the
same run, against a baseline of ordinary words of the same total length:

1. ``tokens()`` over one word of N letters (``a``), ``_`` connectors then a letter, and ZWJs;
2. ``pith-graph load BUNDLE --snapshot FILE`` of one bundle titled with 300,000 ``a``, against
   one titled with ordinary words of the same length (the snapshot builds the search indexes).

    .venv/bin/python benchmarks/bench_long_words.py --repeat 3

Every figure is a range (min..max over ``--repeat`` interleaved rounds): the machine is shared.
Figures of 5 December 2026 (2 shared cores), before -> since 0.8.9: ``tokens("a" * 80_000)``
4.1 s -> 0.04 s (1.3x the baseline of words); ``"_" * 20_000`` 18 s -> under 1 ms; ``load
--snapshot`` of the 300,000-letter title 59 s -> about the baseline.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import orjson

from pith_graph.api.reads.words import tokens
from pith_graph.testing.signer import PaperSpec, SignerIdentity, build_bundle

SIGNER = SignerIdentity.from_seed(b"long-words", key_id="long-words-key", signer_id="long.invalid")
WORDS = "graph neural networks learn from signed bundles of papers and their authors "


def _ordinary(length: int) -> str:
    return (WORDS * (length // len(WORDS) + 1))[:length]


def _seconds(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _range(values: list[float]) -> str:
    return f"{min(values):.3f}..{max(values):.3f}"


def _bundle(title: str) -> bytes:
    spec = PaperSpec(
        "2401.00001", 1, title, ["Ada Lovelace"], "An abstract.", "cs.LG", [],
        "http://creativecommons.org/licenses/by/4.0/", "2024-01-01T00:00:00Z",
        "2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z",
    )  # fmt: skip
    return orjson.dumps(build_bundle(spec, SIGNER)) + b"\n"


def _tokens(lengths: list[int], repeat: int) -> None:
    for length in lengths:
        shapes = {
            "letters": "a" * length,
            "connectors": "_" * length + "a",
            "zwj": "\u200d" * length + "a",
        }
        ordinary = _ordinary(length)
        baseline: list[float] = []
        times: dict[str, list[float]] = {name: [] for name in shapes}
        for _ in range(repeat):
            baseline.append(_seconds(partial(tokens, ordinary)))
            for name, text in shapes.items():
                times[name].append(_seconds(partial(tokens, text)))
        for name, values in times.items():
            ratio = min(values) / max(min(baseline), 1e-9)
            print(
                f"tokens {name:10} n={length:>7}: {_range(values)} s, baseline {_range(baseline)} s, {ratio:.1f}x"
            )


def _load(length: int, repeat: int) -> None:
    command = [sys.executable, "-m", "pith_graph", "load"]
    with tempfile.TemporaryDirectory() as folder:
        keys = Path(folder, "keys.json")
        keys.write_bytes(orjson.dumps([SIGNER.keyring_entry()]))
        bundles = {"long word": "a" * length, "baseline": _ordinary(length)}
        times: dict[str, list[float]] = {name: [] for name in bundles}
        for name, title in bundles.items():
            Path(folder, name + ".jsonl").write_bytes(_bundle(title))
        for _ in range(repeat):
            for name in bundles:
                snapshot = Path(folder, "c.snap")
                snapshot.unlink(missing_ok=True)
                arguments = [
                    str(Path(folder, name + ".jsonl")),
                    "--trusted-keys",
                    str(keys),
                    "--snapshot",
                    str(snapshot),
                ]
                run = partial(subprocess.run, command + arguments, check=True, capture_output=True)
                times[name].append(_seconds(run))
        ratio = min(times["long word"]) / min(times["baseline"])
        print(
            f"load --snapshot, title of {length} characters: long word {_range(times['long word'])} s, "
            f"baseline {_range(times['baseline'])} s, {ratio:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--lengths", type=int, nargs="+", default=[20_000, 80_000, 300_000])
    parser.add_argument("--load-length", type=int, default=300_000)
    args = parser.parse_args()
    _tokens(args.lengths, args.repeat)
    _load(args.load_length, args.repeat)


if __name__ == "__main__":
    main()
