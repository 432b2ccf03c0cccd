"""The layering rules of the README's architecture section, enforced by scanning imports."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "agentsvc"
DRIVERS = ("sqlite3", "aiosqlite", "asyncpg")


def modules(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


def imports(path: Path) -> set[str]:
    """Every module a file imports (at the top or inside functions), by full dotted name."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            records = node.module.startswith("agentsvc.store.") and all(
                alias.name[:1].isupper() for alias in node.names
            )
            # A store's record types (frozen dataclasses) may be named anywhere: that is not
            # reaching the database. Its functions are counted as an import of the module.
            if records:
                names.update(f"record:{node.module}.{alias.name}" for alias in node.names)
            else:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def offending(layer: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in modules(layer):
        bad = sorted(
            name
            for name in imports(path)
            if any(name == f or name.startswith(f + ".") for f in forbidden)
        )
        if bad:
            found[str(path.relative_to(PACKAGE))] = bad
    return found


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        # SQL lives in store/, written against the interface of agentsvc.db, never a driver.
        ("store", ("agentsvc.api", "agentsvc.services", "agentsvc.llm", "aiohttp", *DRIVERS)),
        # Rules know no web framework, no app object, no driver and no SQL implementation.
        (
            "services",
            (
                "agentsvc.api",
                "agentsvc.api.app_keys",
                "agentsvc.observability",
                "agentsvc.runtime",
                "agentsvc.app",
                "agentsvc.db.sqlite",
                "aiohttp.web",
                *DRIVERS,
            ),
        ),
        # HTTP reaches the database only through services.
        ("api", ("agentsvc.store", "agentsvc.db.sqlite", *DRIVERS)),
        # Model providers stand alone.
        ("llm", ("agentsvc.api", "agentsvc.services", "agentsvc.store", "agentsvc.db")),
        # The database knows nothing above it.
        ("db", ("agentsvc.api", "agentsvc.services", "agentsvc.store", "aiohttp")),
    ],
)
def test_layer_imports_only_what_it_may(layer, forbidden):
    assert offending(layer, forbidden) == {}


def test_no_service_takes_the_web_application():
    users = [
        str(path.relative_to(PACKAGE))
        for path in modules("services")
        if re.search(r"\bweb\.Application\b|\bweb\.Request\b", path.read_text(encoding="utf-8"))
    ]
    assert users == []


def test_only_config_reads_the_environment():
    readers = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if re.search(r"os\.environ|os\.getenv|getenv\(", path.read_text(encoding="utf-8"))
    ]
    assert readers == ["config.py"]


def files_matching(pattern: str) -> list[str]:
    regex = re.compile(pattern)
    return sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if regex.search(path.read_text(encoding="utf-8"))
    )


def test_only_the_runtime_registers_hooks_and_periodic_jobs():
    """Start-up/shutdown hooks and periodic jobs are created in runtime.py alone."""
    assert files_matching(r"cleanup_ctx|on_shutdown|on_startup|on_cleanup") == ["runtime.py"]
    assert files_matching(r"\bjobs\.every\(") == ["runtime.py"]
    # jobs.py is the one wrapper of APScheduler; services are woken through it.
    assert files_matching(r"\.add_job\(|AsyncIOScheduler\b") == ["jobs.py"]


def test_no_private_driver_internals():
    users = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if re.search(r"\._execute\(|\._conn\b", path.read_text(encoding="utf-8"))
    ]
    assert users == []


def test_the_mcp_sdk_is_not_imported_at_start_up():
    """The SDK takes about as long to import as the rest of the service: the app, the CLI
    and the runtime load it on the first MCP exchange only."""
    probe = (
        "import sys, agentsvc.app, agentsvc.cli, agentsvc.runtime;"
        "print(sorted(m for m in ('mcp', 'mcp_types', 'httpx2') if m in sys.modules))"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert found == "[]"
