"""Team secrets: set, list (names only), delete, and fill `{{NAME}}` placeholders."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, quote_plus

from agentsvc.db import Database
from agentsvc.errors import NotFound, ValidationFailed
from agentsvc.ids import now_iso
from agentsvc.secretbox import SecretBox
from agentsvc.store import secrets as secrets_store
from agentsvc.store.secrets import SecretInfo

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
MAX_VALUE_CHARS = 8192
SECRET_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}")
_NAME = re.compile(NAME_PATTERN)


def _context(team_id: str, name: str) -> str:
    return f"secret:{team_id}:{name}"


def check_name(name: str) -> None:
    """Raise VALIDATION_ERROR unless the name can be used in a `{{NAME}}` placeholder."""
    if not _NAME.match(name):
        raise ValidationFailed(
            "name: must start with a letter or _ and hold only letters, digits and _ (max 64)"
        )


def placeholder_names(*texts: str | None) -> set[str]:
    """Names of the `{{NAME}}` placeholders in some texts."""
    return {m.group(1) for text in texts if text for m in SECRET_PLACEHOLDER.finditer(text)}


# Below this length a value's base64 form is too short to tell from ordinary text.
MIN_BASE64_SCRUBBED_CHARS = 8


def _spellings(value: str) -> set[str]:
    """The ways a value shows up in messages and echoed responses."""
    forms = {value, value.lower(), quote(value, safe=""), quote(value), quote_plus(value)}
    forms |= {f.lower() for f in forms}  # hosts come back lowercased
    forms.add(json.dumps(value)[1:-1])  # as a JSON string, ASCII-escaped
    forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
    if len(value) >= MIN_BASE64_SCRUBBED_CHARS:
        # As a Basic credential or a token the server decoded and re-encoded.
        raw = value.encode("utf-8")
        for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
            text = encoded.decode("ascii")
            forms |= {text, text.rstrip("=")}
    return {f for f in forms if f}


class Scrubber:
    """Replaces every spelling of each secret value in a text with its `{{NAME}}`; `filled`
    adds whole filled-in texts (a header value with its secrets in), each replaced by its
    template."""

    def __init__(self, values: Mapping[str, str], filled: Mapping[str, str] | None = None):
        self.values = dict(values)
        replacements: dict[str, str] = {}
        for name, value in values.items():
            for form in _spellings(value):
                replacements.setdefault(form, "{{" + name + "}}")
        for value, template in (filled or {}).items():
            for form in _spellings(value):
                replacements.setdefault(form, template)
        # Longest first, so a secret holding another is replaced whole; str.replace keeps
        # each pass linear in the text, which is at most the response cap.
        self._ordered = sorted(replacements.items(), key=lambda item: len(item[0]), reverse=True)
        self._longest = len(self._ordered[0][0]) if self._ordered else 0

    def __call__(self, text: str) -> str:
        for form, placeholder in self._ordered:
            if form in text:
                text = text.replace(form, placeholder)
        return text

    def carried_by(self, text: str) -> str | None:
        """The `{{NAME}}` (or template) of a secret the text carries, or None."""
        return next((p for form, p in self._ordered if form in text), None)

    def cut(self, text: str) -> str:
        """Scrub a text cut off at a cap: its tail may hold the start of a value, so it goes."""
        if self._longest > 1:
            text = text[: max(0, len(text) - (self._longest - 1))]
        return self(text)


async def list_secrets(db: Database, team_id: str) -> list[SecretInfo]:
    """Return the team's secrets by name (never their values)."""
    return await secrets_store.list_for_team(db.reader, team_id)


async def put_secret(
    db: Database, box: SecretBox, team_id: str, name: str, value: str
) -> SecretInfo:
    """Create or replace a team secret, sealed at rest."""
    check_name(name)
    sealed = box.seal(value, _context(team_id, name))
    async with db.write() as tx:
        return await secrets_store.upsert(tx, team_id, name, sealed, now_iso())


async def delete_secret(db: Database, team_id: str, name: str) -> None:
    """Delete a team secret or raise NotFound."""
    async with db.write() as tx:
        if not await secrets_store.delete(tx, team_id, name):
            raise NotFound("Secret not found")


async def reveal(db: Database, box: SecretBox, team_id: str, names: set[str]) -> dict[str, str]:
    """Return the clear values of those of `names` the team has (for an outbound call only)."""
    sealed = await secrets_store.sealed_values(db.reader, team_id, names)
    return {name: box.open(token, _context(team_id, name)) for name, token in sealed.items()}


@dataclass(frozen=True, slots=True)
class SecretsService:
    """A team's secrets (`PUT /secrets/NAME`), and their values for outbound calls."""

    db: Database
    box: SecretBox

    async def list_names(self, team_id: str) -> list[SecretInfo]:
        """Return the team's secrets by name (never their values)."""
        return await list_secrets(self.db, team_id)

    async def put(self, team_id: str, name: str, value: str) -> SecretInfo:
        """Create or replace a team secret, sealed at rest."""
        return await put_secret(self.db, self.box, team_id, name, value)

    async def delete(self, team_id: str, name: str) -> None:
        """Delete a team secret or raise NotFound."""
        await delete_secret(self.db, team_id, name)

    async def reveal(self, team_id: str, names: set[str]) -> dict[str, str]:
        """Return the clear values of those of `names` the team has (outbound calls only)."""
        return await reveal(self.db, self.box, team_id, names)
