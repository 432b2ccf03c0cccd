"""Who the visitor is (the desk's side panel): what the widget tells with a chat request
(the page, where they came from, their language, the attributes given to `identify`),
validated; and the visitor's other conversations and form submissions, linked by a
verified user id only, else by the same widget session."""

from __future__ import annotations

from agentsvc.services.agents.identity import user_hash
from tests.support.accounts import bearer, create_user, key_for
from tests.support.chat import Stream, chat, new_agent, user
from tests.support.errors import assert_error

CONTEXT = {
    "pageUrl": "https://shop.example/cart?step=2",
    "referrer": "https://www.search.example/?q=jackets",
    "language": "de-DE",
}
ATTRIBUTES = {"plan": "gold", "orders": 3, "vip": True, "balance": 12.5}
FORM = {
    "name": "contact",
    "description": "Collect contact details",
    "executionType": "form",
    "formSchema": {"fields": [{"name": "email", "label": "E-mail", "type": "email"}]},
    "formExecutionMode": "client",
    "formClientHandler": "saveLead",
}


async def owner(client, email="owner@example.com"):
    user_, team = await create_user(client, email, name="Olivia")
    return bearer(await key_for(client, team.id, user_.id))


async def visit(client, agent_id: str, session: str, status: int = 200, **extra):
    body = {"agentId": agent_id, "messages": user("Hello"), "sessionId": session, **extra}
    resp = await client.post("/api/v1/chat", json=body)
    if status != 200:
        return resp
    assert resp.status == 200, await resp.text()
    return Stream(await resp.read()).start["conversationId"]


async def panel(client, auth, conv_id: str) -> dict:
    resp = await client.get(f"/api/v1/conversations/{conv_id}/visitor", headers=auth)
    assert resp.status == 200, await resp.text()
    return (await resp.json())["data"]


async def test_the_widgets_context_and_attributes_are_shown_as_declared(client):
    auth = await owner(client)
    agent = await new_agent(client, auth)
    who = {"id": "cust-1", "name": "Vera", "email": "vera@example.com", "attributes": ATTRIBUTES}
    conv = await visit(client, agent["id"], "s-1", context=CONTEXT, user=who)
    shown = await panel(client, auth, conv)
    assert shown == {
        "name": "Vera",
        "email": "vera@example.com",
        "userId": "cust-1",
        "verified": False,
        "verifiedBy": None,
        "pageUrl": CONTEXT["pageUrl"],
        "referrer": CONTEXT["referrer"],
        "language": "de-DE",
        "attributes": ATTRIBUTES,
        "previousConversations": [],
        "submissions": [],
    }
    # The page is the first request's; the attributes the latest ones.
    later = {"pageUrl": "https://shop.example/thanks", "referrer": None, "language": "fr"}
    newer = {**who, "attributes": {"plan": "platinum"}}
    await visit(client, agent["id"], "s-1", context=later, user=newer, conversationId=conv)
    shown = await panel(client, auth, conv)
    assert shown["pageUrl"] == CONTEXT["pageUrl"] and shown["language"] == "de-DE"
    assert shown["attributes"] == {"plan": "platinum"}
    # What is kept about the visitor is in their export too.
    resp = await client.get("/api/v1/end-users/cust-1/export", headers=auth)
    assert resp.status == 200, await resp.text()
    (exported,) = (await resp.json())["data"]["conversations"]
    assert exported["context"] == CONTEXT and exported["attributes"] == {"plan": "platinum"}
    # Without either, nothing was told.
    bare = await visit(client, agent["id"], "s-2")
    shown = await panel(client, auth, bare)
    assert (shown["pageUrl"], shown["referrer"], shown["language"]) == (None, None, None)
    assert shown["attributes"] == {} and shown["userId"] is None


async def test_addresses_other_than_http_are_dropped(client):
    auth = await owner(client)
    agent = await new_agent(client, auth)
    for page, referrer in [
        ("javascript:alert(document.cookie)", "JavaScript:alert(1)"),
        ("data:text/html,<script>alert(1)</script>", "ftp://files.example/x"),
        ("https://", "//shop.example/no-scheme"),
        ("   ", "vbscript:msgbox(1)"),
    ]:
        context = {"pageUrl": page, "referrer": referrer, "language": "en"}
        conv = await visit(client, agent["id"], "s-js", context=context)
        shown = await panel(client, auth, conv)
        assert shown["pageUrl"] is None and shown["referrer"] is None, (page, referrer)
        assert shown["language"] == "en"


