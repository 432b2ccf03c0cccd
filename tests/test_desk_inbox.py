"""The support desk's inbox list: views, order, search, waiting time, unread counts and
marking read, pages, and isolation between teams."""

from __future__ import annotations

import asyncio

from tests.support.accounts import add_member, bearer, create_user, key_for
from tests.support.chat import chat, user
from tests.support.errors import assert_error
from tests.support.live import handoff_agent


async def owner_of_team(client, email="owner@example.com", name="Olivia"):
    user_, team = await create_user(client, email, name=name)
    return user_, team, bearer(await key_for(client, team.id, user_.id))


async def visitor_says(client, agent_id: str, text: str, session: str, conv_id=None, who=None):
    body = {"agentId": agent_id, "messages": user(text), "sessionId": session}
    if conv_id:
        body["conversationId"] = conv_id
    if who:
        body["user"] = who
    return (await chat(client, body)).start["conversationId"]


async def post(client, path: str, auth: dict, json=None):
    resp = await client.post(f"/api/v1{path}", json=json, headers=auth)
    assert resp.status in (200, 201), await resp.text()
    return (await resp.json())["data"]


async def inbox(client, auth: dict, **params) -> dict:
    resp = await client.get("/api/v1/inbox", params=params, headers=auth)
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    assert set(body) == {"data", "error", "nextCursor"}
    return body


async def ids(client, auth, **params) -> list[str]:
    return [item["id"] for item in (await inbox(client, auth, **params))["data"]]


async def desk(client):
    """A team with an owner and a member, and conversations in every state:
    a and b waiting (a first), c with the owner, d with the member, e with the agent,
    f closed (it was the owner's)."""
    owner, team, auth = await owner_of_team(client)
    member = await add_member(client, team.id, "mia@example.com")
    member_auth = bearer(await key_for(client, team.id, member.id))
    agent = await handoff_agent(client, auth)
    convs = {}
    for name in "abcdef":
        who = {"name": f"Visitor {name.upper()}", "email": f"{name}@shop.example"}
        convs[name] = await visitor_says(
            client, agent["id"], f"Question {name}", f"session-{name}", who=who
        )
    for name in "ab":
        await post(client, f"/conversations/{convs[name]}/handoff", auth, {})
        await asyncio.sleep(0.01)  # distinct handoff times
    await post(client, f"/conversations/{convs['c']}/assign", auth, {})
    await post(client, f"/conversations/{convs['d']}/assign", auth, {"memberId": member.id})
    await asyncio.sleep(0.01)
    await post(client, f"/conversations/{convs['f']}/assign", auth, {})
    await post(client, f"/conversations/{convs['f']}/close", auth)
    return owner, auth, member_auth, agent, convs


async def test_views_and_their_order(client):
    owner, auth, member_auth, agent, c = await desk(client)
    # Waiting ones first, the longest wait first; then the rest, latest activity first.
    assert await ids(client, auth) == [c["a"], c["b"], c["d"], c["c"]]
    assert await ids(client, auth, view="all") == [c["a"], c["b"], c["d"], c["c"]]
    assert await ids(client, auth, view="waiting") == [c["a"], c["b"]]
    assert await ids(client, auth, view="unassigned") == [c["a"], c["b"]]
    assert await ids(client, auth, view="mine") == [c["c"]]
    assert await ids(client, member_auth, view="mine") == [c["d"]]
    # Activity moves a conversation up: the visitor of c writes again.
    await visitor_says(client, agent["id"], "Still there?", "session-c", c["c"])
    assert await ids(client, auth, view="all") == [c["a"], c["b"], c["c"], c["d"]]


