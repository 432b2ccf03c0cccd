"""Signed identity: `userToken` (an HS256 JWT) vouches for id, e-mail and name; `userHash`
vouches for the id only; anything that does not verify makes the caller anonymous."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest

from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, get_conversation, new_agent, user
from tests.support.errors import assert_error

SIGNED = {"id": "u-42", "email": "ada@example.com", "name": "Ada"}
VERIFIED = {**SIGNED, "verified": True, "verifiedBy": "userToken"}


async def agent_with_secret(client, auth) -> tuple[str, str]:
    """A new agent and its generated identity secret."""
    agent_id = (await new_agent(client, auth, systemPrompt="We open at nine."))["id"]
    resp = await client.put(f"/api/v1/agents/{agent_id}/identity-secret", json={}, headers=auth)
    assert resp.status == 200, await resp.text()
    return agent_id, (await resp.json())["data"]["secret"]


def claims(**extra) -> dict:
    return {
        "sub": SIGNED["id"],
        "email": SIGNED["email"],
        "name": SIGNED["name"],
        "exp": int(time.time()) + 600,
        **extra,
    }


def token(secret: str, **extra) -> str:
    """A token as a site's JWT library makes it."""
    return jwt.encode(claims(**extra), secret, algorithm="HS256")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def handmade(header: dict, payload: dict, secret: str | None, digest=hashlib.sha256) -> str:
    """A JWT built by hand, so headers and signatures can be anything."""
    signing_input = _b64(json.dumps(header).encode()) + "." + _b64(json.dumps(payload).encode())
    if secret is None:
        return signing_input + "."
    mac = hmac.new(secret.encode(), signing_input.encode(), digest).digest()
    return signing_input + "." + _b64(mac)


async def chat_user(client, auth, agent_id, headers=None, **fields):
    """Start a conversation with these body fields; return its stored user (or None)."""
    body = {"agentId": agent_id, "messages": user("When do you open?"), **fields}
    stream = await chat(client, body, headers=headers)
    assert stream.names[-1] == "message_stop"  # the message is answered either way
    conv = await get_conversation(client, auth, stream.start["conversationId"])
    return conv["user"]


async def test_valid_token_stores_the_signed_user_as_verified(client, auth):
    agent_id, secret = await agent_with_secret(client, auth)
    assert await chat_user(client, auth, agent_id, userToken=token(secret)) == VERIFIED


async def test_token_wins_over_the_declared_user(client, auth):
    agent_id, secret = await agent_with_secret(client, auth)
    declared = {"id": "u-1", "email": "mallory@example.com", "name": "Mallory"}
    got = await chat_user(client, auth, agent_id, user=declared, userToken=token(secret))
    assert got == VERIFIED


async def test_token_without_email_and_name_stores_the_id(client, auth):
    agent_id, secret = await agent_with_secret(client, auth)
    bare = jwt.encode({"sub": "u-7", "exp": int(time.time()) + 60}, secret, algorithm="HS256")
    got = await chat_user(client, auth, agent_id, userToken=bare)
    assert got == {
        "id": "u-7",
        "email": None,
        "name": None,
        "verified": True,
        "verifiedBy": "userToken",
    }


async def test_token_naming_the_agent_as_audience_is_accepted(client, auth):
    agent_id, secret = await agent_with_secret(client, auth)
    got = await chat_user(client, auth, agent_id, userToken=token(secret, aud=agent_id))
    assert got == VERIFIED
    got = await chat_user(client, auth, agent_id, userToken=token(secret, aud=["x", agent_id]))
    assert got == VERIFIED


async def test_token_just_past_expiry_is_within_the_leeway(client, auth):
    agent_id, secret = await agent_with_secret(client, auth)
    got = await chat_user(client, auth, agent_id, userToken=token(secret, exp=int(time.time()) - 5))
    assert got == VERIFIED


