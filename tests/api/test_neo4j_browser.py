"""Neo4j Browser, as an analyst uses it: headless Chromium opens ``/browser/`` on the local
server's HTTP port, finds the connect form filled in with the server's Bolt address (from the
discovery document), logs in as ``neo4j`` with the generated password, runs a query that calls
GDS and APOC, and reads the answer from the result frame. Screenshots are kept as
``artifacts/neo4j-browser-connect.png`` and ``artifacts/neo4j-browser.png``.
"""

from __future__ import annotations

import base64
import json
import time

import pytest
from conftest import Neo4jServer, pinned
from test_api_browser import ARTIFACTS, DevTools, devtools  # noqa: F401 (devtools is a fixture)

pytestmark = pytest.mark.browser

QUERY = "RETURN gds.version() AS gds, apoc.version() AS apoc"
WAIT = 90  # seconds; the first page load compiles a large bundle on a busy 2-core machine


def screenshot(browser: DevTools, name: str) -> None:
    shot = browser.send("Page.captureScreenshot", format="png")
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / name).write_bytes(base64.b64decode(shot["data"]))


def type_into(browser: DevTools, selector: str, text: str) -> None:
    """Focus the element and type, as a person would (React and Monaco see real input)."""
    assert browser.evaluate(
        f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
        " if (!e) return false; e.focus(); return true; })()"
    ), selector
    browser.send("Input.insertText", text=text)


def test_the_browser_logs_in_with_the_generated_password_and_runs_gds_and_apoc(
    devtools: DevTools, local_server: Neo4jServer
) -> None:
    assert local_server.http_uri is not None and local_server.password is not None
    page = next(t for t in devtools.send("Target.getTargets")["targetInfos"] if t["type"] == "page")
    devtools.session = devtools.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)[
        "sessionId"
    ]
    devtools.send("Page.enable")
    devtools.send("Runtime.enable")
    devtools.send("Page.navigate", url=f"{local_server.http_uri}/browser/")

    # The Browser's own markup: its title, its React root, its connect form.
    devtools.wait_for("!!document.querySelector('[data-testid=connect]')", WAIT)
    assert devtools.evaluate("document.title") == "Neo4j Browser"
    assert devtools.evaluate("document.querySelector('#mount').childElementCount") > 0
    bolt_address = local_server.uri.removeprefix("bolt://")
    assert devtools.evaluate("document.querySelector('[data-testid=boltaddress]').value") == bolt_address
    assert devtools.evaluate("document.querySelector('[data-testid=password]').type") == "password"
    screenshot(devtools, "neo4j-browser-connect.png")

    type_into(devtools, "[data-testid=username]", local_server.user)
    type_into(devtools, "[data-testid=password]", local_server.password)
    devtools.evaluate("document.querySelector('[data-testid=connect]').click()")
    devtools.wait_for("/You are connected as user neo4j/.test(document.body.innerText)", WAIT)

    type_into(devtools, "[data-testid=activeEditor] textarea", QUERY)
    devtools.evaluate("document.querySelector('[data-testid=editor-Run]').click()")
    frame = devtools.wait_for(
        "(() => { const f = [...document.querySelectorAll('[data-testid=frame]')]"
        f".find(f => f.innerText.includes({json.dumps(QUERY)}) && /Started streaming 1 record/.test(f.innerText));"
        " return f ? f.innerText : ''; })()",
        WAIT,
    )
    assert f'"{pinned("gds.version")}"' in frame
    assert f'"{pinned("apoc.version")}"' in frame
    time.sleep(0.3)  # let the frame paint before the screenshot
    screenshot(devtools, "neo4j-browser.png")
