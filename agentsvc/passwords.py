"""Password hashing with argon2id (OWASP parameters), bounded and off the event loop."""

from __future__ import annotations

import asyncio
import os
import secrets
import weakref
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

# OWASP: argon2id, 19 MiB memory, 2 iterations, parallelism 1.
_hasher = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)

MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 1024

# At most this many hashes run at once, so a flood of sign-ins costs at most
# MAX_CONCURRENT x 19 MiB; the rest wait their turn (and the sign-in rate limits cap the wait).
MAX_CONCURRENT = max(2, os.cpu_count() or 2)
_executor = ThreadPoolExecutor(max_workers=MAX_CONCURRENT, thread_name_prefix="argon2")
_semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def hash_password(password: str) -> str:
    """Hash a password (CPU and memory heavy: prefer `hash_password_async` on the loop)."""
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    """Check a password against its hash without raising."""
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    # A real hash of a random password, so an unknown account costs one full verification.
    return _hasher.hash(secrets.token_urlsafe(16))


def _semaphore() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    semaphore = _semaphores.get(loop)
    if semaphore is None:
        semaphore = _semaphores[loop] = asyncio.Semaphore(MAX_CONCURRENT)
    return semaphore


async def _run(fn, *args):
    async with _semaphore():
        return await asyncio.get_running_loop().run_in_executor(_executor, fn, *args)


async def hash_password_async(password: str) -> str:
    """Hash a password in the argon2 pool, at most MAX_CONCURRENT at a time."""
    return await _run(hash_password, password)


async def verify_password_async(password_hash: str | None, password: str) -> bool:
    """Check a password in the argon2 pool; with no hash, spend the same time and say no.

    Unknown accounts and accounts without a password are verified against a dummy hash so
    their answer takes as long as a wrong password for a real account.
    """
    if password_hash is None:
        await _run(verify_password, _dummy_hash(), password)
        return False
    return await _run(verify_password, password_hash, password)


def warm_up() -> None:
    """Compute the dummy hash now rather than during the first sign-in."""
    _dummy_hash()
