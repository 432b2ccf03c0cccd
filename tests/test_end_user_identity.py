"""Issue 29, item 2: an end user's export and erasure expand only through identifiers the
service verified. A visitor who declares someone else's id, puts another person's address
next to their own signed id, or leaves another person's address for a reply, gets none of
that person's data into their own export or erasure; each answer says which identifiers it
matched and how each was verified."""

from __future__ import annotations

import time
from typing import Any

import jwt

from agentsvc.services.agents.identity import user_hash
from tests.support.accounts import bearer, create_user, key_for
from tests.support.chat import chat, new_agent, user

VICTIM_WORDS = "my parcel number is 7781 and my birthday is in June"


async def data_of(resp, status: int = 200) -> Any:
    assert resp.status == status, await resp.text()
    return (await resp.json())["data"]


async def owner_and_agent(client) -> tuple[dict, dict]:
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    return auth, await new_agent(client, auth, systemPrompt="Parcels ship daily.")


async def set_secret(client, auth: dict, agent_id: str) -> str:
    resp = await client.put(f"/api/v1/agents/{agent_id}/identity-secret", json={}, headers=auth)
    return (await data_of(resp))["secret"]


def token(secret: str, sub: str, email: str) -> str:
    claims = {"sub": sub, "email": email, "exp": int(time.time()) + 600}
    return jwt.encode(claims, secret, algorithm="HS256")


async def visit(client, agent_id: str, text: str, session: str, **identity) -> str:
    """A public chat from the widget; returns the conversation id."""
    body = {"agentId": agent_id, "messages": user(text), "sessionId": session, **identity}
    return (await chat(client, body)).start["conversationId"]


async def export(client, auth: dict, ref: str, **params) -> dict:
    return await data_of(
        await client.get(f"/api/v1/end-users/{ref}/export", params=params, headers=auth)
    )


def conversation_ids(doc: dict) -> set[str]:
    return {c["id"] for c in doc["conversations"]}


async def assert_intact(client, auth: dict, conv_id: str) -> None:
    conv = await data_of(await client.get(f"/api/v1/conversations/{conv_id}", headers=auth))
    assert VICTIM_WORDS in [m["content"] for m in conv["messages"]]


async def test_end_users_data_is_found_only_through_verified_identity_without_a_secret(client):
    """(a) No identity secret: chatting as the victim's id with one's own address does not
    put the victim's conversations in the export or erasure of that address."""
    auth, agent = await owner_and_agent(client)
    victim = await visit(
        client,
        agent["id"],
        VICTIM_WORDS,
        "sess-victim-a",
        user={"id": "victim-42", "email": "victim42@example.com"},
    )
    attacker = await visit(
        client,
        agent["id"],
        "hello",
        "sess-attacker-a",
        user={"id": "victim-42", "email": "attacker@evil.test"},
    )
    doc = await export(client, auth, "attacker@evil.test")
    assert conversation_ids(doc) == {attacker}
    assert doc["matched"] == [{"type": "email", "value": "attacker@evil.test", "verified": "ref"}]
    assert doc["userIds"] == [] and doc["emails"] == ["attacker@evil.test"]
    assert VICTIM_WORDS not in str(doc)
    # The declared id finds the rows that store it (both), and ties nothing else to them.
    by_id = await export(client, auth, "victim-42")
    assert conversation_ids(by_id) == {victim, attacker}
    assert by_id["matched"] == [{"type": "userId", "value": "victim-42", "verified": "ref"}]
    gone = await data_of(await client.delete("/api/v1/end-users/attacker@evil.test", headers=auth))
    assert gone["deleted"]["conversations"] == 1 and gone["matched"] == doc["matched"]
    await assert_intact(client, auth, victim)


async def test_end_users_data_is_found_only_through_verified_identity_with_a_user_hash(client):
    """(b) userHash signs the id alone: an address declared beside one's own signed id ties
    nothing, either way."""
    auth, agent = await owner_and_agent(client)
    secret = await set_secret(client, auth, agent["id"])
    victim = await visit(
        client,
        agent["id"],
        VICTIM_WORDS,
        "sess-victim-b",
        user={"id": "victim-b", "email": "victim-b@example.com"},
        userHash=user_hash(secret, "victim-b"),
    )
    signed_as_attacker = {"id": "attacker-2", "email": "victim-b@example.com"}
    attacker = await visit(
        client,
        agent["id"],
        "hello",
        "sess-attacker-b",
        user=signed_as_attacker,
        userHash=user_hash(secret, "attacker-2"),
    )
    attacker_later = await visit(
        client,
        agent["id"],
        "hello again",
        "sess-attacker-b2",
        user={"id": "attacker-2"},
        userHash=user_hash(secret, "attacker-2"),
    )
    doc = await export(client, auth, "attacker-2")
    assert conversation_ids(doc) == {attacker, attacker_later}
    assert {(m["type"], m["verified"]) for m in doc["matched"]} == {
        ("userId", "ref"),
        ("sessionId", "userHash"),
    }
    assert doc["emails"] == [] and VICTIM_WORDS not in str(doc)
    # The victim's address finds where it is stored, the attacker's first conversation too
    # (it holds the address), but not what the attacker's signed id links.
    by_mail = await export(client, auth, "victim-b@example.com")
    assert conversation_ids(by_mail) == {victim, attacker}
    assert by_mail["userIds"] == []
    gone = await data_of(await client.delete("/api/v1/end-users/attacker-2", headers=auth))
    assert gone["deleted"]["conversations"] == 2
    await assert_intact(client, auth, victim)


async def test_end_users_data_is_found_only_through_verified_identity_with_a_user_token(client):
    """(c) userToken: the victim's address left for a reply on the attacker's own
    conversation does not make the attacker's erasure take the victim's conversations."""
    auth, agent = await owner_and_agent(client)
    secret = await set_secret(client, auth, agent["id"])
    victim = await visit(
        client,
        agent["id"],
        VICTIM_WORDS,
        "sess-victim-c",
        userToken=token(secret, "victim-3", "victim3@example.com"),
    )
    attacker = await visit(
        client,
        agent["id"],
        "I need a person",
        "sess-attacker-c",
        userToken=token(secret, "attacker-3", "attacker3@evil.test"),
    )
    await data_of(
        await client.post(
            f"/api/v1/conversations/{attacker}/contact",
            json={"sessionId": "sess-attacker-c", "email": "victim3@example.com"},
        )
    )
    doc = await export(client, auth, "attacker3@evil.test")
    assert conversation_ids(doc) == {attacker}
    assert doc["matched"] == [
        {"type": "userId", "value": "attacker-3", "verified": "userToken"},
        {"type": "email", "value": "attacker3@evil.test", "verified": "ref"},
        {"type": "sessionId", "value": "sess-attacker-c", "verified": "userToken"},
    ]
    gone = await data_of(await client.delete("/api/v1/end-users/attacker3@evil.test", headers=auth))
    assert gone["deleted"]["conversations"] == 1
    assert gone["matched"] == doc["matched"]
    await assert_intact(client, auth, victim)
    # The victim's own erasure follows her signed id and address.
    mine = await data_of(await client.delete("/api/v1/end-users/victim-3", headers=auth))
    assert mine["deleted"]["conversations"] == 1
    assert {(m["type"], m["value"], m["verified"]) for m in mine["matched"]} == {
        ("userId", "victim-3", "ref"),
        ("email", "victim3@example.com", "userToken"),
        ("sessionId", "sess-victim-c", "userToken"),
    }
