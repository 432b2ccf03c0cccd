"""An agent's widget settings: their defaults, how a change merges in, and the public view.

Kept as the API shows them (camelCase JSON in the agent's `widget` column), sparse: only
what the owner set, so a default changed in a later version reaches every agent that kept
it. `{appearance: {...}, language, strings: {LANG: {key: text}}, starters: [...],
showSources}`. `showSources` (whether the widget lists an answer's sources under it) is
shown on the agent itself (`showSources`, not inside `widget`), but kept here: it is a
display setting like the look, served with it, and not part of the agent's versions.

Colours, the font family and the sizes end up in the widget's CSS. The request models
refuse anything outside their patterns; `settings_of` checks stored values again (a
database edited by hand, an older version's data) and drops what does not fit, so no
stored byte can reach a style sheet unless it matches the same patterns.
"""

from __future__ import annotations

import re
from typing import Any

from agentsvc.db import Database
from agentsvc.errors import NotFound
from agentsvc.ids import now_iso
from agentsvc.services import changes
from agentsvc.services.widget.locales import EXTRA_KEYS, LOCALES, string_keys
from agentsvc.store import agents as agents_store
from agentsvc.store.agents import Agent
from agentsvc.text_patterns import COLOR_PATTERN, FONT_PATTERN, IMAGE_PATTERN

FONT_MAX = 200
IMAGE_MAX = 32_768
RADIUS_MAX = 24
OFFSET_MAX = 200
TITLE_MAX = 80
WELCOME_MAX = 1000
STRING_MAX = 500
STARTER_MAX = 200
MAX_STARTERS = 4
POSITIONS = ("right", "left")
DARK_MODES = ("off", "on", "auto")
LANGUAGE_CHOICES = ("auto", *LOCALES)

DEFAULT_APPEARANCE: dict[str, Any] = {
    "accentColor": "#2457d6",
    "textColor": "#1f2328",
    "backgroundColor": "#ffffff",
    "radius": 12,
    "fontFamily": None,
    "position": "right",
    "offsetX": 20,
    "offsetY": 20,
    "launcherIcon": None,
    "title": None,
    "avatar": None,
    "welcomeMessage": None,
    "darkMode": "off",
    "poweredBy": True,
}


def _matches(pattern: str, limit: int):
    compiled = re.compile(pattern)
    return lambda v: isinstance(v, str) and len(v) <= limit and compiled.fullmatch(v) is not None


def _int_in(low: int, high: int):
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


def _text(limit: int):
    return lambda v: isinstance(v, str) and 0 < len(v) <= limit


_CHECKS = {
    "accentColor": _matches(COLOR_PATTERN, 7),
    "textColor": _matches(COLOR_PATTERN, 7),
    "backgroundColor": _matches(COLOR_PATTERN, 7),
    "radius": _int_in(0, RADIUS_MAX),
    "fontFamily": _matches(FONT_PATTERN, FONT_MAX),
    "position": lambda v: v in POSITIONS,
    "offsetX": _int_in(0, OFFSET_MAX),
    "offsetY": _int_in(0, OFFSET_MAX),
    "launcherIcon": _matches(IMAGE_PATTERN, IMAGE_MAX),
    "title": _text(TITLE_MAX),
    "avatar": _matches(IMAGE_PATTERN, IMAGE_MAX),
    "welcomeMessage": _text(WELCOME_MAX),
    "darkMode": lambda v: v in DARK_MODES,
    "poweredBy": lambda v: isinstance(v, bool),
}


def _clean_appearance(stored: Any) -> dict[str, Any]:
    if not isinstance(stored, dict):
        return {}
    return {k: v for k, v in stored.items() if k in _CHECKS and v is not None and _CHECKS[k](v)}


def _clean_strings(stored: Any) -> dict[str, dict[str, str]]:
    if not isinstance(stored, dict):
        return {}
    known = set(string_keys()) | set(EXTRA_KEYS)
    cleaned: dict[str, dict[str, str]] = {}
    for code, table in stored.items():
        if code not in LOCALES or not isinstance(table, dict):
            continue
        kept = {k: v for k, v in table.items() if k in known and _text(STRING_MAX)(v)}
        if kept:
            cleaned[code] = kept
    return cleaned


def _clean_starters(stored: Any) -> list[str]:
    if not isinstance(stored, list):
        return []
    return [s for s in stored if _text(STARTER_MAX)(s) and s.strip()][:MAX_STARTERS]


def _stored(agent_widget: Any) -> dict[str, Any]:
    """The sparse stored settings, with every value checked again."""
    raw = agent_widget if isinstance(agent_widget, dict) else {}
    stored: dict[str, Any] = {}
    appearance = _clean_appearance(raw.get("appearance"))
    if appearance:
        stored["appearance"] = appearance
    if raw.get("language") in LANGUAGE_CHOICES and raw.get("language") != "auto":
        stored["language"] = raw["language"]
    strings = _clean_strings(raw.get("strings"))
    if strings:
        stored["strings"] = strings
    starters = _clean_starters(raw.get("starters"))
    if starters:
        stored["starters"] = starters
    if raw.get("showSources") is True:
        stored["showSources"] = True
    return stored


def settings_of(agent_widget: Any) -> dict[str, Any]:
    """The agent's widget settings with every default filled in."""
    stored = _stored(agent_widget)
    return {
        "appearance": {**DEFAULT_APPEARANCE, **stored.get("appearance", {})},
        "language": stored.get("language", "auto"),
        "strings": stored.get("strings", {}),
        "starters": stored.get("starters", []),
    }


def show_sources(agent_widget: Any) -> bool:
    """Whether the widget shows an answer's sources under it (default: no)."""
    return _stored(agent_widget).get("showSources", False)


def merged(current: Any, given: dict[str, Any]) -> dict[str, Any]:
    """The stored settings after a change: given appearance fields replace the stored ones
    (null: back to the default), each given language's strings replace that language's,
    `language`, `starters` and `showSources` replace theirs."""
    stored = _stored(current)
    if "appearance" in given:
        appearance = {**stored.get("appearance", {}), **given["appearance"]}
        stored["appearance"] = {k: v for k, v in appearance.items() if v is not None}
    if "strings" in given:
        stored["strings"] = {**stored.get("strings", {}), **given["strings"]}
    for key in ("language", "starters", "showSources"):
        if key in given:
            stored[key] = given[key]
    return _stored(stored)


async def update_settings(
    db: Database, team_id: str, agent_id: str, given: dict[str, Any]
) -> Agent:
    """Merge the given widget settings into the agent's and store them."""
    async with db.write() as tx:
        # Merged inside the transaction, from the row as it is now: two dashboards saving
        # different sections at once both keep their changes.
        current = await agents_store.get(tx, team_id, agent_id)
        if current is None:
            raise NotFound("Agent not found")
        await agents_store.update(
            tx, team_id, agent_id, {"widget": merged(current.widget, given)}, now_iso()
        )
        updated = await agents_store.get(tx, team_id, agent_id)
    await db.announce(changes.agent(agent_id))
    assert updated is not None
    return updated


def public_config(agent: Agent) -> dict[str, Any]:
    """What any visitor's widget reads: the look, texts and whether to show an answer's
    sources (no prompt, no tools)."""
    return {
        "agentId": agent.id,
        **settings_of(agent.widget),
        "showSources": show_sources(agent.widget),
    }
