"""Operations: backup while serving, migrate, request ids, access logs, metrics."""

from __future__ import annotations

import json
import sqlite3
import stat

from tests.support.cli import Server, run
from tests.support.errors import assert_error


async def test_request_id_is_echoed_or_generated(client):
    resp = await client.get("/healthz", headers={"X-Request-Id": "abc-123"})
    assert resp.headers["X-Request-Id"] == "abc-123"
    resp = await client.get("/healthz", headers={"X-Request-Id": "bad id\twith spaces"})
    assert resp.headers["X-Request-Id"] != "bad id\twith spaces"
    assert len(resp.headers["X-Request-Id"]) == 16
    resp = await client.get("/api/v1/agents")
    assert resp.status == 401 and resp.headers["X-Request-Id"]


async def test_metrics(client, auth):
    await client.get("/api/v1/agents", headers=auth)
    await client.get("/api/v1/nowhere")
    resp = await client.get("/metrics")
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/plain")
    text = await resp.text()
    assert (
        'agentsvc_http_requests_total{method="GET",route="/api/v1/agents",status="200"} 1.0' in text
    )
    assert 'route="unmatched",status="404"' in text
    assert "agentsvc_http_request_duration_seconds_bucket" in text
    for name in ("agentsvc_open_streams", "agentsvc_outbox_depth"):
        assert name in text


async def test_metrics_can_be_disabled(make_client):
    client = await make_client(server={"metrics": False})
    await assert_error(await client.get("/metrics"), 404, "NOT_FOUND")


def test_backup_while_serving_and_restore(tmp_path):
    server = Server(tmp_path, "--config", str(_access_log_config(tmp_path)))
    try:
        key = run(["apikey", "create", "--email", "b@example.com"], tmp_path).stdout.strip()
        assert server.get("/api/v1/agents", key)[0] == 200
        result = run(["backup", str(tmp_path / "backups" / "one.db")], tmp_path)
        assert result.returncode == 0, result.stderr
        # The copy holds every team's data: private to the service's user, whatever the umask.
        assert stat.S_IMODE((tmp_path / "backups" / "one.db").stat().st_mode) == 0o600
        again = run(["backup", str(tmp_path / "backups" / "one.db")], tmp_path)
        assert again.returncode == 1 and "already exists" in again.stderr
    finally:
        server.stop()
    copy = sqlite3.connect(tmp_path / "backups" / "one.db")
    assert copy.execute("SELECT email FROM users").fetchall() == [("b@example.com",)]
    copy.close()
    # Structured access log: one JSON object per request, the request id included.
    lines = [line for line in "".join(server.log).splitlines() if "agentsvc.access" in line]
    record = json.loads(lines[-1].split("agentsvc.access: ", 1)[1])
    assert record["route"] == "/api/v1/agents" and record["status"] == 200
    assert record["requestId"] and "durationMs" in record

    # Restore: the copy becomes the data directory's database of a new server.
    restored = tmp_path / "restored"
    (restored / "data").mkdir(parents=True)
    (tmp_path / "backups" / "one.db").rename(restored / "data" / "agentsvc.db")
    server = Server(restored)
    try:
        assert server.get("/api/v1/agents", key)[0] == 200
    finally:
        server.stop()


def test_migrate(tmp_path):
    result = run(["migrate"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "schema version" in result.stdout
    assert (tmp_path / "data" / "agentsvc.db").is_file()
    result = run(["backup", str(tmp_path / "x.db"), "--data-dir", str(tmp_path / "none")], tmp_path)
    assert result.returncode == 1 and "no database" in result.stderr


def _access_log_config(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[server]\naccess_log = true\n")
    return path


async def test_metrics_count_deliveries_and_outbox_depth(make_client):
    from aiohttp import web
    from aiohttp.test_utils import TestServer

    from tests.support.accounts import bearer, new_api_key

    async def ok(request):
        return web.json_response({"ok": True})

    receiver_app = web.Application()
    receiver_app.router.add_post("/hook", ok)
    receiver = TestServer(receiver_app, host="127.0.0.1")
    await receiver.start_server()
    try:
        client = await make_client(webhooks={"retry_schedule_seconds": [0, 60]})
        auth = bearer(await new_api_key(client))
        agent = (
            await (await client.post("/api/v1/agents", json={"name": "A"}, headers=auth)).json()
        )["data"]
        tool = await (
            await client.post(
                "/api/v1/tools",
                headers=auth,
                json={
                    "agentId": agent["id"],
                    "name": "contact",
                    "description": "Contact form",
                    "executionType": "form",
                    "formWebhookUrl": str(receiver.make_url("/hook")),
                    "formSchema": {
                        "fields": [{"name": "email", "label": "E-mail", "type": "email"}]
                    },
                },
            )
        ).json()
        for url in (str(receiver.make_url("/hook")), str(receiver.make_url("/missing"))):
            await client.put(
                f"/api/v1/tools/{tool['id']}", json={"formWebhookUrl": url}, headers=auth
            )
            resp = await client.post(
                "/api/v1/form-submissions/submit",
                json={
                    "toolId": tool["id"],
                    "formData": {"email": "a@example.com"},
                    "fieldsCompleted": ["email"],
                },
            )
            assert resp.status == 200, await resp.text()
        text = await (await client.get("/metrics")).text()
        assert 'agentsvc_deliveries_total{kind="webhook",outcome="success"} 1.0' in text
        assert 'agentsvc_deliveries_total{kind="webhook",outcome="retry"} 1.0' in text
        assert "agentsvc_outbox_depth 1.0" in text  # the failed one waits for its retry
    finally:
        await receiver.close()
