"""Configuration: the only place settings are read (TOML file, then AGENTSVC_* environment)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import tomllib
from collections.abc import Mapping
from importlib.util import find_spec
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    Strict,
    ValidationError,
    field_validator,
    model_validator,
)

from agentsvc.text_patterns import CURRENCY_PATTERN
from agentsvc.validation_messages import describe_validation_error


class ConfigError(Exception):
    """A configuration file or variable that cannot be used; the message names the key."""


class _Section(BaseModel):
    # Strict, as API bodies are: `allow_private = "yes"` or `port = "8080"` is refused,
    # never converted. Every section derives from this, so every setting is strict.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# A listener on every interface is reached, from the machine itself, at these names.
WILDCARD_HOSTS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "localhost"}  # noqa: S104


def listener_url(host: str, port: int) -> str:
    """The address a browser on this machine uses to reach a listener on host:port."""
    name = WILDCARD_HOSTS.get(host, host)
    if ":" in name:
        name = f"[{name}]"  # an IPv6 literal
    return f"http://{name}" if port == 80 else f"http://{name}:{port}"


class ServerSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    public_url: str = ""  # empty: derived from host and port (see listener_url)
    # A path is written as a string in TOML: the one conversion strictness allows. Relative
    # to the working directory, made absolute when loaded (load_settings).
    data_dir: Annotated[Path, Strict(False)] = Path("./data")
    # Reverse proxies / load balancers in front (addresses or CIDR networks): requests from
    # them are taken to come from the client their X-Forwarded-For names (per-IP limits).
    trusted_proxies: list[str] = Field(default_factory=list)

    @field_validator("trusted_proxies")
    @classmethod
    def _addresses(cls, value: list[str]) -> list[str]:
        import ipaddress

        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address or network") from None
        return value

    max_body_mb: float = Field(2, gt=0)
    submit_max_body_mb: float = Field(25, gt=0)
    max_large_bodies: int = Field(2, ge=1)
    large_body_wait_seconds: float = Field(10, ge=0)
    large_body_read_seconds: float = Field(120, gt=0)
    secret_key: str = ""
    cpu_affinity: list[int] = Field(default_factory=list)
    access_log: bool = False
    metrics: bool = True
    _public_url_derived: bool = PrivateAttr(False)

    @model_validator(mode="after")
    def _derive_public_url(self) -> ServerSettings:
        # Links and trusted origins follow the listener unless an address is configured,
        # so `serve --port 18100` works without also setting public_url.
        if not self.public_url:
            object.__setattr__(self, "public_url", listener_url(self.host, self.port))
            self._public_url_derived = True
        return self

    @property
    def public_url_derived(self) -> bool:
        """True when public_url was not configured but derived from host and port."""
        return self._public_url_derived

    def listening_on(self, port: int) -> ServerSettings:
        """These settings with the port actually bound (port 0 picks one at start-up)."""
        data = self.model_dump()
        data["port"] = port
        if self.public_url_derived:
            data["public_url"] = ""
        return ServerSettings.model_validate(data)


class DatabaseSettings(_Section):
    # Query-only connections reads are spread over, so one slow read (a report, an export)
    # never queues the others behind it (WAL lets them all read beside the writer).
    readers: int = Field(3, ge=1, le=32)
    # Empty: SQLite in data_dir. postgresql://user:password@host:port/name?sslmode=require
    # (asyncpg's URL: TLS and every connection option go in it): PostgreSQL, several
    # processes may share it.
    url: str = ""
    pool_size: int = Field(10, ge=1, le=500)  # PostgreSQL connections per process
    statement_timeout_seconds: float = Field(30, gt=0)  # PostgreSQL cancels longer ones
    # A write transaction holding the writer longer logs a warning with where it was
    # opened (0: never).
    slow_write_ms: int = Field(200, ge=0)
    # Before applying migrations, `serve` and `migrate` copy the database into
    # data_dir/backups/ (SQLite: an online copy; PostgreSQL: pg_dump) and refuse to
    # migrate when the copy fails; false migrates without one.
    backup_before_migrate: bool = True
    backups_kept: int = Field(5, ge=1, le=1000)  # copies kept there; older ones removed
    # Where pg_dump, pg_restore and psql are (empty: PATH, then the newest
    # /usr/lib/postgresql/N/bin); their major version must be the server's or newer.
    pg_bin_dir: str = ""

    @field_validator("url")
    @classmethod
    def _postgres_only(cls, value: str) -> str:
        if value and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("must be empty (SQLite) or a postgresql:// URL")
        return value


# S3 bucket names: 3-63 lower-case letters, digits, dots and hyphens, starting and ending
# with a letter or digit (AWS's rules; every S3-compatible store accepts them).
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


class StorageSettings(_Section):
    """`[storage]`: where form files, knowledge uploads, avatars and e-mails' attachments
    are kept (agentsvc/storage/). Empty url: in data_dir, or in the database when
    `[database] url` names PostgreSQL; `s3://bucket/prefix`: in an S3-compatible store.
    Empty endpoint, region and credentials are taken from the usual AWS variables
    (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_REGION, AWS_DEFAULT_REGION,
    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) when the settings are
    loaded; credentials found nowhere are looked for as AWS's own tools do (a profile, an
    instance or container role)."""

    url: str = ""
    endpoint_url: str = ""  # empty: AWS's endpoint for the region
    region: str = ""  # empty: us-east-1
    access_key_id: str = ""
    secret_access_key: str = ""
    session_token: str = ""
    # "auto": path-style addresses (http://endpoint/bucket/key) with an endpoint_url, as
    # MinIO, SeaweedFS and most S3-compatible stores want; AWS's virtual hosts without.
    addressing_style: Literal["auto", "path", "virtual"] = "auto"
    timeout_seconds: float = Field(30, gt=0)  # connecting, and each read of a response

    @field_validator("url")
    @classmethod
    def _s3_only(cls, value: str) -> str:
        if not value:
            return value
        parts = urlsplit(value)
        if parts.scheme != "s3":
            raise ValueError("must be empty (data_dir or the database) or s3://bucket/prefix")
        if parts.query or parts.fragment or parts.username or parts.password or parts.port:
            raise ValueError(
                "must be s3://bucket/prefix, nothing else (credentials go in access_key_id"
                " and secret_access_key, the address in endpoint_url)"
            )
        if not _BUCKET.fullmatch(parts.netloc) or ".." in parts.netloc:
            raise ValueError(
                f"bucket {parts.netloc!r} is not a valid S3 bucket name (3 to 63 lower-case"
                " letters, digits, dots and hyphens)"
            )
        return value

    @field_validator("endpoint_url")
    @classmethod
    def _http_endpoint(cls, value: str) -> str:
        parts = urlsplit(value)
        if value and (parts.scheme not in ("http", "https") or not parts.hostname):
            raise ValueError("must be empty or an http(s):// URL, such as http://127.0.0.1:8333")
        return value

    @model_validator(mode="after")
    def _both_keys(self) -> StorageSettings:
        if bool(self.access_key_id) != bool(self.secret_access_key):
            given, missing = (
                ("access_key_id", "secret_access_key")
                if self.access_key_id
                else ("secret_access_key", "access_key_id")
            )
            raise ValueError(f"{given} is set but {missing} is not: give both, or neither")
        return self

    @property
    def bucket(self) -> str:
        return urlsplit(self.url).netloc

    @property
    def prefix(self) -> str:
        """The prefix every key is under, "" or ending in "/"."""
        path = urlsplit(self.url).path.strip("/")
        return f"{path}/" if path else ""


class ModelSettings(_Section):
    default: str = "builtin"


class ProviderSettings(_Section):
    kind: Literal["openai", "anthropic"]
    base_url: str
    api_key_env: str = ""
    api_key: str = ""
    max_retries: int = Field(2, ge=0, le=10)
    timeout_seconds: float = Field(120, gt=0)
    max_tokens: int = Field(4096, gt=0)

    @field_validator("base_url")
    @classmethod
    def _http_base(cls, value: str) -> str:
        # Paths are appended to it (`/chat/completions`, `/v1/messages`): a query or a
        # fragment would swallow them.
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http or https URL, such as https://api.openai.com/v1")
        if parts.query or parts.fragment:
            raise ValueError("must not have a query (?...) or fragment (#...)")
        return value.strip()

    def resolved_api_key(self) -> str:
        """The provider's key: `api_key`, else the variable named by `api_key_env`.

        Read at each call, as before settings existed for it: a key rotated in the
        environment of a running process is picked up.
        """
        if self.api_key:
            return self.api_key
        return os.environ.get(self.api_key_env, "") if self.api_key_env else ""


class OutboundSettings(_Section):
    allow_private: bool = False


class PriceSettings(_Section):
    """`[prices."PROVIDER/MODEL"]`: what a model's tokens cost (docs/operators/configuration.md).

    Costs are counted as each answer is stored (services/usage); every price is in one
    currency, checked at start."""

    input_per_million: float = Field(ge=0, le=1_000_000)
    output_per_million: float = Field(ge=0, le=1_000_000)
    currency: str = Field("USD", pattern=CURRENCY_PATTERN)  # ISO 4217, as "USD", "EUR"


class ToolSettings(_Section):
    # MCP tools: one listing or one call, every request and stream of it, within this time.
    mcp_timeout_seconds: float = Field(30, gt=0)
    mcp_connect_timeout_seconds: float = Field(5, gt=0)
    # Bytes an MCP server may send for one listing or call (all its responses together).
    mcp_max_response_bytes: int = Field(1024 * 1024, ge=1024)
    # Tools one MCP server may list (a listing beyond it is refused).
    mcp_max_listed_tools: int = Field(200, ge=1, le=10_000)
    # Calls reuse an initialized session per (team, URL, headers): how long one is kept
    # unused (0: a new session for every call), and how many unused ones are kept at most.
    mcp_session_idle_seconds: float = Field(120, ge=0, le=3600)
    mcp_max_sessions: int = Field(100, ge=1, le=10_000)


class WebhookSettings(_Section):
    retry_schedule_seconds: list[float] = Field(default_factory=lambda: [0, 60, 300, 1800, 7200])
    timeout_seconds: float = Field(30, gt=0)
    # How long an attempt holds its row before another process may take it over (a process
    # killed mid-attempt); 0: the timeout (or the mail timeout) plus 60 s. Longer than any
    # attempt can take, or two processes could send the same attempt.
    lease_seconds: float = Field(0, ge=0)
    # With several processes (PostgreSQL), how often each looks for deliveries that came
    # due in another process (one that stopped before sending them).
    poll_seconds: float = Field(5, gt=0)
    # Event webhooks (POST /webhooks): how many a team may have, and how many days the log
    # of finished deliveries is kept (with the events they carried).
    max_per_team: int = Field(10, ge=1, le=1000)
    delivery_log_days: float = Field(30, gt=0)

    @field_validator("retry_schedule_seconds")
    @classmethod
    def _non_empty(cls, value: list[float]) -> list[float]:
        if not value or any(v < 0 for v in value):
            raise ValueError("must be a non-empty list of non-negative seconds")
        return value


class SmtpSettings(_Section):
    host: str = ""
    port: int = Field(587, ge=1, le=65535)
    username: str = ""
    password: str = ""
    from_address: str = "agentsvc@localhost"
    starttls: bool = True


class AuthSettings(_Section):
    trusted_origins: list[str] = Field(default_factory=list)
    magic_link_ttl_seconds: float = Field(900, gt=0)
    invitation_ttl_seconds: float = Field(604800, gt=0)
    invitation_sweep_seconds: float = Field(60, gt=0)
    session_ttl_seconds: float = Field(604800, gt=0)
    sign_in_per_minute_ip: int = Field(30, gt=0)
    sign_in_per_minute_email: int = Field(10, gt=0)
    # How far a SAML assertion's NotBefore/NotOnOrAfter may be off the server's clock.
    saml_clock_skew_seconds: float = Field(60, ge=0, le=600)


def nameserver_address(text: str) -> tuple[str, int]:
    """(address, port) of a nameserver setting: "ADDRESS", "ADDRESS:PORT" or "[IPv6]:PORT"."""
    import ipaddress

    host, port = text, "53"
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else "53"
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
    ipaddress.ip_address(host)  # ValueError when it is not an address
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{port!r} is not a port")
    return host, int(port)


def _nameserver(text: str) -> str:
    try:
        nameserver_address(text)
    except ValueError as exc:
        raise ValueError(f"{text!r} is not an IP address with an optional :PORT") from exc
    return text


class SsoSettings(_Section):
    """`[sso]`: single sign-on's domain proof (docs/owners/sso.md)."""

    # The DNS servers asked for a domain's verification TXT record ("ADDRESS" or
    # "ADDRESS:PORT"); empty: the system's resolvers.
    dns_nameservers: list[str] = Field(default_factory=list, max_length=10)
    # "Check DNS now" presses per team and minute (each looks up every unverified domain).
    domain_checks_per_minute: int = Field(6, gt=0)

    @field_validator("dns_nameservers")
    @classmethod
    def _nameservers(cls, value: list[str]) -> list[str]:
        return [_nameserver(v.strip()) for v in value]


