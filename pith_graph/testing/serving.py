"""``pith-graph serve`` in a child process, for tests and benchmarks that need the real
command (its options, environment and signals), not an app in this process."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

__all__ = ["serving"]

_RUNNING = re.compile(r"Uvicorn running on (http://\S+)")


@contextmanager
def serving(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    stop_timeout: float = 60,
    command: Sequence[str] = (sys.executable, "-m", "pith_graph", "serve"),
    output: list[str] | None = None,
) -> Iterator[str]:
    """Run ``pith-graph serve ARGS`` (pass ``--port 0``; or ``command`` that execs it, such as
    ``scripts/run``) with ``env`` added to this process's environment; yield its base URL
    (``http://127.0.0.1:PORT``) once it listens, its lines so far in ``output``; stop it with
    SIGTERM on leaving. Fails with the server's output if it exits before listening, or does
    not stop within ``stop_timeout`` seconds (then it is killed)."""
    process = subprocess.Popen(
        [*command, *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    output = [] if output is None else output
    try:
        while not (found := _RUNNING.search(output[-1] if output else "")):
            line = process.stdout.readline()
            if not line:
                raise AssertionError("pith-graph serve exited before listening:\n" + "".join(output))
            output.append(line)
        yield found.group(1)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=stop_timeout)
        except subprocess.TimeoutExpired:
            # Killed and reaped here: a Popen left running was collected by a later test,
            # whose run then failed on its ResourceWarnings (CI), far from the cause.
            process.kill()
            rest, _ = process.communicate()
            raise AssertionError(
                f"pith-graph serve did not stop within {stop_timeout:g} s of SIGTERM:\n"
                + "".join(output)
                + rest
            ) from None
