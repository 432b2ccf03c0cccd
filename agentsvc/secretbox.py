"""Encryption of secrets at rest (AES-256-GCM) with the instance's secret key.

The key is `[server] secret_key` when configured, otherwise 32 random bytes generated once
into `<data_dir>/secret.key` (mode 0600). Each value is sealed with a context string (such
as `secret:<team>:<name>`) as associated data, so a sealed value copied to another row or
team does not open there.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from agentsvc.datadir import ensure_private_dir

KEY_FILE_NAME = "secret.key"
_VERSION = "v1"
_NONCE_BYTES = 12


class SecretBoxError(Exception):
    """A sealed value that cannot be opened (wrong key, tampered, or another context)."""


def _key_from_text(text: str) -> bytes:
    # A configured key may be any passphrase-like string; hash it to the AES key size.
    return hashlib.sha256(text.encode("utf-8")).digest()


def load_or_create_key(data_dir: Path) -> bytes:
    """Return the key stored in data_dir, creating it (0600) on first use."""
    path = data_dir / KEY_FILE_NAME
    ensure_private_dir(data_dir)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raw = base64.b64decode(path.read_text(encoding="ascii").strip())
        if len(raw) != 32:
            raise SecretBoxError(f"{path}: not a 32-byte base64 key") from None
        return raw
    key = secrets.token_bytes(32)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(base64.b64encode(key).decode("ascii") + "\n")
    return key


class SecretBox:
    """Seal and open short secrets; sealed values are `v1:` + base64(nonce + ciphertext)."""

    def __init__(self, key: bytes):
        if len(key) != 32:
            raise ValueError("the secret box key must be 32 bytes")
        self._aead = AESGCM(key)
        # A second key for derived secrets (`derive`), so the sealing key is used for one thing.
        self._derive_key = hmac.digest(key, b"agentsvc derived secrets v1", "sha256")

    @classmethod
    def from_settings(cls, secret_key: str, data_dir: Path) -> SecretBox:
        """The box for an instance: the configured key, else the one kept in data_dir."""
        key = _key_from_text(secret_key) if secret_key else load_or_create_key(data_dir)
        return cls(key)

    def derive(self, context: str) -> str:
        """A secret made from the key and a context (HMAC-SHA256, URL-safe base64, 43
        characters): the same context always gives the same secret, which nothing in the
        database reveals; another key gives another."""
        digest = hmac.digest(self._derive_key, context.encode("utf-8"), "sha256")
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")

    def seal(self, plaintext: str, context: str = "") -> str:
        """Encrypt a value bound to a context string."""
        nonce = secrets.token_bytes(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, plaintext.encode("utf-8"), context.encode("utf-8"))
        return f"{_VERSION}:" + base64.b64encode(nonce + sealed).decode("ascii")

    def open(self, token: str, context: str = "") -> str:
        """Decrypt a value sealed with the same key and context, or raise SecretBoxError."""
        version, _, payload = token.partition(":")
        if version != _VERSION or not payload:
            raise SecretBoxError("not a sealed value")
        try:
            raw = base64.b64decode(payload, validate=True)
            plain = self._aead.decrypt(
                raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], context.encode("utf-8")
            )
        except (InvalidTag, ValueError) as exc:
            raise SecretBoxError("the value cannot be decrypted with this key") from exc
        return plain.decode("utf-8")
