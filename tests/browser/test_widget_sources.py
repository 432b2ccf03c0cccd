"""Sources in answers (issue 34): with the agent's showSources on, the widget lists an
answer's sources under it, a link only for a document fetched from an http(s) address."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import expect

from tests.support.axe import serious_violations
from tests.support.widget_page import launcher, load

HOURS_PAGE = (
    b"<html><head><title>Opening hours</title></head><body><h1>Opening hours</h1>"
    b"<p>The shop opens at nine and closes at six, Monday to Saturday.</p></body></html>"
)
RETURNS = "You can return any item within thirty days for a full refund at the shop."
QUESTION = "When does the shop open, and can I return an item at the shop?"


class _Page(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(HOURS_PAGE)))
        self.end_headers()
        self.wfile.write(HOURS_PAGE)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """A web page on 127.0.0.1 the documents API fetches (loopback allowed in tests)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def _agent(stack, site: str, show: bool) -> tuple[str, str]:
    agent_id = stack.new_agent("You help the customers of a shop.")
    url = f"{site}/hours"
    doc = stack.api("POST", f"/agents/{agent_id}/documents", {"url": url})["data"]
    assert doc["status"] == "ready", doc
    stack.api("POST", f"/agents/{agent_id}/documents", {"title": "Returns", "content": RETURNS})
    if show:
        stack.api("PATCH", f"/agents/{agent_id}", {"showSources": True})
    return agent_id, url


def _ask(page, question: str = QUESTION, expected: str = "full refund"):
    launcher(page).click()
    page.get_by_role("textbox", name="Message").fill(question)
    page.get_by_role("button", name="Send").click()
    answer = page.get_by_role("log").locator(".assistant[aria-busy=false]")
    expect(answer).to_contain_text(expected)
    return answer


def _expect_titles(sources) -> None:
    """Both documents, in the order retrieval ranked them (which may differ by backend)."""
    items = sources.get_by_role("listitem")
    expect(items).to_have_count(2)
    assert sorted(items.all_inner_texts()) == ["Opening hours", "Returns"]


def test_sources_are_listed_with_a_link_for_the_url_document(page, stack, site):
    agent_id, url = _agent(stack, site, show=True)
    stack.embed({"agentId": agent_id})
    load(page, stack)
    answer = _ask(page)

    sources = answer.get_by_role("list", name="Sources")
    expect(sources).to_be_visible()
    _expect_titles(sources)
    link = sources.get_by_role("link", name="Opening hours")
    expect(link).to_have_attribute("href", url)
    expect(link).to_have_attribute("target", "_blank")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    # The text document is named, never linked.
    expect(sources.get_by_role("link")).to_have_count(1)
    assert serious_violations(page, "#agentsvc-widget") == []

    # Kept with the transcript: a new page load shows them again.
    page.reload()
    page.wait_for_function("() => window.agentsvc && window.agentsvc.ready === true")
    launcher(page).click()
    sources = page.get_by_role("log").get_by_role("list", name="Sources")
    _expect_titles(sources)
    expect(sources.get_by_role("link", name="Opening hours")).to_have_attribute("href", url)

    # In another language, the label is that language's.
    page.evaluate("() => agentsvc.configure({language: 'de'})")
    expect(page.get_by_role("log").get_by_role("list", name="Quellen")).to_be_visible()


def test_nothing_is_shown_when_show_sources_is_off(page, stack, site):
    agent_id, _ = _agent(stack, site, show=False)
    stack.embed({"agentId": agent_id})
    load(page, stack)
    page.evaluate(
        "() => { window.stops = []; agentsvc.on('stream', (e) => {"
        " if (e.event === 'message_stop') window.stops.push(e.data); }); }"
    )
    answer = _ask(page)
    # The stream carried the sources; the widget keeps them to itself.
    assert len(page.evaluate("window.stops")[0]["sources"]) == 2
    expect(answer.get_by_role("list")).to_have_count(0)
    expect(answer).not_to_contain_text("Sources")


def _sse(*events: tuple[str, dict]) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def test_a_hostile_source_address_is_never_a_link(page, stack, site):
    agent_id, _ = _agent(stack, site, show=True)
    stack.embed({"agentId": agent_id})
    load(page, stack)
    hostile = [
        {"documentId": "doc_1", "title": "Evil", "url": "javascript:alert(document.domain)"},
        {"documentId": "doc_2", "title": "Data", "url": "data:text/html,<script>alert(1)</script>"},
        {"documentId": "doc_3", "title": "<img src=x onerror=alert(1)>", "url": "  JAVASCRIPT:x"},
        {"documentId": "doc_4", "title": "Relative", "url": "/elsewhere"},
        {"documentId": "doc_5", "title": "Fine", "url": "https://shop.example/faq"},
    ]
    body = _sse(
        ("message_start", {"type": "message_start", "conversationId": None, "messageId": None}),
        (
            "content_block_delta",
            {"type": "content_block_delta", "delta": {"type": "text", "text": "We open at nine."}},
        ),
        ("message_stop", {"type": "message_stop", "sources": hostile}),
    )
    page.route(
        "**/api/v1/chat",
        lambda route: route.fulfill(
            status=200,
            content_type="text/event-stream",
            headers={"Access-Control-Allow-Origin": "*"},
            body=body,
        ),
    )
    answer = _ask(page, "When do you open?", "We open at nine.")
    sources = answer.get_by_role("list", name="Sources")
    expect(sources.get_by_role("listitem")).to_have_text(
        ["Evil", "Data", "<img src=x onerror=alert(1)>", "Relative", "Fine"]
    )
    links = sources.locator("a")
    expect(links).to_have_count(1)
    expect(links).to_have_attribute("href", "https://shop.example/faq")
    assert answer.locator("img").count() == 0
