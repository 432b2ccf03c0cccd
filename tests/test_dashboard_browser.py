"""The dashboard in Debian's Chromium (Playwright): first run, sign-in and every main flow.

One server thread runs the real app (public_url = its own loopback address, so the Origin
check of cookie sessions applies as in production) and a webhook receiver. Each test gets
a fresh browser context. A missing Chromium fails these tests; they never skip.

The tests share one instance and run in file order, like a user's first day: the first
creates the owner, the main-flow test creates the agent, tools, trigger and conversations
that the later ones read. Run the file whole.
"""

from __future__ import annotations

import asyncio
import base64
import csv
import io
import json
import re
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from aiohttp import web
from playwright.sync_api import Browser, Page, expect, sync_playwright

from agentsvc import keys
from agentsvc.api import all_endpoints
from agentsvc.api.openapi import model_id_pattern
from agentsvc.api.widget import embed_snippet
from agentsvc.app import create_app
from agentsvc.services import accounts
from agentsvc.store import mail_outbox
from tests.conftest import make_settings
from tests.fakes.oauth import FakeOAuth

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
OWNER_EMAIL = "owner@example.com"
PASSWORD = "correct horse battery"  # noqa: S105 (a test password)
PAGES = [
    "Agents",
    "Knowledge",
    "Tools",
    "Triggers",
    "Chat preview",
    "Conversations",
    "Form submissions",
    "Analytics",
    "Widget",
    "Team",
    "API keys",
    "Secrets",
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
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()

    def outbox(self, to: str) -> list:
        async def read():
            await self.app[keys.mailer_key].drain()
            return await mail_outbox.list_recent(self.app[keys.db_key].reader, to)

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


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[Stack]:
    running = Stack(tmp_path_factory.mktemp("dashboard"))
    running.start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), f"Chromium is required at {CHROMIUM} (apt-get install chromium)"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("dashboard-screenshots")


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


