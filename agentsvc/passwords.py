"""Password hashing with argon2id (OWASP parameters)."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

# OWASP: argon2id, 19 MiB memory, 2 iterations, parallelism 1.
_hasher = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)

MIN_PASSWORD_LENGTH = 8


def hash_password(password: str) -> str:
    """Hash a password (CPU and memory heavy: run it off the event loop)."""
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    """Check a password against its hash without raising."""
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False