async def test_an_item_tells_the_wait_the_last_message_and_the_visitor(client):
    owner, auth, _, agent, c = await desk(client)
    items = {i["id"]: i for i in (await inbox(client, auth))["data"]}
    waiting, taken = items[c["a"]], items[c["c"]]
    assert waiting["status"] == "waiting" and waiting["waitingSince"]
    assert waiting["assignee"] is None
    assert waiting["agentId"] == agent["id"] and waiting["agentName"] == agent["name"]
    assert waiting["visitor"] == {
        "name": "Visitor A",
        "email": "a@shop.example",
        "verified": False,
    }
    assert waiting["title"] == "Question a"
    assert taken["waitingSince"] is None
    assert taken["assignee"] == {"id": owner.id, "name": "Olivia", "avatarUrl": None}
    assert taken["lastMessage"]["authorType"] == "ai"
    long_text = "Where is my parcel? " * 20
    await visitor_says(client, agent["id"], long_text, "session-c", c["c"])
    item = next(i for i in (await inbox(client, auth))["data"] if i["id"] == c["c"])
    assert item["lastMessage"]["authorType"] == "visitor"
    assert item["lastMessage"]["preview"] == long_text[:140]
    await post(client, f"/conversations/{c['c']}/messages", auth, {"content": "On its way"})
    item = next(i for i in (await inbox(client, auth))["data"] if i["id"] == c["c"])
    assert item["lastMessage"]["authorType"] == "human"
    assert item["lastMessage"]["preview"] == "On its way"


async def test_unread_counts_the_visitors_messages_since_the_caller_read(client):
    _, auth, member_auth, agent, c = await desk(client)

    async def unread(who) -> int:
        items = (await inbox(client, who))["data"]
        return next(i["unread"] for i in items if i["id"] == c["c"])

    assert await unread(auth) == 1  # the first question, never read
    await visitor_says(client, agent["id"], "Hello?", "session-c", c["c"])
    assert await unread(auth) == 2
    read = await post(client, f"/conversations/{c['c']}/read", auth)
    assert read == {"conversationId": c["c"], "unread": 0}
    assert await unread(auth) == 0
    assert await unread(member_auth) == 2  # each member reads for themselves
    await asyncio.sleep(0.01)
    await visitor_says(client, agent["id"], "Anyone?", "session-c", c["c"])
    assert await unread(auth) == 1
    # Members' replies are not unread.
    await post(client, f"/conversations/{c['c']}/messages", auth, {"content": "Here!"})
    assert await unread(auth) == 1


async def test_search_finds_title_name_and_email_whatever_the_case(client):
    _, auth, _, _, c = await desk(client)
    assert await ids(client, auth, q="visitor b") == [c["b"]]
    assert await ids(client, auth, q="D@SHOP") == [c["d"]]
    assert await ids(client, auth, q="question a") == [c["a"]]
    assert await ids(client, auth, q="Question") == [c["a"], c["b"], c["d"], c["c"]]
    assert await ids(client, auth, q="%") == []  # not a wildcard
    assert await ids(client, auth, q="_") == []
    assert await ids(client, auth, q="question", view="mine") == [c["c"]]


async def test_pages_cross_from_waiting_to_the_rest(client):
    _, auth, _, _, c = await desk(client)
    seen, cursor = [], None
    while True:
        params = {"limit": 1, **({"cursor": cursor} if cursor else {})}
        body = await inbox(client, auth, **params)
        seen += [i["id"] for i in body["data"]]
        cursor = body["nextCursor"]
        if cursor is None:
            break
    assert seen == [c["a"], c["b"], c["d"], c["c"]]
    body = await inbox(client, auth, limit=3)
    assert [i["id"] for i in body["data"]] == [c["a"], c["b"], c["d"]]
    body = await inbox(client, auth, limit=3, cursor=body["nextCursor"])
    assert [i["id"] for i in body["data"]] == [c["c"]] and body["nextCursor"] is None


async def test_bad_parameters_are_refused(client):
    _, _, auth = await owner_of_team(client)
    for params, field in [
        ({"view": "everything"}, "view"),
        ({"q": "x" * 201}, "q"),
        ({"limit": 101}, "limit"),
        ({"limit": 0}, "limit"),
        ({"cursor": "not-a-cursor"}, "cursor"),
    ]:
        resp = await client.get("/api/v1/inbox", params=params, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", field)
    resp = await client.get("/api/v1/inbox")
    await assert_error(resp, 401, "UNAUTHORIZED")
    resp = await client.post("/api/v1/conversations/conv_nope/read", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_another_teams_inbox_is_its_own(client):
    _, auth, _, _, c = await desk(client)
    _, _, other = await owner_of_team(client, "other@example.com", "Otto")
    assert await ids(client, other) == []
    assert await ids(client, other, view="mine") == []
    resp = await client.post(f"/api/v1/conversations/{c['a']}/read", headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