def _route_patterns() -> list[tuple[str, re.Pattern]]:
    return [
        (e.method, re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", e.full_path) + "$"))
        for e in all_endpoints()
    ]


def check_requests(stack: Stack, requests: list[tuple[str, str]]) -> None:
    """Every request the dashboard made went to this instance, to a documented endpoint."""
    patterns = _route_patterns()
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


@pytest.fixture
def tab(browser, stack) -> Iterator[Tab]:
    opened = Tab(browser, stack)
    yield opened
    opened.close()


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
    page.goto(stack.url + "/")
    form = page.get_by_role("form", name="Sign in with password")
    form.get_by_label("E-mail").fill(email)
    form.get_by_label("Password", exact=True).fill(PASSWORD)
    form.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible()


def nav(page: Page, name: str) -> None:
    page.get_by_role("navigation", name="Sections").get_by_role(
        "link", name=name, exact=True
    ).click()
    expect(page.locator("main")).not_to_have_attribute("aria-busy", "true")
    expect(page.locator(f'main .page[data-page="{_slug(name)}"]')).to_be_visible()


def _slug(name: str) -> str:
    return {
        "Chat preview": "preview",
        "Form submissions": "submissions",
        "API keys": "api-keys",
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
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


# ── first run ──


def test_first_run_offers_owner_creation_only_while_no_user_exists(tab, stack):
    page = tab.page
    page.goto(stack.url + "/")
    expect(page.get_by_role("heading", name="Welcome — create the owner account")).to_be_visible()
    page.get_by_label("Your name").fill("Olivia Owner")
    page.get_by_label("E-mail").fill(OWNER_EMAIL)
    page.get_by_label("Password", exact=True).fill("short")
    page.get_by_role("button", name="Create owner account").click()
    expect(page.get_by_role("alert")).to_contain_text("at least 8 characters")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Create owner account").click()
    # Signed in straight away, as the owner.
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible()
    expect(page.locator(".role-badge")).to_have_text("owner")
    expect(page.get_by_role("link", name="New agent")).to_be_visible()

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.reload()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_role("button", name="Create owner account")).to_have_count(0)
    expect(page.get_by_role("button", name="E-mail me a sign-in link")).to_be_visible()

    form = page.get_by_role("form", name="Sign in with password")
    form.get_by_label("E-mail").fill(OWNER_EMAIL)
    form.get_by_label("Password", exact=True).fill("wrong password")
    form.get_by_role("button", name="Sign in").click()
    expect(form.get_by_role("alert")).to_contain_text("Invalid email or password")


def test_magic_link_request_from_the_sign_in_page(tab, stack):
    ensure_owner(stack)
    page = tab.page
    page.goto(stack.url + "/")
    magic = page.get_by_role("form", name="Sign in with a link")
    magic.get_by_label("E-mail").fill(OWNER_EMAIL)
    magic.get_by_role("button", name="E-mail me a sign-in link").click()
    expect(page.get_by_role("status").filter(has_text="sign-in link is on its way")).to_be_visible()
    mail = stack.outbox(OWNER_EMAIL)
    link = re.search(r"(http://\S+token=\S+)", mail[0].body).group(1)
    page.goto(link)
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible()


def test_oauth_button_signs_in_through_the_configured_provider(tab, stack):
    ensure_owner(stack)
    page = tab.page
    page.goto(stack.url + "/")
    button = page.get_by_role("link", name="Sign in with GitHub")
    expect(page.get_by_role("link", name="Sign in with Google")).to_have_count(0)
    expect(button).to_have_attribute("href", "/api/v1/auth/sign-in/github?callbackUrl=%2F")
    button.click()
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible()
    expect(page.locator(".topbar .who")).to_have_text("Octo Cat")
    assert stack.oauth.authorize_requests[-1]["code_challenge_method"] == "S256"


# ── the owner's main flows ──


def test_owner_creates_an_agent_tools_and_a_trigger_and_chats(tab, stack):
    ensure_owner(stack)
    page = tab.page
    sign_in(page, stack)

    # Agent.
    page.get_by_role("link", name="New agent").click()
    expect(page.get_by_text("builtin (offline). Other models need a provider")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("Support bot")
    page.get_by_label("Temperature (0-100)").fill("30")
    page.get_by_label("System prompt").fill(
        "We ship worldwide within 3 days. Returns are free for 30 days."
    )
    page.get_by_role("button", name="Create agent").click()
    expect(page.get_by_role("heading", name="Support bot")).to_be_visible()
    expect(page.get_by_label("Temperature (0-100)")).to_have_value("30")
    page.get_by_label("Model").fill("nosuchprovider/model")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("alert")).to_contain_text("VALIDATION_ERROR")
    page.get_by_label("Model").fill("builtin")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator(".toast").filter(has_text="Saved Support bot")).to_be_visible()

    # A mock tool: bad JSON is caught in the page, the API's own 400 is shown inline.
    nav(page, "Tools")
    expect(page.get_by_text("0 of unlimited tools on the pro plan")).to_be_visible()
    page.get_by_role("link", name="New tool").click()
    editor = page.get_by_role("form", name="New tool")
    editor.get_by_label("Name", exact=True).fill("order_status")
    editor.get_by_label("Description").fill("Look up the status of an order")
    schema = editor.get_by_label("Input schema (JSON Schema)")
    schema.fill('{"type": "object", "properties": {"orderId": ')
    expect(editor.locator(".hint.bad")).to_contain_text("not valid JSON")
    editor.get_by_role("button", name="Create tool").click()
    expect(editor.get_by_role("alert")).to_contain_text("inputSchema: not valid JSON")
    schema.fill(
        '{"type": "object", "properties": {"orderId": {"type": "strin"}}, "required": ["orderId"]}'
    )
    editor.get_by_role("button", name="Create tool").click()
    expect(editor.get_by_role("alert")).to_contain_text("inputSchema.properties.orderId.type")
    schema.fill(
        '{"type": "object", "properties": {"orderId": {"type": "string", "minLength": "x"}}}'
    )
    editor.get_by_role("button", name="Create tool").click()
    expect(editor.get_by_role("alert")).to_contain_text("(VALIDATION_ERROR)")
    schema.fill(
        '{"type": "object", "properties": {"orderId": {"type": "string",'
        ' "description": "The order number"}}, "required": ["orderId"]}'
    )
    expect(editor.locator(".hint.good")).to_have_text("Looks valid.")
    editor.get_by_label("Response").fill("Order shipped on Monday")
    editor.get_by_role("button", name="Create tool").click()
    expect(page.get_by_role("heading", name="order_status")).to_be_visible()

    # Test run of the tool through the builtin model.
    run = page.get_by_role("form", name="Test run")
    run.get_by_label("Input (JSON)").fill('{"orderId": "A-17"}')
    run.get_by_role("button", name="Run tool").click()
    expect(run.locator(".test-output")).to_contain_text("Order shipped on Monday")

    # A duplicate name is the API's DUPLICATE_NAME, shown inline.
    nav(page, "Tools")
    page.get_by_role("link", name="New tool").click()
    editor = page.get_by_role("form", name="New tool")
    editor.get_by_label("Name", exact=True).fill("order_status")
    editor.get_by_label("Description").fill("Again")
    editor.get_by_role("button", name="Create tool").click()
    expect(editor.get_by_role("alert")).to_contain_text("DUPLICATE_NAME")

    # A form tool delivering to a loopback webhook.
    editor.get_by_label("Name", exact=True).fill("contact_form")
    editor.get_by_label("Description").fill("Collect the visitor's contact details")
    editor.get_by_label("Type").select_option("form")
    expect(editor.get_by_label("Response")).to_be_hidden()  # only the chosen type's fields
    expect(editor.get_by_label("URL", exact=True)).to_be_hidden()
    editor.get_by_label("Webhook URL").fill(stack.receiver_url + "/hook")
    editor.get_by_role("button", name="Create tool").click()
    expect(page.get_by_role("heading", name="contact_form")).to_be_visible()
    expect(page.get_by_text("Webhook signing secret")).to_contain_text("whsec_")
    nav(page, "Tools")
    expect(page.get_by_role("link", name="contact_form")).to_be_visible()
    expect(page.get_by_text("2 of unlimited tools")).to_be_visible()

    # Triggers: from a template, a show_form trigger, toggled off and on.
    nav(page, "Triggers")
    page.locator(".template").filter(has_text="Pricing page help").get_by_role(
        "button", name="Use template"
    ).click()
    form = page.get_by_role("form", name="New trigger")
    expect(form.get_by_label("Page (glob)")).to_have_value("/pricing")
    form.get_by_role("button", name="Create trigger").click()
    expect(page.get_by_role("link", name="Pricing page help")).to_be_visible()

    page.get_by_role("link", name="New trigger").click()
    form = page.get_by_role("form", name="New trigger")
    form.get_by_label("Name", exact=True).fill("Leaving? Leave your e-mail")
    form.get_by_label("Trigger type").select_option("custom_event")
    form.get_by_label("Event name").fill("cart_updated")
    form.get_by_label("Event data match (JSON, optional)").fill('{"total": {"$regex": "9"}}')
    form.get_by_label("Action").select_option("show_form")
    expect(form.get_by_label("Form tool")).to_have_value(re.compile("^tool_"))
    form.get_by_role("button", name="Create trigger").click()
    expect(form.get_by_role("alert")).to_contain_text("$regex")  # the API's 400, inline
    form.get_by_label("Trigger type").select_option("scroll_depth")
    form.get_by_label("Scroll depth (%)").fill("150")
    form.get_by_role("button", name="Create trigger").click()  # the browser refuses 150
    assert form.get_by_label("Scroll depth (%)").evaluate("el => el.validity.rangeOverflow")
    form.get_by_label("Scroll depth (%)").fill("60")
    form.get_by_role("button", name="Create trigger").click()
    row = page.get_by_role("row").filter(has_text="Leaving? Leave your e-mail")
    expect(row).to_contain_text("scroll_depth at 60 %")
    toggle = row.get_by_role("button", name="Enabled: Leaving? Leave your e-mail")
    expect(toggle).to_have_text("On")
    toggle.click()
    expect(toggle).to_have_text("Off")
    expect(toggle).to_have_attribute("aria-pressed", "false")

    # Chat preview: a streamed answer from the prompt, then the form tool filled in.
    nav(page, "Chat preview")
    page.get_by_label("Message").fill("Do you ship worldwide?")
    page.get_by_role("button", name="Send").click()
    log = page.get_by_role("log", name="Transcript")
    expect(log.locator(".msg.assistant").last).to_contain_text("within 3 days")
    expect(log.locator(".msg.assistant").last).not_to_have_attribute("aria-busy", "true")
    log.get_by_role("button", name="Good answer").click()
    expect(log.get_by_role("button", name="Good answer")).to_have_attribute("aria-pressed", "true")
    page.get_by_label("Message").fill("/tool contact_form")
    page.get_by_role("button", name="Send").click()
    chat_form = page.get_by_role("form", name="Form contact_form")
    chat_form.get_by_label("E-mail").fill("visitor@example.org")
    chat_form.get_by_label("Message").fill("Call me back, please")
    chat_form.get_by_role("button", name="Send").click()
    expect(chat_form).to_contain_text("Thanks! We will be in touch.")
    expect(chat_form).to_contain_text("webhook delivered")
    assert wait_for(lambda: stack.received)
    assert stack.received[-1]["body"]["formData"] == {
        "email": "visitor@example.org",
        "message": "Call me back, please",
    }


