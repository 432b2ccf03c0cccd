"""How fast the support desk's inbox opens with 10,000 conversations in the team.

Usage: python scripts/bench_inbox.py [--conversations 10000] [--samples 60]
                                     [--database postgresql://...]
       python scripts/bench_inbox.py --seed-only DIR [--conversations 10000]

A temporary data directory gets a team (an owner who signs in with a password, and two
members), an agent and `--conversations` conversations written in bulk through the app's own
database layer (a few large transactions, the triggers running as they would): three in ten
waiting for a person, four in ten with a member (half of them the owner's), the rest with the
agent or closed, each with three messages and, for half of them, the owner's read marker.
Then the real server starts on that directory and `GET /inbox` is timed one request at a
time (p50 and p95 over `--samples` calls after warm-ups) for the views the desk opens with,
next to a raw aiohttp hello-world measured in the same run. Target: the inbox's first page
well under 100 ms at 10,000 conversations.

With `--database` the service runs on PostgreSQL (a fresh schema of that database).
`--seed-only DIR` only seeds DIR (a data directory: `agentsvc serve` with
`[server] data_dir = "DIR"` opens it) and prints how to sign in, for measuring the
dashboard's inbox in a browser. `seed()` is importable for the same purpose.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402

from agentsvc.db import Database  # noqa: E402
from agentsvc.db.postgres import PostgresDatabase  # noqa: E402
from agentsvc.db.sqlite import SqliteDatabase  # noqa: E402
from agentsvc.ids import new_id, now_iso  # noqa: E402
from agentsvc.passwords import hash_password_async  # noqa: E402
from agentsvc.services.team import accounts  # noqa: E402
from agentsvc.store import accounts as account_store  # noqa: E402

OWNER_EMAIL = "desk@example.com"
OWNER_PASSWORD = "desk-bench-password"  # noqa: S105 (a benchmark's throw-away account)
BATCH = 5_000
TARGET_MS = 100.0
VIEWS = [
    ("view=all", "view=all"),
    ("view=mine", "view=mine"),
    ("view=waiting", "view=waiting"),
    ("view=all&q=visitor 4242 (search)", "view=all&q=visitor%204242"),
]


@dataclass(frozen=True)
class Seeded:
    """What `seed` made: the owner's key (for API calls), ids, and the sign-in."""

    api_key: str
    team_id: str
    agent_id: str
    owner_id: str
    email: str = OWNER_EMAIL
    password: str = OWNER_PASSWORD


