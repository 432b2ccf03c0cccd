"""The OTLP/HTTP exporter of `telemetry_otel`, with its failures told in words.

The SDK's exporter retries, logs each failure with the library's words and a traceback, and
its batch processor logs a line for every span a full queue drops. A collector that is down
must cost one warning a minute, in words, and never a request's time: this wraps the
exporter, remembers how its last HTTP request ended, and keeps the SDK's loggers quiet.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import requests
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from agentsvc.config import TelemetrySettings

log = logging.getLogger("agentsvc.telemetry")


class _RecordingSession(requests.Session):
    """The exporter's HTTP session, remembering how its last request ended (for the
    warning's words). Not through a proxy of the environment, like every outbound call."""

    def __init__(self) -> None:
        super().__init__()
        self.trust_env = False
        self.last: BaseException | int | None = None

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:
        try:
            response = super().request(*args, **kwargs)
        except BaseException as exc:
            self.last = exc
            raise
        self.last = response.status_code
        return response


def why_not_sent(last: BaseException | int | None, timeout: float) -> str:
    """Why an export failed, for people."""
    if isinstance(last, int):
        return f"it answered HTTP {last}"
    if isinstance(last, requests.exceptions.Timeout):
        return f"it did not answer within {timeout:g} s"
    if isinstance(last, requests.exceptions.SSLError):
        return "the TLS handshake failed"
    if isinstance(last, requests.exceptions.ConnectionError):
        words = str(last)
        if "refused" in words:
            return "the connection was refused (nothing listens there)"
        if "resolve" in words or "Name or service" in words or "not known" in words:
            return "no address is known for its name"
        return "the connection failed"
    return "the export failed"


class QuietExporter(SpanExporter):
    """The OTLP/HTTP exporter, with failures told in words, once per interval."""

    def __init__(self, settings: TelemetrySettings):
        self._session = _RecordingSession()
        self._inner = OTLPSpanExporter(
            endpoint=settings.traces_url,
            headers=dict(settings.headers),
            timeout=settings.export_timeout_seconds,
            compression=Compression.NoCompression,
            session=self._session,
        )
        self._url = settings.traces_url
        self._timeout = settings.export_timeout_seconds
        self._interval = settings.warning_interval_seconds
        self._next_warning = 0.0
        self._dropped = 0  # spans of failed exports since the last warning
        self._failing = False
        self._last_export_at = float("inf")  # at shutdown: no export starts after it

    def stop_after(self, seconds: float) -> None:
        """Start no export later than `seconds` from now (what is left is dropped)."""
        self._last_export_at = time.monotonic() + seconds

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if time.monotonic() > self._last_export_at:
            return SpanExportResult.FAILURE
        self._session.last = None
        result = self._inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            if self._failing:
                self._failing = False
                log.info("traces reach the collector at %s again", self._url)
            return result
        self._failing = True
        self._dropped += len(spans)
        now = time.monotonic()
        if now >= self._next_warning:
            self._next_warning = now + self._interval
            log.warning(
                "traces could not be sent to the collector at %s: %s; %d span(s) dropped"
                " since the last warning (requests are not slowed; the next warning comes"
                " in %g s at the earliest)",
                self._url,
                why_not_sent(self._session.last, self._timeout),
                self._dropped,
                self._interval,
            )
            self._dropped = 0
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def quiet_the_sdk() -> None:
    """The SDK logs a line per span dropped from a full queue and a traceback per failed
    export; this module says it once a minute instead (DEBUG still shows the SDK's)."""
    sdk = logging.getLogger("opentelemetry")
    if not sdk.isEnabledFor(logging.DEBUG):
        sdk.setLevel(logging.CRITICAL + 1)