def test_owner_reads_conversations_submissions_and_analytics(tab, stack):
    ensure_owner(stack)
    page = tab.page
    sign_in(page, stack)
    key = _create_api_key(page)
    agent_id = page.locator("#agent-picker").input_value()
    assert agent_id, "the previous test created an agent"

    # Conversations: the preview conversation is listed and readable.
    nav(page, "Conversations")
    page.get_by_label("Feedback filter").select_option("up")  # rated in the preview
    expect(page.get_by_role("row").filter(has_text="Do you ship")).to_contain_text("👍 1")
    page.get_by_label("Feedback filter").select_option("")
    link = page.get_by_role("link", name="Do you ship worldwide?")
    expect(link).to_be_visible()
    link.click()
    expect(page.get_by_role("log", name="Messages")).to_contain_text("within 3 days")

    # Rate the answer as an external client would; the feedback filter finds it.
    conversations = stack.api("GET", f"/conversations?agentId={agent_id}", key)["data"]
    preview = next(c for c in conversations if c["title"] == "Do you ship worldwide?")
    conv = stack.api("GET", f"/conversations/{preview['id']}", key)["data"]
    answer = next(m for m in conv["messages"] if m["role"] == "assistant")
    stack.api(
        "POST",
        f"/conversations/{conv['id']}/feedback",
        key,
        {"messageId": answer["id"], "rating": "down"},
    )
    nav(page, "Conversations")
    page.get_by_label("Feedback filter").select_option("up")
    expect(page.get_by_text("No conversation on this page has that feedback.")).to_be_visible()
    page.get_by_label("Feedback filter").select_option("down")
    expect(page.get_by_role("link", name="Do you ship worldwide?")).to_be_visible()
    expect(page.get_by_role("row").filter(has_text="Do you ship")).to_contain_text("👎 1")
    page.get_by_role("link", name="Do you ship worldwide?").click()
    expect(page.get_by_label("Rated down")).to_be_visible()

    # CSV export, built in the page from the API's answers.
    nav(page, "Conversations")
    page.get_by_label("Feedback filter").select_option("")
    with page.expect_download() as download:
        page.get_by_role("button", name="Export CSV").click()
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
    assert {r["content"] for r in rows} >= {"Do you ship worldwide?", "/tool contact_form"}
    assert any(r["rating"] == "down" for r in rows)
    assert download.value.suggested_filename == "conversations-support-bot.csv"

    # Submissions: status filter, delivery log.
    nav(page, "Form submissions")
    expect(page.get_by_role("row").filter(has_text="contact_form")).to_contain_text(
        "webhook_success"
    )
    page.get_by_label("Status filter").select_option("webhook_failed")
    expect(page.get_by_text("No submissions match.")).to_be_visible()
    page.get_by_label("Status filter").select_option("")
    page.get_by_role("row").filter(has_text="contact_form").get_by_role("link").click()
    expect(page.get_by_role("heading", name="Submission of contact_form")).to_be_visible()
    expect(page.get_by_role("cell", name="visitor@example.org", exact=True)).to_be_visible()
    delivery = page.locator(".delivery")
    expect(delivery).to_contain_text("Webhook")
    expect(delivery).to_contain_text(stack.receiver_url + "/hook")
    expect(delivery.get_by_role("cell", name="200", exact=True)).to_be_visible()

    # A delivery that failed every attempt is replayed from the dashboard.
    tools = stack.api("GET", f"/tools?agentId={agent_id}", key)
    form_tool = next(t for t in tools if t["name"] == "contact_form")
    stack.failing = True
    submitted = _public_post(
        stack,
        "/form-submissions/submit",
        {
            "toolId": form_tool["id"],
            "formData": {"email": "late@example.org"},
            "fieldsCompleted": ["email"],
        },
    )

    def failed():
        sub = stack.api("GET", f"/form-submissions/{submitted['submissionId']}", key)
        return sub["status"] == "webhook_failed"

    assert wait_for(failed)
    nav(page, "Form submissions")
    page.get_by_label("Status filter").select_option("webhook_failed")
    row = page.get_by_role("row").filter(has_text="contact_form")
    expect(row).to_have_count(1)
    row.get_by_role("link").click()
    expect(page.get_by_text("503").first).to_be_visible()
    stack.failing = False
    page.get_by_role("button", name="Redeliver").click()
    expect(page.locator("main")).to_contain_text("webhook_success")
    expect(page.get_by_role("button", name="Redeliver")).to_have_count(0)
    assert stack.received[-1]["body"]["formData"] == {"email": "late@example.org"}
    nav(page, "Form submissions")
    page.get_by_label("Status filter").select_option("")

    # Analytics: the funnel and the trigger chart are drawn as SVG.
    nav(page, "Analytics")
    funnel = page.get_by_role("img", name="Form funnel of contact_form")
    expect(funnel).to_be_visible()
    expect(funnel.locator("rect.bar")).to_have_count(5)
    bars = page.get_by_role("img", name="Trigger fired and converted counts")
    expect(bars).to_be_visible()
    expect(bars.locator("rect.bar")).to_have_count(2 * 2 + 2)  # two triggers x two series + legend
    expect(
        page.locator(".chart-card").get_by_role("cell", name="Pricing page help", exact=True)
    ).to_be_visible()

    # Trigger stats move with the widget's events.
    triggers = stack.api("GET", f"/triggers?agentId={agent_id}", key)
    pricing = next(t for t in triggers if t["name"] == "Pricing page help")
    for event in ("fired", "fired", "converted"):
        _public_post(
            stack,
            "/triggers/event",
            {
                "agentId": agent_id,
                "triggerId": pricing["id"],
                "triggerName": pricing["name"],
                "triggerType": pricing["triggerType"],
                "actionType": pricing["actionType"],
                "eventType": event,
                "sessionId": "s1",
            },
        )

    def counted():
        stats = stack.api("GET", f"/triggers/stats?agentId={agent_id}", key)
        return stats.get(pricing["id"], {}).get("firedCount") == 2

    assert wait_for(counted)
    nav(page, "Triggers")
    row = page.get_by_role("row").filter(has_text="Pricing page help")
    expect(row.get_by_role("cell").nth(4)).to_have_text("2")
    expect(row.get_by_role("cell").nth(5)).to_have_text("1")


