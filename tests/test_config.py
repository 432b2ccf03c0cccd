"""Configuration: defaults, TOML, environment overrides, loud failures, documentation."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from agentsvc.config import (
    ConfigError,
    PlanSettings,
    ProviderSettings,
    Settings,
    load_settings,
    log_level,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "config.example.toml"


def test_defaults_need_no_configuration():
    settings = load_settings(None, environ={})
    assert settings.server.host == "127.0.0.1"
    assert settings.server.port == 8080
    assert settings.db_path == Path.cwd() / "data" / "agentsvc.db"  # made absolute
    assert settings.models.default == "builtin"
    assert settings.webhooks.retry_schedule_seconds == [0, 60, 300, 1800, 7200]
    assert settings.plans.default == "pro"
    assert settings.plans.limits("free").requests_per_minute == 20
    assert settings.plans.limits("free").tool_limit == 3
    assert settings.plans.limits("pro").tool_limit is None


def test_example_file_loads_to_the_defaults():
    assert load_settings(EXAMPLE, environ={}) == load_settings(None, environ={})


def _documented_keys() -> set[str]:
    """Every key in the example file, commented-out provider keys included."""
    text = EXAMPLE.read_text()
    setting = re.compile(r"^# (\[[a-z_.]+(\.\"[^\"]+\")?\]|[a-z_]+ = )")
    uncommented = "\n".join(line[2:] if setting.match(line) else line for line in text.splitlines())
    data = tomllib.loads(uncommented)
    keys = set()
    for section, values in data.items():
        for key, value in values.items():
            if value == {}:
                keys.add(f"{section}.{key}")  # a table-valued key, empty by default
            elif isinstance(value, dict):
                # Providers, plans and prices are named freely; other nested tables by name.
                name = "*" if section in ("providers", "plans", "prices") else key
                keys |= {f"{section}.{name}.{k}" for k in value}
            else:
                keys.add(f"{section}.{key}")
    return keys


def _model_keys() -> set[str]:
    keys = set()
    for section, field in Settings.model_fields.items():
        model = field.annotation
        if section == "providers":
            keys |= {f"providers.*.{k}" for k in ProviderSettings.model_fields}
        elif section == "prices":
            from agentsvc.config import PriceSettings

            keys |= {f"prices.*.{k}" for k in PriceSettings.model_fields}
        elif section == "plans":
            from agentsvc.config import PlanLimits

            keys.add("plans.default")
            keys |= {f"plans.*.{k}" for k in PlanLimits.model_fields}
        else:
            assert isinstance(model, type) and issubclass(model, BaseModel)
            for key, sub in model.model_fields.items():
                table = sub.annotation
                if isinstance(table, type) and issubclass(table, BaseModel):
                    keys |= {f"{section}.{key}.{k}" for k in table.model_fields}
                else:
                    keys.add(f"{section}.{key}")
    return keys


def test_every_key_is_documented():
    missing = _model_keys() - _documented_keys()
    assert not missing, f"keys missing from config.example.toml: {sorted(missing)}"
    unknown = _documented_keys() - _model_keys()
    assert not unknown, f"config.example.toml documents unknown keys: {sorted(unknown)}"


def test_toml_file_and_environment(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(
        '[server]\nport = 9000\n[plans]\ndefault = "free"\n[plans.free]\nrequests_per_minute = 5\n'
        '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:11434/v1"\n'
    )
    settings = load_settings(
        path,
        environ={
            "AGENTSVC_SERVER_HOST": "0.0.0.0",
            "AGENTSVC_WEBHOOKS_RETRY_SCHEDULE_SECONDS": "[0, 2]",
        },
    )
    assert settings.server.port == 9000
    assert settings.server.host == "0.0.0.0"
    assert settings.webhooks.retry_schedule_seconds == [0, 2]
    assert settings.plans.default == "free"
    assert settings.plans.limits("free").requests_per_minute == 5
    assert settings.plans.limits("free").tool_limit is None  # a key left out means unlimited
    assert settings.plans.limits("starter").requests_per_minute == 60
    assert settings.providers["local"].kind == "openai"
    with pytest.raises(ValidationError):
        settings.server.port = 1  # frozen


@pytest.mark.parametrize(
    ("toml", "environ", "named"),
    [
        ("[server]\nprot = 1\n", {}, "server.prot"),
        ("[sevrer]\nport = 1\n", {}, "sevrer"),
        ("[server]\nport = 'x'\n", {}, "server.port"),
        ("[server]\nport = 70000\n", {}, "server.port"),
        ("", {"AGENTSVC_SERVER_PORT": "abc"}, "server.port"),
        ("", {"AGENTSVC_SERVR_PORT": "1"}, "AGENTSVC_SERVR_PORT"),
        ("[plans]\ndefault = 'gold'\n", {}, "plans.default"),
        ("[plans.free]\nrequests_per_minute = 0\n", {}, "plans.free.requests_per_minute"),
        ("[providers.x]\nkind = 'bogus'\nbase_url = 'http://a'\n", {}, "providers.x.kind"),
        ("[providers.x]\nkind = 'openai'\nbase_url = 'api.openai.com/v1'\n", {}, "x.base_url"),
        ("[providers.x]\nkind = 'anthropic'\nbase_url = 'http://a/?v=1'\n", {}, "x.base_url"),
        ("[models]\ndefault = 'nope/model'\n", {}, "models.default"),
        ("[webhooks]\nretry_schedule_seconds = []\n", {}, "webhooks.retry_schedule_seconds"),
        ("[channels]\nresume_after_seconds = 0\n", {}, "channels.resume_after_seconds"),
        ("[channels]\nresume_after_seconds = 'soon'\n", {}, "channels.resume_after_seconds"),
        ("not toml [", {}, "invalid TOML"),
    ],
)
def test_bad_configuration_names_the_key(tmp_path, toml, environ, named):
    path = tmp_path / "c.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as excinfo:
        load_settings(path, environ=environ)
    assert named in str(excinfo.value)
    # Written for people: the API's plain words, no validation library's.
    for internal in ("Input should", "pydantic", "type=", "Value error", "unable to parse"):
        assert internal not in str(excinfo.value)


@pytest.mark.parametrize(
    ("toml", "environ", "message"),
    [
        (
            '[outbound]\nallow_private = "yes"\n',
            {},
            'outbound.allow_private: must be true or false, got "yes"',
        ),
        (
            '[chat]\nidle_timeout_seconds = "90"\n',
            {},
            'chat.idle_timeout_seconds: must be a number greater than 0, got "90" (a string:'
            " write it without quotes)",
        ),
        ('[server]\nport = "8080"\n', {}, "server.port: must be a whole number from 0 to 65535"),
        ("[server]\nport = 8080.5\n", {}, "server.port: must be a whole number"),
        ("[smtp]\nstarttls = 1\n", {}, "smtp.starttls: must be true or false, got 1"),
        ("[smtp]\nhost = 25\n", {}, "smtp.host: must be a string, got 25"),
        (
            '[plans.free]\nrequests_per_minute = "5"\n',
            {},
            'plans.free.requests_per_minute: must be a whole number greater than 0, got "5"',
        ),
        (
            "[providers.x]\nkind = 'openai'\nbase_url = 'http://a'\nmax_retries = '2'\n",
            {},
            'providers.x.max_retries: must be a whole number from 0 to 10, got "2"',
        ),
        (
            '[webhooks]\nretry_schedule_seconds = "0, 60"\n',
            {},
            'webhooks.retry_schedule_seconds: must be a list of numbers, got "0, 60"',
        ),
        (
            "",
            {"AGENTSVC_OUTBOUND_ALLOW_PRIVATE": "yes"},
            'outbound.allow_private: must be true or false, got "yes"'
            " (from AGENTSVC_OUTBOUND_ALLOW_PRIVATE)",
        ),
        (
            "",
            {"AGENTSVC_CHAT_IDLE_TIMEOUT_SECONDS": "ninety"},
            'chat.idle_timeout_seconds: must be a number greater than 0, got "ninety"',
        ),
        # A secret's value is not repeated where the message goes (a log, a terminal).
        ("[smtp]\npassword = 12345678\n", {}, "smtp.password: must be a string, got a number"),
    ],
)
def test_config_values_of_the_wrong_type_are_refused_as_api_bodies_are(
    tmp_path, toml, environ, message
):
    path = tmp_path / "c.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as excinfo:
        load_settings(path, environ=environ)
    assert message in str(excinfo.value)
    assert "12345678" not in str(excinfo.value)


def test_environment_values_are_json_except_for_text_settings():
    settings = load_settings(
        None,
        environ={
            "AGENTSVC_SERVER_PORT": "9000",  # a number, as JSON
            "AGENTSVC_OUTBOUND_ALLOW_PRIVATE": "true",
            "AGENTSVC_CHAT_IDLE_TIMEOUT_SECONDS": "1.5",
            "AGENTSVC_WEBHOOKS_RETRY_SCHEDULE_SECONDS": "[0, 2]",
            # Text settings take the value as it is, whatever JSON would make of it.
            "AGENTSVC_SMTP_PASSWORD": "12345678",
            "AGENTSVC_SERVER_SECRET_KEY": "true",
            "AGENTSVC_SERVER_DATA_DIR": "123",
            "AGENTSVC_KNOWLEDGE_VECTOR_SEARCH": "auto",
        },
    )
    assert settings.server.port == 9000
    assert settings.outbound.allow_private is True
    assert settings.chat.idle_timeout_seconds == 1.5
    assert settings.webhooks.retry_schedule_seconds == [0, 2]
    assert settings.smtp.password == "12345678"
    assert settings.server.secret_key == "true"
    assert settings.server.data_dir == Path.cwd() / "123"


def _sections(model: type[BaseModel]):
    yield model
    for field in model.model_fields.values():
        for sub in (field.annotation, *getattr(field.annotation, "__args__", ())):
            if isinstance(sub, type) and issubclass(sub, BaseModel):
                yield from _sections(sub)


def test_every_setting_is_strict():
    """Strictness is the sections' base model's: a setting added anywhere is strict too."""
    sections = set(_sections(Settings))
    assert len(sections) > 20
    for section in sections:
        assert section.model_config.get("strict") is True, section.__name__


def test_data_dir_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for given in ("data", "./data", "sub/../data"):
        settings = load_settings(None, environ={"AGENTSVC_SERVER_DATA_DIR": given})
        assert settings.server.data_dir == tmp_path / "data"
        assert settings.db_path == tmp_path / "data" / "agentsvc.db"


def test_nested_tables_from_the_environment():
    settings = load_settings(
        None,
        environ={
            "AGENTSVC_OAUTH_GITHUB_CLIENT_ID": "abc",
            "AGENTSVC_OAUTH_GITHUB_CLIENT_SECRET": "s3cret",
        },
    )
    assert settings.oauth.github.client_id == "abc"
    assert settings.oauth.github.client_secret == "s3cret"
    assert settings.oauth.github.token_url == "https://github.com/login/oauth/access_token"
    assert settings.oauth.google.client_id == ""
    with pytest.raises(ConfigError, match="oauth.github.client_idd"):
        load_settings(None, environ={"AGENTSVC_OAUTH_GITHUB_CLIENT_IDD": "x"})


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="nowhere.toml"):
        load_settings(tmp_path / "nowhere.toml", environ={})


def test_plan_settings_unknown_plan_is_unlimited():
    assert PlanSettings().limits("enterprise").requests_per_minute is None


@pytest.mark.parametrize(
    ("server", "environ", "public_url"),
    [
        ({}, {}, "http://127.0.0.1:8080"),
        ({"port": 18100}, {}, "http://127.0.0.1:18100"),
        ({}, {"AGENTSVC_SERVER_PORT": "18100"}, "http://127.0.0.1:18100"),
        ({"host": "0.0.0.0", "port": 9000}, {}, "http://127.0.0.1:9000"),
        ({"host": "::", "port": 9000}, {}, "http://localhost:9000"),
        ({"host": "::1", "port": 9000}, {}, "http://[::1]:9000"),
        ({"host": "chat.internal", "port": 80}, {}, "http://chat.internal"),
    ],
)
def test_public_url_follows_the_listener_when_not_configured(server, environ, public_url):
    from agentsvc.services.team.trust import is_trusted_origin

    settings = load_settings(None, environ=environ, overrides={"server": server})
    assert settings.server.public_url == public_url
    assert settings.server.public_url_derived
    assert is_trusted_origin(settings, public_url)
    assert not is_trusted_origin(settings, "http://127.0.0.1:8081")


def test_configured_public_url_is_kept_whatever_the_port():
    settings = load_settings(
        None,
        environ={"AGENTSVC_SERVER_PUBLIC_URL": "https://chat.example.com"},
        overrides={"server": {"port": 18100}},
    )
    assert settings.server.public_url == "https://chat.example.com"
    assert not settings.server.public_url_derived
    assert settings.server.listening_on(18200).public_url == "https://chat.example.com"


def test_port_zero_is_replaced_by_the_bound_port():
    server = load_settings(None, environ={}, overrides={"server": {"port": 0}}).server
    bound = server.listening_on(41234)
    assert (bound.port, bound.public_url, bound.public_url_derived) == (
        41234,
        "http://127.0.0.1:41234",
        True,
    )


@pytest.mark.parametrize(
    ("public_url", "port", "flagged"),
    [
        ("http://127.0.0.1:8080", 18100, 8080),
        ("http://localhost:8080/", 18100, 8080),
        ("http://[::1]", 18100, 80),
        ("http://127.0.0.1:18100", 18100, None),
        ("https://chat.example.com", 18100, None),  # a proxy elsewhere
        ("http://10.0.0.5:8080", 18100, None),
        ("not a url", 18100, None),
    ],
)
def test_loopback_public_url_on_another_port_is_flagged(public_url, port, flagged):
    from agentsvc.services.team.trust import loopback_port_mismatch

    assert loopback_port_mismatch(public_url, port) == flagged


def test_provider_key_comes_from_the_named_variable_at_each_call(monkeypatch):
    provider = ProviderSettings(kind="openai", base_url="http://127.0.0.1:1/v1", api_key_env="K")
    monkeypatch.setenv("K", "first")
    assert provider.resolved_api_key() == "first"
    monkeypatch.setenv("K", "rotated")
    assert provider.resolved_api_key() == "rotated"
    assert provider.model_copy(update={"api_key": "inline"}).resolved_api_key() == "inline"
    assert ProviderSettings(kind="openai", base_url="http://a/v1").resolved_api_key() == ""


def test_log_level_is_read_from_its_variable():
    assert log_level({}) == "INFO"
    assert log_level({"AGENTSVC_LOG_LEVEL": "DEBUG"}) == "DEBUG"
