"""The embeddable widget script at `/widget.js` (strong ETag, gzip) and its demo page."""

from __future__ import annotations

import gzip
import hashlib
import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from aiohttp import web
from pydantic import Field

from agentsvc import keys
from agentsvc.api.models import QueryModel
from agentsvc.api.routing import Call, RouteTable
from agentsvc.errors import NotFound
from agentsvc.services.agents import registry as agent_service

routes = RouteTable("widget")

WIDGET_PATH = Path(__file__).resolve().parent.parent / "static" / "widget.js"
# Sites embed the script by a fixed address, so it cannot be fingerprinted: browsers keep
# it five minutes, then revalidate with If-None-Match (a cheap 304 until an upgrade).
CACHE_CONTROL = "public, max-age=300"
JS_TYPE = "text/javascript"


@dataclass(frozen=True, slots=True)
class Script:
    """The widget script in both encodings, each with its own strong ETag."""

    body: bytes
    gzipped: bytes
    etag: str
    gzip_etag: str


def load_script(path: Path = WIDGET_PATH) -> Script:
    """Read the widget once and precompress it (mtime 0: the same bytes on every start)."""
    body = path.read_bytes()
    digest = hashlib.sha256(body).hexdigest()[:32]
    gzipped = gzip.compress(body, compresslevel=9, mtime=0)
    return Script(body, gzipped, f'"{digest}"', f'"{digest}-gz"')


_script: Script | None = None


def _get_script() -> Script:
    global _script
    if _script is None:
        _script = load_script()
    return _script


def _etag_matches(header: str, etag: str) -> bool:
    if header.strip() == "*":
        return True
    return etag in (tag.strip().removeprefix("W/") for tag in header.split(","))


def _accepts_gzip(header: str) -> bool:
    for part in header.split(","):
        name, _, params = part.strip().partition(";")
        if name.strip().lower() in ("gzip", "*"):
            return params.replace(" ", "").lower() not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False


@routes.get(
    "/widget.js",
    auth="public",
    below_api=False,
    cors=True,
    media_type=JS_TYPE,
    response_headers=("ETag", "Cache-Control", "Vary"),
)
async def get_widget_script(call: Call):
    """The embeddable widget script (ETag and If-None-Match; gzip when accepted)."""
    script = _get_script()
    use_gzip = _accepts_gzip(call.request.headers.get("Accept-Encoding", ""))
    etag = script.gzip_etag if use_gzip else script.etag
    headers = {"ETag": etag, "Cache-Control": CACHE_CONTROL, "Vary": "Accept-Encoding"}
    if _etag_matches(call.request.headers.get("If-None-Match", ""), etag):
        return web.Response(status=304, headers=headers)
    if use_gzip:
        headers["Content-Encoding"] = "gzip"
    return web.Response(
        body=script.gzipped if use_gzip else script.body,
        content_type=JS_TYPE,
        charset="utf-8",
        headers=headers,
    )


class DemoQuery(QueryModel):
    agent_id: Annotated[str, Field(min_length=1, max_length=100)]


DEMO_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · widget demo</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 42rem; margin: 3rem auto;
  padding: 0 1rem; line-height: 1.5; color: #222; }}
code, pre {{ background: #f4f4f4; border-radius: 4px; }}
pre {{ padding: 0.8rem; overflow-x: auto; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p>This page embeds the chat widget of this agent, served by this instance. Open it with the
button at the bottom right. Any site embeds it with the snippet below.</p>
<pre><code>{snippet_text}</code></pre>
<p><button type="button" id="demo-open">Open the chat from the page</button></p>
{snippet}
<script>
document.getElementById("demo-open").addEventListener("click", function () {{
  window.agentsvc.open();
}});
</script>
</body>
</html>
"""


def embed_snippet(config: dict[str, Any], script_src: str) -> str:
    """The documented embed snippet: configuration, the queueing stub, the async script."""
    # json.dumps makes a JS object literal; escaping < keeps "</script>" out of it.
    config_js = json.dumps(config).replace("<", "\\u003c")
    return (
        "<script>\n"
        f"window.agentsvcConfig = {config_js};\n"
        "(function (a) {\n"
        '  ["open", "close", "toggle", "send", "identify", "reset", "track",\n'
        '   "registerFormHandler", "showBubble", "showForm", "on", "off"].forEach(function (m) {\n'
        "    if (a.q) a[m] = a[m] || function () { a.q.push([m, [].slice.call(arguments)]); };\n"
        "  });\n"
        "})((window.agentsvc = window.agentsvc || { q: [] }));\n"
        "</script>\n"
        f'<script src="{html.escape(script_src)}" async></script>'
    )


@routes.get(
    "/widget/demo",
    auth="public",
    below_api=False,
    query=DemoQuery,
    media_type="text/html",
    errors=(404,),
)
async def get_widget_demo(call: Call):
    """A demo page embedding the widget of an agent against this instance."""
    agent_id = call.query.agent_id
    agent = await agent_service.find_agent(
        call.app[keys.db_key], call.app[keys.agent_cache_key], agent_id
    )
    if agent is None:
        raise NotFound("Agent not found")
    request = call.request
    snippet = embed_snippet({"agentId": agent.id}, f"{request.scheme}://{request.host}/widget.js")
    page = DEMO_PAGE.format(
        title=html.escape(agent.name),
        snippet_text=html.escape(snippet),
        snippet=snippet,
    )
    return web.Response(
        text=page,
        content_type="text/html",
        headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"},
    )