def test_owner_manages_secrets_keys_and_the_widget(tab, stack):
    ensure_owner(stack)
    page = tab.page
    sign_in(page, stack)

    nav(page, "Secrets")
    form = page.get_by_role("form", name="Set a secret")
    form.get_by_label("Name").fill("CRM_TOKEN")
    form.get_by_label("Value").fill("s3cr3t-value")
    form.get_by_role("button", name="Save secret").click()
    expect(page.get_by_role("cell", name="CRM_TOKEN", exact=True)).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("s3cr3t-value")

    # An http tool using the secret: the test run reaches the receiver with its value.
    nav(page, "Tools")
    page.get_by_role("link", name="New tool").click()
    editor = page.get_by_role("form", name="New tool")
    editor.get_by_label("Name", exact=True).fill("create_lead")
    editor.get_by_label("Description").fill("Create a lead in the CRM")
    editor.get_by_label("Input schema (JSON Schema)").fill(
        '{"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]}'
    )
    editor.get_by_label("Type").select_option("http")
    editor.get_by_label("URL", exact=True).fill(stack.receiver_url + "/leads/{email}")
    editor.get_by_label("Method").select_option("POST")
    editor.get_by_label("Headers (JSON object)").fill('{"Authorization": "Bearer {{CRM_TOKEN}}"}')
    editor.get_by_role("button", name="Create tool").click()
    expect(page.get_by_role("heading", name="create_lead")).to_be_visible()
    run = page.get_by_role("form", name="Test run")
    run.get_by_label("Input (JSON)").fill('{"email": "a b@example.org"}')
    run.get_by_role("button", name="Run tool").click()
    expect(run.locator(".test-output")).to_contain_text('"ok": true')
    lead = stack.received[-1]
    assert lead["path"] == "/leads/a b@example.org"
    assert lead["headers"]["Authorization"] == "Bearer s3cr3t-value"

    # API keys: shown once, then only masked; revoking stops it at once.
    key = _create_api_key(page)
    assert stack.api("GET", "/secrets", key)[0]["name"] == "CRM_TOKEN"
    page.get_by_role("button", name="Done").click()
    expect(page.locator("#new-api-key")).to_have_count(0)
    expect(page.locator("main")).not_to_contain_text(key)
    masked = f"{key[:9]}…{key[-4:]}"
    row = page.get_by_role("row").filter(has_text=masked)
    row.get_by_role("button", name=re.compile("^Revoke")).click()
    page.get_by_role("dialog").get_by_role("button", name="Revoke key").click()
    expect(page.get_by_role("row").filter(has_text=masked)).to_have_count(0)
    with pytest.raises(urllib.error.HTTPError) as refused:
        stack.api("GET", "/secrets", key)
    assert refused.value.code == 401

    # Widget: the snippet names the agent and the instance; copy; live preview.
    nav(page, "Widget")
    agent_id = page.locator("#agent-picker").input_value()
    snippet = page.locator("#embed-snippet")
    # The very snippet the README and the demo page document.
    expect(snippet).to_have_text(embed_snippet({"agentId": agent_id}, f"{stack.url}/widget.js"))
    page.get_by_role("button", name="Copy snippet").click()
    expect(page.locator(".toast").filter(has_text="copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == snippet.inner_text()
    frame = page.frame_locator("iframe[title='Widget preview']")
    expect(frame.get_by_role("button", name="Open chat")).to_be_visible()


def test_knowledge_documents_feed_the_agent(tab, stack):
    ensure_owner(stack)
    page = tab.page
    sign_in(page, stack)
    nav(page, "Knowledge")
    text = page.get_by_role("form", name="Add text")
    text.get_by_label("Title").fill("Warranty")
    text.get_by_label("Content").fill(
        "Every kettle carries a two year warranty covering the heater."
    )
    text.get_by_role("button", name="Add text").click()
    docs = page.get_by_role("table", name="Documents")
    expect(docs.get_by_role("row").filter(has_text="Warranty")).to_contain_text("ready")

    upload = page.get_by_role("form", name="Upload a file")
    upload.get_by_label("File").set_input_files(
        {"name": "care.md", "mimeType": "text/markdown", "buffer": b"# Care\n\nDescale monthly."}
    )
    upload.get_by_role("button", name="Upload").click()
    expect(docs.get_by_role("row").filter(has_text="care.md")).to_contain_text("markdown")
    upload.get_by_label("File").set_input_files(
        {"name": "photo.png", "mimeType": "image/png", "buffer": b"\x89PNG\r\n"}
    )
    upload.get_by_role("button", name="Upload").click()
    expect(upload.get_by_role("alert")).to_be_visible()  # the API's refusal, inline

    docs.get_by_role("link", name="Warranty").click()
    expect(page.locator(".document-text")).to_have_text(
        "Every kettle carries a two year warranty covering the heater."
    )
    nav(page, "Chat preview")
    page.get_by_label("Message").fill("What warranty does the kettle carry?")
    page.get_by_role("button", name="Send").click()
    answer = page.get_by_role("log", name="Transcript").locator(".msg.assistant").last
    expect(answer).to_contain_text("two year warranty")


def test_owner_edits_and_deletes(tab, stack):
    ensure_owner(stack)
    page = tab.page
    sign_in(page, stack)

    # Edit a tool (PUT) and a trigger (PUT).
    nav(page, "Tools")
    page.get_by_role("link", name="order_status").click()
    editor = page.get_by_role("form", name="Edit tool")
    editor.get_by_label("Description").fill("Look up where an order is")
    editor.get_by_label("Enabled").uncheck()
    editor.get_by_role("button", name="Save tool").click()
    expect(page.locator(".toast").filter(has_text="Tool saved")).to_be_visible()
    nav(page, "Tools")
    row = page.get_by_role("row").filter(has_text="order_status")
    expect(row).to_contain_text("Look up where an order is")
    expect(row.get_by_role("cell").nth(2)).to_have_text("no")

    nav(page, "Triggers")
    page.get_by_role("link", name="Pricing page help").click()
    form = page.get_by_role("form", name="Edit trigger")
    form.get_by_label("Priority").fill("5")
    form.get_by_label("Pre-filled message (optional)").fill("Questions about plans?")
    form.get_by_role("button", name="Save trigger").click()
    row = page.get_by_role("row").filter(has_text="Pricing page help")
    expect(row.get_by_role("cell").nth(3)).to_have_text("5")

    # Delete a trigger, a tool and a conversation, each after a confirmation.
    page.get_by_role("link", name="Leaving? Leave your e-mail").click()
    page.get_by_role("button", name="Delete trigger").click()
    page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
    expect(page.get_by_role("heading", name="Leaving? Leave your e-mail")).to_be_visible()
    page.get_by_role("button", name="Delete trigger").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete trigger").click()
    expect(page.get_by_role("link", name="Pricing page help")).to_be_visible()
    expect(page.get_by_role("link", name="Leaving? Leave your e-mail")).to_have_count(0)

    nav(page, "Tools")
    page.get_by_role("link", name="create_lead").click()
    page.get_by_role("button", name="Delete tool").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete tool").click()
    expect(page.get_by_role("link", name="order_status")).to_be_visible()
    expect(page.get_by_role("link", name="create_lead")).to_have_count(0)

    nav(page, "Conversations")
    page.get_by_role("link", name=re.compile(r"^\/tool order_status")).click()
    page.get_by_role("button", name="Delete conversation").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page.get_by_role("link", name="Do you ship worldwide?")).to_be_visible()
    expect(page.get_by_role("link", name=re.compile(r"^\/tool order_status"))).to_have_count(0)

    # Create and delete an agent; the picker follows.
    nav(page, "Agents")
    page.get_by_role("link", name="New agent").click()
    page.get_by_label("Name", exact=True).fill("Temporary")
    page.get_by_role("button", name="Create agent").click()
    expect(page.locator("#agent-picker")).to_contain_text("Temporary")
    page.get_by_role("button", name="Delete agent").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete agent").click()
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name="Temporary")).to_have_count(0)
    expect(page.locator("#agent-picker")).not_to_contain_text("Temporary")


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
    key = _owner_key(stack)
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
        accepted = _api_status(stack, "POST", "/tools", key, body) == 201
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
        accepted = _api_status(stack, "POST", "/tools", key, body) == 201
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