async def test_too_much_or_nested_attributes_are_refused_with_a_clear_message(client):
    auth = await owner(client)
    agent = await new_agent(client, auth)
    cases = [
        ({f"k{n}": n for n in range(31)}, "at most 30 attributes"),
        ({"k" * 41: 1}, "1 to 40 characters"),
        ({"": 1}, "1 to 40 characters"),
        ({"note": "x" * 501}, "at most 500 characters"),
        ({"address": {"city": "Paris"}}, "not a list or an object"),
        ({"tags": ["a", "b"]}, "not a list or an object"),
    ]
    for attributes, message in cases:
        resp = await visit(
            client, agent["id"], "s-x", status=400, user={"id": "u", "attributes": attributes}
        )
        await assert_error(resp, 400, "VALIDATION_ERROR", message)
    ok = {f"k{n}": "v" * 500 for n in range(30)}
    conv = await visit(client, agent["id"], "s-x", user={"id": "u", "attributes": ok})
    assert (await panel(client, auth, conv))["attributes"] == ok
    for context, field in [
        ({"pageUrl": "https://x.example/" + "a" * 2_000}, "pageUrl"),
        ({"language": "x" * 2_001}, "language"),
        ({"pageUrl": "https://x.example/", "title": "extra"}, "title"),
        ({"pageUrl": 42}, "pageUrl"),
    ]:
        resp = await visit(client, agent["id"], "s-x", status=400, context=context)
        await assert_error(resp, 400, "VALIDATION_ERROR", field)


async def form_in(client, auth, agent_id: str, conv_id: str | None, session: str) -> str:
    resp = await client.post("/api/v1/tools", json={**FORM, "agentId": agent_id}, headers=auth)
    tool = await resp.json()
    body = {
        "toolId": tool["id"],
        "formData": {"email": "v@example.com"},
        "fieldsCompleted": ["email"],
        "sessionId": session,
        **({"conversationId": conv_id} if conv_id else {}),
    }
    resp = await client.post("/api/v1/form-submissions/submit", json=body)
    assert resp.status == 200, await resp.text()
    return (await resp.json())["submissionId"]


async def test_history_links_only_through_a_verified_user_id(client):
    auth = await owner(client)
    signed = await new_agent(client, auth, name="Signed")
    resp = await client.put(f"/api/v1/agents/{signed['id']}/identity-secret", json={}, headers=auth)
    secret = (await resp.json())["data"]["secret"]
    open_agent = await new_agent(client, auth, name="Open")
    ana = {"id": "ana-1", "name": "Ana", "email": "ana@example.com"}
    # Ana, verified by her userHash, twice from two browsers; a form in the first.
    first = await visit(
        client, signed["id"], "ana-laptop", user=ana, userHash=user_hash(secret, "ana-1")
    )
    submission = await form_in(client, auth, signed["id"], first, "ana-laptop")
    second = await visit(
        client, signed["id"], "ana-phone", user=ana, userHash=user_hash(secret, "ana-1")
    )
    shown = await panel(client, auth, second)
    assert shown["verifiedBy"] == "userHash" and shown["userId"] == "ana-1"
    assert [c["id"] for c in shown["previousConversations"]] == [first]
    assert shown["previousConversations"][0]["title"] == "Hello"
    assert [s["id"] for s in shown["submissions"]] == [submission]
    assert shown["submissions"][0]["formName"] == "contact"

    # Mallory claims Ana's id where no secret checks it: declared, unverified.
    mallory = await visit(client, open_agent["id"], "mallory", user=ana)
    shown = await panel(client, auth, mallory)
    assert shown["userId"] == "ana-1" and shown["verifiedBy"] is None
    assert shown["previousConversations"] == [] and shown["submissions"] == []
    # ...and her conversation is not linked into Ana's either.
    shown = await panel(client, auth, second)
    assert [c["id"] for c in shown["previousConversations"]] == [first]
    # Where a secret is set, an unsigned claim is not even recorded.
    unsigned = await visit(client, signed["id"], "mallory-2", user=ana)
    shown = await panel(client, auth, unsigned)
    assert shown["userId"] is None and shown["previousConversations"] == []


async def test_without_a_verified_id_the_same_widget_session_links(client):
    auth = await owner(client)
    agent = await new_agent(client, auth)
    first = await visit(client, agent["id"], "browser-1")
    submission = await form_in(client, auth, agent["id"], None, "browser-1")
    second = await visit(client, agent["id"], "browser-1")
    elsewhere = await visit(client, agent["id"], "browser-2")
    shown = await panel(client, auth, second)
    assert [c["id"] for c in shown["previousConversations"]] == [first]
    assert [s["id"] for s in shown["submissions"]] == [submission]
    shown = await panel(client, auth, elsewhere)
    assert shown["previousConversations"] == [] and shown["submissions"] == []


async def test_another_teams_visitor_is_not_found(client):
    auth = await owner(client)
    agent = await new_agent(client, auth)
    conv = await visit(client, agent["id"], "s-1", context=CONTEXT)
    stranger = await owner(client, "other@example.com")
    resp = await client.get(f"/api/v1/conversations/{conv}/visitor", headers=stranger)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get(
        f"/api/v1/conversations/{conv}/visitor", headers={"X-Session-Id": "s-1"}
    )
    await assert_error(resp, 401, "UNAUTHORIZED")


async def test_a_member_key_call_can_send_context_too(client):
    auth = await owner(client)
    agent = await new_agent(client, auth)
    body = {"agentId": agent["id"], "messages": user("Hi"), "context": CONTEXT}
    conv = (await chat(client, body, auth)).start["conversationId"]
    assert (await panel(client, auth, conv))["pageUrl"] == CONTEXT["pageUrl"]
