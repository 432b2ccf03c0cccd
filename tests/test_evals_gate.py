"""The publish gate (an evaluation set the draft must pass, against a bar and against the
live version; the owner may force it, audited), a run resumed by another process after
the first stopped mid-run, and a 200-case run of the builtin model."""

from __future__ import annotations

import asyncio
import time

from tests.support import cli, pg
from tests.support.accounts import add_member, bearer, create_user, key_for, new_api_key
from tests.support.errors import assert_error
from tests.support.fakes import openai_server as oai
from tests.support.settings import make_settings

NINE, TEN = "We open at nine on Saturdays.", "We open at ten on Saturdays."
OPEN = "When do you open on Saturdays?"


async def _json(resp, status: int = 200) -> dict:
    assert resp.status == status, await resp.text()
    return await resp.json()


async def _gated_agent(client, auth, gate: dict) -> tuple[dict, str]:
    """An agent in draft mode with a one-case set ("nine" must be said) as its gate."""
    resp = await client.post(
        "/api/v1/agents", json={"name": "Shop", "systemPrompt": NINE}, headers=auth
    )
    agent = (await _json(resp, 201))["data"]
    resp = await client.post(
        f"/api/v1/agents/{agent['id']}/evalsets", json={"name": "Hours"}, headers=auth
    )
    set_id = (await _json(resp, 201))["data"]["id"]
    case = {"question": OPEN, "mustInclude": ["nine"]}
    await _json(await client.post(f"/api/v1/evalsets/{set_id}/cases", json=case, headers=auth), 201)
    body = {"versioning": "draft", "publishGate": {"evalsetId": set_id, **gate}}
    await _json(await client.patch(f"/api/v1/agents/{agent['id']}", json=body, headers=auth))
    return agent, set_id


async def _draft(client, auth, agent_id: str, prompt: str) -> None:
    body = {"systemPrompt": prompt}
    await _json(await client.patch(f"/api/v1/agents/{agent_id}", json=body, headers=auth))


async def test_a_draft_that_fails_the_gate_is_not_published_unless_the_owner_forces_it(client):
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    agent, set_id = await _gated_agent(client, auth, {"minPassRate": 100})
    await _draft(client, auth, agent["id"], TEN)
    url = f"/api/v1/agents/{agent['id']}/publish"
    resp = await client.post(url, json={}, headers=auth)
    error = await assert_error(resp, 409, "CONFLICT")
    assert error["message"].startswith('The draft passes 0 % of "Hours" (at least 100 % needed)')
    assert f'failing: "{OPEN}"' in error["message"]
    got = await _json(await client.get(f"/api/v1/agents/{agent['id']}", headers=auth))
    assert got["data"]["systemPrompt"] == NINE and got["data"]["draft"] is not None
    runs = await _json(await client.get(f"/api/v1/evalsets/{set_id}/runs", headers=auth))
    assert sorted(r["version"] for r in runs["data"]) == ["1", "draft"]

    member = await add_member(client, team.id, "member@example.com")
    member_auth = bearer(await key_for(client, team.id, member.id))
    resp = await client.post(url, json={"force": True}, headers=member_auth)
    await assert_error(resp, 403, "FORBIDDEN", "Only the team owner")
    forced = await _json(
        await client.post(url, json={"force": True, "note": "Hotfix"}, headers=auth)
    )
    assert forced["data"]["agent"]["systemPrompt"] == TEN
    log = await _json(await client.get("/api/v1/audit-log?action=agent.published", headers=auth))
    assert log["data"][0]["details"] == {"version": 2, "forced": True}


async def test_a_draft_that_passes_is_published_and_one_that_drops_too_far_is_not(client, auth):
    agent, _ = await _gated_agent(client, auth, {"minPassRate": 100})
    await _draft(client, auth, agent["id"], NINE + " Parcels ship within a day.")
    url = f"/api/v1/agents/{agent['id']}/publish"
    published = await _json(await client.post(url, json={}, headers=auth))
    assert published["data"]["version"]["number"] == 2

    dropping, _ = await _gated_agent(client, auth, {"minPassRate": 0, "maxDrop": 10})
    await _draft(client, auth, dropping["id"], TEN)
    resp = await client.post(f"/api/v1/agents/{dropping['id']}/publish", json={}, headers=auth)
    error = await assert_error(resp, 409, "CONFLICT")
    assert "(100 % live, at most 10 points fewer allowed)" in error["message"]