def test_csv_export_quotes_cells_and_defuses_formulas(tab, stack):
    conversation = {
        "id": "conv_1",
        "title": 'He said "hi", then left',
        "user": {"email": "a@b.c"},
        "createdAt": "t0",
        "messages": [
            {"id": "m1", "role": "user", "content": '=HYPERLINK("http://x")', "createdAt": "t1"},
            {
                "id": "m2",
                "role": "assistant",
                "content": "two\nlines",
                "rating": "up",
                "createdAt": "t2",
            },
        ],
    }
    page = tab.page
    page.goto(stack.url + "/")
    text = page.evaluate(
        """async (conv) => {
            const m = await import("/dashboard/page-conversations.js");
            return m.conversationsCsv([conv]);
        }""",
        conversation,
    )
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:3] == ["conversationId", "title", "userEmail"]
    assert rows[1][1] == 'He said "hi", then left'
    assert rows[1][6] == '\'=HYPERLINK("http://x")'
    assert rows[1][7] == ""
    assert rows[2][6] == "two\nlines" and rows[2][7] == "up"
    assert text.endswith("\r\n")


# ── team and roles ──


def test_invited_member_sees_no_owner_actions_and_can_be_removed(browser, stack):
    ensure_owner(stack)
    owner = Tab(browser, stack)
    sign_in(owner.page, stack)
    page = owner.page
    nav(page, "Team")
    invite = page.get_by_role("form", name="Invite a member")
    invite.get_by_label("E-mail").fill("mia@example.com")
    invite.get_by_role("button", name="Send invitation").click()
    expect(page.get_by_role("row").filter(has_text="mia@example.com")).to_contain_text("pending")
    invite.get_by_label("E-mail").fill("typo@example.com")
    invite.get_by_role("button", name="Send invitation").click()
    typo = page.get_by_role("row").filter(has_text="typo@example.com")
    typo.get_by_role("button", name="Cancel invitation to typo@example.com").click()
    expect(typo).to_contain_text("cancelled")

    # No SMTP configured: the invitation is in the outbox, with its link to this instance.
    mail = stack.outbox("mia@example.com")
    link = re.search(r"(http://\S+/accept-invitation\?token=\S+)", mail[0].body).group(1)
    assert link.startswith(stack.url)

    member = Tab(browser, stack)
    mpage = member.page
    mpage.goto(link)
    expect(mpage.get_by_role("heading", name="Join the team")).to_be_visible()
    mpage.get_by_label("Your name").fill("Mia Member")
    mpage.get_by_label("Password", exact=True).fill(PASSWORD)
    mpage.get_by_role("button", name="Accept invitation").click()
    expect(mpage.get_by_role("heading", name="Agents", exact=True)).to_be_visible()
    expect(mpage.locator(".role-badge")).to_have_text("member")
    # Owner-only actions are not offered to a member...
    expect(mpage.get_by_role("link", name="New agent")).to_have_count(0)
    mpage.get_by_role("link", name="Support bot").click()
    expect(mpage.get_by_role("button", name="Save changes")).to_be_visible()
    expect(mpage.get_by_role("button", name="Delete agent")).to_have_count(0)
    nav(mpage, "Team")
    expect(mpage.get_by_role("form", name="Invite a member")).to_have_count(0)
    expect(mpage.get_by_role("button", name=re.compile("^Remove"))).to_have_count(0)
    expect(mpage.get_by_role("cell", name="owner@example.com", exact=True)).to_be_visible()
    # ...and the API refuses them anyway, with the cookie the page carries.
    status = mpage.evaluate(
        """async () => (await fetch("/api/v1/agents", {method: "POST",
            headers: {"Content-Type": "application/json"},
            body: JSON.stringify({name: "Sneaky"})})).status"""
    )
    assert status == 403
    # Members may edit tools (the API allows it), so they see the tool editor.
    nav(mpage, "Tools")
    expect(mpage.get_by_role("link", name="New tool")).to_be_visible()

    # The owner removes the member; the member's session loses the team at once.
    page.reload()
    page.get_by_role("button", name="Remove mia@example.com").click()
    page.get_by_role("dialog").get_by_role("button", name="Remove member").click()
    members = page.get_by_role("table", name="Members")
    expect(members.get_by_role("cell", name="mia@example.com", exact=True)).to_have_count(0)
    expect(members.get_by_role("cell", name="owner@example.com", exact=True)).to_be_visible()
    mpage.reload()
    expect(mpage.get_by_role("heading", name="Sign in")).to_be_visible()
    member.close()
    owner.close()


