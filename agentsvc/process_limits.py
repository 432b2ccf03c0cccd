"""The serving process's open-file limit: the soft limit raised to the hard one at start.

Every connection and every open stream is a file descriptor. Many systems start a service
with a soft limit of 1,024 although the hard limit allows far more; a process may raise
its own soft limit up to the hard one without privileges, so `agentsvc serve` does, and
says what it found and what it set.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def raise_open_file_limit() -> tuple[int, int] | None:
    """Raise the soft RLIMIT_NOFILE to the hard limit, log both; return (soft, hard) now
    in force, or None where the platform has no such limit."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        log.info("open files: soft limit %s, hard limit %s", _shown(soft), _shown(hard))
        return soft, hard
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:
        # An unlimited hard limit is not accepted as a soft one everywhere (macOS).
        log.warning(
            "open files: soft limit %s, hard limit %s; cannot raise the soft limit: %s",
            _shown(soft),
            _shown(hard),
            exc,
        )
        return soft, hard
    log.info("open files: soft limit %s raised to the hard limit %s", _shown(soft), _shown(hard))
    return hard, hard


def _shown(limit: int) -> str:
    import resource

    return "unlimited" if limit == resource.RLIM_INFINITY else str(limit)
