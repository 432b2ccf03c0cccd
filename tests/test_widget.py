"""The widget script endpoint, the demo page, and signed identity on public chat."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import hmac
import re
from pathlib import Path

from agentsvc.api.widget import WIDGET_PATH, embed_snippet
from tests.support.accounts import bearer, new_api_key
from tests.support.errors import assert_error
from tests.support.settings import PUBLIC_ORIGIN

MAX_GZIP_BYTES = 30 * 1024


async def _agent(client, auth, name="Helper", prompt="We open at nine. Shipping is free."):
    resp = await client.post(
        "/api/v1/agents", json={"name": name, "systemPrompt": prompt}, headers=auth
    )
    assert resp.status == 201, await resp.text()
    return (await resp.json())["data"]["id"]


async def test_widget_script_is_served_with_strong_etag_and_304(client):
    resp = await client.get("/widget.js", headers={"Accept-Encoding": "identity"})
    assert resp.status == 200
    assert resp.content_type == "text/javascript"
    body = await resp.read()
    assert body == WIDGET_PATH.read_bytes()
    etag = resp.headers["ETag"]
    assert etag.startswith('"') and not etag.startswith("W/")
    assert "max-age=" in resp.headers["Cache-Control"]
    assert resp.headers["Vary"] == "Accept-Encoding"

    again = await client.get(
        "/widget.js", headers={"If-None-Match": etag, "Accept-Encoding": "identity"}
    )
    assert again.status == 304
    assert await again.read() == b""
    assert again.headers["ETag"] == etag

    stale = await client.get(
        "/widget.js", headers={"If-None-Match": '"other"', "Accept-Encoding": "identity"}
    )
    assert stale.status == 200


async def test_widget_script_is_gzipped_and_under_30_kb(client):
    resp = await client.get(
        "/widget.js", headers={"Accept-Encoding": "gzip, br"}, auto_decompress=False
    )
    assert resp.status == 200
    assert resp.headers["Content-Encoding"] == "gzip"
    raw = await resp.read()
    assert len(raw) <= MAX_GZIP_BYTES, len(raw)
    assert gzip.decompress(raw) == WIDGET_PATH.read_bytes()
    # A different representation has a different strong ETag, and revalidates on its own.
    plain = await client.get("/widget.js", headers={"Accept-Encoding": "identity"})
    assert plain.headers["ETag"] != resp.headers["ETag"]
    again = await client.get(
        "/widget.js",
        headers={"If-None-Match": resp.headers["ETag"], "Accept-Encoding": "gzip"},
    )
    assert again.status == 304
    refused = await client.get("/widget.js", headers={"Accept-Encoding": "gzip;q=0"})
    assert "Content-Encoding" not in refused.headers


async def test_widget_script_has_no_html_insertion():
    source = WIDGET_PATH.read_text("utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in source, sink


async def test_demo_page_embeds_the_snippet(client, auth):
    agent_id = await _agent(client, auth, name="Demo <b>Shop</b>")
    resp = await client.get(f"/widget/demo?agentId={agent_id}")
    assert resp.status == 200
    assert resp.content_type == "text/html"
    page = await resp.text()
    assert f'window.agentsvcConfig = {{"agentId": "{agent_id}"}};' in page
    assert f'<script src="{PUBLIC_ORIGIN}/widget.js" async></script>' in page
    assert "Demo &lt;b&gt;Shop&lt;/b&gt;" in page and "<b>Shop</b>" not in page


async def test_widget_demo_script_url_comes_from_public_url_never_the_host_header(make_client):
    client = await make_client(server={"public_url": "https://chat.example.test/agents/"})
    agent_id = await _agent(client, bearer(await new_api_key(client)))
    resp = await client.get(
        f"/widget/demo?agentId={agent_id}",
        headers={"Host": "evil.test", "X-Forwarded-Host": "evil.test"},
    )
    assert resp.status == 200
    page = await resp.text()
    assert '<script src="https://chat.example.test/agents/widget.js" async></script>' in page
    assert "evil.test" not in page


def _stub_methods(text: str) -> list[str]:
    found = re.search(r"\(function \(a\) \{(.*?)\.forEach", text, re.S)
    assert found, text[:200]
    return re.findall(r'"(\w+)"', found.group(1))


def test_talk_to_person_is_in_every_embed_stub():
    """Issue 29 item 10: the queueing stub of the docs (docs/owners/widget.md), the demo page
    and the dashboard's Widget page lists every method of the widget's API (talkToPerson was
    missing)."""
    source = WIDGET_PATH.read_text("utf-8")
    api = source[source.index("var publicApi = {") : source.index("// The shared matching rules")]
    methods = [m for m in re.findall(r"^    (\w+):", api, re.M) if m not in ("loaded", "version")]
    assert "talkToPerson" in methods
    root = Path(__file__).resolve().parent.parent
    stubs = {
        "docs/owners/widget.md": (root / "docs/owners/widget.md").read_text("utf-8"),
        "embed_snippet": embed_snippet({"agentId": "agt_x"}, "https://x.test/widget.js"),
        "page-widget.js": (root / "agentsvc/static/dashboard/page-widget.js").read_text("utf-8"),
    }
    for where, text in stubs.items():
        assert _stub_methods(text) == methods, where


async def test_demo_page_errors(client):
    await assert_error(await client.get("/widget/demo"), 400, "VALIDATION_ERROR", "agentId")
    await assert_error(await client.get("/widget/demo?agentId=agt_nope"), 404, "NOT_FOUND")


def _sign(secret: str, user_id: str) -> str:
    return hmac.new(secret.encode(), user_id.encode(), hashlib.sha256).hexdigest()


async def _chat_user(client, auth, agent_id, **extra):
    body = {"agentId": agent_id, "messages": [{"role": "user", "content": "hours?"}], **extra}
    resp = await client.post("/api/v1/chat", json=body)
    assert resp.status == 200, await resp.text()
    text = await resp.text()
    assert "event: message_stop" in text
    conv_id = text.split('"conversationId":"', 1)[1].split('"', 1)[0]
    got = await client.get(f"/api/v1/conversations/{conv_id}", headers=auth)
    return (await got.json())["data"]["user"]


async def test_identity_secret_signs_users(client, auth):
    agent_id = await _agent(client, auth)
    user = {"id": "u-42", "email": "ada@example.com", "name": "Ada"}
    # No secret: a declared user is taken as given.
    assert (await _chat_user(client, auth, agent_id, user=user))["id"] == "u-42"

    resp = await client.get(f"/api/v1/agents/{agent_id}/identity-secret", headers=auth)
    assert (await resp.json())["data"] == {"agentId": agent_id, "enabled": False, "secret": None}
    resp = await client.put(f"/api/v1/agents/{agent_id}/identity-secret", json={}, headers=auth)
    assert resp.status == 200
    generated = (await resp.json())["data"]["secret"]
    assert len(generated) >= 32
    secret = "s3cret-of-the-site-0123456789"
    resp = await client.put(
        f"/api/v1/agents/{agent_id}/identity-secret", json={"secret": secret}, headers=auth
    )
    assert (await resp.json())["data"] == {"agentId": agent_id, "enabled": True, "secret": secret}
    resp = await client.get(f"/api/v1/agents/{agent_id}/identity-secret", headers=auth)
    assert (await resp.json())["data"] == {"agentId": agent_id, "enabled": True, "secret": None}

    signed = await _chat_user(client, auth, agent_id, user=user, userHash=_sign(secret, "u-42"))
    # The hash signs the id only: the e-mail and name are shown as unverified.
    assert signed == {**user, "verified": False, "verifiedBy": "userHash"}
    assert await _chat_user(client, auth, agent_id, user=user) is None
    assert (
        await _chat_user(client, auth, agent_id, user=user, userHash=_sign(secret, "u-43")) is None
    )
    assert (
        await _chat_user(client, auth, agent_id, user=user, userHash=_sign(generated, "u-42"))
        is None
    )
    assert await _chat_user(client, auth, agent_id, user={"email": "x@example.com"}) is None

    resp = await client.delete(f"/api/v1/agents/{agent_id}/identity-secret", headers=auth)
    assert (await resp.json())["data"]["enabled"] is False
    assert (await _chat_user(client, auth, agent_id, user=user))["id"] == "u-42"


async def test_identity_secret_changes_show_in_the_agents_updated_at(client, auth):
    agent_id = await _agent(client, auth)

    async def updated_at() -> str:
        resp = await client.get(f"/api/v1/agents/{agent_id}", headers=auth)
        return (await resp.json())["data"]["updatedAt"]

    path = f"/api/v1/agents/{agent_id}/identity-secret"
    before = await updated_at()  # now cached in the process
    await asyncio.sleep(0.002)
    assert (await client.put(path, json={}, headers=auth)).status == 200
    after_set = await updated_at()
    assert after_set > before
    await asyncio.sleep(0.002)
    assert (await client.delete(path, headers=auth)).status == 200
    assert await updated_at() > after_set


async def test_identity_secret_errors(client, auth):
    agent_id = await _agent(client, auth)
    path = f"/api/v1/agents/{agent_id}/identity-secret"
    await assert_error(
        await client.put(path, json={"secret": "short"}, headers=auth),
        400,
        "VALIDATION_ERROR",
        "secret",
    )
    await assert_error(
        await client.put(path, json={"secret": None}, headers=auth),
        400,
        "VALIDATION_ERROR",
        "secret",
    )
    await assert_error(
        await client.put(path, json={"nope": 1}, headers=auth), 400, "VALIDATION_ERROR", "nope"
    )
    await assert_error(await client.put(path, json={}), 401, "UNAUTHORIZED")
    missing = "/api/v1/agents/agt_missing/identity-secret"
    await assert_error(await client.put(missing, json={}, headers=auth), 404, "NOT_FOUND")
    await assert_error(await client.get(missing, headers=auth), 404, "NOT_FOUND")
    await assert_error(await client.delete(missing, headers=auth), 404, "NOT_FOUND")
    resp = await client.get(path, headers=auth)
    assert (await resp.json())["data"]["enabled"] is False  # nothing half-written