def _stamp(start: datetime, ms: int) -> str:
    return (
        (start + timedelta(milliseconds=ms))
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def _rows(team_id: str, agent_id: str, owner: str, member: str, n: int):
    """(conversations, messages, read markers) in the service's columns."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    convs, msgs, reads = [], [], []
    for i in range(n):
        kind = i % 10
        created = _stamp(start, i * 1000)
        updated = _stamp(start, i * 1000 + 900)
        status, assignee, handoff = "bot", None, None
        if kind < 3:
            status, handoff = "waiting", _stamp(start, i * 1000 + 500)
        elif kind < 7:
            status, handoff = "human", _stamp(start, i * 1000 + 500)
            assignee = owner if i % 2 == 0 else member
        elif kind == 8:
            status, assignee = "closed", owner
        cid = f"conv_bench{i}"
        convs.append(
            (
                cid,
                agent_id,
                team_id,
                f"Order {i}: where is my parcel?",
                f"session-{i}",
                f"visitor-{i}",
                f"visitor{i}@shop.example",
                f"Visitor {i}",
                created,
                updated,
                status,
                assignee,
                handoff,
            )
        )
        msgs += [
            (f"msg_bench{i}a", cid, "user", f"Hello, order {i} has not arrived.", created),
            (
                f"msg_bench{i}b",
                cid,
                "assistant",
                "Let me look into it for you.",
                updated[:-4] + "100Z",
            ),
            (f"msg_bench{i}c", cid, "user", "Can a person help me please?", updated),
        ]
        if i % 2 == 0:
            reads.append((cid, owner, _stamp(start, i * 1000 + 200)))
    return convs, msgs, reads


async def _people(db, password_hash: str) -> tuple[str, str, str, str, str]:
    """The owner (with their team), two members and an agent; (team id, owner id, member
    id, API key, agent id)."""
    now = now_iso()
    async with db.write() as tx:
        owner, team = await accounts.create_user_with_team(
            tx, email=OWNER_EMAIL, name="Desk Owner", password_hash=password_hash, plan="pro"
        )
        members = []
        for email, name in (("mia@example.com", "Mia"), ("noah@example.com", "Noah")):
            user = await account_store.insert_user(
                tx, id=new_id("user"), email=email, name=name, password_hash=None, now=now
            )
            await account_store.insert_membership(
                tx,
                id=new_id("membership"),
                team_id=team.id,
                user_id=user.id,
                role="member",
                now=now,
            )
            members.append(user.id)
        created = await accounts.create_api_key(tx, team_id=team.id, user_id=owner.id, name="bench")
        await tx.execute(
            "INSERT INTO agents (id, team_id, name, slug, model, temperature, handoff,"
            " created_at, updated_at) VALUES (?, ?, 'Shop help', 'shop-help', 'builtin', 70,"
            " '{\"enabled\": true}', ?, ?)",
            (agent_id := new_id("agent"), team.id, now, now),
        )
    return team.id, owner.id, members[0], created.key, agent_id


async def seed_database(db: Database, conversations: int = 10_000) -> Seeded:
    """Fill a team's inbox in an open database (SQLite or PostgreSQL)."""
    team_id, owner_id, member_id, key, agent_id = await _people(
        db, await hash_password_async(OWNER_PASSWORD)
    )
    convs, msgs, reads = _rows(team_id, agent_id, owner_id, member_id, conversations)
    for first in range(0, len(convs), BATCH):
        async with db.write() as tx:
            await tx.executemany(
                "INSERT INTO conversations (id, agent_id, team_id, title, session_id,"
                " user_ref, user_email, user_name, created_at, updated_at, status,"
                " assignee_id, handoff_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                convs[first : first + BATCH],
            )
    for first in range(0, len(msgs), BATCH):
        async with db.write() as tx:
            await tx.executemany(
                "INSERT INTO messages (id, conversation_id, role, content, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                msgs[first : first + BATCH],
            )
    async with db.write() as tx:
        await tx.executemany(
            "INSERT INTO conversation_reads (conversation_id, user_id, read_at) VALUES (?, ?, ?)",
            reads,
        )
    async with db.maintenance() as tx:
        # Statistics (and on PostgreSQL the visibility map), as a database that grew by use
        # has them.
        sqlite = tx.dialect == "sqlite"
        await tx.execute("ANALYZE" if sqlite else "VACUUM (ANALYZE) conversations, messages")
    return Seeded(key, team_id, agent_id, owner_id)


async def seed(data_dir: Path, conversations: int = 10_000, url: str = "") -> Seeded:
    """Create (or open) the database of `data_dir` (SQLite), or of `url` (PostgreSQL), and
    fill a team's inbox."""
    data_dir.mkdir(parents=True, exist_ok=True)
    db: Database = PostgresDatabase(url) if url else SqliteDatabase(data_dir / "agentsvc.db")
    await db.open()
    try:
        return await seed_database(db, conversations)
    finally:
        await db.close()


async def timed_get(url: str, headers: dict[str, str], samples: int) -> list[float]:
    """Milliseconds of `samples` sequential GETs (after three warm-ups)."""
    times = []
    async with aiohttp.ClientSession(headers=headers) as session:
        for n in range(samples + 3):
            started = time.perf_counter()
            async with session.get(url) as resp:
                if resp.status != 200:
                    raise RuntimeError(f"{url}: {resp.status} {await resp.text()}")
                await resp.read()
            if n >= 3:
                times.append((time.perf_counter() - started) * 1000)
    return times


def _p(times: list[float]) -> tuple[float, float]:
    return benchlib.percentile(times, 50), benchlib.percentile(times, 95)


def measure(conversations: int, samples: int) -> int:
    figures: dict[str, object] = {}
    violations: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        database = benchlib.database_toml()
        url = database.split('url = "', 1)[1].split('"', 1)[0] if database else ""
        started = time.monotonic()
        seeded = asyncio.run(seed(data, conversations, url))
        figures["backend"] = "PostgreSQL" if url else "SQLite"
        figures["seeded"] = f"{conversations:,} conversations in {time.monotonic() - started:.1f} s"
        port = benchlib.free_port()
        config = Path(tmp) / "bench.toml"
        config.write_text(
            f'[server]\ndata_dir = "{data}"\nport = {port}\ncpu_affinity = [0]\n'
            '[plans]\ndefault = "bench"\n[plans.bench]\n' + database
        )
        server = benchlib.ServerProcess(config, port)
        server.start()
        try:
            headers = {"Authorization": f"Bearer {seeded.api_key}"}
            with benchlib.hello_world() as hello:
                hello_p50, hello_p95 = _p(asyncio.run(timed_get(hello + "/", {}, samples)))
            figures["raw aiohttp hello-world"] = f"p50 {hello_p50:.2f} ms, p95 {hello_p95:.2f} ms"
            for name, query in VIEWS:
                url = f"{server.base}/api/v1/inbox?{query}"
                p50, p95 = _p(asyncio.run(timed_get(url, headers, samples)))
                figures[f"GET /inbox?{name}"] = (
                    f"p50 {p50:.1f} ms, p95 {p95:.1f} ms"
                    f" ({p50 / hello_p50:.1f}x the hello-world's p50; target < {TARGET_MS:g} ms)"
                )
                benchlib.record("inbox", f"{name} p50", p50, "ms", f"< {TARGET_MS:g}")
                if p95 >= TARGET_MS:
                    violations.append(f"{name}: p95 {p95:.1f} ms")
        finally:
            server.stop()
    figures["load average"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return benchlib.print_report(
        figures, violations, f"the inbox's first page under {TARGET_MS:g} ms at {conversations:,}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=60, help="requests per view")
    parser.add_argument("--seed-only", metavar="DIR", help="only seed this data directory")
    parser.add_argument("--database", default="", help="a PostgreSQL URL (default: SQLite)")
    args = parser.parse_args()
    if args.database:
        os.environ.setdefault("AGENTSVC_SERVER_SECRET_KEY", "bench")  # as bench_all does
        benchlib.DATABASE_URL = args.database
    # Seeding holds the writer for long bulk transactions on purpose: no warning for each.
    logging.basicConfig(level=logging.ERROR)
    if args.seed_only:
        seeded = asyncio.run(seed(Path(args.seed_only), args.conversations))
        print(f"seeded {args.conversations:,} conversations into {args.seed_only}")
        print(f"sign in as {seeded.email} / {seeded.password} (API key {seeded.api_key})")
        return 0
    return measure(args.conversations, args.samples)


if __name__ == "__main__":
    sys.exit(main())
