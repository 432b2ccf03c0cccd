"""Sources in answers (issue 34): the agent's `showSources`, served with the widget's
config and kept out of its versions; the chat stream names a URL document's address."""

from __future__ import annotations

from aiohttp import web

from agentsvc.api import app_keys
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import add_document, chat, get_conversation, new_agent, user
from tests.support.errors import assert_error

HOURS_PAGE = (
    "<html><head><title>Opening hours</title></head><body><h1>Opening hours</h1>"
    "<p>The shop opens at nine and closes at six, Monday to Saturday.</p></body></html>"
)
RETURNS = "You can return any item within 30 days for a full refund at the shop."


async def _agent_json(client, auth, agent_id: str) -> dict:
    resp = await client.get(f"/api/v1/agents/{agent_id}", headers=auth)
    assert resp.status == 200, await resp.text()
    return (await resp.json())["data"]


async def _config(client, agent_id: str) -> dict:
    return await (await client.get(f"/api/v1/widget/config/{agent_id}")).json()


async def _patch(client, auth, agent_id: str, body: dict):
    return await client.patch(f"/api/v1/agents/{agent_id}", json=body, headers=auth)


async def test_off_by_default_on_with_patch_served_to_the_widget_and_not_versioned(client, auth):
    agent = await new_agent(client, auth)
    got = await _agent_json(client, auth, agent["id"])
    assert got["showSources"] is False
    assert "showSources" not in got["widget"]
    assert (await _config(client, agent["id"]))["showSources"] is False
    version = got["version"]

    resp = await _patch(client, auth, agent["id"], {"showSources": True})
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["data"]["showSources"] is True
    got = await _agent_json(client, auth, agent["id"])
    assert got["showSources"] is True and "showSources" not in got["widget"]
    assert (await _config(client, agent["id"]))["showSources"] is True
    # A display setting: no new version, and no draft in draft mode either.
    assert got["version"] == version
    versions = await client.get(f"/api/v1/agents/{agent['id']}/versions", headers=auth)
    assert [v["number"] for v in (await versions.json())["data"]] == [version]
    await _patch(client, auth, agent["id"], {"versioning": "draft"})
    resp = await _patch(client, auth, agent["id"], {"showSources": False})
    assert (await resp.json())["data"]["draft"] is None
    assert (await _config(client, agent["id"]))["showSources"] is False

    # Given with the look, both are kept; the look alone leaves it as it was.
    body = {"showSources": True, "widget": {"starters": ["Hours?"]}}
    assert (await _patch(client, auth, agent["id"], body)).status == 200
    body = {"widget": {"appearance": {"accentColor": "#123456"}}}
    assert (await _patch(client, auth, agent["id"], body)).status == 200
    config = await _config(client, agent["id"])
    assert (config["showSources"], config["starters"]) == (True, ["Hours?"])


async def test_set_when_the_agent_is_created(client, auth):
    resp = await client.post(
        "/api/v1/agents", json={"name": "Shop", "showSources": True}, headers=auth
    )
    assert resp.status == 201, await resp.text()
    agent_id = (await resp.json())["data"]["id"]
    assert (await _agent_json(client, auth, agent_id))["showSources"] is True
    assert (await _config(client, agent_id))["showSources"] is True


async def test_a_bad_value_is_refused_with_the_field_named(client, auth):
    agent = await new_agent(client, auth)
    for bad in ("yes", 1, None, {"on": True}):
        resp = await _patch(client, auth, agent["id"], {"showSources": bad})
        await assert_error(resp, 400, "VALIDATION_ERROR", "showSources")
    resp = await _patch(client, auth, agent["id"], {"widget": {"showSources": True}})
    await assert_error(resp, 400, "VALIDATION_ERROR", "widget.showSources")
    resp = await client.post("/api/v1/agents", json={"name": "X", "showSources": "1"}, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "showSources")
    assert (await _agent_json(client, auth, agent["id"]))["showSources"] is False


async def test_another_team_cannot_change_it(client, auth):
    agent = await new_agent(client, auth)
    other = bearer(await new_api_key(client, "other@example.com"))
    resp = await _patch(client, other, agent["id"], {"showSources": True})
    await assert_error(resp, 404, "NOT_FOUND")
    assert (await _agent_json(client, auth, agent["id"]))["showSources"] is False
    assert (await _config(client, agent["id"]))["showSources"] is False


async def test_a_url_document_is_named_with_its_address_a_text_one_without(
    client, auth, aiohttp_server
):
    async def hours(request):
        return web.Response(text=HOURS_PAGE, content_type="text/html")

    site = web.Application()
    site.router.add_get("/hours", hours)
    base = str((await aiohttp_server(site)).make_url(""))
    agent = await new_agent(client, auth)
    resp = await client.post(
        f"/api/v1/agents/{agent['id']}/documents", json={"url": f"{base}/hours"}, headers=auth
    )
    assert resp.status == 201, await resp.text()
    page = (await resp.json())["data"]
    assert page["status"] == "ready", page
    text = await add_document(client, auth, agent["id"], "Returns", RETURNS)

    question = "When does the shop open, and can I return an item at the shop?"
    stream = await chat(client, {"agentId": agent["id"], "messages": user(question)})
    sources = stream.of("message_stop")[0]["sources"]
    by_id = {s["documentId"]: s for s in sources}
    assert by_id[page["id"]] == {
        "documentId": page["id"],
        "title": "Opening hours",
        "url": f"{base}/hours",
    }
    assert by_id[text["id"]] == {"documentId": text["id"], "title": "Returns"}
    # The stored answer (GET /conversations/:id) names them the same way.
    conv = await get_conversation(client, auth, stream.start["conversationId"])
    assert conv["messages"][-1]["sources"] == sources

    # An address that is not http(s), stored behind the API's back, is never named.
    db = client.app[app_keys.db_key]
    async with db.write() as tx:
        await tx.execute(
            "UPDATE documents SET source_url = ? WHERE id = ?", ("javascript:alert(1)", page["id"])
        )
    stream = await chat(client, {"agentId": agent["id"], "messages": user(question)})
    sources = stream.of("message_stop")[0]["sources"]
    named = [s for s in sources if s["documentId"] == page["id"]]
    assert named == [{"documentId": page["id"], "title": "Opening hours"}]
