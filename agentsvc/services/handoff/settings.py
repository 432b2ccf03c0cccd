"""An agent's handoff settings: their rules, and whether the team is in business hours.

Settings are kept as the API shows them (camelCase JSON on the agent):
`{enabled, businessHours: {timezone, intervals: [{day, start, end}]} | null,
offlineMessage, notify: {email, teamChat}}`. The team chat's signing secret is sealed
apart (`teamChatSecretSealed`) and shown to the team as `teamChatSecret`.
"""

from __future__ import annotations

import base64
import functools
import secrets
import zoneinfo
from datetime import datetime
from typing import Any

from agentsvc.errors import ValidationFailed
from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.services.tools.rules import check_target_url
from agentsvc.store.agents import Agent

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
DEFAULT_OFFLINE_MESSAGE = (
    "Our team is away right now. Leave your e-mail address and we will answer there."
)
DISABLED: dict[str, Any] = {
    "enabled": False,
    "businessHours": None,
    "offlineMessage": DEFAULT_OFFLINE_MESSAGE,
    "notify": {"email": False, "teamChat": None},
}


@functools.cache
def _zones() -> frozenset[str]:
    # Checked against the known names, never opened by a tenant's string: a name such as
    # "../../etc/passwd" must not reach the file system.
    return frozenset(zoneinfo.available_timezones())


def check_timezone(name: str) -> str:
    """Return the IANA zone name, or raise ValueError naming the problem."""
    if name not in _zones():
        raise ValueError(f"unknown time zone {name!r} (use an IANA name such as Europe/Berlin)")
    return name


def minutes(clock: str) -> int:
    """`HH:MM` (00:00 to 24:00) as minutes since midnight, or ValueError."""
    hours, sep, mins = clock.partition(":")
    if not (sep and len(hours) == 2 and len(mins) == 2 and hours.isdigit() and mins.isdigit()):
        raise ValueError(f"{clock!r} is not a time of day as HH:MM")
    value = int(hours) * 60 + int(mins)
    if int(mins) >= 60 or value > 24 * 60:
        raise ValueError(f"{clock!r} is not a time of day between 00:00 and 24:00")
    return value


def settings_of(stored: dict[str, Any] | None) -> dict[str, Any]:
    """The agent's handoff settings with every default filled in."""
    if not stored:
        return dict(DISABLED)
    return {**DISABLED, **stored}


def is_online(settings: dict[str, Any], now: datetime) -> bool:
    """Whether `now` (aware) falls in the business hours (no hours set: always)."""
    hours = settings.get("businessHours")
    if not hours:
        return True
    local = now.astimezone(zoneinfo.ZoneInfo(hours["timezone"]))
    day, at = DAYS[local.weekday()], local.hour * 60 + local.minute
    return any(
        i["day"] == day and minutes(i["start"]) <= at < minutes(i["end"])
        for i in hours.get("intervals", ())
    )


def team_chat_context(agent_id: str) -> str:
    """The secret box context of an agent's team chat signing secret."""
    return f"handoff-team-chat:{agent_id}"


def _check_hours(hours: dict[str, Any]) -> None:
    try:
        check_timezone(hours["timezone"])
    except ValueError as exc:
        raise ValidationFailed(f"handoff.businessHours.timezone: {exc}") from None
    for n, interval in enumerate(hours["intervals"]):
        field = f"handoff.businessHours.intervals[{n}]"
        try:
            start, end = minutes(interval["start"]), minutes(interval["end"])
        except ValueError as exc:
            raise ValidationFailed(f"{field}: {exc}") from None
        if end <= start:
            raise ValidationFailed(f"{field}: end must be after start (split overnight hours)")


def merged_settings(
    box: SecretBox,
    agent_id: str,
    stored: dict[str, Any] | None,
    given: dict[str, Any],
    *,
    allow_private: bool,
) -> dict[str, Any]:
    """An agent's stored handoff settings (the live ones, or its draft's) with the given
    ones merged in, checked. Setting a team chat URL creates its signing secret (kept while
    the URL changes)."""
    current = settings_of(stored)
    merged = {**current, **{k: v for k, v in given.items() if k != "notify"}}
    if "notify" in given:
        merged["notify"] = {**current["notify"], **given["notify"]}
    if merged.get("businessHours"):
        _check_hours(merged["businessHours"])
    url = merged["notify"].get("teamChat")
    if url:
        check_target_url("handoff.notify.teamChat", url, allow_private=allow_private)
        if not merged.get("teamChatSecretSealed"):
            secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode("ascii")
            merged["teamChatSecretSealed"] = box.seal(secret, team_chat_context(agent_id))
    return merged


def public_json(box: SecretBox, agent: Agent) -> dict[str, Any]:
    """The settings as the team sees them: the signing secret opened, never the sealed one."""
    settings = settings_of(agent.handoff)
    shown = {k: v for k, v in settings.items() if k != "teamChatSecretSealed"}
    secret = None
    if settings.get("teamChatSecretSealed"):
        try:
            secret = box.open(settings["teamChatSecretSealed"], team_chat_context(agent.id))
        except SecretBoxError:
            secret = None
    shown["notify"] = {**settings["notify"], "teamChatSecret": secret}
    return shown
