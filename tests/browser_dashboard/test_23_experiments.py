"""An agent's Experiments page in a real browser (issue 33: "an experiment page"): from the
agent's page, the owner starts an experiment on two of its three versions, each with a
weight; 40 visitors chat (each keeps the version they got) and rate the answers, 👍 on one
version's, 👎 on the other's; the experiment's page shows each version's conversations,
answers and figures with their 95 % intervals in words ("42 % (35–49 %)"), "Leading" only
where the API names a leader; the owner stops it making a version live, confirmed in plain
words, and the API agrees that version is live. A member starts and stops one too (the API
asks no role), and reads the API's own message when one already runs. No serious or critical
axe-core finding at 1280 and 390 px; nothing wider than a 390 px screen; no e-mail shown."""

from __future__ import annotations

import json
import os
import re
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect

from tests.support.axe import findings_at_both_widths, overflow, serious_violations
from tests.support.dashboard_stack import (
    OWNER_EMAIL,
    PASSWORD,
    Tab,
    ensure_owner,
    in_owners_team,
    owner_key,
    public_post,
    sign_in,
)

ARTEFACTS = Path(__file__).resolve().parents[1] / "browser" / "artefacts"
MEMBER = "experiments-member@example.com"
NINE, TEN, ELEVEN = "We open at nine.", "We open at ten.", "We open at eleven."
# A figure as people read it: "42 % (35–49 %)".
SHARE = re.compile(r"^\d+ % \(\d+–\d+ %\)")


@pytest.fixture(scope="module")
def shop(stack) -> dict:
    """An agent with three versions (its prompt changed twice), and a member of the team."""
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "Experiment shop", "systemPrompt": NINE})
    agent = agent["data"]
    for prompt in (TEN, ELEVEN):
        stack.api("PATCH", f"/agents/{agent['id']}", key, {"systemPrompt": prompt})
    invitation = stack.api("POST", "/team/invite", key, {"email": MEMBER, "role": "member"})
    token = parse_qs(urlsplit(invitation["link"]).query)["token"][0]
    joined = {"token": token, "password": PASSWORD, "name": "Erin Member"}
    public_post(stack, "/team/invitations/accept", joined)
    return {"key": key, "agent": agent}


