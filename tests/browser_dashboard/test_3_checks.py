"""The page's own logic against the API's: schema checks, model suggestions; the CSV export."""

from __future__ import annotations

import csv
import io
import urllib.request

from agentsvc.api.openapi import model_id_pattern
from tests.support.dashboard_stack import (
    api_status,
    chat_as_key,
    ensure_owner,
    owner_key,
)

SCHEMAS = [
    {"type": "object", "properties": {}},
    {"type": "object", "properties": {"q": {"type": "string", "enum": ["a", "b"]}}},
    {"type": "object", "properties": {"n": {"type": ["integer", "null"]}}, "required": ["n"]},
    {"type": "object", "properties": {"q": {"type": "text"}}},
    {"type": "object", "properties": {"q": {"type": ["string", "string"]}}},
    {"type": "object", "properties": {"q": {"enum": "a"}}},
    {"type": "object", "properties": {"q": {"description": 5}}},
    {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["r"]},
    {"type": "object", "required": "q"},
    {"type": "array", "items": {"type": "string"}},
    {"type": "object", "properties": []},
    ["not", "an", "object"],
    {
        "type": "object",
        "$defs": {"s": {"type": "string"}},
        "properties": {"q": {"$ref": "#/$defs/s"}},
    },
    {"type": "object", "properties": {"q": {"$ref": "http://127.0.0.1:9/schema.json"}}},
    {"type": "object", "properties": {"q": {"allOf": [{"$ref": "file:///etc/hostname"}]}}},
    {"type": "object", "$id": "https://example.com/s"},
]
FORM_SCHEMAS = [
    {"fields": [{"name": "email", "label": "E-mail", "type": "email"}]},
    {
        "fields": [
            {"name": "c", "label": "C", "type": "select", "options": [{"label": "A", "value": "a"}]}
        ]
    },
    {"fields": []},
    {"fields": [{"name": "c", "label": "C", "type": "select"}]},
    {"fields": [{"name": "c", "label": "C", "type": "colour"}]},
    {"fields": [{"name": "c", "type": "text"}]},
    {
        "fields": [
            {"name": "c", "label": "C", "type": "text"},
            {"name": "c", "label": "D", "type": "text"},
        ]
    },
]


def test_client_side_schema_checks_agree_with_the_api(tab, stack):
    """What the editor accepts, the API accepts; what it refuses, the API refuses too."""
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "Schema checks"})["data"]
    page = tab.page
    page.goto(stack.url + "/")
    verdicts = page.evaluate(
        """async ([schemas, forms]) => {
            const m = await import("/dashboard/schema-check.js");
            return [schemas.map(m.checkInputSchema), forms.map(m.checkFormSchema)];
        }""",
        [SCHEMAS, FORM_SCHEMAS],
    )
    for i, (schema, problems) in enumerate(zip(SCHEMAS, verdicts[0], strict=True)):
        body = {
            "agentId": agent["id"],
            "name": f"t{i}",
            "description": "d",
            "executionType": "mock",
            "mockResponse": "x",
            "inputSchema": schema,
        }
        accepted = api_status(stack, "POST", "/tools", key, body) == 201
        assert accepted == (problems == []), (schema, problems)
    for i, (form, problems) in enumerate(zip(FORM_SCHEMAS, verdicts[1], strict=True)):
        body = {
            "agentId": agent["id"],
            "name": f"f{i}",
            "description": "d",
            "executionType": "form",
            "inputSchema": {"type": "object", "properties": {}},
            "formSchema": form,
            "formExecutionMode": "client",
            "formClientHandler": "h",
        }
        accepted = api_status(stack, "POST", "/tools", key, body) == 201
        assert accepted == (problems == []), (form, problems)
    stack.api("DELETE", f"/agents/{agent['id']}", key)


def test_model_suggestions_follow_the_configured_providers(tab, stack):
    page = tab.page
    page.goto(stack.url + "/")
    cases = [["openai", "my-llm"], [], ["a.b"]]
    found = page.evaluate(
        """async (patterns) => {
            const m = await import("/dashboard/page-agents.js");
            return patterns.map(m.providersFromPattern);
        }""",
        [model_id_pattern(names) for names in cases],
    )
    assert found == [sorted(names) for names in cases]


def test_csv_export_quotes_cells_and_defuses_formulas(stack):
    """The export the Conversations page downloads (the server's, streamed): RFC 4180 cells,
    and a cell a spreadsheet would run as a formula prefixed with `'`."""
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "CSV checks"})["data"]
    chat_as_key(stack, key, agent["id"], '=HYPERLINK("http://x")')
    chat_as_key(stack, key, agent["id"], 'He said "hi", then\nleft')
    request = urllib.request.Request(
        f"{stack.url}/api/v1/conversations/export?agentId={agent['id']}&format=csv",
        headers={"Authorization": f"Bearer {key}"},
    )
    with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 (loopback)
        text = resp.read().decode()
        assert resp.headers["Content-Disposition"] == (
            'attachment; filename="conversations-csv-checks.csv"'
        )
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0][:3] == ["conversationId", "title", "userId"]
    content = rows[0].index("content")
    assert rows[1][content] == 'He said "hi", then\nleft'
    assert rows[3][content] == '\'=HYPERLINK("http://x")'
    assert rows[3][1] == '\'=HYPERLINK("http://x")'  # the title too
    assert text.endswith("\r\n")
    stack.api("DELETE", f"/agents/{agent['id']}", key)


def test_visitor_fields_not_signed_by_the_site_are_marked_unverified(tab, stack):
    page = tab.page
    page.goto(stack.url + "/")
    users = [
        # userHash: the id is signed, the e-mail and name are as the browser declared them.
        {"id": "u-1", "email": "a@b.c", "name": "Ada", "verified": False, "verifiedBy": "userHash"},
        # No identity secret: nothing was checked.
        {"id": "u-2", "email": "b@b.c", "name": None, "verified": False, "verifiedBy": None},
        # A userToken signs every field.
        {"id": "u-3", "email": "c@b.c", "name": "Cy", "verified": True, "verifiedBy": "userToken"},
    ]
    shown = page.evaluate(
        """async (users) => {
            const m = await import("/dashboard/page-conversations.js");
            const { h } = await import("/dashboard/dom.js");
            const render = (parts) => h("div", {}, parts);
            return users.map((u) => {
                const full = render(m.visitor(u));
                const short = render(m.visitor(u, true));
                const tags = (el) => el.querySelectorAll(".tag").length;
                return [full.textContent, tags(full), short.textContent, tags(short)];
            });
        }""",
        users,
    )
    assert shown == [
        ["Ada unverified · a@b.c unverified · u-1", 2, "a@b.c unverified", 1],
        ["b@b.c unverified · u-2 unverified", 2, "b@b.c unverified", 1],
        ["Cy · c@b.c · u-3", 0, "c@b.c", 0],
    ]
