"""The one check of the error envelope: every error-path test uses `assert_error`."""

from __future__ import annotations


async def assert_error(resp, status: int, code: str, message_contains: str | None = None) -> dict:
    """Assert an error response: status, JSON envelope shape, code, and optional message text."""
    assert resp.status == status, (resp.status, await resp.text())
    assert resp.content_type == "application/json"
    body = await resp.json()
    assert set(body) == {"data", "error"}, body
    assert body["data"] is None
    assert set(body["error"]) == {"code", "message"}, body
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if message_contains is not None:
        assert message_contains in body["error"]["message"], body
    return body["error"]
