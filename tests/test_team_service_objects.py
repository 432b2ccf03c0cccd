"""The team, sign-in and request-pipeline modules reach the application through one service
object (or one bundle of what every request needs) per module, and their functions stay
small: at most five parameters, at most 80 lines."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from agentsvc.api import app_keys
from agentsvc.api.state import RequestDeps
from agentsvc.services.health import HealthService
from agentsvc.services.team.service import ApiKeysService, SignInService, TeamService

PACKAGE = Path(__file__).resolve().parent.parent / "agentsvc"
API_MODULES = [
    PACKAGE / "api" / f"{name}.py"
    for name in (
        "team",
        "session_auth",
        "auth",
        "api_keys",
        "setup",
        "limits",
        "system",
        "routing",
        "pipeline",
        "state",
        "proxies",
        "dashboard",
        "openapi",
    )
]
TEAM_MODULES = sorted((PACKAGE / "services" / "team").glob("*.py"))
LOOKUP = re.compile(r"app\[|app\.get\(")
MAX_PARAMETERS = 5
MAX_LINES = 80


def _functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = node.args
    every = args.posonlyargs + args.args + args.kwonlyargs
    return [a.arg for a in every if a.arg not in ("self", "cls")]


def test_each_module_looks_up_one_object_of_the_application():
    counts = {path.name: len(LOOKUP.findall(path.read_text())) for path in API_MODULES}
    # system.py: the health service, and the OpenAPI document app.py renders once.
    assert {name: n for name, n in counts.items() if n > (2 if name == "system.py" else 1)} == {}
    assert sum(counts.values()) <= 12


def test_no_function_takes_more_than_five_parameters():
    paths = [*API_MODULES, *TEAM_MODULES, PACKAGE / "cli.py"]
    wide = {
        f"{path.name}:{node.name}": len(_parameters(node))
        for path in paths
        for node in _functions(path)
        if len(_parameters(node)) > MAX_PARAMETERS
    }
    assert wide == {}


def test_no_function_is_over_80_lines():
    paths = [*API_MODULES, *TEAM_MODULES, PACKAGE / "cli.py"]
    long = {
        f"{path.name}:{node.name}": node.end_lineno - node.lineno + 1
        for path in paths
        for node in _functions(path)
        if node.end_lineno - node.lineno + 1 > MAX_LINES
    }
    assert long == {}


async def test_the_services_are_built_at_start_up(client):
    app = client.app
    assert isinstance(app[app_keys.team_key], TeamService)
    assert isinstance(app[app_keys.sign_in_key], SignInService)
    assert isinstance(app[app_keys.api_keys_key], ApiKeysService)
    assert isinstance(app[app_keys.health_key], HealthService)
    deps = app[app_keys.request_deps_key]
    assert isinstance(deps, RequestDeps)
    assert deps.settings is app[app_keys.settings_key]
    assert deps.limiter is app[app_keys.limiter_key]
    assert deps.keys is app[app_keys.key_resolver_key]
    assert deps.body_slots is app[app_keys.body_slots_key]