class OAuthProviderSettings(_Section):
    """One OAuth provider; sign-in through it is offered only when client_id is set."""

    client_id: str = ""
    client_secret: str = ""
    authorize_url: str
    token_url: str
    userinfo_url: str
    emails_url: str = ""
    scope: str


class GitHubOAuthSettings(OAuthProviderSettings):
    authorize_url: str = "https://github.com/login/oauth/authorize"
    token_url: str = "https://github.com/login/oauth/access_token"  # noqa: S105 (a URL)
    userinfo_url: str = "https://api.github.com/user"
    emails_url: str = "https://api.github.com/user/emails"
    scope: str = "read:user user:email"


class GoogleOAuthSettings(OAuthProviderSettings):
    authorize_url: str = "https://accounts.google.com/o/oauth2/v2/auth"
    token_url: str = "https://oauth2.googleapis.com/token"  # noqa: S105 (a URL)
    userinfo_url: str = "https://openidconnect.googleapis.com/v1/userinfo"
    scope: str = "openid email profile"


class OAuthSettings(_Section):
    github: GitHubOAuthSettings = GitHubOAuthSettings()
    google: GoogleOAuthSettings = GoogleOAuthSettings()


class PlanLimits(_Section):
    requests_per_minute: int | None = Field(None, gt=0)
    tool_limit: int | None = Field(None, ge=0)
    eval_cases: int | None = Field(None, ge=0)  # cases an evaluation set may hold
    source_pages: int | None = Field(None, ge=0)  # pages a knowledge source may hold


