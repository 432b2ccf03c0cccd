"""Helpers of the knowledge tests: wait for a document to be indexed."""

from __future__ import annotations

import asyncio


async def wait_status(client, auth, document_id, until=("ready", "failed")) -> dict:
    for _ in range(200):
        resp = await client.get(f"/api/v1/documents/{document_id}", headers=auth)
        doc = (await resp.json())["data"]
        if doc["status"] in until:
            return doc
        await asyncio.sleep(0.02)
    raise AssertionError(f"document stayed {doc['status']}")
