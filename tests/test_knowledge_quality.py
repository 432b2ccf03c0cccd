"""Retrieval quality on a small product-docs corpus: FTS5 alone puts the answer in the top 3."""

from __future__ import annotations

import json
from pathlib import Path

from aiohttp import FormData

from agentsvc.api import app_keys
from agentsvc.services.knowledge import retrieval

CORPUS = Path(__file__).parent / "knowledge_corpus"
MEDIA_TYPES = {".md": "text/markdown", ".html": "text/html", ".txt": "text/plain"}


def flat(text: str) -> str:
    return " ".join(text.split()).casefold()


async def test_answers_are_in_the_top_three(client, auth):
    resp = await client.post("/api/v1/agents", json={"name": "Nimbus help"}, headers=auth)
    agent_id = (await resp.json())["data"]["id"]
    files = sorted(p for p in CORPUS.iterdir() if p.suffix in MEDIA_TYPES)
    for path in files:
        form = FormData()
        form.add_field(
            "file", path.read_bytes(), filename=path.name, content_type=MEDIA_TYPES[path.suffix]
        )
        resp = await client.post(f"/api/v1/agents/{agent_id}/documents", data=form, headers=auth)
        assert resp.status == 201, await resp.text()
        assert (await resp.json())["data"]["status"] == "ready"

    questions = json.loads((CORPUS / "questions.json").read_text())
    assert len(questions) >= 20
    db = client.app[app_keys.db_key]
    misses = []
    for item in questions:
        passages = await retrieval.retrieve(db, agent_id, item["q"], 3)
        if not any(flat(item["a"]) in flat(p.text) for p in passages):
            misses.append((item["q"], [p.heading for p in passages]))
    hit_rate = 1 - len(misses) / len(questions)
    print(f"top-3 hit rate {hit_rate:.0%} over {len(questions)} questions; misses: {misses}")
    assert hit_rate >= 0.9, misses
