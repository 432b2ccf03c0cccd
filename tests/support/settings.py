"""Settings of a test's app: data in a temporary directory, loopback allowed, the
PostgreSQL schema and Redis of the run when the suite runs on that backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentsvc.config import Settings, load_settings
from tests.support import pg

PUBLIC_ORIGIN = "http://127.0.0.1:8080"  # the public_url derived from the default listener


def make_settings(tmp_path: Path, **sections: dict[str, Any]) -> Settings:
    """Settings for a test: data in tmp_path, outbound to loopback allowed, plus overrides."""
    overrides: dict[str, Any] = {
        # Port 0 is never listened on here (the test server picks its own); links and the
        # trusted origin stay at the default listener's address.
        "server": {"data_dir": str(tmp_path / "data"), "port": 0, "public_url": PUBLIC_ORIGIN},
        "outbound": {"allow_private": True},
    }
    if pg.SERVER_URL:
        overrides["database"] = {"url": pg.database_url_for(tmp_path)}
        overrides["server"]["secret_key"] = "test-secret-shared-by-every-process"
        overrides["ratelimit"] = {"redis_url": pg.REDIS_URL}
    for name, values in sections.items():
        overrides[name] = {**overrides.get(name, {}), **values}
    return load_settings(None, environ={}, overrides=overrides)
