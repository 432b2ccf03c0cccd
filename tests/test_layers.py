"""The layering rules of docs/contributors/architecture.md, enforced by scanning imports."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import source

# With the other tests of the code's shape on one worker, each file is parsed once per run
# (tests/support/source.py).
pytestmark = pytest.mark.xdist_group("source")

PACKAGE = Path(__file__).resolve().parent.parent / "agentsvc"
DRIVERS = ("sqlite3", "aiosqlite", "asyncpg")


def modules(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


def imports(path: Path) -> set[str]:
    """Every module a file imports (at the top or inside functions), by full dotted name."""
    names: set[str] = set()
    for node in ast.walk(source.tree(path)):
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
        # The file storage sits beside the database: below services, knowing no HTTP.
        ("storage", ("agentsvc.api", "agentsvc.services", "aiohttp")),
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


def test_start_up_loads_only_what_it_needs():
    """The MCP SDK takes about as long to import as the rest of the service: the app, the
    CLI and the runtime load it on the first MCP exchange only. `agentsvc --help`, a usage
    error or `apikey create` take half a second, not one: the command line checks its options
    with `input_types` and loads the web server for `serve` only. The Redis client is loaded
    only when Redis is configured, OpenTelemetry only when traces are, and AWS's S3 client
    only when S3 keeps the files."""
    probe = (
        "import sys, agentsvc.cli;"
        "print(sorted(m for m in ('aiohttp', 'agentsvc.api', 'redis') if m in sys.modules));"
        "import agentsvc.app, agentsvc.runtime;"
        "print(sorted(m for m in"
        " ('mcp', 'mcp_types', 'httpx2', 'redis', 'opentelemetry', 'botocore')"
        " if m in sys.modules))"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert found[:2] == ["[]", "[]"]


# The composition root: the modules that put the layers together (and the CLI's input
# models, which are the API's, and its `eval run`, which builds the evaluation service as
# runtime.py does). Every other top-level module sits below services/.
ROOT_MODULES = {"app.py", "runtime.py", "cli.py", "cli_input.py", "cli_eval.py", "__main__.py"}


def test_top_level_modules_sit_below_services():
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        if path.name in ROOT_MODULES:
            continue
        bad = sorted(
            name for name in imports(path) if name.startswith(("agentsvc.api", "agentsvc.services"))
        )
        if bad:
            found[path.name] = bad
    assert found == {}


# Imports inside a function that close a cycle on purpose, each with its reason. Any other
# cycle among the modules' imports fails the test below.
DECLARED_LAZY_LOADS = {
    # Only the configured backend's driver is loaded.
    ("agentsvc.db", "agentsvc.db.sqlite"),
    ("agentsvc.db", "agentsvc.db.postgres"),
    # A provider's module is loaded when a model of it is first asked for.
    ("agentsvc.llm.base", "agentsvc.llm.anthropic"),
    ("agentsvc.llm.base", "agentsvc.llm.builtin"),
    ("agentsvc.llm.base", "agentsvc.llm.openai"),
    # The MCP SDK is loaded on the first MCP exchange (see the start-up test above).
    ("agentsvc.mcp_client", "agentsvc.mcp_transport"),
    # The SDK's server, on the first `POST /mcp`.
    ("agentsvc.services.agents.mcp_service", "agentsvc.services.agents.mcp_server"),
    # Only the configured file storage is loaded (botocore, a large import, for S3 only).
    ("agentsvc.storage", "agentsvc.storage.s3"),
    ("agentsvc.storage", "agentsvc.storage.database"),
    ("agentsvc.storage", "agentsvc.storage.local"),
}


def module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        names[name] = path
    return names


def runtime_imports(path: Path, known: dict[str, Path]) -> dict[str, bool]:
    """The package's modules a file imports when it runs: name -> only inside a function.
    `from package import module` names the module, not the package; imports under
    `if TYPE_CHECKING:` never run and are left out (the layer rules above count them)."""
    found: dict[str, bool] = {}

    def owner(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, True)
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            targets: list[str] = []
            if isinstance(child, ast.Import):
                targets = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                for alias in child.names:
                    full = f"{child.module}.{alias.name}"
                    targets.append(full if full in known else child.module)
            for target in targets:
                name = owner(target) if target.startswith("agentsvc") else None
                if name is not None:
                    found[name] = found.get(name, True) and lazy
            visit(child, lazy)

    visit(source.tree(path), False)
    return found


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm: the groups of two or more modules that import each other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return groups


def test_no_import_cycles_but_the_declared_lazy_loads():
    known = module_names()
    graph: dict[str, set[str]] = {name: set() for name in known}
    lazy_edges = set()
    for name, path in known.items():
        for target, lazy in runtime_imports(path, known).items():
            if target == name:
                continue
            if lazy:
                lazy_edges.add((name, target))
            if (name, target) not in DECLARED_LAZY_LOADS:
                graph[name].add(target)
    assert strongly_connected(graph) == []
    # A declaration that no longer matches a lazy import goes.
    assert DECLARED_LAZY_LOADS <= lazy_edges
