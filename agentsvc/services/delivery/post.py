"""POSTing a delivery's JSON body through the guarded outbound client."""

from __future__ import annotations

from agentsvc.outbound import OutboundClient, OutboundError
from agentsvc.services.delivery.outcome import Outcome

RESPONSE_BODY_CAP = 4096  # bytes of a receiver's answer kept in the attempt log
ERROR_CAP = 500


class Poster:
    """Sends one attempt's POST; a 2xx is success, 410 asks for no more attempts."""

    def __init__(self, outbound: OutboundClient, timeout_seconds: float):
        self.outbound = outbound
        self.timeout_seconds = timeout_seconds

    async def post(self, url: str, headers: dict[str, str], body: bytes) -> Outcome:
        """POST a JSON body; failures are outcomes, not exceptions."""
        try:
            resp = await self.outbound.request(
                "POST",
                url,
                headers=headers,
                data=body,
                timeout=self.timeout_seconds,
                max_response_bytes=RESPONSE_BODY_CAP,
            )
        except OutboundError as exc:
            return Outcome(False, error=exc.message[:ERROR_CAP])
        text = resp.text()
        if resp.ok:
            return Outcome(True, resp.status, body=text)
        if resp.status == 410:
            return Outcome(
                False, 410, "410 Gone: the receiver asked for no more deliveries", text, True
            )
        wait = retry_after(resp.headers.get("Retry-After")) if resp.status in (429, 503) else None
        return Outcome(False, resp.status, f"HTTP {resp.status}", text, retry_after=wait)


def retry_after(value: str | None) -> float | None:
    """The seconds of a Retry-After header given in seconds (a date or junk: None)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if 0 <= seconds < float("inf") else None