def _default_plans() -> dict[str, PlanLimits]:
    return {
        "free": PlanLimits(requests_per_minute=20, tool_limit=3, eval_cases=20, source_pages=50),
        "starter": PlanLimits(
            requests_per_minute=60, tool_limit=10, eval_cases=100, source_pages=500
        ),
        "growth": PlanLimits(
            requests_per_minute=200, tool_limit=50, eval_cases=500, source_pages=5000
        ),
        "pro": PlanLimits(requests_per_minute=1000),
    }


class PlanSettings(_Section):
    """`[plans]`: `default` names the plan of new teams; every other table is a plan."""

    default: str = "pro"
    plans: dict[str, PlanLimits] = Field(default_factory=_default_plans)

    def limits(self, plan_id: str) -> PlanLimits:
        """Return the limits of a plan; an unknown plan id is unlimited."""
        return self.plans.get(plan_id) or PlanLimits()


class RateLimitSettings(_Section):
    """`[ratelimit]`: the per-minute limits of the public endpoints (teams: `[plans]`), and
    the caps on streams a team holds open."""

    trigger_events_per_minute: int = Field(100, gt=0)
    public_chat_per_minute: int = Field(30, gt=0)
    form_submits_per_minute: int = Field(100, gt=0)
    # Messages a channel receives (all its platform users), and one platform user sends.
    channel_messages_per_minute: int = Field(600, gt=0)
    channel_user_messages_per_minute: int = Field(20, gt=0)
    # Concurrent authenticated streams (chat with a key or session, member event streams).
    max_streams_per_team: int = Field(200, gt=0)
    max_streams_per_key: int = Field(100, gt=0)
    # Empty: limits in each process's memory. redis://host:6379/0 (rediss:// for TLS):
    # every limit shared by the processes through Redis.
    redis_url: str = ""

    @field_validator("redis_url")
    @classmethod
    def _redis_only(cls, value: str) -> str:
        if value and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must be empty or a redis:// (rediss://, unix://) URL")
        return value


