"""Helpers of the trigger tests: an agent, a trigger's JSON body, a created trigger."""

from __future__ import annotations


async def new_agent(client, auth, name="Support") -> str:
    resp = await client.post("/api/v1/agents", json={"name": name}, headers=auth)
    assert resp.status == 201, await resp.text()
    return (await resp.json())["data"]["id"]


def body(**over):
    base = {
        "name": "Welcome",
        "triggerType": "time_on_page",
        "conditions": {"timeOnPage": 30},
        "actionType": "open_chat",
        "actionConfig": {"message": "Hi!"},
    }
    return {**base, **over}


async def create(client, auth, agent_id, **over) -> dict:
    resp = await client.post(
        f"/api/v1/triggers?agentId={agent_id}", json=body(**over), headers=auth
    )
    assert resp.status == 201, await resp.text()
    return await resp.json()