# ── screenshots ──


def test_every_main_page_renders_a_non_empty_layout(tab, stack, shots):
    ensure_owner(stack)
    page = tab.page
    sign_in(page, stack)
    for name in PAGES:
        nav(page, name)
        if name == "Widget":  # the live preview frame is part of that page's layout
            frame = page.frame_locator("iframe[title='Widget preview']")
            expect(frame.get_by_role("button", name="Open chat")).to_be_visible()
        main = page.locator("main")
        expect(main.get_by_role("heading", level=1)).to_be_visible()
        text = main.inner_text()
        assert len(text.strip()) > 40, (name, text)
        assert "could not" not in text.lower(), (name, text)
        assert main.locator(".form-error").count() == 0, (name, text)
        box = main.bounding_box()
        assert box and box["width"] > 600 and box["height"] > 150, (name, box)
        png = page.screenshot(full_page=True)
        (shots / f"{_slug(name)}.png").write_bytes(png)
        stats = image_stats(page, png)
        assert stats["width"] == 1280, stats
        assert stats["colours"] >= 12, (name, stats)
        assert stats["dominant"] < 0.97, (name, stats)
    for view in ("signin", "setup"):
        assert not (shots / f"{view}.png").exists()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    png = page.screenshot()
    (shots / "signin.png").write_bytes(png)
    assert image_stats(page, png)["colours"] >= 8