class ChannelSettings(_Section):
    """`[channels]`: an agent on other platforms (docs/integrators/channels.md)."""

    max_per_agent: int = Field(20, gt=0)
    # WhatsApp's customer service window: how long after a user's last message a reply
    # may be a free text (after it, only the channel's template). Tests shorten it.
    whatsapp_window_seconds: float = Field(86400, gt=0, le=86400)
    # E-mail channels: how often the job looks for mailboxes due a visit, and the shortest
    # `pollSeconds` a channel may ask for (tests shorten both).
    email_check_seconds: float = Field(10, gt=0)
    email_min_poll_seconds: float = Field(30, gt=0)
    # With several processes, how long a received message waits for the turn its own
    # process is about to start before another process may answer it (one that stopped
    # first); longer than a process takes to start a turn. Tests shorten it.
    resume_after_seconds: float = Field(60, gt=0)


class ChatSettings(_Section):
    keepalive_seconds: float = Field(15, gt=0)
    flush_interval_ms: float = Field(30, ge=0)
    builtin_chunk_delay_ms: float = Field(0, ge=0)
    idle_timeout_seconds: float = Field(90, gt=0)
    max_stream_seconds: float = Field(600, gt=0)
    max_public_streams_per_ip: int = Field(10, gt=0)


class HandoffSettings(_Section):
    """`[handoff]`: the live event streams of conversations and the inbox, notifications."""

    keepalive_seconds: float = Field(15, gt=0)
    max_stream_seconds: float = Field(3600, gt=0)
    max_public_streams_per_ip: int = Field(20, gt=0)
    notify_retries: int = Field(3, ge=1, le=10)
    notify_retry_seconds: float = Field(2, ge=0)


class FormSettings(_Section):
    file_quota_mb_per_agent: float = Field(1024, ge=0)


class KnowledgeSettings(_Section):
    max_document_mb: float = Field(10, gt=0)
    top_k: int = Field(4, ge=1, le=20)
    background_index_kb: float = Field(256, ge=0)
    fetch_timeout_seconds: float = Field(30, gt=0)
    embedding_model: str = ""  # PROVIDER/MODEL of an `openai`-kind provider; empty: FTS5 only
    embedding_batch_size: int = Field(64, ge=1, le=2048)
    vector_search: Literal["auto", "numpy", "sqlite-vec"] = "numpy"


class PrivacySettings(_Section):
    """`[privacy]`: the sweep that purges what agents' `retentionDays` no longer keeps (and
    the event webhooks' old delivery log)."""

    retention_sweep_seconds: float = Field(3600, gt=0)


