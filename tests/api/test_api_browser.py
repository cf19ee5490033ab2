"""A real browser: headless Chromium opens GraphiQL, runs a query for a sample paper, and the
paper's title shows in the result pane. Chromium is driven over the DevTools protocol on a
pipe (``--remote-debugging-pipe``), so no driver or extra package is needed. The screenshot is
kept as ``artifacts/graphiql.png``."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apitest import Api, served

from pith_graph.api.app import create_app
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.loader.facade import SAMPLES, load_graph
from pith_graph.loader.keyring import default_keyring

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TITLE = "Optimizing Multi-GPU Parallelization Strategies for Deep Learning Training"
QUERY = '{\n  paper(id: "arXiv:1907.13257") {\n    title\n    pithNumber\n    authors { name }\n  }\n}\n'


class DevTools:
    """The Chrome DevTools protocol over the pipe Chromium opens on fds 3 (in) and 4 (out)."""

    def __init__(self, profile: Path) -> None:
        assert CHROMIUM is not None
        to_browser_read, self._write = os.pipe()
        self._read, from_browser_write = os.pipe()
        args = [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--window-size=1400,900",
            f"--user-data-dir={profile}",
            "--remote-debugging-pipe",
            "about:blank",
        ]

        def wire_fds() -> None:
            os.dup2(to_browser_read, 3)
            os.dup2(from_browser_write, 4)

        self.process = subprocess.Popen(
            args,
            preexec_fn=wire_fds,
            pass_fds=(3, 4),  # kept open in the child once wire_fds has put the pipes there
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._next_id = 0
        self._buffer = b""
        self.session: str | None = None

    def _receive(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._read, 65536)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        data: dict[str, Any] = json.loads(message)
        return data

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if self.session is not None and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {expression}")

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError):
            self.send("Browser.close")
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)
        os.close(self._read)
        os.close(self._write)


@pytest.fixture
def devtools(tmp_path: Path) -> Iterator[DevTools]:
    if CHROMIUM is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("chromium is required under CI (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    browser = DevTools(tmp_path / "profile")
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture
def samples_api() -> Iterator[Api]:
    G, _ = load_graph([SAMPLES])
    reader = MemoryReader(G)
    with served(create_app(reader, keyring=default_keyring()), "memory", reader) as api:
        yield api


def test_graphiql_runs_a_query_in_a_real_browser(devtools: DevTools, samples_api: Api) -> None:
    targets = devtools.send("Target.getTargets")["targetInfos"]
    page = next(t for t in targets if t["type"] == "page")
    devtools.session = devtools.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)[
        "sessionId"
    ]
    devtools.send("Page.enable")
    devtools.send("Runtime.enable")
    devtools.send("Page.navigate", url=f"{samples_api.url}/graphql")
    devtools.wait_for("!!document.querySelector('.graphiql-query-editor .CodeMirror')")
    # Type the query into the editor as a person would: focus it, clear it, insert the text.
    devtools.evaluate(
        "(() => { const cm = document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror;"
        " cm.setValue(''); cm.focus(); return true; })()"
    )
    devtools.send("Input.insertText", text=QUERY)
    typed = devtools.evaluate(
        "document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.getValue()"
    )
    assert "1907.13257" in typed
    devtools.evaluate("document.querySelector('.graphiql-execute-button').click()")
    shown = devtools.wait_for(
        "(() => { const pane = document.querySelector('.graphiql-response .CodeMirror');"
        f" const text = pane ? pane.CodeMirror.getValue() : '';"
        f" return text.includes({json.dumps(TITLE)}) ? text : ''; }})()"
    )
    assert json.loads(shown)["data"]["paper"]["title"] == TITLE
    time.sleep(0.3)  # let the result pane paint before the screenshot
    shot = devtools.send("Page.captureScreenshot", format="png")
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "graphiql.png").write_bytes(base64.b64decode(shot["data"]))
    visible = devtools.evaluate("document.querySelector('.graphiql-response').innerText")
    assert "Multi-GPU Parallelization" in visible


def test_graphiql_documents_the_frontend_fields(devtools: DevTools, samples_api: Api) -> None:
    targets = devtools.send("Target.getTargets")["targetInfos"]
    page = next(t for t in targets if t["type"] == "page")
    devtools.session = devtools.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)[
        "sessionId"
    ]
    devtools.send("Page.enable")
    devtools.send("Runtime.enable")
    devtools.send("Page.navigate", url=f"{samples_api.url}/graphql")
    devtools.wait_for(
        "!!document.querySelector('.graphiql-sidebar button[aria-label=\"Show Documentation Explorer\"]')"
    )
    devtools.evaluate(
        "document.querySelector('.graphiql-sidebar button[aria-label=\"Show Documentation Explorer\"]').click()"
    )
    devtools.wait_for(
        "Array.from(document.querySelectorAll('.graphiql-doc-explorer a')).some(a => a.innerText === 'Query')"
    )
    devtools.evaluate(
        "Array.from(document.querySelectorAll('.graphiql-doc-explorer a')).find(a => a.innerText === 'Query').click()"
    )
    docs = devtools.wait_for(
        "(() => { const d = document.querySelector('.graphiql-doc-explorer');"
        " const text = d ? d.innerText : ''; return text.includes('papersById') ? text : ''; })()"
    )
    for shown in (
        "papersById(",
        "ids: [String!]!",
        "orderBy: SearchOrder = RELEVANCE",
        "authors(",
        "prefix: String!",
    ):
        assert shown in docs, shown
