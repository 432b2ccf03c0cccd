"""The widget's look per agent: settings on the agent, the public config, the locale files."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import time

import pytest

from agentsvc.api import app_keys
from agentsvc.api.widget import WIDGET_PATH
from agentsvc.services.widget.locales import LOCALE_DIR, LOCALES, string_keys
from agentsvc.services.widget.look import DEFAULT_APPEARANCE
from agentsvc.store import agents as agents_store
from tests.support import pg
from tests.support.accounts import bearer, new_api_key
from tests.support.errors import assert_error
from tests.support.settings import make_settings

MAX_WIDGET_GZIP_BYTES = 25 * 1024
PNG_1PX = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


async def _agent(client, auth, prompt="Secret prompt: the discount code is HUSH.") -> str:
    resp = await client.post(
        "/api/v1/agents", json={"name": "Shop", "systemPrompt": prompt}, headers=auth
    )
    assert resp.status == 201, await resp.text()
    return (await resp.json())["data"]["id"]


async def _patch(client, auth, agent_id, widget):
    return await client.patch(f"/api/v1/agents/{agent_id}", json={"widget": widget}, headers=auth)


async def _config(client, agent_id, **headers):
    return await client.get(f"/api/v1/widget/config/{agent_id}", headers=headers)


async def test_defaults_are_returned_by_the_agent_and_the_public_config(client, auth):
    agent_id = await _agent(client, auth)
    agent = (await (await client.get(f"/api/v1/agents/{agent_id}", headers=auth)).json())["data"]
    assert agent["widget"] == {
        "appearance": DEFAULT_APPEARANCE,
        "language": "auto",
        "strings": {},
        "starters": [],
    }
    resp = await _config(client, agent_id, Origin="https://shop.example")
    assert resp.status == 200
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    assert resp.headers["Cache-Control"] == "public, max-age=60"
    assert await resp.json() == {"agentId": agent_id, **agent["widget"], "showSources": False}


async def test_settings_merge_and_reach_the_public_config(client, auth):
    agent_id = await _agent(client, auth)
    widget = {
        "appearance": {
            "accentColor": "#0B7A4B",
            "textColor": "#102030",
            "backgroundColor": "#fffdf7",
            "radius": 4,
            "fontFamily": "Georgia, Times New Roman, serif",
            "position": "left",
            "offsetX": 32,
            "offsetY": 0,
            "launcherIcon": "https://cdn.example.com/icon.png?v=2",
            "title": "Ask the shop",
            "avatar": PNG_1PX,
            "welcomeMessage": "Hi! Ask me anything about your order.",
            "darkMode": "auto",
            "poweredBy": False,
        },
        "language": "de",
        "strings": {"de": {"send": "Los", "welcome": "Hallo!"}, "en": {"talkToPerson": "Sales"}},
        "starters": ["Where is my order?", "Do you ship abroad?"],
    }
    resp = await _patch(client, auth, agent_id, widget)
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["data"]["widget"] == widget
    public = await (await _config(client, agent_id)).json()
    assert public == {"agentId": agent_id, **widget, "showSources": False}

    # A second change touches only what it names; null puts a field back to its default.
    resp = await _patch(
        client,
        auth,
        agent_id,
        {"appearance": {"radius": 20, "avatar": None, "poweredBy": None}, "strings": {"de": {}}},
    )
    assert resp.status == 200, await resp.text()
    got = (await resp.json())["data"]["widget"]
    assert got["appearance"] == {
        **widget["appearance"],
        "radius": 20,
        "avatar": None,
        "poweredBy": True,
    }
    assert got["strings"] == {"en": {"talkToPerson": "Sales"}}
    assert got["starters"] == widget["starters"] and got["language"] == "de"
    resp = await _patch(client, auth, agent_id, {"starters": [], "language": "auto"})
    got = (await resp.json())["data"]["widget"]
    assert got["starters"] == [] and got["language"] == "auto"


async def test_public_config_leaks_nothing_private(client, auth):
    agent_id = await _agent(client, auth)
    await client.post(
        "/api/v1/tools",
        json={
            "agentId": agent_id,
            "name": "secret_lookup",
            "description": "Looks up HUSH codes",
            "executionType": "mock",
            "inputSchema": {"type": "object", "properties": {}},
            "mockResponse": "{}",
        },
        headers=auth,
    )
    await client.put(f"/api/v1/agents/{agent_id}/identity-secret", json={}, headers=auth)
    await client.patch(
        f"/api/v1/agents/{agent_id}",
        json={"handoff": {"enabled": True, "notify": {"teamChat": "https://hooks.example/x"}}},
        headers=auth,
    )
    text = await (await _config(client, agent_id)).text()
    body = json.loads(text)
    assert set(body) == {"agentId", "appearance", "language", "strings", "starters", "showSources"}
    for private in ("HUSH", "secret_lookup", "Shop", "systemPrompt", "hooks.example", "whsec_"):
        assert private not in text, private


async def test_etag_and_304(client, auth):
    agent_id = await _agent(client, auth)
    first = await _config(client, agent_id)
    etag = first.headers["ETag"]
    assert re.fullmatch(r'"[0-9a-f]{32}"', etag), etag
    again = await _config(client, agent_id, **{"If-None-Match": etag})
    assert again.status == 304
    assert await again.read() == b""
    assert again.headers["ETag"] == etag
    assert (await _config(client, agent_id, **{"If-None-Match": '"x", ' + etag})).status == 304
    # A change is a new version: the old tag no longer matches.
    await _patch(client, auth, agent_id, {"appearance": {"accentColor": "#aa0000"}})
    changed = await _config(client, agent_id, **{"If-None-Match": etag})
    assert changed.status == 200
    assert changed.headers["ETag"] != etag
    assert (await changed.json())["appearance"]["accentColor"] == "#aa0000"
    # Another change of the agent (its name) keeps the same config, so the same tag.
    await client.patch(f"/api/v1/agents/{agent_id}", json={"name": "Renamed"}, headers=auth)
    same = await _config(client, agent_id, **{"If-None-Match": changed.headers["ETag"]})
    assert same.status == 304


async def test_the_config_is_rendered_once_per_agent_version(client, auth):
    agent_id = await _agent(client, auth)
    configs = client.app[app_keys.widget_config_cache_key]
    agents = client.app[app_keys.agent_cache_key]
    await _config(client, agent_id)
    rendered = configs.get(agents.get(agent_id))
    assert rendered is not None
    await _config(client, agent_id)
    assert configs.get(agents.get(agent_id)) is rendered  # served from the cache
    await _patch(client, auth, agent_id, {"starters": ["Hello?"]})
    assert agents.get(agent_id) is None  # the change was announced: both caches forgot it
    assert (await (await _config(client, agent_id)).json())["starters"] == ["Hello?"]
    assert configs.get(agents.get(agent_id)) is not rendered


async def test_unknown_or_deleted_agents_are_404(client, auth):
    await assert_error(await _config(client, "agt_nope"), 404, "NOT_FOUND")
    agent_id = await _agent(client, auth)
    assert (await _config(client, agent_id)).status == 200
    await client.delete(f"/api/v1/agents/{agent_id}", headers=auth)
    await assert_error(await _config(client, agent_id), 404, "NOT_FOUND")


# Values that would end the CSS declaration, open a url(), escape, or close the style.
CSS_INJECTIONS = [
    "Arial; } :host { display: none",
    "Arial;background:url(https://evil.example/x)",
    'Arial", x',
    "Arial' x",
    "a\\66 oo",
    "</style><script>alert(1)</script>",
    "Arial /* comment */",
    "x:y",
    "@import",
    "Arial{}",
    "Arial!important",
    "Arial\nx",
    "   ",
    "",
    "x" * 201,
]


@pytest.mark.parametrize("font", CSS_INJECTIONS)
async def test_font_family_cannot_inject_css(client, auth, font):
    agent_id = await _agent(client, auth)
    resp = await _patch(client, auth, agent_id, {"appearance": {"fontFamily": font}})
    await assert_error(resp, 400, "VALIDATION_ERROR", "widget.appearance.fontFamily")
    public = await (await _config(client, agent_id)).json()
    assert public["appearance"]["fontFamily"] is None


BAD_WIDGETS = [
    ({"appearance": {"accentColor": "red"}}, "widget.appearance.accentColor"),
    ({"appearance": {"accentColor": "#fff"}}, "widget.appearance.accentColor"),
    ({"appearance": {"textColor": "#12345g"}}, "widget.appearance.textColor"),
    ({"appearance": {"backgroundColor": "#ffffff;x:y"}}, "widget.appearance.backgroundColor"),
    ({"appearance": {"accentColor": "var(--x)"}}, "widget.appearance.accentColor"),
    ({"appearance": {"radius": 25}}, "widget.appearance.radius"),
    ({"appearance": {"radius": "4px"}}, "widget.appearance.radius"),
    ({"appearance": {"offsetX": -1}}, "widget.appearance.offsetX"),
    ({"appearance": {"offsetY": 201}}, "widget.appearance.offsetY"),
    ({"appearance": {"position": "top"}}, "widget.appearance.position"),
    ({"appearance": {"darkMode": "sometimes"}}, "widget.appearance.darkMode"),
    ({"appearance": {"poweredBy": "no"}}, "widget.appearance.poweredBy"),
    ({"appearance": {"avatar": "http://example.com/a.png"}}, "widget.appearance.avatar"),
    ({"appearance": {"avatar": "javascript:alert(1)"}}, "widget.appearance.avatar"),
    ({"appearance": {"avatar": "data:text/html;base64,PHNjcmlwdD4="}}, "widget.appearance.avatar"),
    ({"appearance": {"launcherIcon": "https://x.example/a.png)"}}, "appearance.launcherIcon"),
    ({"appearance": {"launcherIcon": "https://x.example/a b"}}, "appearance.launcherIcon"),
    (
        {"appearance": {"avatar": "data:image/png;base64," + "A" * 32_768}},
        "widget.appearance.avatar",
    ),
    ({"appearance": {"title": "x" * 81}}, "widget.appearance.title"),
    ({"appearance": {"title": ""}}, "widget.appearance.title"),
    ({"appearance": {"welcomeMessage": "x" * 1001}}, "widget.appearance.welcomeMessage"),
    ({"appearance": {"colour": "#000000"}}, "widget.appearance.colour"),
    ({"language": "ru"}, "widget.language"),
    ({"strings": {"ru": {"send": "x"}}}, "widget.strings.ru"),
    ({"strings": {"de": {"sendButton": "x"}}}, "widget.strings.de.sendButton"),
    ({"strings": {"de": {"send": "x" * 501}}}, "widget.strings.de.send"),
    ({"strings": {"de": {"send": ""}}}, "widget.strings.de.send"),
    ({"strings": {"de": {"send": None}}}, "widget.strings.de.send"),
    ({"starters": ["a", "b", "c", "d", "e"]}, "widget.starters"),
    ({"starters": ["   "]}, "widget.starters.0"),
    ({"starters": ["x" * 201]}, "widget.starters.0"),
    ({"starters": None}, "widget.starters"),
    ({"appearance": None}, "widget.appearance"),
]


@pytest.mark.parametrize(("widget", "field"), BAD_WIDGETS)
async def test_bad_settings_are_refused_and_change_nothing(client, auth, widget, field):
    agent_id = await _agent(client, auth)
    good = {"appearance": {"accentColor": "#123456"}, "starters": ["Hi?"]}
    assert (await _patch(client, auth, agent_id, good)).status == 200
    before = await (await _config(client, agent_id)).read()
    await assert_error(await _patch(client, auth, agent_id, widget), 400, "VALIDATION_ERROR", field)
    assert await (await _config(client, agent_id)).read() == before


async def test_images_within_the_caps_are_accepted(client, auth):
    agent_id = await _agent(client, auth)
    big = "data:image/webp;base64," + "A" * (32_768 - len("data:image/webp;base64,"))
    svg = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4="
    look = {"avatar": big, "launcherIcon": svg}
    resp = await _patch(client, auth, agent_id, {"appearance": look})
    assert resp.status == 200, await resp.text()


async def test_values_stored_behind_the_apis_back_never_reach_the_config(client, auth):
    """A database edited by hand (or an older version's data): what does not match the
    request models' patterns is dropped before it could reach the widget's CSS."""
    agent_id = await _agent(client, auth)
    team_id = (
        await client.app[app_keys.db_key].reader.fetchone(
            "SELECT team_id FROM agents WHERE id = ?", (agent_id,)
        )
    )[0]
    hostile = {
        "appearance": {
            "accentColor": "red;}*{display:none",
            "fontFamily": "x;}:host{display:none",
            "radius": "4px;x",
            "offsetX": 10**9,
            "avatar": "javascript:alert(1)",
            "position": "top",
            "title": "Kept",
            "darkMode": True,
            "extra": "dropped",
        },
        "language": "xx",
        "strings": {"de": {"send": "Los", "nope": "x"}, "ru": {"send": "x"}, "fr": "x"},
        "starters": ["ok", "", 7, "two", "three", "four", "five"],
    }
    async with client.app[app_keys.db_key].write() as tx:
        await agents_store.update(tx, team_id, agent_id, {"widget": hostile}, "2026-01-01")
    client.app[app_keys.agent_cache_key].clear()
    public = await (await _config(client, agent_id)).json()
    assert public["appearance"] == {**DEFAULT_APPEARANCE, "title": "Kept"}
    assert public["language"] == "auto"
    assert public["strings"] == {"de": {"send": "Los"}}
    assert public["starters"] == ["ok", "two", "three", "four"]


# ── locale files ────────────────────────────────────────────────────────────────────


def test_every_locale_has_exactly_the_english_keys_and_placeholders():
    english = json.loads((LOCALE_DIR / "en.json").read_text("utf-8"))
    files = sorted(p.stem for p in LOCALE_DIR.glob("*.json"))
    assert files == sorted(LOCALES)
    assert len(LOCALES) >= 13
    for code in LOCALES:
        table = json.loads((LOCALE_DIR / f"{code}.json").read_text("utf-8"))
        assert list(table) == list(english), code
        for key, text in table.items():
            assert isinstance(text, str) and text.strip(), (code, key)
            placeholders = set(re.findall(r"\{\w+\}", text))
            assert placeholders == set(re.findall(r"\{\w+\}", english[key])), (code, key)


def test_the_widget_has_the_english_table_built_in():
    source = WIDGET_PATH.read_text("utf-8")
    match = re.search(r"var EN = (\{.*?\});\n", source, re.S)
    assert match, "widget.js has no `var EN = {...};` table"
    built_in = json.loads(match.group(1))
    assert built_in == json.loads((LOCALE_DIR / "en.json").read_text("utf-8"))
    codes = re.search(r'var LOCALES = "([a-z ]+)"\.split', source)
    assert codes and codes.group(1).split() == list(LOCALES)
    assert string_keys() == tuple(built_in)


async def test_locale_files_are_served_cacheable(client):
    for code in LOCALES:
        resp = await client.get(
            f"/widget/locales/{code}.json",
            headers={"Accept-Encoding": "identity", "Origin": "https://shop.example"},
        )
        assert resp.status == 200, code
        assert resp.content_type == "application/json"
        assert resp.headers["Access-Control-Allow-Origin"] == "*"
        assert (await resp.read()) == (LOCALE_DIR / f"{code}.json").read_bytes()
    resp = await client.get("/widget/locales/ar.json", headers={"Accept-Encoding": "identity"})
    etag = resp.headers["ETag"]
    assert "max-age=" in resp.headers["Cache-Control"]
    again = await client.get(
        "/widget/locales/ar.json", headers={"If-None-Match": etag, "Accept-Encoding": "identity"}
    )
    assert again.status == 304
    zipped = await client.get(
        "/widget/locales/ar.json", headers={"Accept-Encoding": "gzip"}, auto_decompress=False
    )
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert zipped.headers["ETag"] != etag
    assert gzip.decompress(await zipped.read()) == (LOCALE_DIR / "ar.json").read_bytes()
    for bad in ("ru", "EN", "en-US", "..%2Fen", "e"):
        await assert_error(await client.get(f"/widget/locales/{bad}.json"), 404, "NOT_FOUND")


def test_widget_script_stays_under_25_kb_gzipped():
    """Issue 22's budget: every feature (appearance, languages, starters, inline mode)."""
    size = len(gzip.compress(WIDGET_PATH.read_bytes(), compresslevel=9, mtime=0))
    assert size < MAX_WIDGET_GZIP_BYTES, f"widget.js is {size} bytes gzipped"


# ── several processes ───────────────────────────────────────────────────────────────


@pg.postgres_only
async def test_a_change_reaches_the_other_process_config_within_a_second(aiohttp_client, tmp_path):
    from agentsvc.app import create_app

    settings = make_settings(tmp_path)
    first = await aiohttp_client(create_app(settings))
    second = await aiohttp_client(create_app(settings))
    auth = bearer(await new_api_key(first))
    agent_id = await _agent(first, auth)
    etag = (await _config(second, agent_id)).headers["ETag"]  # rendered and cached there
    assert (await _config(second, agent_id, **{"If-None-Match": etag})).status == 304
    await _patch(first, auth, agent_id, {"appearance": {"accentColor": "#000000"}})
    deadline = time.monotonic() + 1.0
    while True:
        resp = await _config(second, agent_id, **{"If-None-Match": etag})
        if resp.status == 200:
            assert (await resp.json())["appearance"]["accentColor"] == "#000000"
            break
        assert time.monotonic() < deadline, "the other process still serves the old config"
        await asyncio.sleep(0.01)