class AnswerSettings(_Section):
    """Curated answers (POST /agents/:id/answers)."""

    max_per_agent: int = Field(500, ge=0, le=100_000)
    # Dice coefficient of the questions' word stems at or above which a curated answer is
    # given (see services/answers/matching.py).
    match_threshold: float = Field(0.8, gt=0, le=1)


class EvalSettings(_Section):
    """`[evals]`: evaluation runs (POST /evalsets/:id/runs; docs/owners/versions.md)."""

    max_cases: int = Field(1000, ge=1, le=100_000)  # a set's cases, whatever the plan
    concurrency: int = Field(4, ge=1, le=64)  # cases answered at once in a process
    runs_per_team: int = Field(2, ge=1, le=100)  # a team's runs under way at once (409)
    case_timeout_seconds: float = Field(60, gt=0)  # an answer or a verdict waited for
    lease_seconds: float = Field(30, gt=0)  # a run's process renews it; then another resumes it
    sweep_seconds: float = Field(15, gt=0)  # how often runs left by a stopped process are taken
    progress_poll_seconds: float = Field(0.5, gt=0)  # GET /eval-runs/:id/events reads it so often
    gate_timeout_seconds: float = Field(300, gt=0)  # a publish waits this long for its runs


class SourceSettings(_Section):
    """`[sources]`: sites an agent's knowledge follows (docs/owners/sources.md)."""

    max_pages: int = Field(10_000, ge=1, le=1_000_000)  # a source's pages, whatever the plan
    max_per_agent: int = Field(20, ge=1, le=1000)
    max_page_mb: float = Field(10, gt=0, le=100)  # a page (or sitemap) is cut off beyond this
    fetch_timeout_seconds: float = Field(20, gt=0)  # one request, redirects each counted anew
    host_concurrency: int = Field(4, ge=1, le=64)  # requests to one site at once
    host_delay_seconds: float = Field(0.25, ge=0, le=60)  # between two requests to one site
    max_crawl_delay_seconds: float = Field(10, ge=0, le=600)  # robots.txt's Crawl-delay, capped
    syncs_at_once: int = Field(2, ge=1, le=64)  # sources a process syncs at once
    lease_seconds: float = Field(30, gt=0)  # a sync's process renews it; then another resumes it
    sweep_seconds: float = Field(15, gt=0)  # how often due syncs and stopped ones are taken
    progress_poll_seconds: float = Field(0.5, gt=0)  # GET /sources/:id/events reads it so often
    # The schedules' periods (tests shorten them).
    hourly_seconds: float = Field(3600, gt=0)
    daily_seconds: float = Field(86400, gt=0)
    weekly_seconds: float = Field(604800, gt=0)


class ApprovalSettings(_Section):
    """Tool calls a person approves first (services.approvals)."""

    lease_seconds: float = Field(30, gt=0)  # a paused turn's holder renews it; then anyone takes it
    sweep_seconds: float = Field(10, gt=0)  # how often due calls are denied, decided turns taken


class ExportSettings(_Section):
    """Streamed exports (GET /conversations/export, /form-submissions/export)."""

    batch_rows: int = Field(1000, ge=10, le=100_000)  # rows read per database query
    max_per_team: int = Field(2, ge=1, le=100)  # a team's exports running at once (429 beyond)


class IdentitySettings(_Section):
    """`[identity]`: the signed widget identity (`userToken`, docs/integrators/identity.md)."""

    # A token whose exp is further away than this is refused: a leaked token must not
    # stand for its user for months.
    max_token_lifetime_hours: float = Field(24, gt=0)


