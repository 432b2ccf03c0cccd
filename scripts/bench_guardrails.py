"""Benchmark: what an agent's guardrails add to each message, every kind on.

The guardrails: redaction of e-mail addresses, phone numbers, cards, IBANs and two patterns
of the team's own; three blocked topics (ten words and a pattern each); mustNotSay (ten
words, three patterns); a longest visitor message. Each message is what a chat turn does
with it: the visitor's message screened (blocked topics, redaction) and the answer guarded
as it streams (in pieces of 4 characters, each checked as the stream holds back its tail)
and settled before it is stored (checked whole, redacted).

First in-process: the median and p99 cost of one message (a visitor's message of about 200
characters and its answer of about 700) over a corpus of realistic messages, a quarter of
them carrying personal data. Then end to end (unless --no-server): one `agentsvc serve`,
chat turns of the builtin model one after another, in cycles without and with the
guardrails, and the server's CPU a turn in each.

    python scripts/bench_guardrails.py [--messages 5000] [--turns 200] [--no-server]
    BENCH_DATABASE_URL=postgresql://... python scripts/bench_guardrails.py   # on PostgreSQL

Target (issue 36): guardrails on add under 0.2 ms per message.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from agentsvc.services.guardrails import answers, screening, settings  # noqa: E402
from scripts import benchlib  # noqa: E402

EXTRA = '[plans]\ndefault = "bench"\n[plans.bench]\n'
GUARDRAILS = {
    "redact": {
        "kinds": ["email", "phone", "card", "iban"],
        "patterns": [
            {"name": "customer number", "pattern": r"\bCU-\d{6}\b"},
            {"name": "passport", "pattern": r"\b[A-Z]{2}\d{7}\b"},
        ],
    },
    "redactFrom": ["model", "storage"],
    "blockedTopics": [
        {
            "name": name,
            "words": [f"{name}{i}" for i in range(9)] + [name],
            "patterns": [rf"(?i)\b{name} (case|matter)s?\b"],
            "reply": "I can't help with that here.",
        }
        for name in ("lawsuit", "medical", "politics")
    ],
    "mustNotSay": {
        "words": ["guaranteed refund", "free of charge", "lifetime warranty"]
        + [f"promise{i}" for i in range(7)],
        "patterns": [r"(?i)\b100 ?% (sure|safe)\b", r"\bcompetitor\w*\b", r"(?i)legal advice"],
        "fallback": "Sorry, a person will answer this.",
    },
    "maxVisitorMessageChars": 4000,
}
QUESTIONS = [
    "Hello, I ordered a city bike last week (order #100234) and it has not arrived yet."
    " Can you tell me when it will be delivered? I paid $1,299.00 on 2024-05-17.",
    "Do you repair cargo bikes? Mine has a broken chain and the rear brake squeaks a lot"
    " when it rains. I could bring it on Saturday morning around 10:30.",
    "What are your opening hours during the holidays, and is the shop in the old town"
    " open on Sundays? I would like to try the new e-bike, version 2.14.",
    "Please call me back on +44 20 7946 0958 or write to jane.doe@example.com about my"
    " refund; the card was 4111 1111 1111 1111 and the order ORD-2024-000123.",
]
ANSWER = (
    "Thank you for your message. Our workshop repairs city bikes, cargo bikes and e-bikes;"
    " a chain and brake service takes two working days and costs 49.90 EUR, parts"
    " included. We are open from 9:00 to 18:00 from Monday to Saturday, and closed on"
    " Sundays and public holidays. Deliveries leave our warehouse within three days of"
    " the order; you receive the tracking number 1Z999AA10123456784 by e-mail as soon as"
    " the parcel is handed to the carrier. If the parcel has not arrived within a week,"
    " reply here with your order number and we will look into it at once. You can also"
    " visit us in the old town at Rue de la Republique 12 to try the new models."
)
PIECE = 4  # characters a streamed delta carries


def _answer(found: screening.Screening | None) -> None:
    """Guard an answer as a turn does: streamed in pieces, flushed, settled."""
    guard = answers.AnswerGuard(found)
    for i in range(0, len(ANSWER), PIECE):
        guard.feed(ANSWER[i : i + PIECE])
    guard.flush()
    guard.settled(ANSWER, [])


def in_process(messages: int) -> dict[str, list[float]]:
    """Per message (ms): a visitor's screened and an answer guarded with every guardrail
    on, and an answer through a turn without guardrails (its bare path)."""
    rules = settings.guardrails_of(settings.merged(None, GUARDRAILS))
    rng = random.Random(7)
    texts = [rng.choice(QUESTIONS) for _ in range(messages)]
    for text in texts[:200]:  # compile and warm up
        _answer(screening._screen(rules, text, True))
    timed: dict[str, list[float]] = {"visitor": [], "answer": [], "bare answer": []}
    clock = time.perf_counter
    for text in texts:
        started = clock()
        found = screening._screen(rules, text, True)
        screened = clock()
        _answer(found)
        answered = clock()
        _answer(None)
        bare = clock()
        timed["visitor"].append((screened - started) * 1000)
        timed["answer"].append((answered - screened) * 1000)
        timed["bare answer"].append((bare - answered) * 1000)
    return timed


async def server_cpu_per_turn(
    base: str, config: Path, turns: int, cycles: int, questions: list[str]
) -> dict[bool, float]:
    """The server's CPU seconds a chat turn, without and with the guardrails, the visitor
    asking `questions` in turn."""
    headers = {"Authorization": f"Bearer {benchlib.api_key(config)}"}
    pid = benchlib.server_pid(base)
    cpu = {False: 0.0, True: 0.0}
    async with aiohttp.ClientSession(headers=headers) as session:
        body = {"name": "Shop", "systemPrompt": ANSWER}
        async with session.post(f"{base}/api/v1/agents", json=body) as resp:
            agent_id = (await resp.json())["data"]["id"]
        url = f"{base}/api/v1/agents/{agent_id}"
        off = {k: settings.OFF[k] for k in GUARDRAILS}
        for cycle in range(cycles):
            for on in (False, True) if cycle % 2 == 0 else (True, False):
                async with session.patch(url, json={"guardrails": GUARDRAILS if on else off}):
                    pass
                cpu0 = benchlib.cpu_seconds(pid)
                for i in range(turns):
                    chat = {
                        "agentId": agent_id,
                        "sessionId": f"{on}-{cycle}-{i}",
                        "messages": [{"role": "user", "content": questions[i % len(questions)]}],
                    }
                    async with session.post(f"{base}/api/v1/chat", json=chat) as resp:
                        await resp.read()
                        assert resp.status == 200, resp.status
                cpu[on] += (benchlib.cpu_seconds(pid) - cpu0) / (turns * cycles)
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--turns", type=int, default=200, help="chat turns a cycle")
    parser.add_argument("--no-server", action="store_true", help="in-process figures only")
    args = parser.parse_args()
    timed = in_process(args.messages)
    visitor = statistics.median(timed["visitor"])
    answer = statistics.median(timed["answer"]) - statistics.median(timed["bare answer"])
    guarded = statistics.median(timed["answer"])
    figures: dict[str, object] = {
        "messages (each: a visitor's and an answer)": args.messages,
        "visitor's message screened, p50 / p99 (ms)": f"{visitor:.3f} /"
        f" {benchlib.percentile(timed['visitor'], 99):.3f}",
        "answer guarded (streamed, settled), p50 / p99 (ms)": f"{guarded:.3f} /"
        f" {benchlib.percentile(timed['answer'], 99):.3f}",
        "answer without guardrails, p50 (ms)": f"{statistics.median(timed['bare answer']):.4f}",
        "added per visitor's message, p50 (ms)": f"{visitor:.3f}",
        "added per answer, p50 (ms)": f"{answer:.3f}",
    }
    worst = max(visitor, answer)
    benchlib.record("guardrails", "added per message (worst of the two), p50", worst, "ms", "< 0.2")
    violations = [] if worst < 0.2 else [f"guardrails add {worst:.3f} ms a message (< 0.2)"]
    if not args.no_server:
        backend = "PostgreSQL" if benchlib.DATABASE_URL else "SQLite"
        figures["backend"] = backend
        # Messages with nothing to find (the checks alone), then ones with personal data
        # (each hit also counted and noted in the message's transaction).
        for label, questions in (("nothing found", QUESTIONS[:3]), ("data hidden", QUESTIONS[3:])):
            with benchlib.service(EXTRA) as (base, _, config):
                cpu = asyncio.run(server_cpu_per_turn(base, config, args.turns, 4, questions))
            extra_ms = (cpu[True] - cpu[False]) * 1000
            figures[f"server CPU a turn, {label}, without / with (ms)"] = (
                f"{cpu[False] * 1000:.2f} / {cpu[True] * 1000:.2f} ({extra_ms:+.2f})"
            )
            figure = f"server CPU added a turn, {label} ({backend})"
            benchlib.record("guardrails", figure, extra_ms, "ms")
    sys.exit(benchlib.print_report(figures, violations, "guardrails target met"))


if __name__ == "__main__":
    main()