async def test_the_gate_names_one_of_the_agents_sets(client, auth):
    agent, set_id = await _gated_agent(client, auth, {})
    got = await _json(await client.get(f"/api/v1/agents/{agent['id']}", headers=auth))
    assert got["data"]["publishGate"] == {"evalsetId": set_id, "minPassRate": 0, "maxDrop": 100}
    other, _ = await _gated_agent(client, auth, {})
    for evalset_id in (set_id, "evs_nope"):
        resp = await client.patch(
            f"/api/v1/agents/{other['id']}",
            json={"publishGate": {"evalsetId": evalset_id}},
            headers=auth,
        )
        await assert_error(resp, 400, "VALIDATION_ERROR", "not one of this agent's")
    for gate in ({"evalsetId": set_id, "minPassRate": 101}, {"minPassRate": 5}, "x"):
        resp = await client.patch(
            f"/api/v1/agents/{agent['id']}", json={"publishGate": gate}, headers=auth
        )
        await assert_error(resp, 400, "VALIDATION_ERROR")
    # The set deleted, a publish says why it cannot run the gate.
    await client.delete(f"/api/v1/evalsets/{set_id}", headers=auth)
    await _draft(client, auth, agent["id"], TEN)
    resp = await client.post(f"/api/v1/agents/{agent['id']}/publish", json={}, headers=auth)
    await assert_error(resp, 409, "CONFLICT", "was deleted")
    cleared = {"publishGate": None}
    resp = await client.patch(f"/api/v1/agents/{agent['id']}", json=cleared, headers=auth)
    assert (await _json(resp))["data"]["publishGate"] is None
    await _json(await client.post(f"/api/v1/agents/{agent['id']}/publish", json={}, headers=auth))


async def test_a_run_left_by_a_stopped_process_is_finished_by_another(
    make_client, openai_fake, tmp_path
):
    providers = {"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}}
    evals = {"concurrency": 1, "lease_seconds": 0.6, "sweep_seconds": 0.2}
    first = await make_client(providers=providers, evals=evals)
    auth = bearer(await new_api_key(first))
    resp = await first.post(
        "/api/v1/agents", json={"name": "Shop", "systemPrompt": NINE}, headers=auth
    )
    agent = (await _json(resp, 201))["data"]
    resp = await first.post(
        f"/api/v1/agents/{agent['id']}/evalsets", json={"name": "S"}, headers=auth
    )
    set_id = (await _json(resp, 201))["data"]["id"]
    case = {"question": OPEN, "expected": NINE}
    for _ in range(3):
        await first.post(f"/api/v1/evalsets/{set_id}/cases", json=case, headers=auth)
    verdict = oai.text_events(['{"pass": true, "reason": "Same."}'])
    openai_fake.script(oai.stream(verdict), oai.stream(verdict, delay=30))
    resp = await first.post(
        f"/api/v1/evalsets/{set_id}/runs", json={"judge": "oai/j"}, headers=auth
    )
    run_id = (await _json(resp, 202))["data"]["id"]
    deadline = time.monotonic() + 10
    while len(openai_fake.requests) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.02)  # the second case's verdict hangs: stop mid-run
    await first.close()

    openai_fake.script(oai.stream(verdict), oai.stream(verdict))
    second = await make_client(settings=make_settings(tmp_path, providers=providers, evals=evals))
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        run = (await _json(await second.get(f"/api/v1/eval-runs/{run_id}", headers=auth)))["data"]
        if run["status"] == "done":
            break
        await asyncio.sleep(0.05)
    assert (run["status"], run["done"], run["passed"]) == ("done", 3, 3)
    assert len({r["caseId"] for r in run["results"]}) == 3  # each case once


