"""The serving process's open-file limit: the soft limit raised to the hard one at start.

Every connection and every open stream is a file descriptor. Many systems start a service
with a soft limit of 1,024 although the hard limit allows far more; a process may raise
its own soft limit up to the hard one without privileges, so `agentsvc serve` does, and
says what it found and what it set once it listens (a start that fails stays one line).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OpenFileLimit:
    """The soft and hard limits found at start, what the soft one is now, and why not more."""

    found: int
    hard: int
    soft: int
    failure: str = ""

    def log(self) -> None:
        """Log one line with both limits (a warning when the soft one could not be raised)."""
        found, hard = _shown(self.found), _shown(self.hard)
        if self.failure:
            log.warning(
                "open files: soft limit %s, hard limit %s; cannot raise the soft limit: %s",
                found,
                hard,
                self.failure,
            )
        elif self.found != self.soft:
            log.info("open files: soft limit %s raised to the hard limit %s", found, hard)
        else:
            log.info("open files: soft limit %s, hard limit %s", found, hard)


def raise_open_file_limit() -> OpenFileLimit | None:
    """Raise the soft RLIMIT_NOFILE to the hard limit; None where there is no such limit."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        return OpenFileLimit(soft, hard, soft)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:  # an unlimited hard limit is refused on macOS
        return OpenFileLimit(soft, hard, soft, str(exc))
    return OpenFileLimit(soft, hard, hard)


def _shown(limit: int) -> str:
    import resource

    return "unlimited" if limit == resource.RLIM_INFINITY else str(limit)
