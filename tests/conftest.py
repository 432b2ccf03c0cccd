"""Shared fixtures: the real app on a temporary SQLite file, API keys, the error helper."""

from __future__ import annotations

import fcntl
import gc
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _pytest import unraisableexception

from agentsvc.db import holds
from tests.support import pg

# The app and the helpers are imported by the fixtures that use them: pytest-xdist's
# controller loads this file too and runs no test, and importing the app cost it 1.4 s of
# CPU before it started the workers (in the measuring phase, while the machine waited).
if TYPE_CHECKING:
    from aiohttp.test_utils import TestClient

    from agentsvc.config import Settings

HERE = Path(__file__).resolve().parent

# A write transaction holds only SQL (issue 29): one holding the writer longer, while the
# event loop's thread worked at least half that time, fails its test.
WRITE_HOLD_LIMIT_SECONDS = 0.100


@pytest.fixture(autouse=True)
def _write_transactions_hold_only_sql():
    """Fail the test if a write transaction held the writer over 100 ms, naming where it
    was opened (agentsvc/db/holds.py times every one, on both backends).

    Only while the event loop's thread was working for at least half the hold (and 50
    ms): a hold during which it mostly waited was a busy machine not running it, or a
    database server (PostgreSQL) sharing the cores, not work done inside the
    transaction; other threads' work (password hashing, XML signatures for other
    requests), and other tasks' work on the loop while the transaction waited on the
    database, do not hold the writer and are not counted (agentsvc/db/holds.py).
    Start-up migrations are not write transactions of the interface (they run before the
    app serves, on the writer connection directly) and are not timed.

    Not in the browser processes: there the app, the fake providers (a SAML provider
    signing XML), Playwright and its stack share one process, so its CPU says nothing
    about a transaction; the same routes are guarded in the workers' tests."""
    if os.environ.get("TEST_PHASE", "").startswith("browser"):
        yield
        return
    held: list[tuple[float, float, str]] = []
    stop = holds.watch(WRITE_HOLD_LIMIT_SECONDS, lambda *found: held.append(found))
    yield
    stop()
    worked = [
        (s, cpu, where) for s, cpu, where in held if cpu >= max(WRITE_HOLD_LIMIT_SECONDS, s) / 2
    ]
    if worked:
        lines = "\n".join(
            f"  {seconds * 1000:.0f} ms ({cpu * 1000:.0f} ms of CPU), opened at {where}"
            for seconds, cpu, where in worked
        )
        pytest.fail(
            f"a write transaction held the writer over {WRITE_HOLD_LIMIT_SECONDS * 1000:.0f} ms"
            f" (run only SQL inside db.write()):\n{lines}",
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def _drop_postgres_schemas():
    """On PostgreSQL, drop the schemas the test's apps used (after they closed); those of
    module fixtures, set up before this one, live until the end of the session."""
    before = pg.mark()
    yield
    if pg.SERVER_URL:
        pg.drop_created(since=before)
        pg.flush_redis()


@pytest.fixture(autouse=True, scope="session")
def _drop_every_postgres_schema():
    yield
    if pg.SERVER_URL:
        pg.drop_process_database()


# The browser tests share one running stack and one Chromium per package, and the
# dashboard's files run in the order of their numbers: each package runs whole on one
# pytest-xdist worker (`--dist loadgroup`, pyproject.toml); every other test goes to
# whichever worker is free.
_ONE_WORKER_PACKAGES = ("browser", "browser_dashboard")
# scripts/test.sh runs the suite in phases, selected by TEST_PHASE (unset, a plain
# `pytest` runs everything):
# - parallel: most tests, on many workers, niced;
# - browser and browser_dashboard: the two browser packages, at the same time as the
#   workers, in two processes at the normal priority (the widget's, then the dashboard's
#   first day, files 1 to 9 in order, which pytest-xdist does not keep; the dashboard's
#   later files, each standing alone), as Chromium against fixed timeouts must not be
#   starved by the busy workers; TEST_PHASE=browser,browser_dashboard selects both;
# - alone: the tests that measure the machine (latency percentiles, write holds, RSS,
#   recovery after SIGKILL), after the others, two at a time on 2 cores (each takes about
#   one: a server and its load in one process).
PHASES = ("parallel", *_ONE_WORKER_PACKAGES, "alone")


# A module that measures the machine says so with `pytestmark = pytest.mark.needs_the_machine`;
# one test of a module that otherwise shares the machine well may need it alone too.
ALONE_MARK = "needs_the_machine"


# A test that takes both cores (an attacked server, its attackers and a control server)
# is also marked `needs_both_cores`: the two workers of that phase then never run it beside
# another (beside one, the pathological-load test's attacked server got half its quiet
# throughput and its healthz p99 doubled, while the idle control server saw no noise).
BOTH_CORES_MARK = "needs_both_cores"


def pytest_configure(config: pytest.Config) -> None:
    # At the end of a session pytest collects garbage five times over to find the
    # unraisable exceptions left behind (each test's are reported with it); one pass is
    # about a tenth of a second of CPU in each of the run's dozen processes.
    config.stash[unraisableexception.gc_collect_iterations_key] = 1
    # The young generation collected every 50,000 allocations, as `agentsvc serve` does
    # (cli.py): with the default 700 a test process collected about 28 times a second.
    gc.set_threshold(50_000, 20, 10)
    unknown = _phases() - set(PHASES)
    if unknown:
        raise pytest.UsageError(
            f"TEST_PHASE must name phases among {', '.join(PHASES)}, not {', '.join(unknown)}"
        )
    config.addinivalue_line(
        "markers", f"{ALONE_MARK}: runs after the other tests, two at a time (scripts/test.sh)"
    )
    config.addinivalue_line(
        "markers", f"{BOTH_CORES_MARK}: {ALONE_MARK}, and never beside another such test"
    )


@pytest.fixture(autouse=True)
def _both_cores_alone(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Between the workers of a run, a shared lock for each test that measures the machine
    and an exclusive one for a test that needs both cores (fcntl's, on a file in the
    run's temporary directory, which the workers' own are in)."""
    if "PYTEST_XDIST_WORKER" not in os.environ or not request.node.get_closest_marker(ALONE_MARK):
        yield
        return
    exclusive = request.node.get_closest_marker(BOTH_CORES_MARK) is not None
    path = tmp_path_factory.getbasetemp().parent / "machine.lock"
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _phases() -> set[str]:
    """The phases TEST_PHASE selects: one, or several joined by commas (one process runs
    the widget's browser tests, then the dashboard's first day); checked at start-up."""
    return set(filter(None, os.environ.get("TEST_PHASE", "").split(",")))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The workers' phases (parallel, alone) hold no browser test: they do not import the
    browser packages' modules (and Playwright), each in every worker, to drop their tests."""
    phases = _phases()
    browsers = collection_path.name in _ONE_WORKER_PACKAGES and collection_path.parent == HERE
    if browsers and phases and not phases & set(_ONE_WORKER_PACKAGES):
        return True
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    """The modules and the collected tests stay for the whole session: frozen out of the
    collector's full walks, as `agentsvc serve` freezes what it loaded (cli.py). With the
    threshold above, a test process spends about half as long collecting garbage."""
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        package = item.path.parent
        if package.parent == HERE and package.name in _ONE_WORKER_PACKAGES:
            item.add_marker(pytest.mark.xdist_group(package.name))
    phases = _phases()
    if phases:

        def phase_of(item: pytest.Item) -> str:
            package = item.path.parent
            if package.parent == HERE and package.name in _ONE_WORKER_PACKAGES:
                return package.name
            if item.get_closest_marker(ALONE_MARK) is not None:
                return "alone"
            return "parallel"

        keep = [i for i in items if phase_of(i) in phases]
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    from tests.support.settings import make_settings

    return make_settings(tmp_path)


@pytest.fixture
def make_client(aiohttp_client, tmp_path: Path) -> Callable[..., Any]:
    """Start the real app and return a test client: on `settings` as given, or on the
    test's settings with the overrides and a copy of a new database (`with_new_database`:
    on SQLite, the app then opens an existing database instead of building one)."""
    from agentsvc.app import create_app
    from tests.support.settings import make_settings, with_new_database

    async def start(settings: Settings | None = None, **sections: dict[str, Any]) -> TestClient:
        if settings is None:
            settings = with_new_database(make_settings(tmp_path, **sections))
        return await aiohttp_client(create_app(settings))

    return start


@pytest.fixture
async def client(make_client) -> TestClient:
    return await make_client()


@pytest.fixture
async def provider():
    """A fake OAuth provider (GitHub and Google alike) served on loopback."""
    from aiohttp.test_utils import TestServer

    from tests.support.fakes.oauth import FakeOAuth

    fake = FakeOAuth()
    server = TestServer(fake.app, host="127.0.0.1")
    await server.start_server()
    fake.base = str(server.make_url("")).rstrip("/")
    yield fake
    await server.close()


@pytest.fixture
async def api_key(client: TestClient) -> str:
    from tests.support.accounts import new_api_key

    return await new_api_key(client)


@pytest.fixture
def auth(api_key: str) -> dict[str, str]:
    from tests.support.accounts import bearer

    return bearer(api_key)


@pytest.fixture
async def smtp_server():
    """A real SMTP server (aiosmtpd) on 127.0.0.1; pass `smtp=smtp_server.settings()`."""
    from tests.support.fakes.smtp import FakeSmtp

    server = await FakeSmtp().start()
    yield server
    await server.close()


@pytest.fixture
async def receiver():
    """A webhook receiver on 127.0.0.1 (tests/support/fakes/webhook_receiver.py) whose slow
    paths answer after 2 s: the form tests'; a module may define its own `receiver`."""
    from tests.support.fakes.webhook_receiver import WebhookReceiver

    rec = await WebhookReceiver(slow_seconds=2.0).start()
    yield rec
    await rec.close()


@pytest.fixture
async def openai_fake():
    """A fake OpenAI Chat Completions server on 127.0.0.1 (tests/support/fakes/openai_server.py)."""
    from tests.support.fakes import openai_server

    fake = await openai_server.FakeOpenAI().start()
    yield fake
    await fake.close()


@pytest.fixture
def redis_server(tmp_path):
    """A real redis-server on 127.0.0.1 (tests/support/redis_server.py)."""
    from tests.support.redis_server import started

    server = started(tmp_path)
    yield server
    server.stop()


@pytest.fixture
async def anthropic_fake():
    """A fake Anthropic Messages server on 127.0.0.1 (tests/support/fakes/anthropic_server.py)."""
    from tests.support.fakes import anthropic_server

    fake = await anthropic_server.FakeAnthropic().start()
    yield fake
    await fake.close()


@pytest.fixture(scope="module")
def s3_server():
    """An S3-compatible server on 127.0.0.1 checking signatures (moto's, tests/support/s3.py),
    for a module's tests; `s3_server.bucket()` makes each test a bucket of its own."""
    from tests.support.s3 import S3Server

    server = S3Server().start()
    yield server
    server.stop()
