"""The Channels page in a real browser (issue 32): an owner adds a Telegram channel against a
fake Bot API on 127.0.0.1 (a token Telegram refuses is a sentence; the right one sets the
bot's webhook to the address the page shows), tests its connection, and once a message sent
through the fake was answered, sees when it arrived and when the reply went out; an api
channel's signing secret is shown once; the channel is turned off and the other deleted; no
serious or critical axe-core finding at 1280 and 390 px; a member sees it all read-only."""

from __future__ import annotations

import json
import os
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect

from tests.support.axe import serious_violations
from tests.support.dashboard_stack import (
    PASSWORD,
    Tab,
    ensure_owner,
    in_owners_team,
    nav,
    owner_key,
    public_post,
    sign_in,
    wait_for,
)
from tests.support.fakes.telegram import FakeTelegram

TOKEN = "123456789:AAE_" + "c" * 31
UNKNOWN = "987654321:AAE_" + "d" * 31
MEMBER = "channels-reader@example.com"
ARTEFACTS = Path(__file__).resolve().parents[1] / "browser" / "artefacts"


@pytest.fixture(scope="module")
def telegram(stack) -> Iterator[FakeTelegram]:
    fake = stack.run(FakeTelegram(tokens={TOKEN}).start())
    yield fake
    stack.run(fake.close())


@pytest.fixture(scope="module")
def shop(stack) -> dict:
    """An agent of the owner's team, and a member of the team."""
    ensure_owner(stack)
    key = owner_key(stack)
    body = {"name": "Channel shop", "systemPrompt": "We open at nine. Parcels ship in a day."}
    agent = stack.api("POST", "/agents", key, body)["data"]
    invitation = stack.api("POST", "/team/invite", key, {"email": MEMBER, "role": "member"})
    token = parse_qs(urlsplit(invitation["link"]).query)["token"][0]
    joined = {"token": token, "password": PASSWORD, "name": "Rita Reader"}
    public_post(stack, "/team/invitations/accept", joined)
    return {"key": key, "agent": agent}


def _open_channels(page: Page, stack, agent: dict, email: str | None = None) -> None:
    sign_in(page, stack, *([email] if email else []))
    if email is None:
        in_owners_team(page)
    page.get_by_label("Agent", exact=True).select_option(agent["id"])
    nav(page, "Channels")


def _add(page: Page, platform: str, fields: dict[str, str], advanced: dict | None = None):
    form = page.get_by_role("form", name="Add a channel")
    form.get_by_role("radio", name=re.compile(platform)).check()
    for label, value in fields.items():
        form.get_by_label(label, exact=True).fill(value)
    if advanced:
        for label, value in advanced.items():
            form.get_by_label(label, exact=True).fill(value)
    form.get_by_role("button", name="Add channel").click()
    return form


