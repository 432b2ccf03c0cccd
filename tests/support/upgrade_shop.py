"""A shop's data for the upgrade tests: written through the API of the newest version,
read back through it, and taken back to an earlier schema version.

Why written at the newest version and taken back: the API of an older version no longer
exists, and rows written by hand (as the per-migration tests do) hold what their author
thought of, not what the service writes. Rows the real API wrote, minus what an older
schema could not hold, are what a database of that version held:
- PostgreSQL: `UNDO_POSTGRES` of every later version, newest first (each migration's own
  inverse, compared with the migration by tests/test_shared_database.py);
- SQLite has no inverse scripts: the rows are loaded into the schema of that version
  (`schema_at`), each table's columns that version has. Its triggers fill the tables they
  keep (counters, the search index) as the rows arrive, as they did when the old code
  wrote them; rows that version's constraints refuse (a kind of tool it did not have) are
  left out, and a column it had that the newest lacks (renamed since) gets its type's
  empty value.

`answers` reads what owners and members see; `differences` lists what changed between two
readings, by path, for the test to check against `SINCE` (the versions that brought each
feature: what a database of an older version could not hold is not compared).
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentsvc.db.copy import TABLES
from agentsvc.db.migrations import schema_at
from tests.support.accounts import add_member, bearer, create_user, key_for
from tests.support.chat import add_document, chat, user

FORM_FIELDS = [
    {
        "name": "email",
        "label": "E-mail",
        "type": "email",
        "validation": {"required": {"value": True, "message": "Please give your e-mail"}},
    },
    {"name": "order", "label": "Order number", "type": "text"},
]


@dataclass
class Shop:
    """Who reads, and the ids of what was made."""

    owner: dict[str, str] = field(default_factory=dict)
    member: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)


async def _post(client, path: str, body: dict, auth: dict | None = None) -> Any:
    """POST through the API; what it made (its `data`, or the bare body)."""
    resp = await client.post(f"/api/v1{path}", json=body, headers=auth or {})
    assert 200 <= resp.status < 300, (path, await resp.text())
    found = await resp.json()
    return found.get("data", found) if isinstance(found, dict) else found


async def furnish(client) -> Shop:
    """A team with a member and an invitation, two agents with knowledge, tools of three
    kinds, a secret, chats (a tool call, ratings, a handoff with a reply and a note),
    form submissions, a trigger and its events, curated answers, a webhook, canned
    responses, a second version of an agent and an evaluation set."""
    owner, team = await create_user(client, "owner@shop.example", name="Olive")
    member = await add_member(client, team.id, "member@shop.example")
    shop = Shop(
        owner=bearer(await key_for(client, team.id, owner.id)),
        member=bearer(await key_for(client, team.id, member.id)),
    )
    await _team(client, shop)
    await _agents(client, shop)
    await _tools(client, shop)
    await _conversations(client, shop)
    await _forms_and_triggers(client, shop)
    await _later_features(client, shop)
    return shop


async def _team(client, shop: Shop) -> None:
    auth = shop.owner
    await _post(client, "/team/invite", {"email": "new@shop.example"}, auth)
    resp = await client.put("/api/v1/secrets/SHOP_TOKEN", json={"value": "s3cret"}, headers=auth)
    assert resp.status == 200, await resp.text()
    hook = {"url": "http://127.0.0.1:9/events", "events": ["conversation.created"]}
    shop.ids["webhook"] = (await _post(client, "/webhooks", hook, auth))["id"]


async def _agents(client, shop: Shop) -> None:
    auth = shop.owner
    prompt = "We sell tea. We open at nine."
    agent = await _post(client, "/agents", {"name": "Corner Shop", "systemPrompt": prompt}, auth)
    shop.ids["agent"] = agent["id"]
    resp = await client.patch(
        f"/api/v1/agents/{agent['id']}", json={"handoff": {"enabled": True}}, headers=auth
    )
    assert resp.status == 200, await resp.text()
    other = await _post(client, "/agents", {"name": "Returns Desk"}, auth)
    shop.ids["other_agent"] = other["id"]
    refunds = "Refunds take five days. Send the parcel back within a month."
    shop.ids["document"] = (await add_document(client, auth, agent["id"], "Refunds", refunds))["id"]
    await add_document(client, auth, agent["id"], "Shipping", "Parcels leave every morning.")
    await add_document(client, auth, other["id"], "Returns", "Returns are free in Europe.")


_NO_INPUT = {"type": "object", "properties": {}}
TOOLS = [
    {
        "name": "stock",
        "description": "Stock of a tea",
        "executionType": "mock",
        "inputSchema": _NO_INPUT,
        "mockResponse": '{"inStock": 12}',
    },
    {
        "name": "order_status",
        "description": "Where an order is",
        "executionType": "http",
        "httpUrl": "http://127.0.0.1:9/orders/{order}",
        "httpMethod": "GET",
        "httpHeaders": {"Authorization": "Bearer {{SHOP_TOKEN}}"},
        "inputSchema": {"type": "object", "properties": {"order": {"type": "string"}}},
    },
    {
        "name": "contact",
        "description": "Leave your details",
        "executionType": "form",
        "inputSchema": _NO_INPUT,
        "formSchema": {"fields": FORM_FIELDS},
        "formExecutionMode": "client",
        "formClientHandler": "saveLead",
    },
]


async def _tools(client, shop: Shop) -> None:
    for body in TOOLS:
        made = await _post(client, "/tools", {"agentId": shop.ids["agent"], **body}, shop.owner)
        shop.ids[f"tool_{body['name']}"] = made["id"]


async def _conversations(client, shop: Shop) -> None:
    auth, agent = shop.owner, shop.ids["agent"]
    visitor = {"id": "visitor-7", "email": "vera@example.com", "name": "Vera"}
    body = {"agentId": agent, "messages": user("When do you open?"), "user": visitor}
    first = await chat(client, body, auth)
    shop.ids["conversation"] = first.start["conversationId"]
    second = await chat(client, {"agentId": agent, "messages": user("/tool stock {}")}, auth)
    for stream, rating in ((first, "up"), (second, "down")):
        rated = {"messageId": stream.start["messageId"], "rating": rating}
        await _post(
            client, f"/conversations/{stream.start['conversationId']}/feedback", rated, auth
        )
    body = {"agentId": agent, "messages": user("I want a person"), "sessionId": "sess-1"}
    handed = (await chat(client, body)).start["conversationId"]
    shop.ids["handed"] = handed
    await _post(client, f"/conversations/{handed}/handoff", {"sessionId": "sess-1"})
    await _post(client, f"/conversations/{handed}/assign", {}, shop.member)
    reply = {"content": "Hello, Bo here."}
    await _post(client, f"/conversations/{handed}/messages", reply, shop.member)
    note = {"content": "Asked twice already."}
    await _post(client, f"/conversations/{handed}/notes", note, shop.member)
    other = {"agentId": shop.ids["other_agent"], "messages": user("Returns?")}
    await chat(client, other, auth)


async def _forms_and_triggers(client, shop: Shop) -> None:
    agent, tool = shop.ids["agent"], shop.ids["tool_contact"]
    for email in ("a@example.com", "b@example.com"):
        await _post(client, "/form-submissions/event", {"toolId": tool, "eventType": "impression"})
        submission = {
            "toolId": tool,
            "conversationId": shop.ids["handed"],
            "sessionId": "sess-1",
            "formData": {"email": email, "order": "A-17"},
            "fieldsCompleted": ["email", "order"],
        }
        await _post(client, "/form-submissions/submit", submission)
    trigger = {
        "name": "Leaving",
        "triggerType": "exit_intent",
        "conditions": {},
        "actionType": "open_chat",
        "actionConfig": {},
    }
    shop.ids["trigger"] = (await _post(client, f"/triggers?agentId={agent}", trigger, shop.owner))[
        "id"
    ]
    for kind in ("fired", "fired", "converted"):
        event = {
            "agentId": agent,
            "triggerId": shop.ids["trigger"],
            "triggerName": "Leaving",
            "triggerType": "exit_intent",
            "actionType": "open_chat",
            "eventType": kind,
            "sessionId": "sess-1",
            "pagePath": "/tea",
        }
        await _post(client, "/triggers/event", event)


async def _later_features(client, shop: Shop) -> None:
    auth, agent = shop.owner, shop.ids["agent"]
    answer = {"question": "Do you sell coffee?", "answer": "Tea only."}
    await _post(client, f"/agents/{agent}/answers", answer, auth)
    canned = {"shortcut": "hello", "title": "Greeting", "content": "Hello, how can I help?"}
    await _post(client, "/team/canned-responses", canned, auth)
    prompt = {"systemPrompt": "We sell tea. We open at ten."}  # the agent's version 2
    resp = await client.patch(f"/api/v1/agents/{agent}", json=prompt, headers=auth)
    assert resp.status == 200, await resp.text()
    evalset = await _post(client, f"/agents/{agent}/evalsets", {"name": "Hours"}, auth)
    case = {"question": "When do you open?", "mustInclude": ["ten"]}
    await _post(client, f"/evalsets/{evalset['id']}/cases", case, auth)


@dataclass(frozen=True)
class Newest:
    """A database of the newest version written through the API, and what it answered."""

    settings: Any
    shop: Shop
    answers: dict[str, Any]


def build_newest(settings) -> Newest:
    """Furnish the shop through a real app on `settings` and read it back; run on a loop of
    its own in a thread (for a module's fixture: each test has its own loop)."""
    from aiohttp.test_utils import TestClient, TestServer

    from agentsvc.app import create_app

    async def build() -> Newest:
        client = TestClient(TestServer(create_app(settings), host="127.0.0.1"))
        await client.start_server()
        try:
            shop = await furnish(client)
            return Newest(settings, shop, await answers(client, shop))
        finally:
            await client.close()

    done: list[Newest] = []
    thread = threading.Thread(target=lambda: done.append(asyncio.run(build())))
    thread.start()
    thread.join()
    assert done, "the shop could not be furnished (see the log above)"
    return done[0]


# ── what the API answers ─────────────────────────────────────────────────────────────
async def answers(client, shop: Shop) -> dict[str, Any]:
    """What owners and members read about the shop, keyed by what was asked."""
    auth, agent, other = shop.owner, shop.ids["agent"], shop.ids["other_agent"]
    paths = [
        "/agents",
        f"/agents/{agent}",
        f"/agents/{other}",
        f"/agents/{agent}/documents",
        f"/agents/{other}/documents",
        f"/documents/{shop.ids['document']}",
        f"/tools?agentId={agent}",
        f"/tools/{shop.ids['tool_order_status']}",
        "/secrets",
        f"/conversations?agentId={agent}",
        f"/conversations?agentId={other}",
        f"/conversations/{shop.ids['conversation']}",
        f"/conversations/{shop.ids['handed']}",
        f"/conversations/{shop.ids['handed']}/visitor",
        f"/conversations?agentId={agent}&q=open",
        "/form-submissions",
        "/form-submissions/analytics",
        f"/triggers?agentId={agent}",
        f"/triggers/{shop.ids['trigger']}",
        f"/triggers/stats?agentId={agent}",
        "/team/members",
        "/team/invitations",
        "/api-keys",
        "/webhooks",
        f"/webhooks/{shop.ids['webhook']}/deliveries",
        f"/agents/{agent}/answers",
        "/feedback",
        f"/agents/{agent}/analytics",
        f"/agents/{agent}/handoff-stats",
        "/inbox",
        "/team/canned-responses",
        f"/agents/{agent}/versions",
        f"/agents/{agent}/evalsets",
        f"/agents/{agent}/sources",
        f"/agents/{agent}/channels",
        "/audit-log",
    ]
    read = await asyncio.gather(*(_get(client, path, auth) for path in paths))
    found = dict(zip(paths, read, strict=True))
    found["member: /inbox"] = await _get(client, "/inbox", shop.member)
    return found


async def _get(client, path: str, auth: dict) -> Any:
    resp = await client.get(f"/api/v1{path}", headers=auth)
    return {"status": resp.status, "body": _steady(await resp.json())}


# Fields that change by reading itself: a key's last use.
_MOVING = {"lastUsedAt"}


def _steady(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k not in _MOVING}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


def differences(before: Any, after: Any, path: str = "") -> list[str]:
    """The paths where two readings differ (list items by position)."""
    if isinstance(before, dict) and isinstance(after, dict):
        found = []
        for key in sorted(set(before) | set(after), key=str):
            found += differences(before.get(key), after.get(key), f"{path}.{key}" if path else key)
        return found
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        pairs = enumerate(zip(before, after, strict=True))
        return [d for i, (b, a) in pairs for d in differences(b, a, f"{path}[{i}]")]
    return [] if before == after else [path]


# ── taken back to an earlier version ──────────────────────────────────────────────────
_INSERTED_BY_TRIGGER = re.compile(r"\bINSERT\s+(?:OR\s+\w+\s+)?INTO\s+(\w+)", re.I)
_UPDATED_BY_TRIGGER = re.compile(r"\bUPDATE\s+(\w+)\s+SET\b", re.I)


def sqlite_at(newest: Path, target: Path, version: int) -> dict[str, int]:
    """Write into `target` (a new file) the rows of `newest` as a database of `version`
    would hold them (see the module's docstring); return the rows left out, by table.

    Tables that version's triggers insert into (counters, daily figures, the search
    index) are left to the triggers; tables they only update (a conversation's counts)
    are copied, and their copied columns set again from `newest` once every row is in."""
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        conn.executescript(schema_at(version))
        bodies = [
            sql.split(" BEGIN", 1)[1]
            for (sql,) in conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger'")
        ]
        derived = {t.lower() for body in bodies for t in _INSERTED_BY_TRIGGER.findall(body)}
        updated = {t.lower() for body in bodies for t in _UPDATED_BY_TRIGGER.findall(body)}
        conn.execute("ATTACH DATABASE ? AS newest", (str(newest),))
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("BEGIN")
        left_out = _copy_rows(conn, derived, updated - derived)
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE newest")
    finally:
        conn.close()
    return left_out


def _copy_rows(conn: sqlite3.Connection, derived: set[str], updated: set[str]) -> dict[str, int]:
    order = {name: i for i, name in enumerate(TABLES)}
    names = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM main.sqlite_master WHERE type = 'table' AND sql NOT LIKE"
            " 'CREATE VIRTUAL%' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%_fts_%'"
        )
    ]
    left_out: dict[str, int] = {}
    common: dict[str, list[str]] = {}
    for table in sorted(names, key=lambda n: (order.get(n, len(order)), n)):
        source = {r[1] for r in conn.execute(f"PRAGMA newest.table_info({table})")}
        if table.lower() in derived or not source:
            continue
        columns, values = [], []
        for _, name, kind, not_null, default, _ in conn.execute(f"PRAGMA main.table_info({table})"):
            if name in source:
                columns.append(name)
                values.append(f'"{name}"')
            elif not_null and default is None:  # renamed since: its type's empty value
                columns.append(name)
                values.append("0" if "INT" in kind.upper() else "''")
        common[table] = [c for c in columns if c in source]
        if _has_rowid(conn, table):  # kept, so lists in rowid order and cursors stay the same
            columns, values = ["rowid", *columns], ["rowid", *values]
        conn.execute(
            f"INSERT OR IGNORE INTO main.{table} ({', '.join(columns)})"  # noqa: S608
            f" SELECT {', '.join(values)} FROM newest.{table} ORDER BY rowid"
        )
        total = conn.execute(f"SELECT count(*) FROM newest.{table}").fetchone()[0]  # noqa: S608
        copied = conn.execute(f"SELECT count(*) FROM main.{table}").fetchone()[0]  # noqa: S608
        if copied < total:
            left_out[table] = total - copied
    for table in sorted(t for t in updated & set(common) if _has_rowid(conn, t)):
        cols = ", ".join(common[table])
        conn.execute(
            f"UPDATE main.{table} SET ({cols}) = (SELECT {cols} FROM newest.{table} AS n"  # noqa: S608
            f" WHERE n.rowid = main.{table}.rowid)"
        )
    return left_out