# ── last: joining a second team changes where the owner signs in ──


def test_signed_in_user_accepts_an_invitation_and_switches_teams(browser, stack):
    ensure_owner(stack)
    octo = Tab(browser, stack)
    octo.page.goto(stack.url + "/")
    octo.page.get_by_role("link", name="Sign in with GitHub").click()
    nav(octo.page, "Team")
    invite = octo.page.get_by_role("form", name="Invite a member")
    invite.get_by_label("E-mail").fill(OWNER_EMAIL)
    invite.get_by_role("button", name="Send invitation").click()
    expect(octo.page.get_by_role("table", name="Invitations")).to_contain_text(OWNER_EMAIL)
    mail = stack.outbox(OWNER_EMAIL)
    link = re.search(r"(http://\S+/accept-invitation\?token=\S+)", mail[0].body).group(1)

    owner = Tab(browser, stack)
    page = owner.page
    sign_in(page, stack)
    page.goto(link)
    expect(page.get_by_text(f"You are signed in as {OWNER_EMAIL}")).to_be_visible()
    page.get_by_role("button", name="Accept invitation").click()
    # The session now acts in the team just joined, as a member there.
    expect(page.locator(".role-badge")).to_have_text("member")
    switcher = page.get_by_label("Team", exact=True)
    expect(switcher).to_contain_text("Octo Cat's team (member)")
    expect(page.get_by_role("link", name="New agent")).to_have_count(0)
    switcher.select_option(label="Olivia Owner's team (owner)")
    expect(page.locator(".role-badge")).to_have_text("owner")
    expect(page.get_by_role("link", name="Support bot")).to_be_visible()
    owner.close()
    octo.close()