def _refused_tokens(secret: str, agent_id: str) -> dict[str, str]:
    now = int(time.time())
    valid = token(secret)
    head, payload, signature = valid.split(".")
    forged_payload = _b64(json.dumps(claims(sub="admin")).encode())
    return {
        "expired": token(secret, exp=now - 120),
        "not yet valid": token(secret, nbf=now + 600),
        "wrong secret": token("another-secret-of-at-least-32-chars!"),
        "forged payload": f"{head}.{forged_payload}.{signature}",
        "no signature": f"{head}.{payload}.",
        "alg none": handmade({"alg": "none", "typ": "JWT"}, claims(), None),
        "alg None signed": handmade({"alg": "None", "typ": "JWT"}, claims(), secret),
        "alg HS512": handmade({"alg": "HS512", "typ": "JWT"}, claims(), secret, hashlib.sha512),
        "alg HS384": handmade({"alg": "HS384", "typ": "JWT"}, claims(), secret, hashlib.sha384),
        "header says HS256, signed HS512": handmade(
            {"alg": "HS256", "typ": "JWT"}, claims(), secret, hashlib.sha512
        ),
        "no exp": handmade({"alg": "HS256"}, {"sub": "u-42"}, secret),
        "no sub": handmade({"alg": "HS256"}, {"exp": now + 60, "email": "a@b.c"}, secret),
        "sub not a string": handmade({"alg": "HS256"}, {"sub": 42, "exp": now + 60}, secret),
        "empty sub": handmade({"alg": "HS256"}, {"sub": "", "exp": now + 60}, secret),
        "exp not a number": handmade({"alg": "HS256"}, {"sub": "u", "exp": "soon"}, secret),
        "email not a string": token(secret, email=["a@example.com"]),
        "name too long": token(secret, name="n" * 201),
        "email too long": token(secret, email="e" * 321),
        "another audience": token(secret, aud="agt_other"),
        "payload not an object": handmade({"alg": "HS256"}, ["u-42"], secret),  # type: ignore[arg-type]
        "garbage": "not-a-token",
        "three dots of garbage": "a.b.c",
        "empty": "",
    }


async def test_tokens_that_do_not_verify_leave_the_caller_anonymous(client, auth):
    agent_id, secret = await agent_with_secret(client, auth)
    for reason, bad in _refused_tokens(secret, agent_id).items():
        got = await chat_user(client, auth, agent_id, user=SIGNED, userToken=bad)
        assert got is None, reason


async def test_oversized_token_is_refused_before_decoding(client, auth):
    agent_id, secret = await agent_with_secret(client, auth)
    # Correctly signed: only its size refuses it (4,096 characters at most).
    big = token(secret, padding="x" * 4096)
    assert len(big) > 4096
    assert await chat_user(client, auth, agent_id, userToken=big) is None
    # A 1 MB token costs a length check, not a decode.
    assert await chat_user(client, auth, agent_id, userToken="e" * 1_000_000) is None


async def test_token_is_refused_when_the_secret_is_shorter_than_256_bits(client, auth):
    agent_id = (await new_agent(client, auth))["id"]
    short = "sixteen-chars-ok"  # enough for userHash, too short for an HS256 key
    resp = await client.put(
        f"/api/v1/agents/{agent_id}/identity-secret", json={"secret": short}, headers=auth
    )
    assert resp.status == 200
    signed = handmade({"alg": "HS256", "typ": "JWT"}, claims(), short)
    assert await chat_user(client, auth, agent_id, userToken=signed) is None


async def test_token_for_an_agent_without_secret_is_refused(client, auth):
    agent_id = (await new_agent(client, auth))["id"]
    signed = token("any-secret-the-site-made-up-0123456789")
    assert await chat_user(client, auth, agent_id, user=SIGNED, userToken=signed) is None


async def test_token_of_another_agent_is_refused(client, auth):
    agent_a, secret_a = await agent_with_secret(client, auth)
    agent_b, _ = await agent_with_secret(client, auth)
    assert await chat_user(client, auth, agent_b, userToken=token(secret_a)) is None
    assert await chat_user(client, auth, agent_a, userToken=token(secret_a)) == VERIFIED


async def test_user_hash_alone_leaves_email_and_name_unverified(client, auth):
    agent_id, secret = await agent_with_secret(client, auth)
    good = hmac.new(secret.encode(), b"u-42", hashlib.sha256).hexdigest()
    got = await chat_user(client, auth, agent_id, user=SIGNED, userHash=good)
    assert got == {**SIGNED, "verified": False, "verifiedBy": "userHash"}


async def test_without_secret_a_declared_user_is_stored_unverified(client, auth):
    agent_id = (await new_agent(client, auth))["id"]
    got = await chat_user(client, auth, agent_id, user=SIGNED)
    assert got == {**SIGNED, "verified": False, "verifiedBy": None}