async def test_a_200_case_run_of_the_builtin_model(client, auth):
    resp = await client.post(
        "/api/v1/agents", json={"name": "Shop", "systemPrompt": NINE}, headers=auth
    )
    agent = (await _json(resp, 201))["data"]
    resp = await client.post(
        f"/api/v1/agents/{agent['id']}/evalsets", json={"name": "S"}, headers=auth
    )
    set_id = (await _json(resp, 201))["data"]["id"]
    for i in range(200):
        case = {"question": f"{OPEN} ({i})", "mustInclude": ["nine"]}
        await _json(
            await client.post(f"/api/v1/evalsets/{set_id}/cases", json=case, headers=auth), 201
        )
    started = time.monotonic()
    resp = await client.post(f"/api/v1/evalsets/{set_id}/runs", json={}, headers=auth)
    run_id = (await _json(resp, 202))["data"]["id"]
    while True:
        run = (await _json(await client.get(f"/api/v1/eval-runs/{run_id}", headers=auth)))["data"]
        if run["status"] != "running" and run["status"] != "queued":
            break
        assert time.monotonic() - started < 60
        await asyncio.sleep(0.05)
    assert (run["status"], run["done"], run["passed"]) == ("done", 200, 200)


async def test_the_command_line_runs_a_set_and_exits_1_under_the_bar(client, auth, tmp_path):
    resp = await client.post(
        "/api/v1/agents", json={"name": "Shop", "systemPrompt": NINE}, headers=auth
    )
    agent = (await _json(resp, 201))["data"]
    resp = await client.post(
        f"/api/v1/agents/{agent['id']}/evalsets", json={"name": "S"}, headers=auth
    )
    set_id = (await _json(resp, 201))["data"]["id"]
    for case in (
        {"question": OPEN, "mustInclude": ["nine"]},
        {"question": OPEN, "mustInclude": ["ten"]},
    ):
        await client.post(f"/api/v1/evalsets/{set_id}/cases", json=case, headers=auth)
    env = {"AGENTSVC_SERVER_DATA_DIR": str(tmp_path / "data")}
    if pg.SERVER_URL:
        env["AGENTSVC_DATABASE_URL"] = pg.database_url_for(tmp_path)
        env["AGENTSVC_SERVER_SECRET_KEY"] = "test-secret-shared-by-every-process"
    base = ["eval", "run", "--agent", agent["id"], "--evalset", set_id]
    under = cli.run([*base, "--min-pass", "0.9"], tmp_path, **env)
    assert under.returncode == 1, under.stderr
    lines = under.stdout.splitlines()
    assert lines[0].split() == ["question", "verdict", "reason"]
    assert lines[1].startswith(OPEN) and " pass " in lines[1]
    assert " FAIL " in lines[2] and 'It does not say "ten"' in lines[2]
    assert (
        "1 of 2 passed (50 %)" in under.stdout
        and "under the bar: at least 90% needed" in under.stdout
    )
    over = cli.run([*base, "--min-pass", "0.5", "--version", "1"], tmp_path, **env)
    assert over.returncode == 0, over.stderr
    runs = await _json(await client.get(f"/api/v1/evalsets/{set_id}/runs", headers=auth))
    assert len(runs["data"]) == 2  # the command's runs are the set's like any other
    for bad, words in (
        (["--version", "v2"], "--version: give draft"),
        (["--min-pass", "90"], "--min-pass: a share from 0 to 1"),
        (["--version", "draft"], "no draft"),
    ):
        failed = cli.run([*base, *bad], tmp_path, **env)
        assert failed.returncode == 1 and words in failed.stderr, failed.stderr
    other = cli.run(["eval", "run", "--agent", "agt_nope", "--evalset", set_id], tmp_path, **env)
    assert other.returncode == 1 and "no agent 'agt_nope'" in other.stderr
    if not pg.SERVER_URL:  # a lookup never creates a database elsewhere
        elsewhere = {"AGENTSVC_SERVER_DATA_DIR": str(tmp_path / "elsewhere")}
        missing = cli.run(base, tmp_path, **elsewhere)
        assert missing.returncode == 1 and "no database in" in missing.stderr
        assert not (tmp_path / "elsewhere").exists()