class TelemetrySettings(_Section):
    """`[telemetry]`: OpenTelemetry traces sent to an OTLP/HTTP collector
    (docs/operators/telemetry.md). Unset, nothing of OpenTelemetry is loaded."""

    # The collector's OTLP/HTTP address: `http://collector:4318` (`/v1/traces` is added)
    # or the full traces URL. Empty: no traces.
    otlp_endpoint: str = ""
    # Sent with every export (a hosted collector's key, say); values are not logged.
    headers: dict[str, str] = Field(default_factory=dict)
    service_name: str = Field("agentsvc", min_length=1, max_length=200)
    # The fraction of traces recorded, decided per trace id (a caller's traceparent does
    # not decide it): 1 records every request, 0.1 one in ten.
    sample_ratio: float = Field(1.0, ge=0, le=1)
    # Messages, prompts, tool inputs and outputs on the spans (people's words: off).
    capture_content: bool = False
    # One export's time, retries included; a slow collector is given up on after it.
    export_timeout_seconds: float = Field(5, gt=0, le=60)
    export_interval_seconds: float = Field(2, gt=0, le=60)  # spans are sent in batches
    # Spans waiting to be sent; beyond it (a collector down or slow) new ones are dropped.
    max_queue_spans: int = Field(2048, ge=16, le=1_000_000)
    # A collector that cannot be reached is warned about at most once per this many seconds.
    warning_interval_seconds: float = Field(60, gt=0)

    @field_validator("otlp_endpoint")
    @classmethod
    def _otlp_url(cls, value: str) -> str:
        value = value.strip()
        if not value:
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                "must be empty or an http or https URL of an OTLP/HTTP collector, such as"
                " http://127.0.0.1:4318"
            )
        try:
            parts.port  # noqa: B018 - a port out of range raises here
        except ValueError:
            raise ValueError("the port must be a number from 1 to 65535") from None
        if parts.query or parts.fragment:
            raise ValueError("must not have a query (?...) or fragment (#...)")
        return value

    @field_validator("headers")
    @classmethod
    def _header_lines(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if (
                not name
                or any(c in name for c in " :\r\n\x00")
                or any(c in text for c in "\r\n\x00")
            ):
                raise ValueError(f"{name!r} is not a header name with a one-line value")
        return value

    @property
    def traces_url(self) -> str:
        """Where spans are POSTed: the endpoint, with `/v1/traces` unless it ends so."""
        url = self.otlp_endpoint
        return url if url.rstrip("/").endswith("/v1/traces") else url.rstrip("/") + "/v1/traces"


class Settings(_Section):
    server: ServerSettings = ServerSettings()
    database: DatabaseSettings = DatabaseSettings()
    storage: StorageSettings = StorageSettings()
    models: ModelSettings = ModelSettings()
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    # Prices of models' tokens by model id ("openai/gpt-4o-mini", "builtin"); a price of a
    # model no provider serves is ignored with a warning at start (services/usage/prices.py).
    prices: dict[str, PriceSettings] = Field(default_factory=dict)
    outbound: OutboundSettings = OutboundSettings()
    tools: ToolSettings = ToolSettings()
    webhooks: WebhookSettings = WebhookSettings()
    smtp: SmtpSettings = SmtpSettings()
    auth: AuthSettings = AuthSettings()
    sso: SsoSettings = SsoSettings()
    oauth: OAuthSettings = OAuthSettings()
    plans: PlanSettings = PlanSettings()
    ratelimit: RateLimitSettings = RateLimitSettings()
    chat: ChatSettings = ChatSettings()
    channels: ChannelSettings = ChannelSettings()
    handoff: HandoffSettings = HandoffSettings()
    forms: FormSettings = FormSettings()
    knowledge: KnowledgeSettings = KnowledgeSettings()
    privacy: PrivacySettings = PrivacySettings()
    answers: AnswerSettings = AnswerSettings()
    evals: EvalSettings = EvalSettings()
    sources: SourceSettings = SourceSettings()
    approvals: ApprovalSettings = ApprovalSettings()
    exports: ExportSettings = ExportSettings()
    identity: IdentitySettings = IdentitySettings()
    telemetry: TelemetrySettings = TelemetrySettings()

    @property
    def database_label(self) -> str:
        """The database for people to read: the SQLite file, or the PostgreSQL URL without
        its password."""
        if not self.database.url:
            return str(self.db_path)
        from urllib.parse import urlsplit

        parts = urlsplit(self.database.url)
        return f"PostgreSQL {parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path}"

    @property
    def db_path(self) -> Path:
        return self.server.data_dir / "agentsvc.db"


ENV_PREFIX = "AGENTSVC_"
# Variables that are not configuration keys.
_ENV_RESERVED = {"AGENTSVC_CONFIG", "AGENTSVC_LOG_LEVEL"}


def _env_overrides(environ: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Turn AGENTSVC_<SECTION>_<KEY> variables into nested TOML-like data."""
    sections = {name for name in Settings.model_fields if name not in ("providers", "prices")}
    out: dict[str, dict[str, Any]] = {}
    for var, raw in environ.items():
        if not var.startswith(ENV_PREFIX) or var in _ENV_RESERVED:
            continue
        rest = var[len(ENV_PREFIX) :].lower()
        section, _, key = rest.partition("_")
        if section not in sections or not key:
            raise ConfigError(f"{var}: unknown configuration variable")
        table = out.setdefault(section, {})
        sub = _subtable(section, key)
        if sub:
            # AGENTSVC_OAUTH_GITHUB_CLIENT_ID -> [oauth.github] client_id
            table = table.setdefault(sub, {})
            key = key[len(sub) + 1 :]
        table[key] = _parse_env_value(raw, _field_of(section, sub, key))
    return out


def _subtable(section: str, key: str) -> str | None:
    """Name the nested table a variable's key starts with (`github_client_id` -> `github`)."""
    model = Settings.model_fields[section].annotation
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return None
    for name, field in model.model_fields.items():
        sub = field.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel) and key.startswith(name + "_"):
            return name
    return None


def _field_of(section: str, sub: str | None, key: str) -> Any:
    """The type of the setting a variable names, None when there is no such setting."""
    model = Settings.model_fields[section].annotation
    if sub:
        model = model.model_fields[sub].annotation  # type: ignore[union-attr]
    fields = getattr(model, "model_fields", {})
    return fields[key].annotation if key in fields else None


def _is_text(annotation: Any) -> bool:
    """Whether a setting of this type is written as text (a string, a path, a choice)."""
    origin = get_origin(annotation)
    if origin is Literal:
        return all(isinstance(choice, str) for choice in get_args(annotation))
    if origin in (Union, UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        return bool(options) and all(_is_text(a) for a in options)
    return annotation in (str, Path)


def _parse_env_value(raw: str, annotation: Any) -> Any:
    # A text setting takes the variable as it is (a password of digits stays a string);
    # other values are JSON when they can be ("[0, 1]", "8081", "true"), else the string,
    # which strict validation then refuses with the setting's name.
    if _is_text(annotation):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _normalise_plans(data: dict[str, Any]) -> dict[str, Any]:
    """Move the plan tables of `[plans]` under `plans.plans`, keeping built-in plans."""
    plans = data.get("plans")
    if not isinstance(plans, dict):
        return data
    tables = {k: v for k, v in plans.items() if isinstance(v, dict)}
    rest = {k: v for k, v in plans.items() if not isinstance(v, dict)}
    defaults = {name: limits.model_dump() for name, limits in _default_plans().items()}
    merged_tables = dict(defaults)
    for name, table in tables.items():
        # A plan table replaces the built-in one: a key left out means unlimited.
        merged_tables[name] = table
    return {**data, "plans": {**rest, "plans": merged_tables}}


# Errors of a value of the wrong type: their message also says what was given.
_TYPE_ERRORS = {
    "bool_type",
    "int_type",
    "int_from_float",
    "float_type",
    "string_type",
    "list_type",
    "dict_type",
    "model_type",
    "literal_error",
    "is_instance_of",
}
# A value under such a key is not repeated in a message (it goes to logs and terminals).
_SECRET_WORDS = ("password", "secret", "key", "token")
_KINDS = {str: "a string", bool: "true or false", int: "a number", float: "a number"}


def _describe(error: ValidationError, environ: Mapping[str, str]) -> str:
    """Name each refused setting, what it takes, and (for a wrong type) what it was given."""
    # The API's describer, so an operator reads the same plain words as an API client.
    message = describe_validation_error(error, "", Settings).replace("plans.plans.", "plans.")
    message = message.replace(", or null", "")  # TOML has no null (a plan leaves the key out)
    parts = message.split("; ")
    for item in error.errors(include_url=False):
        if item["type"] not in _TYPE_ERRORS:
            continue
        loc = [str(p) for p in item["loc"]]
        if loc[:2] == ["plans", "plans"]:  # [plans.free] is stored under plans.plans
            loc = loc[1:]
        for end in range(len(loc), 0, -1):  # the describer drops union tags at the end
            name = ".".join(loc[:end])
            index = next((i for i, p in enumerate(parts) if p.startswith(name + ": ")), None)
            if index is not None:
                parts[index] += _given(item["input"], name, environ)
                break
    return "; ".join(parts)


def _given(value: Any, name: str, environ: Mapping[str, str]) -> str:
    """`, got "yes"` (the value as TOML writes it), with the variable it came from."""
    var = ENV_PREFIX + name.replace(".", "_").upper()
    source = f" (from {var})" if var in environ else ""
    if type(value) not in _KINDS:
        return f", got {'a list' if isinstance(value, list) else 'a table'}{source}"
    if any(word in name.rsplit(".", 1)[-1] for word in _SECRET_WORDS):
        return f", got {_KINDS[type(value)]}{source}"
    shown = json.dumps(value, ensure_ascii=False)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    hint = ""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, int | float | bool) and not source:
            hint = " (a string: write it without quotes)"
    return f", got {shown}{hint}{source}"


def log_level(environ: Mapping[str, str] | None = None) -> str:
    """The logging level of `AGENTSVC_LOG_LEVEL` (INFO), needed before settings are loaded."""
    return (os.environ if environ is None else environ).get("AGENTSVC_LOG_LEVEL", "INFO")


def load_settings(
    path: str | Path | None = None,
    environ: dict[str, str] | None = None,
    overrides: dict[str, Any] | None = None,
) -> Settings:
    """Load settings from an optional TOML file, the environment and explicit overrides."""
    environ = dict(os.environ if environ is None else environ)
    path = path or environ.get("AGENTSVC_CONFIG") or None
    data: dict[str, Any] = {}
    if path:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"configuration file not found: {path}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    data = _merge(data, _env_overrides(environ))
    if overrides:
        data = _merge(data, overrides)
    try:
        settings = Settings.model_validate(_normalise_plans(data))
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration: {_describe(exc, environ)}") from exc
    # Absolute from here on: messages and the start-up line name the directory wherever
    # they are read, and a command run elsewhere says where it looked.
    data_dir = Path(os.path.abspath(settings.server.data_dir))
    if data_dir != settings.server.data_dir:
        server = settings.server.model_copy(update={"data_dir": data_dir})
        settings = settings.model_copy(update={"server": server})
    if settings.plans.default not in settings.plans.plans:
        raise ConfigError(f"plans.default: unknown plan {settings.plans.default!r}")
    if settings.models.default != "builtin":
        provider = settings.models.default.partition("/")[0]
        if provider not in settings.providers:
            raise ConfigError(f"models.default: no provider named {provider!r}")
    _check_embedding_model(settings)
    _check_shared_secret(settings)
    _check_one_currency(settings)
    return _with_aws_environment(settings, environ)


def _check_one_currency(settings: Settings) -> None:
    """Every price is in one currency: totals and budgets add costs up."""
    prices = sorted(settings.prices.items())
    for name, price in prices[1:]:
        first, first_price = prices[0]
        if price.currency != first_price.currency:
            raise ConfigError(
                f'prices."{name}".currency: every price must be in one currency (costs are'
                f' added up), and prices."{first}" is in {first_price.currency}, not'
                f" {price.currency}"
            )


def _check_shared_secret(settings: Settings) -> None:
    """With PostgreSQL, several processes must seal and open team secrets with one key:
    a key generated by each process for itself would make the others' secrets unreadable."""
    if not settings.database.url or settings.server.secret_key:
        return
    if not (settings.server.data_dir / "secret.key").is_file():
        raise ConfigError(
            "server.secret_key: required with database.url (every process must use the same"
            " key); set it (AGENTSVC_SERVER_SECRET_KEY) to a long random string, the same"
            " for every process, or put the secret.key of the SQLite instance you copied"
            " in data_dir"
        )


def _check_embedding_model(settings: Settings) -> None:
    """`knowledge.embedding_model` must name a model of a configured `openai`-kind provider."""
    model_id = settings.knowledge.embedding_model
    if settings.knowledge.vector_search == "sqlite-vec" and not (
        hasattr(sqlite3.Connection, "enable_load_extension") and find_spec("sqlite_vec")
    ):
        raise ConfigError(
            "knowledge.vector_search: 'sqlite-vec' needs a Python whose sqlite3 can load"
            " extensions (this one has no enable_load_extension) and the sqlite-vec package;"
            " use 'auto' or 'numpy'"
        )
    if not model_id:
        return
    provider, _, model = model_id.partition("/")
    if not model:
        raise ConfigError(f"knowledge.embedding_model: must be PROVIDER/MODEL, got {model_id!r}")
    conf = settings.providers.get(provider)
    if conf is None:
        raise ConfigError(f"knowledge.embedding_model: no provider named {provider!r}")
    if conf.kind != "openai":
        raise ConfigError(
            f"knowledge.embedding_model: provider {provider!r} is {conf.kind!r}; embeddings"
            " need an 'openai'-kind provider (an OpenAI-compatible /v1/embeddings endpoint)"
        )


# [storage] settings left empty, and the AWS variables that fill them (first found wins).
_AWS_VARIABLES = {
    "endpoint_url": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
    "region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
}
_AWS_KEYS = {
    "access_key_id": "AWS_ACCESS_KEY_ID",
    "secret_access_key": "AWS_SECRET_ACCESS_KEY",
    "session_token": "AWS_SESSION_TOKEN",
}


def _with_aws_environment(settings: Settings, environ: Mapping[str, str]) -> Settings:
    """With an s3:// storage url, fill the empty endpoint, region and credentials from the
    usual AWS variables (the credentials only when neither key is set)."""
    if not settings.storage.url:
        return settings
    filled = storage_with_environment(settings.storage, environ)
    return settings.model_copy(update={"storage": filled})


def storage_with_environment(
    storage: StorageSettings, environ: Mapping[str, str] | None = None
) -> StorageSettings:
    """`[storage]` with what it leaves empty taken from the AWS variables (for `copy-data
    --storage-to` too); ConfigError naming the variable when one is not usable."""
    environ = os.environ if environ is None else environ
    found: dict[str, str] = {}
    for name, variables in _AWS_VARIABLES.items():
        value = next((environ[v] for v in variables if environ.get(v)), "")
        if value and not getattr(storage, name):
            found[name] = value
    if not storage.access_key_id:
        found.update({k: environ[v] for k, v in _AWS_KEYS.items() if environ.get(v)})
    if not found:
        return storage
    try:
        return StorageSettings.model_validate({**storage.model_dump(), **found})
    except ValidationError as exc:
        used = [(*_AWS_VARIABLES.get(k, ()), _AWS_KEYS.get(k, "")) for k in found]
        names = ", ".join(v for group in used for v in group if v in environ)
        reason = describe_validation_error(exc, "storage.", StorageSettings)
        raise ConfigError(f"invalid configuration: {reason} (from {names})") from exc