# ── helpers of the flows ──


def _create_api_key(page: Page) -> str:
    nav(page, "API keys")
    form = page.get_by_role("form", name="Create an API key")
    form.get_by_label("Key name").fill("browser test")
    form.get_by_role("button", name="Create API key").click()
    expect(page.get_by_text("it is shown only once")).to_be_visible()
    key = page.locator("#new-api-key").inner_text()
    assert key.startswith("asvc_")
    return key


def _owner_key(stack: Stack) -> str:
    """A fresh API key of the owner, made directly in the database (test set-up only)."""

    async def make() -> str:
        db = stack.app[keys.db_key]
        user, team = await accounts.ensure_user_with_team(
            db, email=OWNER_EMAIL, name="", plan="pro"
        )
        async with db.write() as conn:
            created = await accounts.create_api_key(
                conn, team_id=team.id, user_id=user.id, name="checks"
            )
        return created.key

    return stack.run(make())


def _api_status(stack: Stack, method: str, path: str, key: str, body: Any) -> int:
    try:
        stack.api(method, path, key, body)
    except urllib.error.HTTPError as exc:
        assert exc.code == 400, exc.read()
        return exc.code
    return 201


def _public_post(stack: Stack, path: str, body: dict) -> Any:
    """POST to a public endpoint without credentials, as the widget does."""
    request = urllib.request.Request(
        stack.url + "/api/v1" + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 (loopback)
        return json.loads(resp.read() or b"null")
