"""A frontend on another origin, in a real browser: headless Chromium opens a page served on
one port and calls the API on another with ``fetch()``. The origin the operator listed gets
answers (a preflighted POST, a GET whose ETag it may read and revalidate); a page on an
origin not listed is blocked by the browser itself."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from apitest import ThreadServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route
from test_api_browser import DevTools, devtools  # noqa: F401 (fixture)

from pith_graph.api.app import create_app
from pith_graph.api.reads.memory import MemoryReader
from pith_graph.loader.facade import SAMPLES, load_graph
from pith_graph.loader.keyring import default_keyring

pytestmark = pytest.mark.browser

TITLE = "Optimizing Multi-GPU Parallelization Strategies for Deep Learning Training"


async def _page(request: Request) -> HTMLResponse:
    return HTMLResponse("<!doctype html><title>a frontend</title><p>frontend</p>")


@pytest.fixture
def origins() -> Iterator[tuple[ThreadServer, ThreadServer, ThreadServer]]:
    """The API, a frontend on a listed origin, a frontend on an origin not listed."""
    pages = Starlette(routes=[Route("/", _page)])
    with ThreadServer(pages) as allowed, ThreadServer(pages) as other:
        G, _ = load_graph([SAMPLES])
        app = create_app(MemoryReader(G), keyring=default_keyring(), cors_origins=[allowed.url])
        with ThreadServer(app) as api:
            yield api, allowed, other


def _open(devtools: DevTools, url: str) -> None:
    if devtools.session is None:
        targets = devtools.send("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        devtools.session = devtools.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)[
            "sessionId"
        ]
        devtools.send("Page.enable")
        devtools.send("Runtime.enable")
    devtools.send("Page.navigate", url=url)
    devtools.wait_for("document.readyState === 'complete' && document.title === 'a frontend'")


def _calls(devtools: DevTools, api: str) -> dict[str, Any]:
    """What the page's fetch() calls to the API got (or the error the browser raised)."""
    script = """
    (async (api) => {
      const result = {};
      try {
        const query = '{ papersById(ids: ["arXiv:1907.13257", "nope"]) { title } }';
        const posted = await fetch(api + '/graphql', {
          method: 'POST',
          headers: {'content-type': 'application/json', 'accept': 'application/graphql-response+json'},
          body: JSON.stringify({query}),
        });
        result.post = {status: posted.status, type: posted.headers.get('content-type'), body: await posted.json()};
        const url = api + '/graphql?query=' + encodeURIComponent('{ categories { code } }');
        const got = await fetch(url);
        const etag = got.headers.get('etag');
        const again = await fetch(url, {headers: {'if-none-match': etag}});
        result.get = {status: got.status, etag, revalidated: again.status};
      } catch (error) {
        result.error = String(error);
      }
      return JSON.stringify(result);
    })(%s)
    """
    found: dict[str, Any] = json.loads(devtools.evaluate(script % json.dumps(api)))
    return found


def test_a_listed_origin_calls_the_api_and_others_are_blocked(
    devtools: DevTools, origins: tuple[ThreadServer, ThreadServer, ThreadServer]
) -> None:
    api, allowed, other = origins
    _open(devtools, allowed.url + "/")
    found = _calls(devtools, api.url)
    assert "error" not in found, found
    assert found["post"]["status"] == 200
    assert found["post"]["type"].startswith("application/graphql-response+json")
    assert found["post"]["body"]["data"]["papersById"] == [{"title": TITLE}, None]
    assert found["get"]["status"] == 200 and found["get"]["etag"]  # the ETag is exposed to the page
    assert found["get"]["revalidated"] == 304
    _open(devtools, other.url + "/")
    blocked = _calls(devtools, api.url)
    assert blocked == {"error": "TypeError: Failed to fetch"}