def _has_rowid(conn: sqlite3.Connection, table: str) -> bool:
    try:
        conn.execute(f"SELECT rowid FROM main.{table} LIMIT 0")  # noqa: S608
    except sqlite3.OperationalError:  # WITHOUT ROWID
        return False
    return True


# What a database of an older version cannot hold, by the version that brought it: after
# an upgrade from version V, the answers differ from those read at the newest version only
# at paths of features newer than V (ids are written ID).
SINCE: dict[int, list[str]] = {
    4: [r"\.user\.verified(By)?$"],  # how an end user was vouched for
    7: [  # handoff to a person: settings, statuses, assignees, human replies, the inbox
        r"^/agents/ID\.body\.data\.handoff\.",
        r"^/agents/ID/handoff-stats\.",
        r"^/conversations.*\.(status|assignee)$",
        r"\.messages\[\d+\]\.author\.",
        r"^(member: )?/inbox\.",
        # a person's reply was counted as an answer of the agent
        r"^/agents/ID/analytics\.body\.data\.(days\[\d+\]|totals)\.answers$",
    ],
    10: [r"^/webhooks", r"^/audit-log\."],  # event webhooks, the audit log
    11: [  # unanswered questions, trigger figures, curated answers
        r"^/agents/ID/analytics\.body\.data\.(days\[\d+\]|totals)\.(trigger\w+|unanswered\w*)$",
        r"^/agents/ID/analytics\.body\.data\.(triggers|unansweredQuestions)$",
        r"^/agents/ID/answers\.",
        r"\.unanswered$",
    ],
    13: [r"\.notes$", r"^/team/canned-responses\."],  # the support desk
    17: [r"^/agents/ID\.body\.data\.version$", r"^/agents/ID/versions\.", r"\.agentVersion$"],
    19: [r"^/agents/ID/evalsets\."],  # evaluation sets
}
_ID = re.compile(r"\b(agt|conv|wh|doc|tool|trg|sub|msg)_[A-Za-z0-9_-]+")


def unexplained(before: dict, after: dict, version: int) -> list[str]:
    """The differences between two readings that no feature newer than `version` explains."""
    newer = [re.compile(p) for v, patterns in SINCE.items() if v > version for p in patterns]
    return [
        path
        for path in differences(before, after)
        if not any(p.search(_ID.sub("ID", path)) for p in newer)
    ]
