"""The dashboard's browser-test stack: the real app and fakes on loopback, tabs, helpers.

One server thread runs the real app (public_url = its own loopback address, so the Origin
check of cookie sessions applies as in production), a webhook receiver and a fake OAuth
provider. Each tab is a fresh browser context that records script errors and every request
(checked: only this instance's documented endpoints).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from aiohttp import web
from playwright.sync_api import Browser, Page, expect

from agentsvc.api import all_endpoints, app_keys
from agentsvc.app import create_app
from agentsvc.services.team import accounts
from tests.support.dns_server import FakeDnsServer
from tests.support.fakes.oauth import FakeOAuth
from tests.support.settings import make_settings

OWNER_EMAIL = "owner@example.com"
PASSWORD = "correct horse battery"  # noqa: S105 (a test password)
PAGES = [
    "Agents",
    "Inbox",
    "Knowledge",
    "Tools",
    "Triggers",
    "Chat preview",
    "Conversations",
    "Review",
    "Form submissions",
    "Analytics",
    "Widget",
    "Channels",
    "Team",
    "API keys",
    "Secrets",
    "Profile",
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Stack:
    """The service and a webhook receiver on loopback, run by a thread's event loop."""

    def __init__(self, tmp: Path):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.runners: list[web.AppRunner] = []
        self.received: list[dict[str, Any]] = []
        self.failing = False  # the receiver answers 503 while set
        self.tmp = tmp
        self.url = ""
        self.receiver_url = ""

    def run(self, coro) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def start(self) -> None:
        self.thread.start()
        receiver = web.Application()
        receiver.router.add_post("/{tail:.*}", self._receive)
        self.receiver_url = f"http://127.0.0.1:{self.run(self._serve(receiver, 0))}"
        self.oauth = FakeOAuth()
        self.dns = FakeDnsServer().start()  # where the team's SSO domains are proven
        self.oauth.base = f"http://127.0.0.1:{self.run(self._serve(self.oauth.app, 0))}"
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        settings = make_settings(
            self.tmp,
            server={"public_url": self.url},
            webhooks={"retry_schedule_seconds": [0, 0.2]},
            ratelimit={"public_chat_per_minute": 10000},
            auth={"sign_in_per_minute_ip": 1000, "sign_in_per_minute_email": 1000},
            oauth={"github": self.oauth.settings(self.oauth.base)},
            sso={"dns_nameservers": [self.dns.address]},
            # The builtin model's words cost something, so the Usage page has costs to show.
            prices={"builtin": {"input_per_million": 2000, "output_per_million": 2000}},
        )
        self.app = create_app(settings)
        self.run(self._serve(self.app, port))

    async def _serve(self, app: web.Application, port: int) -> int:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        self.runners.append(runner)
        return runner.addresses[0][1]

    async def _receive(self, request: web.Request) -> web.Response:
        if self.failing:
            return web.json_response({"error": "down for maintenance"}, status=503)
        self.received.append(
            {"path": request.path, "headers": dict(request.headers), "body": await request.json()}
        )
        return web.json_response({"ok": True})

    def stop(self) -> None:
        async def cleanup() -> None:
            for runner in reversed(self.runners):
                await runner.cleanup()

        self.run(cleanup())
        self.dns.stop()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()

    def outbox(self, to: str) -> list:
        async def read():
            mailer = self.app[app_keys.mailer_key]
            await mailer.drain()
            return await mailer.kept(to)

        return self.run(read())

    def api(self, method: str, path: str, key: str, body: Any = None) -> Any:
        """Call the API with a Bearer key, as an external client (set-up and checks only)."""
        request = urllib.request.Request(
            self.url + "/api/v1" + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 (loopback)
            return json.loads(resp.read() or b"null")


class Tab:
    """A page of a fresh context that records script errors (a test fails on any)."""

    def __init__(self, browser: Browser, stack: Stack):
        self.context = browser.new_context(
            viewport={"width": 1280, "height": 860},
            permissions=["clipboard-read", "clipboard-write"],
            accept_downloads=True,
        )
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.requests: list[tuple[str, str]] = []
        self.context.on("request", lambda r: self.requests.append((r.method, r.url)))
        self.stack = stack

    def close(self) -> None:
        self.context.close()
        assert self.errors == [], self.errors
        check_requests(self.stack, self.requests)


def route_patterns() -> list[tuple[str, re.Pattern]]:
    """(method, regex) of every documented endpoint, path parameters as one segment."""
    return [
        (e.method, re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", e.full_path) + "$"))
        for e in all_endpoints()
    ]


def check_requests(stack: Stack, requests: list[tuple[str, str]]) -> None:
    """Every request the dashboard made went to this instance, to a documented endpoint."""
    patterns = route_patterns()
    assert any("/api/v1/" in url for _, url in requests), requests
    for method, url in requests:
        if url.startswith("data:") or url.startswith("blob:"):
            continue
        parts = urlsplit(url)
        if parts.hostname == "127.0.0.1" and url.startswith(stack.oauth.base):
            continue  # the fake identity provider of the OAuth test
        assert url.startswith(stack.url + "/"), url
        path = unquote(parts.path)
        documented = any(m == method and p.match(path) for m, p in patterns)
        assert documented, (method, url)


def ensure_owner(stack: Stack) -> None:
    """Create the owner through the public setup endpoint unless a test already did."""
    with urllib.request.urlopen(stack.url + "/api/v1/setup", timeout=10) as resp:  # noqa: S310
        if not json.loads(resp.read())["data"]["needsOwner"]:
            return
    body = json.dumps({"email": OWNER_EMAIL, "password": PASSWORD, "name": "Olivia Owner"})
    request = urllib.request.Request(
        stack.url + "/api/v1/setup",
        data=body.encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    urllib.request.urlopen(request, timeout=10).close()  # noqa: S310


def sign_in(page: Page, stack: Stack, email: str = OWNER_EMAIL) -> None:
    """Sign in with the password form and wait for the agents page."""
    page.goto(stack.url + "/")
    form = page.get_by_role("form", name="Sign in with password")
    form.get_by_label("E-mail").fill(email)
    form.get_by_label("Password", exact=True).fill(PASSWORD)
    form.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible()


OWNER_TEAM = "Olivia Owner's team (owner)"


def in_owners_team(page: Page) -> None:
    """Earlier files make the owner a member of a second team; act in the owner's own."""
    switcher = page.get_by_label("Team", exact=True)
    if switcher.count() and switcher.locator("option:checked").inner_text() != OWNER_TEAM:
        switcher.select_option(label=OWNER_TEAM)
    expect(page.locator(".role-badge")).to_have_text("owner")


def nav(page: Page, name: str) -> None:
    """Open a page from the menu and wait until it has rendered."""
    page.get_by_role("navigation", name="Sections").get_by_role(
        "link", name=name, exact=True
    ).click()
    expect(page.locator("main")).not_to_have_attribute("aria-busy", "true")
    expect(page.locator(f'main .page[data-page="{slug(name)}"]')).to_be_visible()


def fill_headers(scope, group: str, headers: dict[str, str]) -> None:
    """Add header rows (name, value) to a tool's header editor, the group named `group`."""
    editor = scope.get_by_role("group", name=group, exact=True)
    for name, value in headers.items():
        editor.get_by_role("button", name="Add header").click()
        editor.get_by_label("Header name").last.fill(name)
        editor.get_by_label("Header value").last.fill(value)


def accept_invitation(browser: Browser, stack: Stack, link: str, name: str) -> Tab:
    """Open an invitation's link in a browser that knows nobody and join as `name`."""
    joined = Tab(browser, stack)
    page = joined.page
    page.goto(link)
    expect(page.get_by_role("heading", name="Join the team")).to_be_visible()
    page.get_by_label("Your name").fill(name)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Accept invitation").click()
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible()
    expect(page.locator(".role-badge")).to_have_text("member")
    return joined


def start_new_tool(page: Page, name: str, description: str, kind: str = "") -> Any:
    """Open the New tool form from the Tools page, named and described; its form locator."""
    page.get_by_role("link", name="New tool").click()
    editor = page.get_by_role("form", name="New tool")
    editor.get_by_label("Name", exact=True).fill(name)
    editor.get_by_label("Description").fill(description)
    if kind:
        editor.get_by_label("Type").select_option(kind)
    return editor


def slug(name: str) -> str:
    """The hash (and data-page) of a menu entry."""
    return {
        "Chat preview": "preview",
        "Form submissions": "submissions",
        "API keys": "api-keys",
        "Audit log": "audit-log",
    }.get(name, name.lower())


def image_stats(page: Page, png: bytes) -> dict:
    """Decode a screenshot in the browser: sampled distinct colours and the commonest's share."""
    data_url = "data:image/png;base64," + base64.b64encode(png).decode()
    return page.evaluate(
        """async (src) => {
            const img = new Image();
            img.src = src;
            await img.decode();
            const canvas = new OffscreenCanvas(img.width, img.height);
            const g = canvas.getContext("2d");
            g.drawImage(img, 0, 0);
            const px = g.getImageData(0, 0, img.width, img.height).data;
            const counts = new Map();
            let n = 0;
            for (let i = 0; i < px.length; i += 4 * 7) {
                const key = (px[i] >> 3) << 10 | (px[i + 1] >> 3) << 5 | (px[i + 2] >> 3);
                counts.set(key, (counts.get(key) || 0) + 1);
                n++;
            }
            return {width: img.width, height: img.height, colours: counts.size,
                    dominant: Math.max(...counts.values()) / n};
        }""",
        data_url,
    )


def wait_for(check, timeout: float = 5.0):
    """Poll `check` until it is truthy (server-side effects land asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def create_api_key(page: Page) -> str:
    """Create an API key on the API keys page and read it from the one-time reveal."""
    nav(page, "API keys")
    form = page.get_by_role("form", name="Create an API key")
    form.get_by_label("Key name").fill("browser test")
    form.get_by_role("button", name="Create API key").click()
    expect(page.get_by_text("it is shown only once")).to_be_visible()
    key = page.locator("#new-api-key").inner_text()
    assert key.startswith("asvc_")
    return key


def owner_key(stack: Stack) -> str:
    """A fresh API key of the owner, made directly in the database (test set-up only)."""

    async def make() -> str:
        db = stack.app[app_keys.db_key]
        user, team = await accounts.ensure_user_with_team(
            db, email=OWNER_EMAIL, name="", plan="pro"
        )
        async with db.write() as conn:
            created = await accounts.create_api_key(
                conn, team_id=team.id, user_id=user.id, name="checks"
            )
        return created.key

    return stack.run(make())


def api_status(stack: Stack, method: str, path: str, key: str, body: Any) -> int:
    """The status of an API call that must succeed (201) or be refused as invalid (400)."""
    try:
        stack.api(method, path, key, body)
    except urllib.error.HTTPError as exc:
        assert exc.code == 400, exc.read()
        return exc.code
    return 201


def chat_as_key(stack: Stack, key: str, agent_id: str, text: str, **extra: Any) -> None:
    """One chat turn over the API (its stream read to the end), as an external client;
    `extra` joins the body (`user={...}` names the visitor)."""
    body = {"agentId": agent_id, "messages": [{"role": "user", "content": text}], **extra}
    request = urllib.request.Request(
        stack.url + "/api/v1/chat",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 (loopback)
        resp.read()


def public_post(stack: Stack, path: str, body: dict) -> Any:
    """POST to a public endpoint without credentials, as the widget does."""
    request = urllib.request.Request(
        stack.url + "/api/v1" + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 (loopback)
        return json.loads(resp.read() or b"null")


def delivered_submission(stack: Stack, key: str, agent_name: str) -> dict:
    """A new agent with a form tool delivering to the stack's receiver, and one submission
    of it, delivered: for a file that must not count on the first day's data."""
    agent = stack.api("POST", "/agents", key, {"name": agent_name})["data"]
    tool = stack.api(
        "POST",
        "/tools",
        key,
        {
            "agentId": agent["id"],
            "name": "contact_form",
            "description": "Collect the visitor's contact details",
            "executionType": "form",
            "formSchema": {"fields": [{"name": "email", "type": "email", "label": "E-mail"}]},
            "formWebhookUrl": stack.receiver_url + "/hook",
        },
    )
    tool = tool.get("data", tool)
    submitted = public_post(
        stack,
        "/form-submissions/submit",
        {
            "toolId": tool["id"],
            "formData": {"email": "visitor@example.org"},
            "fieldsCompleted": ["email"],
        },
    )

    def delivered() -> bool:
        sub = stack.api("GET", f"/form-submissions/{submitted['submissionId']}", key)
        return sub["status"] == "webhook_success"

    assert wait_for(delivered)
    return agent
