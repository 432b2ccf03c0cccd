"""A channel's settings as stored: the settings anyone of the team may read, and the
credentials, which are sealed at rest and only ever shown masked."""

from __future__ import annotations

from typing import Any

import orjson

from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.services.channels import telegram
from agentsvc.services.tools.definitions import new_webhook_secret

# The settings of each type that are credentials (write-only; `secret` is generated).
CREDENTIALS: dict[str, tuple[str, ...]] = {
    "api": ("secret",),
    "telegram": ("botToken", "webhookSecret"),
    "whatsapp": ("accessToken", "appSecret", "verifyToken"),
    "slack": ("botToken", "signingSecret"),
    "email": ("imapPassword",),
}
MASK = "••••"
# Shown as the mask alone: a password's last characters are part of what is guessed.
PASSWORDS = ("imapPassword",)


def sealed_context(channel_id: str) -> str:
    """The secret box context of a channel's credentials."""
    return f"channel:{channel_id}"


def split(kind: str, config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings anyone of the team may read, and the credentials."""
    secret_names = CREDENTIALS.get(kind, ())
    shown = {k: v for k, v in config.items() if k not in secret_names}
    secrets = {k: v for k, v in config.items() if k in secret_names and v is not None}
    return shown, secrets


def generated(kind: str) -> dict[str, str]:
    """The credentials the service makes for a new channel of this type."""
    if kind == "api":
        return {"secret": new_webhook_secret()}
    if kind == "telegram":
        return {"webhookSecret": telegram.new_webhook_secret()}
    return {}


def seal(box: SecretBox, channel_id: str, secrets: dict[str, str]) -> str:
    """The credentials, sealed as one JSON object."""
    return box.seal(orjson.dumps(secrets).decode(), sealed_context(channel_id))


def open_sealed(box: SecretBox, channel_id: str, sealed: str) -> dict[str, str]:
    """The credentials (SecretBoxError when the key changed)."""
    return orjson.loads(box.open(sealed, sealed_context(channel_id)))


class OpenedCredentials:
    """Channels' credentials as opened, by channel, with the sealed text they came from: a
    channel's every message and reply needs them, and an AES-GCM open each time is work
    that need not be there. The sealed text is the key, so credentials changed anywhere
    (new text) are opened afresh and nothing needs to be told; one that does not open is
    not kept, and raises each time."""

    def __init__(self, box: SecretBox, max_entries: int = 10_000):
        self._box = box
        self._max_entries = max_entries
        self._by_channel: dict[str, tuple[str, dict[str, str]]] = {}

    def open(self, channel_id: str, sealed: str) -> dict[str, str]:
        """The credentials (SecretBoxError when the key changed); a copy, to change freely."""
        kept = self._by_channel.get(channel_id)
        if kept is None or kept[0] != sealed:
            kept = (sealed, open_sealed(self._box, channel_id, sealed))
            if len(self._by_channel) >= self._max_entries:
                self._by_channel.clear()
            self._by_channel[channel_id] = kept
        return dict(kept[1])


def mask(value: str) -> str:
    """A credential as answers show it: its last 4 characters (fewer of a short one)."""
    keep = 4 if len(value) >= 12 else 0
    return MASK + value[-keep:] if keep else MASK


def masked(box: SecretBox, channel_id: str, config: dict[str, Any], sealed: str) -> dict:
    """The settings with each credential masked (an unreadable one shown as the mask)."""
    try:
        secrets = open_sealed(box, channel_id, sealed)
    except SecretBoxError:
        secrets = {}
    return {**config, **{k: MASK if k in PASSWORDS else mask(v) for k, v in secrets.items()}}