def _visit(stack, key: str, agent_id: str, session: str) -> tuple[str, str, str]:
    """One visitor's question over the API: (the answer, its conversation, its message)."""
    question = [{"role": "user", "content": "When do you open?"}]
    body = {"agentId": agent_id, "sessionId": session, "messages": question}
    request = urllib.request.Request(
        stack.url + "/api/v1/chat",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 (loopback)
        raw = resp.read().decode()
    events = re.findall(r"event: (\w+)\ndata: (.*)", raw)
    start = next(json.loads(d) for e, d in events if e == "message_start")
    deltas = [json.loads(d)["delta"] for e, d in events if e == "content_block_delta"]
    text = "".join(delta.get("text", "") for delta in deltas)
    return text, start["conversationId"], start["messageId"]


def _picture(page: Page, shots: Path, name: str) -> None:
    keep = os.environ.get("AGENTSVC_WRITE_ARTEFACTS") == "1"
    page.evaluate("window.scrollTo(0, 0); document.getElementById('toasts').replaceChildren()")
    page.screenshot(path=str((ARTEFACTS if keep else shots) / name), full_page=True)


def _variant(page: Page, number: int):
    """The card of one version on the experiment's page."""
    return page.locator("main .grid3 > section").filter(
        has=page.get_by_role("heading", name=re.compile(rf"^Version {number}\b"))
    )


def test_an_owner_starts_reads_and_stops_an_experiment(tab, stack, shop, shots):
    page = tab.page
    agent, key = shop["agent"], shop["key"]
    sign_in(page, stack)
    in_owners_team(page)
    page.goto(f"{stack.url}/#/agents/{agent['id']}")
    page.get_by_role("link", name="Experiments", exact=True).click()
    expect(page.get_by_role("heading", name="Experiments on Experiment shop")).to_be_visible()
    expect(page.get_by_text("No experiments yet.")).to_be_visible()

    # Versions 1 and 3 (the live one), each with a weight; what it does said in words.
    form = page.get_by_role("form", name="Start an experiment")
    expect(form).to_contain_text("New conversations are split among these versions by weight")
    expect(form.get_by_label(re.compile(r"^Version 3\b"))).to_have_accessible_name(
        re.compile(r"^Version 3\b.*\(live\)$")
    )
    form.get_by_label(re.compile(r"^Version 2\b")).uncheck()
    form.get_by_role("button", name="Start experiment").click()
    expect(form.get_by_role("alert")).to_have_text("Choose 2 to 5 versions to compare.")
    form.get_by_label(re.compile(r"^Version 1\b")).check()
    expect(form.get_by_label("Weight of version 1")).to_have_value("1")
    assert findings_at_both_widths(page) == []
    _picture(page, shots, "23-experiments-start-1280.png")
    form.get_by_role("button", name="Start experiment").click()
    expect(page.get_by_role("heading", name="Experiment on Experiment shop")).to_be_visible()
    expect(page.locator(".toast").filter(has_text="Experiment started")).to_be_visible()
    running = stack.api("GET", f"/agents/{agent['id']}", key)["data"]["experiment"]
    assert [v["version"] for v in running["variants"]] == [3, 1]
    expect(_variant(page, 1)).to_contain_text("Not measured yet")

    # 40 visitors, each keeping a version; 👍 on version 1's answers, 👎 on version 3's.
    counts = {NINE: 0, ELEVEN: 0}
    for i in range(40):
        text, conversation, message = _visit(stack, key, agent["id"], f"visitor-{i}")
        counts[text] += 1
        rating = {"messageId": message, "rating": "up" if text == NINE else "down"}
        stack.api("POST", f"/conversations/{conversation}/feedback", key, rating)
    assert min(counts.values()) >= 5, counts
    page.reload()
    one, three = _variant(page, 1), _variant(page, 3)
    expect(one.locator("dd").nth(0)).to_have_text(str(counts[NINE]))
    expect(three.locator("dd").nth(1)).to_have_text(str(counts[ELEVEN]))  # answers
    up = one.locator("dt", has_text="Answers rated 👍").locator("xpath=following-sibling::dd[1]")
    expect(up).to_have_text(SHARE)
    expect(up).to_contain_text("100 % (")
    expect(up.get_by_text("Leading")).to_be_visible()
    expect(three.get_by_text("Leading")).to_have_count(0)
    expect(three.locator("dd").nth(2)).to_have_text(re.compile(r"^0 % \(0–\d+ %\)$"))
    said = "“Leading” marks a version only where its interval clears every other version's"
    expect(page.get_by_text(said)).to_be_visible()
    assert "@" not in page.locator("main").inner_text()
    assert findings_at_both_widths(page) == []
    _picture(page, shots, "23-experiment-1280.png")
    page.set_viewport_size({"width": 390, "height": 844})
    _picture(page, shots, "23-experiment-390.png")
    page.set_viewport_size({"width": 1280, "height": 860})

    # The list shows the running one instead of the form.
    page.get_by_role("link", name="All experiments").click()
    expect(page.get_by_text("Only one experiment runs at a time")).to_be_visible()
    expect(page.get_by_role("form", name="Start an experiment")).to_have_count(0)
    expect(page.get_by_role("table").locator("tbody tr")).to_have_count(1)
    page.get_by_role("link", name="See its figures or stop it").click()

    # Stopped making version 1 live, confirmed in words: the API agrees.
    page.get_by_role("button", name="Stop and make version 1 live").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Stop the experiment and make version 1 live?")
    dialog.get_by_role("button", name="Stop experiment").click()
    expect(page.locator(".toast").filter(has_text="version 1 is live")).to_be_visible()
    expect(page.locator("main .notice")).to_have_text("Version 1 won and was made live.")
    expect(one.get_by_text("Winner")).to_be_visible()
    expect(page.get_by_role("button", name=re.compile("^Stop"))).to_have_count(0)
    got = stack.api("GET", f"/agents/{agent['id']}", key)["data"]
    assert (got["version"], got["systemPrompt"], got["experiment"]) == (4, NINE, None)
    _picture(page, shots, "23-experiment-stopped-1280.png")

    # The past one, listed with its winner; the form is back.
    page.get_by_role("link", name="All experiments").click()
    row = page.get_by_role("table").locator("tbody tr")
    expect(row).to_contain_text("Stopped")
    expect(row).to_contain_text("Version 1")
    expect(page.get_by_role("form", name="Start an experiment")).to_be_visible()


def test_a_member_starts_and_stops_one_and_reads_the_apis_words(browser, stack, shop):
    agent, key = shop["agent"], shop["key"]
    tab = Tab(browser, stack)
    try:
        page = tab.page
        page.set_viewport_size({"width": 390, "height": 844})
        sign_in(page, stack, MEMBER)
        page.goto(f"{stack.url}/#/agents/{agent['id']}/experiments")
        form = page.get_by_role("form", name="Start an experiment")
        expect(form).to_be_visible()

        # One started meanwhile (through the API): the API's own message, in words.
        two = {"variants": [{"version": 1, "weight": 1}, {"version": 2, "weight": 1}]}
        other = stack.api("POST", f"/agents/{agent['id']}/experiments", key, two)["data"]
        form.get_by_role("button", name="Start experiment").click()
        expect(form.get_by_role("alert")).to_have_text(
            "This agent runs an experiment already: stop it first"
        )
        stack.api("POST", f"/experiments/{other['id']}/stop", key, {})

        # The member starts one and stops it without a winner: the live version stays.
        form.get_by_label("Weight of version 4").fill("3")
        form.get_by_role("button", name="Start experiment").click()
        page.get_by_role("button", name="Stop without a winner").click()
        page.get_by_role("dialog").get_by_role("button", name="Stop experiment").click()
        expect(page.locator("main .notice")).to_have_text(
            "Stopped without a winner: the live version stayed as it was."
        )
        listed = stack.api("GET", f"/agents/{agent['id']}/experiments", key)["data"]
        assert (listed[0]["status"], listed[0]["winner"]) == ("stopped", None)
        assert [v["weight"] for v in listed[0]["variants"]] == [3, 1]
        assert stack.api("GET", f"/agents/{agent['id']}", key)["data"]["version"] == 4
        text = page.locator("main").inner_text()
        assert OWNER_EMAIL not in text and MEMBER not in text
        assert overflow(page) <= 0
        assert serious_violations(page, "main") == []
    finally:
        tab.close()
