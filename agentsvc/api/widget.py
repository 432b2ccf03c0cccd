"""The embeddable widget: its script at `/widget.js` (strong ETag, gzip), its locale tables,
an agent's public widget config, and the demo page."""

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

from agentsvc.api import app_keys
from agentsvc.api.models import QueryModel
from agentsvc.api.routing import Call, RouteTable
from agentsvc.api.widget_look import WidgetConfig
from agentsvc.services.widget.locales import LOCALES, locale_bytes
from agentsvc.services.widget.service import WidgetService

routes = RouteTable("widget")


def _widget(call: Call) -> WidgetService:
    return call.app[app_keys.widget_key]


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


def _cached(call: Call, body: bytes, etag: str, cache_control: str, gzipped: bytes | None = None):
    """A cacheable JSON answer: 304 for a matching If-None-Match, gzip when it pays."""
    headers = call.request.headers
    use_gzip = gzipped is not None and _accepts_gzip(headers.get("Accept-Encoding", ""))
    if use_gzip:
        etag = etag[:-1] + '-gz"'
    answer = {"ETag": etag, "Cache-Control": cache_control, "Vary": "Accept-Encoding"}
    if _etag_matches(headers.get("If-None-Match", ""), etag):
        return web.Response(status=304, headers=answer)
    if use_gzip:
        answer["Content-Encoding"] = "gzip"
    return web.Response(
        body=gzipped if use_gzip else body,
        content_type="application/json",
        headers=answer,
    )


# A change in the dashboard reaches visitors within a minute; until then (and after, while
# nothing changed) a browser revalidates with If-None-Match and gets a bodiless 304.
CONFIG_CACHE_CONTROL = "public, max-age=60"


@routes.get(
    "/widget/config/{agentId}",
    auth="public",
    cors=True,
    response=WidgetConfig,
    response_headers=("ETag", "Cache-Control", "Vary"),
    errors=(404,),
)
async def get_widget_config(call: Call):
    """An agent's widget look, language, texts and starters (public; ETag, 304)."""
    rendered = await _widget(call).config(call.params["agentId"])
    return _cached(call, rendered.body, f'"{rendered.digest}"', CONFIG_CACHE_CONTROL)


@dataclass(frozen=True, slots=True)
class LocaleFile:
    body: bytes
    gzipped: bytes
    etag: str


_locales: dict[str, LocaleFile] = {}


def _locale(code: str) -> LocaleFile:
    found = _locales.get(code)
    if found is None:
        body = locale_bytes(code)
        digest = hashlib.sha256(body).hexdigest()[:32]
        found = LocaleFile(body, gzip.compress(body, compresslevel=9, mtime=0), f'"{digest}"')
        _locales[code] = found
    return found


@routes.get(
    "/widget/locales/{lang:" + "|".join(LOCALES) + "}.json",
    auth="public",
    below_api=False,
    cors=True,
    response=dict[str, str],
    response_headers=("ETag", "Cache-Control", "Vary"),
)
async def get_widget_locale(call: Call):
    """The widget's texts in one language (loaded by the widget when the page needs it)."""
    found = _locale(call.params["lang"])
    return _cached(call, found.body, found.etag, CACHE_CONTROL, found.gzipped)


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
        '   "registerFormHandler", "showBubble", "showForm", "talkToPerson", "mount",\n'
        '   "configure", "on", "off"].forEach(function (m) {\n'
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
    widget = _widget(call)
    agent = await widget.agent(call.query.agent_id)
    # The configured address (public_url), never the Host header.
    snippet = embed_snippet({"agentId": agent.id}, f"{widget.public_url}/widget.js")
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