def _send_update(stack, telegram: FakeTelegram, update: dict) -> None:
    """What Telegram does with a message to the bot: POST it to the webhook it was given."""
    url, _ = telegram.webhooks[TOKEN]
    request = urllib.request.Request(
        url, data=json.dumps(update).encode(), headers=telegram.headers_for(TOKEN), method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 (loopback)
        assert resp.status == 202


def _axe_at_both_widths(page: Page) -> list[str]:
    found = []
    for width, height in ((1280, 860), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        found += [f"{width} px: {v}" for v in serious_violations(page, "main")]
    page.set_viewport_size({"width": 1280, "height": 860})
    return found


def test_an_owner_sets_up_tests_and_reads_channels(tab, stack, shop, telegram, shots):
    page = tab.page
    agent = shop["agent"]
    _open_channels(page, stack, agent)
    expect(page.get_by_text("No channels yet.")).to_be_visible()

    # Telegram: the steps, a token Telegram does not know (a sentence), then the right one.
    form = _add(
        page,
        "Telegram",
        {"Bot token": UNKNOWN},
        {"Bot API address (only for a proxy)": telegram.base_url},
    )
    expect(form.get_by_text("open @BotFather, send /newbot")).to_be_visible()
    expect(form.get_by_role("alert")).to_contain_text("Telegram refused setWebhook: Unauthorized")
    form.get_by_label("Bot token", exact=True).fill(TOKEN)
    form.get_by_role("button", name="Add channel").click()
    expect(page.get_by_text("Telegram is ready.")).to_be_visible()
    card = page.get_by_role("region", name="Telegram", exact=True)
    url, _ = telegram.webhooks[TOKEN]
    expect(card.locator("code")).to_have_text(url)
    card.get_by_role("button", name="Copy the address of Telegram").click()
    assert page.evaluate("navigator.clipboard.readText()") == url
    expect(card.get_by_text("none yet")).to_have_count(2)

    card.get_by_role("button", name="Test connection").click()
    expect(card.get_by_role("status")).to_have_text(
        "Connected: Telegram sends the messages of your bot @shop_helper_bot here."
    )

    # A message through the fake Bot API is answered: the page shows both times.
    _send_update(stack, telegram, telegram.text_update(77, "When do you open?"))
    stack.run(telegram.wait_for("sendMessage", 1))
    path = f"/channels/{url.split('/')[-2]}"
    assert wait_for(lambda: stack.api("GET", path, shop["key"])["data"]["status"]["lastOutboundAt"])
    page.reload()
    card = page.get_by_role("region", name="Telegram", exact=True)
    expect(card.locator("li time")).to_have_count(2)
    expect(card.get_by_text("none yet")).to_have_count(0)

    # An api channel: its secret is shown once, with a copy button.
    _add(page, "Your own app", {"Outbound URL": stack.receiver_url + "/replies"})
    expect(page.get_by_text("it is shown only once")).to_be_visible()
    secret = page.locator("#channel-secret").inner_text()
    assert secret.startswith("whsec_")
    page.get_by_role("button", name="Copy secret").click()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    app = page.get_by_role("region", name="Your own app (API)", exact=True)
    app.get_by_role("button", name="Test connection").click()
    expect(app.get_by_role("status")).to_contain_text("Your outbound URL answered 200")
    assert [r["body"]["type"] for r in stack.received if r["path"] == "/replies"] == ["test"]

    assert _axe_at_both_widths(page) == []
    keep = os.environ.get("AGENTSVC_WRITE_ARTEFACTS") == "1"
    page.evaluate("window.scrollTo(0, 0)")
    picture = (ARTEFACTS if keep else shots) / "dashboard-channels-in-use.png"
    page.screenshot(path=str(picture))
    page.get_by_role("form", name="Add a channel").get_by_role("radio", name="Telegram").check()
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(shots / "channels-390.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 860})

    page.reload()
    assert secret not in page.locator("main").inner_text()

    # Turned off (Telegram stops sending), then the api channel deleted.
    card = page.get_by_role("region", name="Telegram", exact=True)
    card.get_by_role("button", name="Edit").click()
    card.get_by_label("On: the agent answers on this channel").uncheck()
    card.get_by_role("button", name="Save channel").click()
    expect(
        page.get_by_role("region", name="Telegram", exact=True).locator(".tag.warn")
    ).to_have_text("Off")
    assert TOKEN not in telegram.webhooks
    page.get_by_role("region", name="Your own app (API)", exact=True).get_by_role(
        "button", name="Delete"
    ).click()
    page.get_by_role("dialog").get_by_role("button", name="Delete channel").click()
    expect(page.get_by_role("region", name="Your own app (API)", exact=True)).to_have_count(0)


def test_a_member_sees_channels_read_only(browser, stack, shop, telegram):
    tab = Tab(browser, stack)
    try:
        page = tab.page
        _open_channels(page, stack, shop["agent"], MEMBER)
        card = page.get_by_role("region", name="Telegram", exact=True)
        expect(card).to_be_visible()
        expect(card.get_by_text("Last message received")).to_be_visible()
        expect(page.get_by_text("Only the team owner changes channels.")).to_be_visible()
        for name in ("Test connection", "Edit", "Delete", "Add channel"):
            expect(page.locator("main").get_by_role("button", name=name)).to_have_count(0)
        expect(page.get_by_role("form", name="Add a channel")).to_have_count(0)
        assert _axe_at_both_widths(page) == []
    finally:
        tab.close()


def test_an_owner_follows_the_whatsapp_and_e_mail_steps(tab, stack, shop):
    page = tab.page
    agent = shop["agent"]
    _open_channels(page, stack, agent)

    # WhatsApp: the steps and their fields; added, then a new token saved without losing
    # the settings the page does not show.
    add = page.get_by_role("form", name="Add a channel")
    add.get_by_role("radio", name="WhatsApp").check()
    expect(add.get_by_text("set the callback URL to the channel's address")).to_be_visible()
    _add(
        page,
        "WhatsApp",
        {
            "Phone number ID": "1234567890",
            "Access token": "EAAG" + "x" * 40,
            "App secret": "a" * 32,
            "Verify token": "my-verify-token",
        },
    )
    expect(page.get_by_text("WhatsApp is ready.")).to_be_visible()
    path = "/agents/" + agent["id"] + "/channels"
    [made] = [c for c in stack.api("GET", path, shop["key"])["data"] if c["type"] == "whatsapp"]
    stack.api(
        "PATCH",
        f"/channels/{made['id']}",
        shop["key"],
        {"config": {"phoneNumberId": "1234567890", "templateName": "hello_world"}},
    )
    page.reload()
    card = page.get_by_role("region", name="WhatsApp", exact=True)
    card.get_by_role("button", name="Edit").click()
    card.get_by_label("Access token", exact=True).fill("EAAG" + "y" * 40)
    card.get_by_role("button", name="Save channel").click()
    expect(page.get_by_text("Channel saved")).to_be_visible()
    config = stack.api("GET", f"/channels/{made['id']}", shop["key"])["data"]["config"]
    assert config["templateName"] == "hello_world" and config["accessToken"].endswith("yyyy")

    # E-mail: the mailbox is tried before anything is saved; what went wrong is a sentence.
    add.get_by_role("radio", name="E-mail").check()
    expect(add.get_by_text("read new messages every minute")).to_be_visible()
    form = _add(
        page,
        "E-mail",
        {
            "E-mail address": "help@shop.example",
            "IMAP server": "127.0.0.1",
            "IMAP user name": "help@shop.example",
            "IMAP password": "not-a-real-one",
        },
    )
    expect(form.get_by_role("alert")).to_contain_text("The mailbox could not be read")
    expect(page.get_by_role("region", name="E-mail", exact=True)).to_have_count(0)
    assert _axe_at_both_widths(page) == []