async def test_a_call_with_the_teams_key_is_vouched_for_by_the_key(client, auth):
    agent_id, secret = await agent_with_secret(client, auth)
    got = await chat_user(client, auth, agent_id, headers=auth, user=SIGNED)
    assert got == {**SIGNED, "verified": True, "verifiedBy": "apiKey"}
    # A token sent with a key is still checked: a bad one is not taken on the key's word.
    bad = token(secret, exp=int(time.time()) - 3600)
    assert await chat_user(client, auth, agent_id, headers=auth, user=SIGNED, userToken=bad) is None
    good = await chat_user(client, auth, agent_id, headers=auth, userToken=token(secret))
    assert good == VERIFIED


async def test_conversation_list_shows_how_users_were_verified(client, auth):
    agent_id, secret = await agent_with_secret(client, auth)
    await chat_user(client, auth, agent_id, userToken=token(secret))
    await chat_user(
        client,
        auth,
        agent_id,
        user=SIGNED,
        userHash=hmac.new(secret.encode(), b"u-42", hashlib.sha256).hexdigest(),
    )
    resp = await client.get(f"/api/v1/conversations?agentId={agent_id}", headers=auth)
    users = [c["user"] for c in (await resp.json())["data"]]
    assert users == [  # newest first
        {**SIGNED, "verified": False, "verifiedBy": "userHash"},
        VERIFIED,
    ]


@pytest.mark.parametrize("value", [42, ["a.b.c"], {"t": 1}, True])
async def test_user_token_of_the_wrong_type_is_a_validation_error(client, auth, value):
    agent_id, _ = await agent_with_secret(client, auth)
    body = {"agentId": agent_id, "messages": user("hi"), "userToken": value}
    resp = await client.post("/api/v1/chat", json=body)
    await assert_error(resp, 400, "VALIDATION_ERROR", "userToken")


async def test_null_user_token_is_no_token(client, auth):
    agent_id, secret = await agent_with_secret(client, auth)
    good = hmac.new(secret.encode(), b"u-42", hashlib.sha256).hexdigest()
    got = await chat_user(client, auth, agent_id, user=SIGNED, userHash=good, userToken=None)
    assert got["verifiedBy"] == "userHash"


async def test_user_token_exp_not_a_number_or_beyond_max_lifetime_is_refused(make_client, caplog):
    """Issue 29 item 8: `exp` must be a JSON number at most `[identity]
    max_token_lifetime_hours` away; otherwise the token is refused (the caller anonymous,
    the reason logged)."""
    client = await make_client(identity={"max_token_lifetime_hours": 2})
    auth = bearer(await new_api_key(client))
    agent_id, secret = await agent_with_secret(client, auth)
    now = int(time.time())
    refused = {
        "exp a numeric string": handmade(
            {"alg": "HS256"}, {"sub": "u", "exp": str(now + 600)}, secret
        ),
        "exp a far numeric string": handmade(
            {"alg": "HS256"}, {"sub": "u", "exp": "99999999999"}, secret
        ),
        "exp true": handmade({"alg": "HS256"}, {"sub": "u", "exp": True}, secret),
        "exp null": handmade({"alg": "HS256"}, {"sub": "u", "exp": None}, secret),
        "exp a list": handmade({"alg": "HS256"}, {"sub": "u", "exp": [now + 600]}, secret),
        "exp in a year": token(secret, exp=now + 365 * 86400),
        "exp 3 hours away": token(secret, exp=now + 3 * 3600),
        "exp far in the future as a float": token(secret, exp=float(now + 3 * 3600)),
    }
    with caplog.at_level("DEBUG", logger="agentsvc.services.agents.identity"):
        for reason, bad in refused.items():
            got = await chat_user(client, auth, agent_id, user=SIGNED, userToken=bad)
            assert got is None, reason
    messages = [r.getMessage() for r in caplog.records]
    assert any("exp is not a number" in m for m in messages), messages
    assert any(
        "exp is more than 2 hours away ([identity] max_token_lifetime_hours)" in m for m in messages
    ), messages
    # Within the lifetime (a fraction of a second counts as a number too) it is accepted.
    assert await chat_user(client, auth, agent_id, userToken=token(secret, exp=now + 3600)) == (
        VERIFIED
    )
    assert (
        await chat_user(client, auth, agent_id, userToken=token(secret, exp=now + 3600.5))
        == VERIFIED
    )


async def test_user_token_max_lifetime_defaults_to_24_hours(client, auth):
    agent_id, secret = await agent_with_secret(client, auth)
    now = int(time.time())
    assert await chat_user(
        client, auth, agent_id, userToken=token(secret, exp=now + 23 * 3600)
    ) == (VERIFIED)
    assert (
        await chat_user(client, auth, agent_id, userToken=token(secret, exp=now + 25 * 3600))
        is None
    )
